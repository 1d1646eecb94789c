//! Trust between agents (docs/trust.md): `.tmws/trust.jsonl` holds one verification per line,
//! `{agent, verifier, success, evidence, at}`, read by `parse::trust` (names compared
//! normalised, at most three verifications per verifier counted, lines tmws never writes
//! left out). An agent's score starts at 0.5 and moves +0.05 per success and −0.10 per
//! failure, kept within [0, 1] at every step.
//!
//! The verifier is never a parameter: the surface says who is asking (`human` at the
//! command line, the session's identity over MCP), and an agent never verifies itself.
//! Memory search boosts an agent's entries by `1 + 0.5 × score`, and counts the importance
//! an agent gives its memories only up to its score (`index::search::importance_cap`).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::layout::{TRUST_FILE, TRUST_LOCK};
use crate::parse::trust::{self as log, HUMAN, HUMAN_TRUST, Standing, normalize};
use crate::redact::redact;
use crate::store::{self, log::LockedLog};

/// An agent's standing.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Trust {
    /// The agent's name.
    pub agent: String,
    /// Its trust, 0 to 1.
    pub score: f64,
    /// Successes that count (at most three per verifier).
    pub successes: u64,
    /// Failures that count (at most three per verifier).
    pub failures: u64,
    /// How many verifiers they came from.
    pub verifiers: u64,
    /// When it was last verified.
    pub last: String,
    /// Of the verifications that count, those by a verifier whose name only its MCP
    /// client reported (docs/trust.md): shown when there are any.
    #[serde(skip_serializing_if = "is_zero")]
    pub self_reported: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `trust_show`: every agent's standing, highest first.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrustList {
    /// Every agent's standing, highest first.
    pub agents: Vec<Trust>,
}

/// `trust_verify`: who verified, and the agent's standing after it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Verified {
    /// Who verified: this session's identity.
    pub verifier: String,
    /// The verifier's name is only what its MCP client reported: no `--agent` and no
    /// token bound to an agent vouch for it (shown when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub verifier_self_reported: bool,
    #[serde(flatten)]
    pub trust: Trust,
}

impl Trust {
    fn of(agent: &str, s: Standing) -> Trust {
        Trust {
            agent: agent.to_owned(),
            score: s.score,
            successes: s.successes,
            failures: s.failures,
            verifiers: s.verifiers,
            last: s.last,
            self_reported: s.self_reported,
        }
    }

    fn unverified(agent: &str) -> Trust {
        Trust {
            agent: agent.to_owned(),
            score: log::START,
            successes: 0,
            failures: 0,
            verifiers: 0,
            last: String::new(),
            self_reported: 0,
        }
    }
}

/// The trust log as it is (empty when there is none or it cannot be read).
fn read_log(root: &Path) -> log::TrustLog {
    let bytes = store::read_opt(root, &root.join(TRUST_FILE), store::cap::LOG).ok().flatten().unwrap_or_default();
    log::read(&bytes)
}

/// Every verified agent's trust, by normalised name.
pub fn scores(root: &Path) -> BTreeMap<String, Trust> {
    log::standings(&read_log(root)).into_iter().map(|(a, s)| (a.clone(), Trust::of(&a, s))).collect()
}

/// The trust of every writer a ranking knows, by normalised name: the verified agents'
/// scores, and the person's ([`HUMAN_TRUST`]). An agent not named here has 0.5.
pub fn ranking_scores(root: &Path) -> BTreeMap<String, f64> {
    let mut all: BTreeMap<String, f64> = scores(root).into_iter().map(|(a, t)| (a, t.score)).collect();
    all.insert(HUMAN.to_owned(), HUMAN_TRUST);
    all
}

/// The trust of `writer` in a table of [`ranking_scores`]: 0.5 for a writer nobody has
/// verified or none named.
pub fn of(scores: &BTreeMap<String, f64>, writer: Option<&str>) -> f64 {
    writer.and_then(|w| scores.get(&normalize(w)).copied()).unwrap_or(log::START)
}

/// Records that `verifier` checked `agent`'s work; answers the agent's new standing.
/// `verifier` is who the surface says is asking, never a caller's word, and whether that
/// name is only what the client reported.
pub fn verify(
    root: &Path,
    agent: &str,
    (verifier, self_reported): (&str, bool),
    success: bool,
    evidence: &str,
    now: DateTime<Utc>,
) -> Result<Trust> {
    // Names are redacted like a memory's agent, then normalised, so that every spelling
    // of a name is written as one.
    let (agent, verifier) = (normalize(&redact(agent).text), normalize(&redact(verifier).text));
    let evidence = evidence.trim();
    if agent.is_empty() {
        return Err(Error::Usage("no agent: name the agent whose work was checked".into()));
    }
    if verifier.is_empty() {
        return Err(Error::Usage("no verifier: this session has no name to verify as".into()));
    }
    if agent == HUMAN {
        return Err(Error::Usage(format!("`{HUMAN}` is the person at the command line, whom tmws does not score")));
    }
    if agent == verifier {
        return Err(Error::Usage(format!(
            "`{agent}` cannot verify itself: a verifier must be another agent (names compare case-folded, in \
Unicode NFKC, without invisible characters)"
        )));
    }
    if evidence.is_empty() {
        return Err(Error::Usage("--evidence is needed: say what was checked (a test run, a review, a commit)".into()));
    }
    let evidence = redact(evidence).text;
    let at = now.to_rfc3339_opts(SecondsFormat::Secs, true);
    let event = log::Event {
        agent: agent.clone(),
        verifier: verifier.clone(),
        success: Some(success),
        evidence,
        at,
        self_reported,
    };
    let mut file = LockedLog::open(root, &root.join(TRUST_FILE), &root.join(TRUST_LOCK))?;
    let mut bytes = file.read_all()?;
    if let Some(why) = log::refusal(&log::read(&bytes), &agent, &verifier, now.timestamp()) {
        return Err(Error::Usage(why));
    }
    let line = event.line();
    file.append(std::slice::from_ref(&line), true)?;
    drop(file);
    // The standing from the log as it was, this line after it.
    if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let standing = log::standings(&log::read(&bytes)).remove(&agent);
    Ok(standing.map_or_else(|| Trust::unverified(&agent), |s| Trust::of(&agent, s)))
}

/// `tmws trust show`: every agent's trust, highest first.
pub fn show(root: &Path) -> Vec<Trust> {
    let mut all: Vec<Trust> = scores(root).into_values().collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.agent.cmp(&b.agent)));
    all
}

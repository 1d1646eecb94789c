//! Trust between agents (DESIGN §6): `.tmws/trust.jsonl` holds one verification per line,
//! `{agent, verifier, success, evidence, at}`. An agent's score starts at 0.5 and moves
//! +0.05 per success and −0.10 per failure, kept within [0, 1] at every step. An agent
//! never verifies itself. Memory search boosts an agent's entries by `1 + 0.5 × score`.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::index::search::DEFAULT_TRUST;
use crate::layout::{TRUST_FILE, TRUST_LOCK};
use crate::parse::jsonl;
use crate::redact::redact;
use crate::store::{self, log::LockedLog};

const SUCCESS_STEP: f64 = 0.05;
const FAILURE_STEP: f64 = 0.10;

/// An agent's standing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trust {
    pub agent: String,
    pub score: f64,
    pub successes: u64,
    pub failures: u64,
    /// When it was last verified.
    pub last: String,
}

/// `trust_show`: every agent's standing, highest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrustList {
    pub agents: Vec<Trust>,
}

/// `trust_verify`: who verified, and the agent's standing after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verified {
    pub verifier: String,
    #[serde(flatten)]
    pub trust: Trust,
}

impl Trust {
    fn new(agent: &str) -> Trust {
        Trust { agent: agent.to_owned(), score: DEFAULT_TRUST, successes: 0, failures: 0, last: String::new() }
    }

    fn apply(&mut self, success: bool, at: &str) {
        if success {
            self.successes += 1;
            self.score = (self.score + SUCCESS_STEP).clamp(0.0, 1.0);
        } else {
            self.failures += 1;
            self.score = (self.score - FAILURE_STEP).clamp(0.0, 1.0);
        }
        // Two decimals: repeated steps of 0.05 stay exact to the eye.
        self.score = (self.score * 100.0).round() / 100.0;
        at.clone_into(&mut self.last);
    }
}

/// Every agent's trust, from the log (bad lines and self-verifications are skipped).
pub fn scores(root: &Path) -> BTreeMap<String, Trust> {
    let bytes = store::read_opt(root, &root.join(TRUST_FILE), store::cap::LOG).ok().flatten().unwrap_or_default();
    let (lines, _) = jsonl::parse(&bytes);
    let mut all: BTreeMap<String, Trust> = BTreeMap::new();
    for line in lines {
        let v = &line.value;
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let (Some(agent), Some(verifier), Some(success)) =
            (text("agent"), text("verifier"), v.get("success").and_then(Value::as_bool))
        else {
            continue;
        };
        if agent == verifier {
            continue;
        }
        all.entry(agent.to_owned()).or_insert_with(|| Trust::new(agent)).apply(success, text("at").unwrap_or(""));
    }
    all
}

/// `tmws trust verify`: records that `verifier` checked `agent`'s work; answers the new score.
pub fn verify(
    root: &Path,
    agent: &str,
    verifier: &str,
    success: bool,
    evidence: &str,
    now: DateTime<Utc>,
) -> Result<Trust> {
    let (agent, verifier, evidence) = (agent.trim(), verifier.trim(), evidence.trim());
    if agent.is_empty() || verifier.is_empty() {
        return Err(Error::Usage("both --agent and --verifier are needed".into()));
    }
    if agent == verifier {
        return Err(Error::Usage(format!("`{agent}` cannot verify itself: a verifier must be another agent")));
    }
    if evidence.is_empty() {
        return Err(Error::Usage("--evidence is needed: say what was checked (a test run, a review, a commit)".into()));
    }
    // Names are redacted like a memory's agent, so that the two still match.
    let (agent, verifier, evidence) = (redact(agent).text, redact(verifier).text, redact(evidence).text);
    let at = now.to_rfc3339_opts(SecondsFormat::Secs, true);
    let line = json!({"agent": agent, "verifier": verifier, "success": success, "evidence": evidence, "at": at});
    let mut log = LockedLog::open(root, &root.join(TRUST_FILE), &root.join(TRUST_LOCK))?;
    log.append(&[line.to_string()], true)?;
    drop(log);
    Ok(scores(root).remove(&agent).unwrap_or_else(|| Trust::new(&agent)))
}

/// `tmws trust show`: every agent's trust, highest first.
pub fn show(root: &Path) -> Vec<Trust> {
    let mut all: Vec<Trust> = scores(root).into_values().collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.agent.cmp(&b.agent)));
    all
}

//! The trust log, `.tmws/trust.jsonl` (docs/trust.md), read without touching the disk: how
//! names compare, which verifications count towards an agent's score, and the lines tmws
//! would never have written.
//!
//! A verification is one line `{agent, verifier, success, evidence, at}`. Names compare
//! normalised ([`normalize`]: invisible characters out, Unicode NFKC, case-folded), so
//! `Claude`, `ｃｌａｕｄｅ` and `cl\u{200b}aude` are one name: a verifier that is the agent
//! in another spelling verifies itself, and is not counted. A score starts at 0.5, moves
//! +0.05 per success and −0.10 per failure, within [0, 1] at every step, and counts at
//! most [`PER_VERIFIER`] verifications of an agent by one verifier (its latest): only
//! several verifiers can lift an agent far. tmws records at most one verification of an
//! agent by a verifier in one second and at most [`PER_AGENT_SECOND`] of an agent in one
//! second; lines past that were written some other way, and are reported and not counted.
//!
//! A line is an [`Event`], written by `tmws trust verify` and read here; the schema
//! `schemas/trust.schema.json` is generated from it (a test in `schema` holds them equal).

use std::collections::BTreeMap;

use icu_normalizer::ComposingNormalizerBorrowed;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::text::{escape_controls, is_default_ignorable};
use super::{jsonl, lenient};
use crate::model::{Diagnostic, Rule};

/// One line of the trust log (`.tmws/trust.jsonl`): one verification of an agent's work.
/// Read leniently: a field of the wrong type is read as missing, and the line is then
/// reported and not counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "One line of the trust log (.tmws/trust.jsonl)",
    extend("$id" = "trust.schema.json")
)]
pub struct Event {
    /// The agent whose work was checked, its name as names compare (`normalize`).
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub agent: String,
    /// Who checked it: `human` at the command line, else the session's identity; never
    /// the agent itself.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub verifier: String,
    /// Whether the work held up.
    #[serde(default, deserialize_with = "lenient::option")]
    #[schemars(with = "bool")]
    pub success: Option<bool>,
    /// What was checked: a test run, a review, a commit (secrets redacted).
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub evidence: String,
    /// When: RFC 3339, UTC seconds with `Z`.
    #[serde(default, deserialize_with = "lenient::or_default")]
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
    /// The verifier's name is only what its MCP client reported for itself: neither the
    /// server's `--agent` nor an HTTP token bound to an agent vouches for it. Written only
    /// when true.
    #[serde(default, deserialize_with = "lenient::or_default", skip_serializing_if = "std::ops::Not::not")]
    pub self_reported: bool,
}

impl Event {
    /// The line that holds it (without its `\n`).
    pub fn line(&self) -> String {
        // Strings and a boolean always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The person at the command line: the verifier of `tmws trust verify` and the writer of
/// what `tmws memory add` stores. Never scored; its trust is [`HUMAN_TRUST`].
pub const HUMAN: &str = "human";
/// The trust of [`HUMAN`]: the person decides what the project holds true.
pub const HUMAN_TRUST: f64 = 1.0;
/// The trust of an agent nobody has verified.
pub const START: f64 = 0.5;
/// What a success adds.
pub const SUCCESS_STEP: f64 = 0.05;
/// What a failure takes away.
pub const FAILURE_STEP: f64 = 0.10;
/// At most this many verifications of one agent by one verifier count (the latest).
pub const PER_VERIFIER: usize = 3;
/// tmws records at most this many verifications of one agent in one second.
pub const PER_AGENT_SECOND: usize = 3;

/// A name as names are compared: default-ignorable and control characters taken out
/// (zero-width spaces and joiners, bidirectional marks, variation selectors…), Unicode
/// NFKC (fullwidth and other compatibility forms become the plain letters), case-folded,
/// and runs of white space made one space, trimmed.
pub fn normalize(name: &str) -> String {
    let visible: String = name.chars().filter(|c| !c.is_control() && !is_default_ignorable(*c)).collect();
    let nfkc = ComposingNormalizerBorrowed::new_nfkc();
    let folded = fold_case(&nfkc.normalize(&visible));
    // Lowercasing can undo NFKC for a few letters; normalise once more.
    let again = nfkc.normalize(&folded);
    again.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Unicode case folding as far as names need it: lowercase, with the full foldings that
/// lowercasing leaves (`ß` → `ss`, final sigma → sigma).
fn fold_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            'ß' | 'ẞ' => out.push_str("ss"),
            'ς' => out.push('σ'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// One verification that counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// 1-based line of the log.
    pub line: usize,
    /// The agent verified, normalised.
    pub agent: String,
    /// Who verified it, normalised.
    pub verifier: String,
    pub success: bool,
    /// When, as the line says it.
    pub at: String,
    /// When, in seconds since the epoch.
    pub second: i64,
    /// The verifier's name is what its client reported ([`Event::self_reported`]).
    pub self_reported: bool,
}

/// A trust log read: the verifications that count, in the order of the log, and what is
/// wrong with the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustLog {
    pub counted: Vec<Verification>,
    pub problems: Vec<Diagnostic>,
}

/// An agent's standing, from the verifications that count.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub score: f64,
    /// Successes and failures counted (at most [`PER_VERIFIER`] per verifier).
    pub successes: u64,
    pub failures: u64,
    /// Distinct verifiers counted.
    pub verifiers: u64,
    /// When it was last verified.
    pub last: String,
    /// Of the verifications counted, those whose verifier's name was self-reported.
    pub self_reported: u64,
}

/// Reads a trust log.
pub fn read(bytes: &[u8]) -> TrustLog {
    let (lines, mut problems) = jsonl::parse(bytes);
    let mut counted: Vec<Verification> = Vec::new();
    // Lines counted so far in each second: by agent, and by agent and verifier.
    let mut per_agent: BTreeMap<(String, i64), Vec<usize>> = BTreeMap::new();
    let mut per_pair: BTreeMap<(String, String, i64), usize> = BTreeMap::new();
    for line in lines {
        let raw = raw_line(bytes, line.offset);
        let column = |field: &str| raw.find(&format!("\"{field}\"")).map_or(1, |i| raw[..i].chars().count() + 1);
        // Every field is read leniently: this cannot fail on an object.
        let event = Event::deserialize(&line.value).unwrap_or_default();
        let skipped = |rule: Rule, field: &str, message: String| {
            Diagnostic::error(rule, line.line, column(field), format!("{message}; line skipped"))
        };
        let agent = normalize(&event.agent);
        if agent.is_empty() {
            problems.push(
                skipped(Rule::JsonlLine, "agent", "a verification of no agent".into())
                    .with_hint("tmws writes `agent`: the name of the agent whose work was checked"),
            );
            continue;
        }
        if agent == HUMAN {
            problems.push(
                skipped(
                    Rule::JsonlLine,
                    "agent",
                    format!("a verification of `{HUMAN}`, the person at the command line"),
                )
                .with_hint("tmws scores agents, never the person, and never writes this line"),
            );
            continue;
        }
        let Some(success) = event.success else {
            problems.push(skipped(Rule::JsonlLine, "success", "`success` is not true or false".into()));
            continue;
        };
        let raw_verifier = event.verifier.as_str();
        let verifier = normalize(raw_verifier);
        if verifier.is_empty() {
            problems.push(
                skipped(Rule::TrustVerifier, "verifier", "a verification by no one: the verifier is missing or empty".into())
                    .with_hint("tmws always names the verifier (`human` at the command line, the client over MCP): this line was written some other way"),
            );
            continue;
        }
        if verifier == agent {
            problems.push(
                skipped(
                    Rule::TrustSelf,
                    "verifier",
                    format!("`{}` verifies itself (the names compare as `{agent}`)", shown(raw_verifier)),
                )
                .with_hint("an agent never verifies its own work; tmws refuses to write this line"),
            );
            continue;
        }
        if raw_verifier != verifier {
            problems.push(
                Diagnostic::warning(
                    Rule::TrustVerifier,
                    line.line,
                    column("verifier"),
                    format!(
                        "verifier `{}` is not a name as tmws writes it: it counts as `{verifier}`",
                        shown(raw_verifier)
                    ),
                )
                .with_hint(
                    "tmws writes names case-folded, in Unicode NFKC, without invisible characters: this line was \
written some other way",
                ),
            );
        }
        let at = event.at.as_str();
        let Some(second) = chrono::DateTime::parse_from_rfc3339(at).ok().map(|t| t.timestamp()) else {
            problems.push(
                skipped(Rule::JsonlLine, "at", "no time: `at` is missing or not an RFC 3339 time".into())
                    .with_hint("tmws writes `at` as 2026-11-22T10:00:00Z"),
            );
            continue;
        };
        let pair = (agent.clone(), verifier.clone(), second);
        if let Some(first) = per_pair.get(&pair) {
            problems.push(
                skipped(
                    Rule::TrustBurst,
                    "at",
                    format!("`{verifier}` verified `{agent}` again within the same second (first on line {first})"),
                )
                .with_hint("tmws records one verification of an agent by a verifier a second"),
            );
            continue;
        }
        let same_second = per_agent.entry((agent.clone(), second)).or_default();
        if same_second.len() >= PER_AGENT_SECOND {
            problems.push(
                skipped(
                    Rule::TrustBurst,
                    "at",
                    format!(
                        "more than {PER_AGENT_SECOND} verifications of `{agent}` within one second (from line {})",
                        same_second[0]
                    ),
                )
                .with_hint(format!(
                    "tmws records at most {PER_AGENT_SECOND} verifications of an agent a second: these lines were \
written some other way"
                )),
            );
            continue;
        }
        same_second.push(line.line);
        per_pair.insert(pair, line.line);
        let self_reported = event.self_reported;
        counted.push(Verification {
            line: line.line,
            agent,
            verifier,
            success,
            at: at.to_owned(),
            second,
            self_reported,
        });
    }
    problems.sort_by_key(|d| d.line);
    TrustLog { counted, problems }
}

/// Why tmws would refuse to record this verification now, given the log: one verification
/// of an agent by a verifier a second, and [`PER_AGENT_SECOND`] of an agent.
pub fn refusal(log: &TrustLog, agent: &str, verifier: &str, second: i64) -> Option<String> {
    let this_second: Vec<&Verification> =
        log.counted.iter().filter(|v| v.agent == agent && v.second == second).collect();
    if this_second.iter().any(|v| v.verifier == verifier) {
        return Some(format!("`{verifier}` verified `{agent}` less than a second ago: one verification a second"));
    }
    (this_second.len() >= PER_AGENT_SECOND)
        .then(|| format!("`{agent}` was verified {PER_AGENT_SECOND} times this second: try again in a second"))
}

/// Every agent's standing, by normalised name. Of each verifier's verifications of an
/// agent the latest [`PER_VERIFIER`] count; they are applied in time order (the log's
/// order for the same second), so that a merge that put lines in another order gives the
/// same score.
pub fn standings(log: &TrustLog) -> BTreeMap<String, Standing> {
    let mut by_pair: BTreeMap<(&str, &str), Vec<&Verification>> = BTreeMap::new();
    for v in &log.counted {
        by_pair.entry((v.agent.as_str(), v.verifier.as_str())).or_default().push(v);
    }
    let mut by_agent: BTreeMap<&str, Vec<&Verification>> = BTreeMap::new();
    for ((agent, _), mut list) in by_pair {
        list.sort_by_key(|v| (v.second, v.line));
        let kept = list.split_off(list.len().saturating_sub(PER_VERIFIER));
        by_agent.entry(agent).or_default().extend(kept);
    }
    by_agent
        .into_iter()
        .map(|(agent, mut list)| {
            list.sort_by_key(|v| (v.second, v.line));
            let mut s = Standing {
                score: START,
                successes: 0,
                failures: 0,
                verifiers: 0,
                last: String::new(),
                self_reported: 0,
            };
            let mut verifiers: Vec<&str> = Vec::new();
            for v in list {
                if v.success {
                    s.successes += 1;
                    s.score = (s.score + SUCCESS_STEP).clamp(0.0, 1.0);
                } else {
                    s.failures += 1;
                    s.score = (s.score - FAILURE_STEP).clamp(0.0, 1.0);
                }
                // Two decimals: repeated steps of 0.05 stay exact to the eye.
                s.score = (s.score * 100.0).round() / 100.0;
                v.at.clone_into(&mut s.last);
                s.self_reported += u64::from(v.self_reported);
                if !verifiers.contains(&v.verifier.as_str()) {
                    verifiers.push(&v.verifier);
                }
            }
            s.verifiers = verifiers.len() as u64;
            (agent.to_owned(), s)
        })
        .collect()
}

/// The text of the line starting at `offset`.
fn raw_line(bytes: &[u8], offset: usize) -> String {
    let rest = bytes.get(offset..).unwrap_or_default();
    let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).into_owned()
}

/// A name from a file as a message shows it: invisible characters written as escapes, cut.
fn shown(name: &str) -> String {
    let cut: String = name.chars().take(64).collect();
    escape_controls(&cut).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_tmws_wrote_reads_and_writes_back_byte_for_byte() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/formats/trust.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let (lines, problems) = jsonl::parse(text.as_bytes());
        assert!(problems.is_empty() && lines.len() == 2);
        for (line, raw) in lines.iter().zip(text.lines()) {
            assert_eq!(Event::deserialize(&line.value).unwrap().line(), raw);
        }
        assert_eq!(read(text.as_bytes()).counted.len(), 2);
    }

    #[test]
    fn spellings_of_one_name_compare_equal() {
        for spelling in [
            "claude",
            "Claude",
            "CLAUDE",
            "ｃｌａｕｄｅ",
            "cl\u{200b}aude",
            "\u{feff}claude\u{200d}",
            "c\u{202e}laude",
            "  claude ",
            "cla\u{034f}ude",
            "ᶜlaude",
        ] {
            assert_eq!(normalize(spelling), "claude", "{spelling:?}");
        }
        assert_eq!(normalize("Straße"), "strasse");
        assert_eq!(normalize("ＣＩ  Bot"), "ci bot");
        assert_eq!(normalize("\u{200b}\u{2060}"), "");
        assert_ne!(normalize("claude-2"), "claude");
    }

    fn line(agent: &str, verifier: &str, success: bool, at: &str) -> String {
        format!(
            "{}\n",
            serde_json::json!({"agent": agent, "verifier": verifier, "success": success, "evidence": "e", "at": at})
        )
    }

    /// The rules and messages of a log's findings.
    fn findings(log: &TrustLog) -> Vec<(usize, &'static str, String)> {
        log.problems.iter().map(|d| (d.line, d.rule.as_str(), d.message.clone())).collect()
    }

    #[test]
    fn one_verifier_counts_three_times_at_most_and_several_lift_further() {
        let mut log = String::new();
        for s in 0..10 {
            log.push_str(&line("claude", "ci", true, &format!("2026-11-01T10:00:{s:02}Z")));
        }
        let got = read(log.as_bytes());
        assert!(got.problems.is_empty(), "{:?}", got.problems);
        let s = &standings(&got)["claude"];
        assert_eq!((s.score, s.successes, s.verifiers), (0.65, 3, 1));
        for (i, v) in ["review", "human", "ＣＩ"].iter().enumerate() {
            log.push_str(&line("claude", v, true, &format!("2026-11-01T11:00:{i:02}Z")));
        }
        let got = read(log.as_bytes());
        let s = &standings(&got)["claude"];
        // `ＣＩ` is `ci` again: still three of ci's, plus one of review and one of human.
        assert_eq!((s.score, s.successes, s.verifiers), (0.75, 5, 3));
        // The latest of a verifier count: a failure after three successes replaces the first.
        log.push_str(&line("claude", "ci", false, "2026-11-01T12:00:00Z"));
        let s = &standings(&read(log.as_bytes()))["claude"];
        assert_eq!((s.score, s.successes, s.failures), (0.6, 4, 1));
    }

    #[test]
    fn lines_tmws_never_writes_are_reported_and_not_counted() {
        let at = "2026-11-01T10:00:00Z";
        let log = [
            line("claude", "Claude\u{200b}", true, at),
            line("claude", "", true, at),
            line("claude", "ci", true, at),
            line("claude", "ci", true, at),
            line("claude", "a", true, at),
            line("claude", "b", true, at),
            line("claude", "c", true, at),
            line("human", "ci", true, "2026-11-01T10:00:01Z"),
            line("codex", "x", true, "yesterday"),
            line("codex", "ＲＥＶＩＥＷ", true, "2026-11-01T10:00:01Z"),
        ]
        .concat();
        let got = read(log.as_bytes());
        assert_eq!(
            findings(&got),
            [
                (
                    1,
                    "trust-self",
                    "`Claude\\u{200b}` verifies itself (the names compare as `claude`); line skipped".into()
                ),
                (
                    2,
                    "trust-verifier",
                    "a verification by no one: the verifier is missing or empty; line skipped".into()
                ),
                (
                    4,
                    "trust-burst",
                    "`ci` verified `claude` again within the same second (first on line 3); line skipped".into()
                ),
                (
                    7,
                    "trust-burst",
                    "more than 3 verifications of `claude` within one second (from line 3); line skipped".into()
                ),
                (8, "jsonl-line", "a verification of `human`, the person at the command line; line skipped".into()),
                (9, "jsonl-line", "no time: `at` is missing or not an RFC 3339 time; line skipped".into()),
                (
                    10,
                    "trust-verifier",
                    "verifier `ＲＥＶＩＥＷ` is not a name as tmws writes it: it counts as `review`".into()
                ),
            ]
        );
        let lines: Vec<usize> = got.counted.iter().map(|v| v.line).collect();
        assert_eq!(lines, [3, 5, 6, 10]);
        let second = got.counted[0].second;
        assert_eq!(
            refusal(&got, "claude", "ci", second).unwrap(),
            "`ci` verified `claude` less than a second ago: one verification a second"
        );
        assert_eq!(
            refusal(&got, "claude", "d", second).unwrap(),
            "`claude` was verified 3 times this second: try again in a second"
        );
        assert_eq!(refusal(&got, "claude", "d", second + 1), None);
    }

    #[test]
    fn the_score_is_the_same_in_any_order_of_the_lines() {
        let lines = [
            line("codex", "ci", false, "2026-11-01T10:00:00Z"),
            line("codex", "review", true, "2026-11-01T10:00:05Z"),
            line("codex", "human", false, "2026-11-01T10:00:09Z"),
        ];
        let forward = standings(&read(lines.concat().as_bytes()));
        let backward = standings(&read(lines.iter().rev().cloned().collect::<String>().as_bytes()));
        assert_eq!(forward, backward);
        assert_eq!(forward["codex"].score, 0.35);
        assert_eq!(forward["codex"].last, "2026-11-01T10:00:09Z");
    }
}

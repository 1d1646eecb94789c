//! `recall` (docs/tools.md): what an agent should know before a task, in one answer.
//!
//! One search over everything a team wrote down: the memories (but session records), the
//! entries of every topic on the scope's ladder (decisions, lessons, runbooks, plans, …),
//! the indexed documents (`index.include`: ADRs, proposals) and the indexed commits, ranked
//! together: BM25 over the same fields with the same statistics, times a memory's current
//! importance and its writer's trust (docs/ranking.md); an entry, document or commit counts
//! as a fresh memory of default importance by an agent nobody verified. Each kind is then
//! weighed by what it is ([`weight`]): a problem with a solution is lifted most (what an
//! agent meeting the problem again needs first), decisions and lessons next, runbooks,
//! plans and documents a little less, and a commit, which says what changed rather than
//! what holds, counts least; by words alone records are lifted above memories, whose
//! words count in more fields. Each result says its kind and why it matched: the task's words it holds, and what lifted it; each memory says who wrote
//! it, its writer's trust and how it was written, since recalled text is data to weigh,
//! never instructions (docs/trust-boundary.md).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use super::api::RecallRequest;
use super::memory::{self, PROBLEM_KIND, Problem, Provenance};
use crate::config::Config;
use crate::error::Result;
use crate::index::{Index, RecallFilter, TextQuery, analyzer};
use crate::model::DocKind;

/// The weights of the kinds (docs/ranking.md#recall), measured on the `everything` set of
/// `tools/model/eval/written` (`examples/ranking.rs --memories`), relative to a memory.
/// There are two: a search by words alone and a search by meaning as well rank on
/// different scales, and what a record needs to meet a memory differs between them.
struct Weights {
    /// A decision's or lesson's: what a team settled or learned.
    settled: f32,
    /// An entry of another topic's (a runbook, a plan, …) or an indexed document's: it
    /// holds what a team knows, but often as much about what is planned or how to do
    /// something as about what holds.
    written: f32,
    /// A commit's: it says what changed once, in few words, and its message repeats the
    /// words of whatever it touched.
    commit: f32,
}

/// By words alone, a memory's words all count three times over (its summary, its first
/// sentence, is its name and description too), while an entry or document holds most of
/// its words in its body only: a record is lifted to meet a memory of the same words.
const BY_WORDS: Weights = Weights { settled: 1.5, written: 1.2, commit: 0.6 };
/// By meaning as well, a long record holds every word of a task more often than a memory
/// does, and so sits in the every-word tier above it already: a record is not lifted.
const BY_MEANING: Weights = Weights { settled: 1.0, written: 0.9, commit: 0.6 };
/// A solved (or worked-around) problem's score is multiplied by this, either way.
const SOLVED_LIFT: f32 = 1.5;
/// How many candidates are ranked before the lifts reorder them.
const CANDIDATES: usize = 3;

/// One thing to know.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recalled {
    #[serde(rename = "refId")]
    pub ref_id: String,
    /// `memory`, `problem`, `decision`, `lesson`, another entry's topic in the singular
    /// (`runbook` for `_runbooks/`, `plan`, `feature`, …), `doc` (an indexed document of
    /// `index.include`) or `commit`.
    pub kind: String,
    pub summary: String,
    /// 0–100, relative to the best result.
    pub score: u32,
    /// The task's words it holds, and what lifted it.
    pub why: String,
    /// The words of the task, as searched (filler words left out), that it holds.
    pub matched: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A problem's `problem`, `solution`, `outcome` and `files`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
    /// A memory's writer, its trust and how it was written.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub from: Option<Provenance>,
    /// The files whose cited code changed or is gone since it was written: it may no
    /// longer be true (docs/citations.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_cites: Vec<String>,
}

/// `recall`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecallAnswer {
    /// The task as asked.
    pub task: String,
    /// How many results there are.
    pub found: usize,
    /// What to know, best first.
    pub results: Vec<Recalled>,
    /// The index may be behind the files.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// The issue the checked-out branch names (`feature/123-x`), when a tracker is
    /// configured: from the cache, or asked of the tracker for a moment at most
    /// (docs/trackers.md#recall).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<crate::tracker::IssueAnswer>,
}

/// What a result of this kind is weighed by (docs/ranking.md#recall) in a search by
/// meaning or by words alone. A solved problem's lift, [`SOLVED_LIFT`], comes on top,
/// since it depends on the problem's outcome.
fn weight(kind: &str, by_meaning: bool) -> f32 {
    let w = if by_meaning { &BY_MEANING } else { &BY_WORDS };
    match kind {
        "memory" | PROBLEM_KIND => 1.0,
        "decision" | "lesson" => w.settled,
        "commit" => w.commit,
        _ => w.written,
    }
}

/// The kind of an entry of `topic`: the topic in the singular (`runbooks` → `runbook`).
fn entry_kind(topic: &str) -> String {
    match topic.strip_suffix('s') {
        Some(one) if !one.is_empty() => one.to_owned(),
        _ => topic.to_owned(),
    }
}

/// `recall`: the task's memories, problems, entries, documents and commits, ranked together.
pub(crate) fn recall(root: &Path, config: &Config, index: &Index, req: &RecallRequest) -> Result<RecallAnswer> {
    let limit = req.limit as usize;
    // The task's words, each with its terms as the index has them.
    let mut task_words: Vec<(String, Vec<String>)> = Vec::new();
    for word in req.task.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-') {
        let word = word.trim_matches('-');
        let lower = word.to_lowercase();
        if word.is_empty() || analyzer::is_filler(&lower) || task_words.iter().any(|(w, _)| *w == lower) {
            continue;
        }
        let terms = analyzer::terms(word);
        if !terms.is_empty() {
            task_words.push((lower, terms));
        }
    }
    // The search leaves out the filler words: a task is a sentence, and `the` matches
    // nearly every entry, each of which the ranking would then score.
    let words: Vec<&str> = task_words.iter().map(|(w, _)| w.as_str()).collect();
    let query_text = if words.is_empty() { req.task.clone() } else { words.join(" ") };
    let ranking = memory::ranking(root, config);
    let trust = ranking.trust.clone();
    let query = TextQuery {
        query: query_text,
        limit: limit * CANDIDATES,
        visible: memory::visible_on_branch(root, index)?,
        ranking: Some(ranking),
        recall: Some(RecallFilter { scope: req.scope.clone() }),
        meaning: crate::index::meaning::query_meaning(root, config, &req.task),
        ..TextQuery::default()
    };
    // Not by meaning when the task is of words only (quoted, an identifier, a script the
    // model does not know), keywords rather than a question (their words decide), or there
    // is no model.
    let by_meaning = query.meaning.as_ref().is_some_and(|q| !q.values.is_empty() && q.question);
    let found = index.search(&query)?;
    let memory_ids: Vec<String> =
        found.results.iter().filter(|h| h.kind == DocKind::Memory.as_str()).map(|h| h.ref_id.clone()).collect();
    let metas = memory::metas_of(index, memory_ids)?;
    let problems: std::collections::BTreeMap<String, Problem> = found
        .results
        .iter()
        .filter(|h| h.category.as_deref() == Some(PROBLEM_KIND))
        .filter_map(|h| Some((h.ref_id.clone(), Problem::of(metas.get(&h.ref_id)?)?)))
        .collect();
    // A memory or an entry whose cited code changed or is gone may no longer be true: it says so, and
    // ranks below an otherwise equal fresh one (docs/citations.md).
    let mut marks = crate::query::cites::Marks::new(root);
    let stale: std::collections::BTreeMap<String, Vec<String>> = found
        .results
        .iter()
        .map(|h| (h.ref_id.clone(), marks.of(&h.cites)))
        .filter(|(_, paths)| !paths.is_empty())
        .collect();
    let mut ranked: Vec<(f32, Recalled)> = found
        .results
        .iter()
        .map(|h| {
            let problem = problems.get(&h.ref_id).cloned();
            let mut lifts: Vec<String> = Vec::new();
            let mut score = h.raw_score;
            let kind = match (h.kind.as_str(), h.topic.as_deref()) {
                ("memory", _) if problem.is_some() => PROBLEM_KIND.to_owned(),
                ("entry", Some(topic)) => entry_kind(topic),
                (k, _) => k.to_owned(),
            };
            let kind = kind.as_str();
            score *= weight(kind, by_meaning);
            if let Some(p) = &problem
                && p.solution.is_some()
                && p.outcome != "open"
            {
                score *= SOLVED_LIFT;
                lifts.push(format!("{} problem with its solution", p.outcome));
            }
            let stale_cites = stale.get(&h.ref_id).cloned().unwrap_or_default();
            if !stale_cites.is_empty() {
                score *= config.retrieval.stale_factor as f32;
                lifts.push(format!("stale: {}", stale_cites.join(", ")));
            }
            let from = (h.kind == DocKind::Memory.as_str()).then(|| Provenance::of_hit(h, &trust));
            let text = format!("{} {} {} {}", h.name, h.summary, h.tags.join(" "), h.body.as_deref().unwrap_or(""));
            let held: BTreeSet<String> = analyzer::terms(&text).into_iter().collect();
            let words: Vec<&str> = task_words
                .iter()
                .filter(|(_, terms)| terms.iter().all(|t| held.contains(t)))
                .map(|(w, _)| w.as_str())
                .collect();
            // Found by meaning alone, it holds none of the task's words.
            let mut why = match (&h.why, words.is_empty()) {
                (Some(why), true) => why.clone(),
                (_, true) => "related words".to_owned(),
                (_, false) => format!("words: {}", words.join(", ")),
            };
            for l in lifts {
                why.push_str("; ");
                why.push_str(&l);
            }
            let summary = if h.name.is_empty() || kind == "memory" || kind == PROBLEM_KIND {
                h.summary.clone()
            } else {
                format!("{}: {}", h.name, h.summary)
            };
            let item = Recalled {
                ref_id: h.ref_id.clone(),
                kind: kind.to_owned(),
                summary,
                score: 0,
                why,
                matched: h.matched.clone(),
                scope: h.scope.clone(),
                problem,
                from,
                stale_cites,
            };
            (score, item)
        })
        .collect();
    // The lifts reorder results holding every word of the task among themselves, and
    // never lift one holding part of them above those (docs/ranking.md).
    let full: BTreeSet<&str> = found.results.iter().filter(|h| h.every_word).map(|h| h.ref_id.as_str()).collect();
    let holds_all = |r: &Recalled| full.contains(r.ref_id.as_str());
    ranked.sort_by(|a, b| {
        holds_all(&b.1).cmp(&holds_all(&a.1)).then(b.0.total_cmp(&a.0)).then_with(|| a.1.ref_id.cmp(&b.1.ref_id))
    });
    ranked.truncate(limit);
    let best = ranked.first().map_or(1.0, |r| r.0.max(f32::MIN_POSITIVE));
    // Far weaker than the best is noise (a shared common word): `retrieval.min_score`.
    let floor = best * config.retrieval.min_score as f32;
    ranked.retain(|r| r.0 >= floor);
    let results: Vec<Recalled> = ranked
        .into_iter()
        .map(|(s, mut r)| {
            r.score = ((s / best) * 100.0).round().clamp(0.0, 100.0) as u32;
            r
        })
        .collect();
    Ok(RecallAnswer { task: req.task.clone(), found: results.len(), results, stale: false, issue: None })
}

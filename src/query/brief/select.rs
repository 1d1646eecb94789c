//! What each event brings (docs/hooks.md#what-each-event-brings), and the gate.
//!
//! A session's start brings the lay of the land: the workspaces' overviews, the newest
//! decisions and lessons, the settled memories that matter most on this branch, the open
//! problems and the last session's summary. After a compaction the same, then what was
//! briefed before it. A prompt brings what the prompt's words or meaning find; a shell
//! command what its words or meaning find among lessons, problems and decisions; an edit
//! or a write what cites the file (a problem's `files`) or holds the words of its path.
//!
//! The gate: an item its words find is briefed only when it is relevant enough
//! ([`relevance`], `[hooks] min_score`). Relevance is the share of the asked words it
//! holds, each word weighed by its rarity (a word most items hold says little), with a
//! single word below the gate alone; closeness in meaning lifts it; naming the file about
//! to be edited makes it relevant. A command made only of programs that look (`ls`, `git
//! status`) asks nothing.

use std::collections::BTreeSet;
use std::path::Path;

use super::state::Session;
use super::{Event, root_relative};
use crate::config::Config;
use crate::error::Result;
use crate::index::{Index, ItemQuery, RecallFilter, TextQuery, analyzer};
use crate::model::DocKind;
use crate::parse::payload::Payload;
use crate::query::memory::{self, PROBLEM_KIND, Problem, Provenance};

/// An item a briefing may hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub ref_id: String,
    /// `overview`, `decision`, `lesson`, another topic's singular, `problem`, a memory's
    /// kind (`note`, `pattern`, `session`, …), or `doc`.
    pub kind: String,
    /// What it says, as quoted: a summary, or a problem with its solution.
    pub text: String,
    /// Who wrote it and how far they are trusted; where it comes from.
    pub from: String,
    /// When it was written (a date), when known.
    pub date: Option<String>,
    /// 0–1: how relevant it is to what is about to happen (1 for what an event always brings).
    pub relevance: f32,
    /// Why it is briefed, in a few words.
    pub why: String,
    /// The files whose cited code changed or is gone since it was written.
    pub stale: Vec<String>,
}

/// How many results a search for a briefing ranks before the gate.
const SEARCHED: usize = 12;
/// The most items a prompt or a tool call is briefed with.
const MOST_ON_ACTION: usize = 3;
/// The most of each part of a session start's briefing.
const OVERVIEWS: usize = 3;
const SETTLED: usize = 8;
const OPEN_PROBLEMS: usize = 5;
/// How much a single word, however rare, weighs as evidence (of 1): less than the default
/// gate, so that one word alone briefs nothing (`cargo build` is not about every item that
/// says *build*).
const ONE_WORD: f32 = 0.3;
/// The relevance of an item whose text names the file about to be edited, or its folder.
const NAMED: f32 = 0.9;
/// The cosine below which meaning adds nothing, and the span above it to full relevance.
const COSINE_FLOOR: f32 = 0.35;
const COSINE_SPAN: f32 = 0.4;

/// Words of a shell command that say what runs it, not what it is about.
const SHELL_WORDS: [&str; 40] = [
    "sudo", "env", "cd", "ls", "ll", "cat", "echo", "less", "head", "tail", "grep", "rg", "find", "xargs", "sed",
    "awk", "sh", "bash", "zsh", "exec", "time", "npx", "npm", "pnpm", "yarn", "bun", "node", "python", "python3",
    "pip", "uv", "cargo", "go", "make", "git", "run", "bin", "usr", "dev", "null",
];
/// Programs that only look: a command made of them changes nothing, and no lesson governs it.
const LOOKERS: [&str; 30] = [
    "ls", "ll", "la", "cat", "bat", "less", "more", "head", "tail", "wc", "grep", "rg", "ag", "find", "fd", "tree",
    "stat", "file", "du", "df", "pwd", "echo", "printf", "which", "type", "whoami", "date", "sort", "uniq", "jq",
];
/// Subcommands that only look, by program.
const LOOKING: [(&str, &[&str]); 4] = [
    (
        "git",
        &["status", "log", "diff", "show", "branch", "fetch", "remote", "blame", "rev-parse", "ls-files", "shortlog"],
    ),
    ("docker", &["ps", "images", "logs", "inspect", "compose"]),
    ("kubectl", &["get", "describe", "logs", "top"]),
    ("compose", &["ps", "logs", "config"]),
];
/// Parts of a path that say nothing of what a file is about.
const PATH_WORDS: [&str; 24] = [
    "src", "lib", "mod", "main", "index", "app", "rs", "ts", "tsx", "js", "jsx", "py", "go", "md", "json", "yaml",
    "yml", "toml", "txt", "test", "tests", "spec", "util", "utils",
];

/// The candidates of `event`, best first.
pub fn candidates(
    root: &Path,
    config: &Config,
    index: &Index,
    event: Event,
    payload: &Payload,
    session: &Session,
) -> Result<Vec<Candidate>> {
    match event {
        Event::SessionStart | Event::PostCompact => start(root, index, event, session),
        Event::Prompt => {
            let Some(prompt) = &payload.prompt else { return Ok(Vec::new()) };
            let words = words_of(prompt, &[]);
            found(root, config, index, prompt, &words, |_| true, &[], true)
        }
        Event::PreTool => pre_tool(root, config, index, payload),
        Event::SessionEnd => Ok(Vec::new()),
    }
}

/// A session's start: overviews, settled knowledge, open problems, the last session.
fn start(root: &Path, index: &Index, event: Event, session: &Session) -> Result<Vec<Candidate>> {
    let trust = crate::query::trust::ranking_scores(root);
    let mut out: Vec<Candidate> = Vec::new();
    // Listed by refId without their stored fields, which only the few briefed are read for:
    // a large workspace holds thousands.
    let overviews = index.item_list(&ItemQuery { kinds: vec![DocKind::Overview], ..ItemQuery::default() })?;
    for i in 0..overviews.len().min(OVERVIEWS) {
        out.push(of_item(&overviews.get(i)?, "overview", &trust, "the workspace"));
    }
    let topics = vec!["decisions".to_owned(), "lessons".to_owned()];
    let settled = index.item_list(&ItemQuery { kinds: vec![DocKind::Entry], topics, ..ItemQuery::default() })?;
    // Newest first by file name: an entry's name starts with its date.
    let mut order: Vec<usize> = (0..settled.len()).collect();
    let name = |i: usize| settled.ref_id(i).rsplit('/').next().unwrap_or("").to_owned();
    order.sort_by_cached_key(|i| std::cmp::Reverse((name(*i), settled.ref_id(*i).to_owned())));
    let kind_of = |i: &crate::index::Item| entry_kind(i.topic.as_deref().unwrap_or("entries"));
    for i in order.into_iter().take(SETTLED) {
        let item = settled.get(i)?;
        out.push(of_item(&item, &kind_of(&item), &trust, "settled"));
    }
    let visible = memory::visible_on_branch(root, index)?;
    let branch = crate::store::git_head(root).and_then(|h| h.branch);
    let latest = |kinds: &[&str], limit: usize| {
        let req = TextQuery {
            categories: kinds.iter().map(|k| (*k).to_owned()).collect(),
            visible: visible.clone(),
            limit,
            ..TextQuery::default()
        };
        index.latest_memories(&req, None).map(|(_, items)| items)
    };
    // Settled memories: this branch's first, then the most important, then the newest.
    let mut memories = latest(&["decision", "lesson", "pattern"], 4 * SETTLED)?;
    memories.sort_by(|a, b| {
        let here = |i: &crate::index::Item| branch.is_some() && i.branch == branch;
        here(b).cmp(&here(a)).then(b.importance.unwrap_or(0.5).total_cmp(&a.importance.unwrap_or(0.5)))
    });
    out.extend(memories.iter().take(SETTLED).map(|m| of_memory(m, &trust, "settled")));
    let problems = latest(&[PROBLEM_KIND], 8 * OPEN_PROBLEMS)?;
    let open = problems.iter().filter(|p| p.meta.as_ref().and_then(Problem::of).is_some_and(|p| p.outcome == "open"));
    out.extend(open.take(OPEN_PROBLEMS).map(|p| of_memory(p, &trust, "open problem")));
    if let Some(last) = latest(&["session"], 1)?.first() {
        out.push(of_memory(last, &trust, "the last session"));
    }
    if event == Event::PostCompact {
        let earlier = session.before_compaction();
        if !earlier.is_empty() {
            let again = index.items(&ItemQuery { ref_ids: earlier.clone(), ..ItemQuery::default() })?;
            for id in earlier {
                if let Some(item) = again.iter().find(|i| i.ref_id == id)
                    && !out.iter().any(|c| c.ref_id == id)
                {
                    out.push(if item.kind == DocKind::Memory.as_str() {
                        of_memory(item, &trust, "briefed before the compaction")
                    } else {
                        let kind = kind_of(item);
                        of_item(item, &kind, &trust, "briefed before the compaction")
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Before a tool call: what cites the files it edits, then what its command's or its
/// paths' words find among lessons, problems and decisions.
fn pre_tool(root: &Path, config: &Config, index: &Index, payload: &Payload) -> Result<Vec<Candidate>> {
    let trust = crate::query::trust::ranking_scores(root);
    let paths = root_relative(root, payload.cwd.as_deref(), &payload.paths);
    let mut out: Vec<Candidate> = Vec::new();
    if !paths.is_empty() {
        // A file, and each folder above it: a citation of `migrations/` covers its files.
        let mut cited: Vec<String> = Vec::new();
        for p in &paths {
            cited.push(p.clone());
            let mut at = p.as_str();
            while let Some(cut) = at.rfind('/') {
                at = &at[..cut];
                cited.push(format!("{at}/"));
            }
        }
        let visible = memory::visible_on_branch(root, index)?;
        let req = TextQuery { visible, limit: SEARCHED, ..TextQuery::default() };
        for item in index.citing(&req, &cited)? {
            let mut c = of_memory(&item, &trust, "");
            c.relevance = 1.0;
            c.why = format!("cites {}", paths.join(", "));
            out.push(c);
        }
    }
    let settled = |c: &Candidate| !matches!(c.kind.as_str(), "session" | "overview" | "doc" | "commit");
    if let Some(command) = payload.command.as_deref().and_then(acting) {
        let words = words_of(&command, &SHELL_WORDS);
        out.extend(found(root, config, index, &command, &words, settled, &[], false)?);
    }
    if !paths.is_empty() {
        let text = paths.join(" ");
        let words = words_of(&text.replace(['/', '.', '_', '-'], " "), &PATH_WORDS);
        out.extend(found(root, config, index, &text, &words, settled, &named_by(&paths), false)?);
    }
    let mut seen = BTreeSet::new();
    out.retain(|c| seen.insert(c.ref_id.clone()));
    Ok(out)
}

/// The parts of a shell command that act, joined: those whose program (after `sudo`,
/// `env` and variable assignments) only looks are left out (`ls`, `git status`, `docker
/// compose ps`). None when every part only looks.
fn acting(command: &str) -> Option<String> {
    let parts = command.split(['|', ';', '&', '\n']).filter(|p| !p.trim().is_empty());
    let acting: Vec<&str> = parts.filter(|part| !only_looks(part)).collect();
    (!acting.is_empty()).then(|| acting.join(" ; "))
}

fn only_looks(part: &str) -> bool {
    let mut words = part
        .split_whitespace()
        .skip_while(|w| matches!(*w, "sudo" | "env" | "time" | "command") || w.contains('='))
        .filter(|w| !w.starts_with('-'))
        .map(|w| w.rsplit('/').next().unwrap_or(w));
    let Some(program) = words.next() else { return true };
    if LOOKERS.contains(&program) {
        return true;
    }
    let sub = words.next();
    LOOKING.iter().any(|(p, subs)| {
        *p == program
            && sub.is_some_and(|s| {
                subs.contains(&s)
                    && (s != "compose" || words.next().is_some_and(|t| ["ps", "logs", "config"].contains(&t)))
            })
    })
}

/// What an item's text must name to be about the files `paths`: each file, and the folder
/// above it when that says something (`tests/payments`, not `src`).
fn named_by(paths: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        out.push(p.clone());
        if let Some((dir, _)) = p.rsplit_once('/') {
            let last = dir.rsplit('/').next().unwrap_or(dir);
            if !PATH_WORDS.contains(&last.to_lowercase().as_str()) && !out.iter().any(|d| d == dir) {
                out.push(dir.to_owned());
            }
        }
    }
    out
}

/// Whether `text` names `path` as a whole: not inside a longer name.
fn names(text: &str, path: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.';
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        before.is_none_or(|c| !word(c) && c != '/') && after.is_none_or(|c| !word(c) || c == '.' && path.contains('.'))
    })
}

/// The words of `text` a search for it asks, without filler words, the `noise` words,
/// flags, numbers alone and one-letter words, each once and lower-cased.
fn words_of(text: &str, noise: &[&str]) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    // A flag says how, not what (`-la`); the value it is given may say what (`--env=prod`).
    let tokens = text.split_whitespace().filter_map(|t| match t.strip_prefix('-') {
        Some(flag) => flag.split_once('=').map(|(_, value)| value),
        None => Some(t),
    });
    // Japanese is typed without spaces: its words are the runs between the hiragana that
    // ends them (particles, endings), so `決済テストが失敗する` asks `決済テスト` and `失敗`.
    let kana = |c: char| ('\u{3040}'..='\u{309f}').contains(&c);
    let split = |c: char| (!c.is_alphanumeric() && c != '_') || kana(c);
    for word in tokens.flat_map(|t| t.split(split)) {
        let lower = word.trim_matches('_').to_lowercase();
        let short = lower.chars().count() < 2 && !lower.chars().any(analyzer::is_cjk);
        if lower.is_empty()
            || short
            || lower.chars().all(|c| c.is_ascii_digit())
            || analyzer::is_filler(&lower)
            || noise.contains(&lower.as_str())
            || words.contains(&lower)
        {
            continue;
        }
        words.push(lower);
    }
    words
}

/// What a search for `words` (and the meaning of `text`) finds among what recall looks
/// at, of the kinds `keep` keeps, above the gate, most relevant first. An item whose text
/// names one of `named` (the files an edit is about) is relevant as such. `by_meaning`:
/// closeness in meaning lifts what the words found — for a prompt, written in sentences;
/// not for a command or a path, whose words the model reads poorly (on the replay set,
/// meaning briefed one distractor command more and found no labelled one the words missed).
#[allow(clippy::too_many_arguments)]
fn found(
    root: &Path,
    config: &Config,
    index: &Index,
    text: &str,
    words: &[String],
    keep: impl Fn(&Candidate) -> bool,
    named: &[String],
    by_meaning: bool,
) -> Result<Vec<Candidate>> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let query = TextQuery {
        query: words.join(" "),
        limit: SEARCHED,
        visible: memory::visible_on_branch(root, index)?,
        ranking: Some(memory::ranking(root, config)),
        recall: Some(RecallFilter { scope: None }),
        // Found by words only: meaning then weighs what they found. A search of every
        // vector first costs a process more than a hook may take (it reads them all), and
        // on the replay set it briefed worse (80 of 84 labelled payloads against 83).
        meaning: None,
        ..TextQuery::default()
    };
    let hits = index.search(&query)?.results;
    // Each word's terms and their rarity.
    let terms: Vec<Vec<String>> = words.iter().map(|w| analyzer::terms(w)).collect();
    let flat: Vec<String> = terms.iter().flatten().cloned().collect();
    let rarity = index.rarity(&flat)?;
    let mut rare = rarity.into_iter();
    let weights: Vec<Vec<f32>> = terms.iter().map(|t| t.iter().map(|_| rare.next().unwrap_or(0.0)).collect()).collect();
    let total: f32 = weights.iter().flatten().sum();
    let ids: Vec<String> = hits.iter().map(|h| h.ref_id.clone()).collect();
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    // The model is read only when the words found something for it to weigh.
    // By the model alone: loading an encoder of `[semantic] memories` costs a hook more
    // than it may take.
    let meaning = if by_meaning { crate::index::meaning::model_meaning(root, config, text) } else { None };
    let cosines = match meaning {
        Some(q) => index.cosines(&q, &ids)?,
        None => Default::default(),
    };
    let trust = crate::query::trust::ranking_scores(root);
    let problem_ids: Vec<String> = hits
        .iter()
        .filter(|h| h.kind == DocKind::Memory.as_str() && h.category.as_deref() == Some(PROBLEM_KIND))
        .map(|h| h.ref_id.clone())
        .collect();
    let problems = memory::problems_of(index, problem_ids)?;
    let mut out: Vec<Candidate> = Vec::new();
    for h in &hits {
        let body = h.body.as_deref().unwrap_or("");
        let problem = problems.get(&h.ref_id);
        let extra =
            problem.map(|p| format!("{} {}", p.problem, p.solution.as_deref().unwrap_or(""))).unwrap_or_default();
        let held: BTreeSet<String> =
            analyzer::terms(&format!("{} {} {} {body} {extra}", h.name, h.summary, h.tags.join(" ")))
                .into_iter()
                .collect();
        let mut weight_held = 0.0;
        let mut words_held = 0;
        let mut evidence = 0;
        for ((word, t), w) in words.iter().zip(&terms).zip(&weights) {
            let got: f32 = t.iter().zip(w).filter(|(t, _)| held.contains(*t)).map(|(_, w)| *w).sum();
            // A run of CJK text typed without spaces is one word of many bigrams: each
            // bigram held counts as a word.
            if word.chars().any(analyzer::is_cjk) {
                evidence += t.iter().filter(|t| held.contains(*t)).count();
            } else if got > 0.0 {
                evidence += 1;
            }
            if got > 0.0 {
                words_held += 1;
            }
            weight_held += got;
        }
        let cosine = cosines.get(&h.ref_id).copied();
        let mut relevance = relevance(weight_held, total, evidence, cosine);
        let whole = format!("{} {} {body} {extra}", h.name, h.summary);
        let named_here = named.iter().find(|p| names(&whole, p));
        if named_here.is_some() {
            relevance = relevance.max(NAMED);
        }
        let kind = match (h.kind.as_str(), h.topic.as_deref()) {
            ("memory", _) => h.category.clone().unwrap_or_else(|| "note".into()),
            ("entry", Some(topic)) => entry_kind(topic),
            (k, _) => k.to_owned(),
        };
        let is_memory = h.kind == DocKind::Memory.as_str();
        let from = if is_memory { provenance(&Provenance::of_hit(h, &trust)) } else { "file".to_owned() };
        let text = match problem {
            Some(p) => problem_text(p),
            None if h.name.is_empty() || is_memory => h.summary.clone(),
            None => format!("{}: {}", h.name, h.summary),
        };
        let why = match (named_here, words_held, cosine) {
            (Some(p), _, _) => format!("names {p}"),
            (None, 0, Some(c)) => format!("meaning {c:.2}"),
            (None, n, _) => format!("{n} of {} words", words.len()),
        };
        let c = Candidate {
            ref_id: h.ref_id.clone(),
            kind,
            text,
            from,
            date: h.created.as_deref().map(day),
            relevance,
            why,
            stale: Vec::new(),
        };
        if relevance >= config.hooks.min_score as f32 && keep(&c) {
            out.push(c);
        }
    }
    out.sort_by(|a, b| b.relevance.total_cmp(&a.relevance).then_with(|| a.ref_id.cmp(&b.ref_id)));
    out.truncate(MOST_ON_ACTION);
    Ok(out)
}

/// How relevant an item is, 0–1: the rarity-weighted share of the asked words it holds
/// (a single word held counts [`ONE_WORD`] at most), raised halfway towards its closeness
/// in meaning when that is higher.
pub fn relevance(weight_held: f32, total: f32, words_held: usize, cosine: Option<f32>) -> f32 {
    let mut lexical = if total > 0.0 { (weight_held / total).clamp(0.0, 1.0) } else { 0.0 };
    if words_held < 2 {
        lexical *= ONE_WORD;
    }
    let meaning = cosine.map_or(0.0, |c| ((c - COSINE_FLOOR) / COSINE_SPAN).clamp(0.0, 1.0));
    if meaning > lexical { (lexical + meaning) / 2.0 } else { lexical }
}

/// The kind of an entry of `topic`: the topic in the singular (`runbooks` → `runbook`).
fn entry_kind(topic: &str) -> String {
    match topic.strip_suffix('s') {
        Some(one) if !one.is_empty() => one.to_owned(),
        _ => topic.to_owned(),
    }
}

/// A date out of an RFC 3339 time (or a date).
fn day(time: &str) -> String {
    time.chars().take(10).collect()
}

fn provenance(p: &Provenance) -> String {
    format!("by {} via {}, trust {:.2}", p.author, p.source, p.trust)
}

fn problem_text(p: &Problem) -> String {
    let mut text = format!("Problem ({}): {}", p.outcome, p.problem.trim());
    if let Some(s) = &p.solution {
        text.push_str(" — Solution: ");
        text.push_str(s.trim());
    }
    if !p.files.is_empty() {
        text.push_str(" — Files: ");
        text.push_str(&p.files.join(", "));
    }
    text
}

/// A document's candidate (an overview, an entry).
fn of_item(
    i: &crate::index::Item,
    kind: &str,
    _trust: &std::collections::BTreeMap<String, f64>,
    why: &str,
) -> Candidate {
    let text = if i.name.is_empty() || i.name == i.description {
        i.description.clone()
    } else {
        format!("{}: {}", i.name, i.description)
    };
    Candidate {
        ref_id: i.ref_id.clone(),
        kind: kind.to_owned(),
        text,
        from: "file".to_owned(),
        date: i.created.as_deref().map(day),
        relevance: 1.0,
        why: why.to_owned(),
        stale: Vec::new(),
    }
}

/// A memory's candidate.
fn of_memory(m: &crate::index::Item, trust: &std::collections::BTreeMap<String, f64>, why: &str) -> Candidate {
    let problem = m.meta.as_ref().and_then(Problem::of);
    let kind = match &problem {
        Some(_) => PROBLEM_KIND.to_owned(),
        None => m.category.clone().unwrap_or_else(|| "note".into()),
    };
    Candidate {
        ref_id: m.ref_id.clone(),
        kind,
        text: problem.as_ref().map_or_else(|| m.description.clone(), problem_text),
        from: provenance(&Provenance::of_item(m, trust)),
        date: m.created.as_deref().map(day),
        relevance: 1.0,
        why: why.to_owned(),
        stale: Vec::new(),
    }
}

/// Marks the memories and entries among `candidates` whose cited code changed or is gone,
/// and lowers their relevance by `retrieval.stale_factor` (docs/citations.md): a briefing
/// says so, and of those a prompt or a tool call brings, a stale one comes after a fresh one
/// as relevant.
pub fn mark_stale(root: &Path, config: &Config, index: &Index, candidates: &mut [Candidate]) -> Result<()> {
    let ids: Vec<String> = candidates.iter().map(|c| c.ref_id.clone()).collect();
    let metas = memory::metas_of_kinds(index, vec![DocKind::Memory, DocKind::Entry], ids)?;
    let mut marks = crate::query::cites::Marks::new(root);
    for c in candidates.iter_mut() {
        c.stale = marks.of(&crate::query::cites::of_meta(metas.get(&c.ref_id)));
        if !c.stale.is_empty() {
            c.relevance *= config.retrieval.stale_factor as f32;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_asked_by_what_it_is_about() {
        assert_eq!(
            words_of("sudo npm run db:migrate -- --env=production 2>&1 | tee out.log", &SHELL_WORDS),
            ["db", "migrate", "production", "tee", "out", "log"]
        );
        assert_eq!(words_of("git status", &SHELL_WORDS), ["status"]);
        assert!(words_of("ls -la && cd ..", &SHELL_WORDS).is_empty());
        for looks in [
            "ls migrations | tail -5",
            "git status",
            "git log --oneline -3",
            "docker compose ps",
            "wc -l src/**/*.rs",
            "FOO=1 sudo cat x",
        ] {
            assert_eq!(acting(looks), None, "{looks}");
        }
        for acts in
            ["db migrate --env production", "git push --force", "docker compose up -d stripe-mock", "cat x | psql"]
        {
            assert!(acting(acts).is_some(), "{acts}");
        }
        assert_eq!(acting("cat schema.sql | psql prod").as_deref(), Some(" psql prod"));
        assert_eq!(words_of("決済テストが失敗するのはなぜ？", &[]), ["決済テスト", "失敗"]);
    }

    #[test]
    fn an_item_names_a_file_or_its_folder_as_a_whole() {
        let named = named_by(&["tests/payments/dispute_test.rs".to_owned(), "src/main.rs".to_owned()]);
        assert_eq!(named, ["tests/payments/dispute_test.rs", "tests/payments", "src/main.rs"]);
        assert!(names("Tests in tests/payments/ need the mock.", "tests/payments"));
        assert!(names("see `tests/payments`.", "tests/payments"));
        assert!(!names("tests/payments_old holds the old ones", "tests/payments"));
        assert!(!names("old/tests/payments is gone", "tests/payments"));
        assert!(names("edit src/main.rs.", "src/main.rs"));
    }

    #[test]
    fn one_word_or_a_distant_meaning_stays_below_the_gate() {
        // Both rare words held: fully relevant.
        assert_eq!(relevance(6.0, 6.0, 2, None), 1.0);
        // One of two words, however rare: at most half of its share.
        assert_eq!(relevance(5.0, 6.0, 1, None), 5.0 / 6.0 * ONE_WORD);
        // Meaning alone: halfway to its closeness.
        assert_eq!(relevance(0.0, 6.0, 0, Some(0.75)), 0.5);
        assert_eq!(relevance(0.0, 6.0, 0, Some(0.3)), 0.0);
    }
}

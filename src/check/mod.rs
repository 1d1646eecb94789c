//! `tmws check`: every canonical file against the rules of the contract (docs/check-rules.md).
//!
//! A check lists the given paths with the index's own scan and ignore rules (`walk`),
//! classifies each file by its place in the layout, parses it (parsing never fails) and
//! validates it in parallel: the front-matter and file rules of each kind (`rules`) with
//! the schemas of the project and the topic overviews' enums (`enums`), and the hot-memory
//! budgets (`budgets`). Every finding is a `Diagnostic` with a file, line and column; a bad
//! file never stops the others. Markdown outside `resources/workspaces/` and `agent/rules/`
//! gets the syntax checks only: there a file without front-matter is fine.

mod budgets;
mod enums;
mod rules;
mod secrets;
mod stash;
mod table;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub use self::rules::entry_name_ok;
pub use self::table::{Level, RULES, RuleDoc};
use self::walk::{File, Target};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout::{self, CONFIG_FILE, FileKind};
use crate::model::{Diagnostic, Rule, Severity};
use crate::store;

/// How many characters of the line under a finding are kept: more than a terminal shows
/// of it (the human output shows 200).
const SHOWN_CHARS: usize = 240;

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The root to use instead of finding one from each path.
    pub root: Option<PathBuf>,
    /// Files or folders; empty means what tmws owns in the root (docs/surfaces.md).
    pub paths: Vec<PathBuf>,
    /// The folder that relative paths and root-finding start from.
    pub cwd: PathBuf,
    /// Counts files as they are checked, for a progress display.
    pub progress: Option<Arc<AtomicUsize>>,
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Sorted by path, line, column.
    pub diagnostics: Vec<Diagnostic>,
    /// How many files were checked.
    pub files: usize,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    pub fn warnings(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Warning).count()
    }

    /// Whether the check fails: errors, or warnings too when `strict`.
    pub fn failed(&self, strict: bool) -> bool {
        self.errors() > 0 || (strict && self.warnings() > 0)
    }
}

/// Runs a check. Fails only for usage or environment errors (a path that does not exist,
/// no root when no path is given); everything about the files is in the report.
pub fn run(opts: &CheckOptions) -> Result<Report> {
    let forced_root = match &opts.root {
        Some(r) => Some(store::canonicalize(&opts.cwd.join(r))?),
        None => None,
    };
    let mut groups: Vec<(Option<PathBuf>, Vec<Target>)> = Vec::new();
    let mut add = |root: Option<PathBuf>, t: Target| match groups.iter_mut().find(|(r, _)| *r == root) {
        Some((_, ts)) => ts.push(t),
        None => groups.push((root, vec![t])),
    };
    if opts.paths.is_empty() {
        let root = match forced_root.clone() {
            Some(r) => r,
            None => store::find_root(&opts.cwd).ok_or_else(|| Error::NoRoot(opts.cwd.clone()))?,
        };
        add(Some(root.clone()), Target { given: root.clone(), abs: root, owned: true });
    }
    for p in &opts.paths {
        let joined = opts.cwd.join(p);
        if store::entry(&joined).is_ok_and(|e| e == store::Entry::Missing) {
            return Err(Error::NoSuchPath(p.clone()));
        }
        // Below a root, the path is taken as written: a symlink on the way is the finding
        // of the read that it would lead out of the root, not silently followed.
        let lexical = lexical(&joined);
        let real_dir = lexical.ancestors().find(|a| store::entry(a).is_ok_and(|e| e == store::Entry::Dir));
        let root = match &forced_root {
            Some(r) if lexical.starts_with(r) => Some(r.clone()),
            _ => real_dir.and_then(store::find_root),
        };
        let abs = match &root {
            Some(r) if lexical.starts_with(r) => lexical,
            _ => unresolved_last(&joined)?,
        };
        let root = match root {
            Some(r) if abs.starts_with(&r) => Some(r),
            _ => store::find_root(&abs),
        };
        add(root, Target { given: p.clone(), abs, owned: false });
    }
    let mut report = Report::default();
    for (root, targets) in groups {
        let mut checker = Checker::new(root);
        checker.progress.clone_from(&opts.progress);
        let mut files: Vec<File> = Vec::new();
        for t in &targets {
            let (found, problems) = walk::files(checker.root.as_deref(), t, &checker.includes);
            files.extend(found);
            for (shown, why) in problems {
                lock(&checker.diags).push(Diagnostic::error(Rule::Io, 1, 1, why).with_path(shown));
            }
        }
        files.sort_by(|a, b| a.abs.cmp(&b.abs));
        files.dedup_by(|a, b| a.abs == b.abs);
        checker.check_all(&files);
        if let Some(root) = checker.root.as_deref()
            && targets.iter().any(|t| t.owned)
        {
            for (path, why, hint) in store::cache::findings(root) {
                let d = Diagnostic::error(Rule::Cache, 1, 1, why).with_hint(hint).with_path(path);
                lock(&checker.diags).push(d);
            }
            lock(&checker.diags).extend(stash::findings(root));
        }
        let starts: Vec<&Path> = targets.iter().map(|t| t.abs.as_path()).collect();
        checker.rule_totals(&starts);
        report.files += checker.files.load(Ordering::Relaxed);
        report.diagnostics.extend(checker.diags.into_inner().unwrap_or_else(PoisonError::into_inner));
    }
    report.diagnostics.sort_by(|a, b| {
        (a.path.as_str(), a.line, a.column, a.rule, a.message.as_str()).cmp(&(
            b.path.as_str(),
            b.line,
            b.column,
            b.rule,
            b.message.as_str(),
        ))
    });
    report.diagnostics.dedup();
    Ok(report)
}

/// `path` with `.` and `..` taken away by name, without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The canonical form of `path` but for its last component, which is kept as it is: a
/// symlink named on the command line is checked as the link it is (one out of the root is
/// a finding), not silently as its target.
fn unresolved_last(path: &Path) -> Result<PathBuf> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => Ok(store::canonicalize(parent)?.join(name)),
        _ => store::canonicalize(path),
    }
}

/// One root's check: its config and schemas, and what was found.
struct Checker {
    root: Option<PathBuf>,
    config: Config,
    /// The config's `index.include` docs (none when they do not parse: the config's own
    /// check reports that).
    includes: layout::Includes,
    schemas: enums::Schemas,
    /// Line counts of the rule files seen, for the total budget.
    rule_lines: Mutex<Vec<(String, usize)>>,
    diags: Mutex<Vec<Diagnostic>>,
    files: AtomicUsize,
    progress: Option<Arc<AtomicUsize>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Checker {
    fn new(root: Option<PathBuf>) -> Checker {
        let mut config = Config::default();
        if let Some(root) = &root {
            // An invalid config is reported when the config file itself is checked; the
            // check goes on with the defaults.
            if let Ok(Some(text)) = store::read_text_opt(root, &root.join(CONFIG_FILE), store::cap::CONFIG)
                && let Ok(c) = Config::parse(&text)
            {
                config = c;
            }
        }
        Checker {
            includes: layout::Includes::new(&config.index.include).unwrap_or_default(),
            schemas: enums::Schemas::new(root.as_deref()),
            root,
            config,
            rule_lines: Mutex::new(Vec::new()),
            diags: Mutex::new(Vec::new()),
            files: AtomicUsize::new(0),
            progress: None,
        }
    }

    /// Checks `files` on a few threads.
    fn check_all(&self, files: &[File]) {
        let next = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    while let Some(f) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                        self.check_file(f);
                    }
                });
            }
        });
    }

    fn check_file(&self, file: &File) {
        let kind = match &file.rel {
            Some(rel) => layout::classify(rel),
            None if layout::is_markdown(&file.shown) => FileKind::Markdown,
            None => FileKind::Other,
        };
        if !kind.is_checked() {
            return;
        }
        self.files.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &self.progress {
            p.fetch_add(1, Ordering::Relaxed);
        }
        let path = &file.shown;
        let (bytes, links) = match store::read_with_links(&file.base, &file.abs, store::cap::MARKDOWN) {
            Ok(b) => b,
            Err(e) => {
                // The path is the finding's own: the message says only why.
                let why = match &e {
                    Error::Io { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                let d = Diagnostic::error(Rule::Io, 1, 1, format!("cannot read: {why}")).with_path(path.clone());
                lock(&self.diags).push(d);
                return;
            }
        };
        let mut diags = self.check_bytes(&kind, &file.abs, path, &bytes);
        if links > 1 && file.rel.is_some() {
            let why = format!(
                "this file has {links} names (hard links): tmws never writes it, since a write would change the file of the other names too"
            );
            let hint =
                "replace it with a copy: cp --remove-destination \"$(realpath FILE)\" FILE, or cp FILE x && mv x FILE";
            diags.push(Diagnostic::warning(Rule::HardLink, 1, 1, why).with_hint(hint));
        }
        if diags.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        // The line is shown under its finding: the secrets on it are shown as their marks.
        let secrets = secrets::spans(&kind, &text);
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let lines: Vec<&str> = text.split('\n').collect();
        for d in &mut diags {
            d.path.clone_from(path);
            d.source = lines.get(d.line - 1).map(|l| {
                // Only the start of a long line is shown: a finding never holds a copy of a
                // minified file's one line, however many findings it has.
                let l = l.char_indices().nth(SHOWN_CHARS).map_or(*l, |(end, _)| &l[..end]);
                let shown = secrets::shown_line(l, starts[d.line - 1], &secrets);
                shown.trim_start_matches('\u{feff}').trim_end_matches('\r').to_owned()
            });
        }
        lock(&self.diags).extend(diags);
    }
}

/// The findings of the file `rel` (root-relative) if it held `bytes`: every check `tmws
/// check` makes of it, with the root's config and schemas, without reading or writing the
/// file. What `entry_write` validates an entry with before anything is written.
pub fn check_text(root: &Path, rel: &str, bytes: &[u8]) -> Vec<Diagnostic> {
    let checker = Checker::new(Some(root.to_path_buf()));
    let kind = layout::classify(rel);
    let mut diags = checker.check_bytes(&kind, &root.join(rel), rel, bytes);
    for d in &mut diags {
        d.path = rel.to_owned();
    }
    diags.sort_by_key(|d| (d.line, d.column));
    diags
}

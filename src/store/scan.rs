//! The scan every sync starts with: stat each file below some folders, read nothing.
//!
//! It walks with `std::fs::read_dir` on a few threads and stats each file relative to its
//! open folder, which is what a no-op sync costs: the `ignore` walker's bookkeeping and
//! whole-path stats made the same scan take about 60% longer. The ignore rules are still
//! `ignore`'s own matchers and precedence: `.tmwsignore`, then `.ignore`, then
//! `.gitignore`, then `.git/info/exclude`, each from the deepest folder up, gitignores not
//! crossing a folder that holds `.git`. Unlike the `ignore` walker that `check` uses, only
//! files from the root down count: an ignore file above the root does not.
//!
//! Nothing below the root's `.tmws/` is ever ignored: it is tmws' own state, and a log kept
//! out of git is still searched.
//!
//! Skipped always: `.git/`, `.tmws/` folders met while walking (the derived cache, or a
//! nested root's state), folders that hold a `.tmws/` (nested roots) and symlinks. What
//! the repository should not hold (docs/trust-boundary.md) is skipped and reported as a problem: a
//! symlink out of the root or one that loops, a FIFO, a device or a socket, a name that is
//! not UTF-8, a folder that cannot be read, a start reached through a symlink out of the
//! root.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::TMWS_DIR;
use crate::error::Chain;

/// A file found by `scan`, with what a sync compares before reading anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Relative to the root, with `/` separators.
    pub rel: String,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime: u64,
}

/// A folder that could not be listed: its root-relative path and why.
pub type Problem = (String, String);

/// Stats every file under `starts` (files or folders at or below `root`, which may be
/// missing) for which `keep(rel)` holds and that no ignore rule excludes, in parallel,
/// without reading any content. Sorted by `rel`, without duplicates.
pub fn scan<K>(root: &Path, starts: &[PathBuf], keep: K) -> Vec<Scanned>
where
    K: Fn(&str) -> bool + Sync,
{
    let (found, problems) = walk_tree(root, starts, keep, true);
    for (rel, why) in problems {
        tracing::debug!("{rel}: {why}");
    }
    found
}

/// The files `scan` finds, without their size and mtime (no `stat` per file: what `check`
/// needs), and the folders that could not be listed.
pub fn list<K>(root: &Path, starts: &[PathBuf], keep: K) -> (Vec<String>, Vec<Problem>)
where
    K: Fn(&str) -> bool + Sync,
{
    let (found, problems) = walk_tree(root, starts, keep, false);
    (found.into_iter().map(|s| s.rel).collect(), problems)
}

/// The walk of `scan` and `list`; `stat`: read each file's size and mtime.
fn walk_tree<K>(root: &Path, starts: &[PathBuf], keep: K, stat: bool) -> (Vec<Scanned>, Vec<Problem>)
where
    K: Fn(&str) -> bool + Sync,
{
    let walk = Walk {
        root,
        keep,
        stat,
        queue: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        busy: AtomicUsize::new(0),
        problems: Mutex::new(Vec::new()),
    };
    let mut found = Vec::new();
    for start in starts {
        let Some(rel) = rel_path(root, start) else { continue };
        let Some(rules) = rules_above(root, &rel) else { continue };
        let Ok(meta) = fs::symlink_metadata(start) else { continue };
        if let Err(e) = super::guard::confine(root, start) {
            walk.problem(rel, e.to_string());
            continue;
        }
        if meta.is_file() {
            if !rules.ignored(&rel, false) && (walk.keep)(&rel) {
                let (size, mtime) = size_mtime(&meta);
                found.push(Scanned { rel, size, mtime });
            }
        } else if meta.is_dir() && !rules.ignored(&rel, true) {
            walk.lock().push(Job { dir: start.clone(), rel, rules });
        } else if !meta.is_dir() && !rules.ignored(&rel, false) {
            walk.odd_entry(root, start, rel, meta.file_type());
        }
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8);
    let batches = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local = Vec::new();
                while let Some(job) = walk.next() {
                    walk.visit(job, &mut local);
                    walk.done();
                }
                batches.lock().unwrap_or_else(PoisonError::into_inner).push(local);
            });
        }
    });
    for batch in batches.into_inner().unwrap_or_else(PoisonError::into_inner) {
        found.extend(batch);
    }
    found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    found.dedup_by(|a, b| a.rel == b.rel);
    let mut problems = walk.problems.into_inner().unwrap_or_else(PoisonError::into_inner);
    problems.sort();
    (found, problems)
}

/// A folder to list, with the ignore rules in force there.
struct Job {
    dir: PathBuf,
    /// `dir` relative to the root (empty for the root itself): paths are built as strings,
    /// since `Path` joins and prefix strips cost a third of the scan.
    rel: String,
    rules: Arc<Rules>,
}

/// `path` relative to `root`, with `/` separators; None outside the root or not UTF-8.
fn rel_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?.to_str()?;
    Some(if cfg!(windows) { rel.replace('\\', "/") } else { rel.to_owned() })
}

/// `name` inside the folder `dir` (root-relative).
fn join(buf: &mut String, dir: &str, name: &str) {
    buf.clear();
    if !dir.is_empty() {
        buf.push_str(dir);
        buf.push('/');
    }
    buf.push_str(name);
}

/// The shared state of a scan's threads: a stack of folders to list, and how many
/// threads are listing one (the scan is over when the stack is empty and none is).
struct Walk<'a, K> {
    root: &'a Path,
    keep: K,
    queue: Mutex<Vec<Job>>,
    wake: Condvar,
    busy: AtomicUsize,
    problems: Mutex<Vec<Problem>>,
    stat: bool,
}

impl<K: Fn(&str) -> bool + Sync> Walk<'_, K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Job>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next folder to list; None when all are done.
    fn next(&self) -> Option<Job> {
        let mut queue = self.lock();
        loop {
            if let Some(job) = queue.pop() {
                self.busy.fetch_add(1, Ordering::SeqCst);
                return Some(job);
            }
            if self.busy.load(Ordering::SeqCst) == 0 {
                self.wake.notify_all();
                return None;
            }
            queue = self.wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn problem(&self, rel: String, why: String) {
        self.problems.lock().unwrap_or_else(PoisonError::into_inner).push((rel, why));
    }

    /// Reports what is neither a file nor a folder: a symlink out of the root or that
    /// loops (one inside the root is skipped quietly: what it points at is walked where it
    /// is), a FIFO, a device, a socket.
    fn odd_entry(&self, root: &Path, path: &Path, rel: String, kind: fs::FileType) {
        if kind.is_symlink() {
            if let Err(e) = super::guard::confine(root, path) {
                self.problem(rel, e.to_string());
            }
            return;
        }
        self.problem(rel, format!("{}, not a regular file (not read)", super::guard::kind_name(kind)));
    }

    fn done(&self) {
        let _queue = self.lock();
        self.busy.fetch_sub(1, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// Lists one folder: its files go to `found`, its subfolders onto the stack.
    fn visit(&self, job: Job, found: &mut Vec<Scanned>) {
        let entries: Vec<fs::DirEntry> = match fs::read_dir(&job.dir) {
            Ok(rd) => rd.filter_map(std::result::Result::ok).collect(),
            Err(e) => {
                let rel = if job.rel.is_empty() { ".".to_owned() } else { job.rel.clone() };
                self.problem(rel, format!("cannot read: {e}"));
                return;
            }
        };
        let names: Vec<std::ffi::OsString> = entries.iter().map(fs::DirEntry::file_name).collect();
        let has = |name: &str| names.iter().any(|n| n == name);
        if has(TMWS_DIR) && job.dir != self.root {
            return;
        }
        let rules = match Level::of(&job.dir, &job.rel, &has) {
            Some(level) => Arc::new(Rules { level, parent: Some(job.rules) }),
            None => job.rules,
        };
        let mut subdirs = Vec::new();
        let mut rel = String::new();
        for (entry, name) in entries.iter().zip(&names) {
            let Ok(kind) = entry.file_type() else { continue };
            let Some(name) = name.to_str() else {
                join(&mut rel, &job.rel, &name.to_string_lossy());
                self.problem(rel.clone(), "the name is not valid UTF-8 (not read); rename it".into());
                continue;
            };
            if kind.is_dir() {
                // The derived cache is never walked, when `.tmws/` itself is a start.
                if name == ".git" || name == TMWS_DIR || (name == "cache" && job.rel == TMWS_DIR) {
                    continue;
                }
                join(&mut rel, &job.rel, name);
                if !rules.ignored(&rel, true) {
                    subdirs.push(Job { dir: entry.path(), rel: rel.clone(), rules: rules.clone() });
                }
            } else if kind.is_file() {
                join(&mut rel, &job.rel, name);
                if rules.ignored(&rel, false) || !(self.keep)(&rel) {
                    continue;
                }
                if !self.stat {
                    found.push(Scanned { rel: rel.clone(), size: 0, mtime: 0 });
                // Relative to the folder's open handle: no lookup of the whole path.
                } else if let Ok(meta) = entry.metadata() {
                    let (size, mtime) = size_mtime(&meta);
                    found.push(Scanned { rel: rel.clone(), size, mtime });
                }
            } else {
                join(&mut rel, &job.rel, name);
                if !rules.ignored(&rel, false) {
                    self.odd_entry(self.root, &entry.path(), rel.clone(), kind);
                }
            }
        }
        if !subdirs.is_empty() {
            self.lock().extend(subdirs);
            self.wake.notify_all();
        }
    }
}

fn size_mtime(meta: &fs::Metadata) -> (u64, u64) {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    (meta.len(), mtime)
}

/// The ignore files of one folder.
struct Level {
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The folder holds `.git`: gitignores of the folders above do not reach below it.
    has_git: bool,
    /// How many bytes of a root-relative path name the folder (with its `/`): what the
    /// matchers, rooted there, do not want to see.
    cut: usize,
}

impl Level {
    fn is_empty(&self) -> bool {
        self.custom.is_none() && self.ignore.is_none() && self.git.is_none() && self.exclude.is_none()
    }

    /// The rules of `dir`, given which names it holds; None when it has no ignore file.
    fn of(dir: &Path, rel: &str, has: &dyn Fn(&str) -> bool) -> Option<Level> {
        let load = |name: &str| -> Option<Gitignore> {
            if !has(name) {
                return None;
            }
            let mut builder = GitignoreBuilder::new(dir);
            if let Some(e) = builder.add(dir.join(name)) {
                tracing::debug!("{}: {}", dir.join(name).display(), Chain(&e));
            }
            builder.build().ok().filter(|g| !g.is_empty())
        };
        let has_git = has(".git");
        let exclude = if has_git {
            let mut builder = GitignoreBuilder::new(dir);
            let path = dir.join(".git/info/exclude");
            if super::exists(&path) && builder.add(&path).is_none() {
                builder.build().ok().filter(|g| !g.is_empty())
            } else {
                None
            }
        } else {
            None
        };
        let cut = if rel.is_empty() { 0 } else { rel.len() + 1 };
        let level = Level {
            custom: load(crate::layout::IGNORE_FILE),
            ignore: load(".ignore"),
            git: load(".gitignore"),
            exclude,
            has_git,
            cut,
        };
        let any = level.custom.is_some() || level.ignore.is_some() || level.git.is_some() || level.exclude.is_some();
        (any || has_git).then_some(level)
    }
}

/// The ignore rules in force in a folder: its own level, then its parents'.
struct Rules {
    level: Level,
    parent: Option<Arc<Rules>>,
}

impl Rules {
    fn empty() -> Rules {
        let level = Level { custom: None, ignore: None, git: None, exclude: None, has_git: false, cut: 0 };
        Rules { level, parent: None }
    }

    fn levels(&self) -> impl Iterator<Item = &Level> {
        std::iter::successors(Some(self), |r| r.parent.as_deref()).map(|r| &r.level)
    }

    /// Whether `path` is ignored: per kind of file, the deepest rule that matches decides;
    /// the first kind with a match wins (`ignore`'s precedence).
    fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        if self.parent.is_none() && self.level.is_empty() {
            return false;
        }
        // tmws' own state is read whatever git is told to ignore: a project may keep a
        // log out of git (short-term memories stay on this machine) and still search it.
        if rel == TMWS_DIR || rel.strip_prefix(TMWS_DIR).is_some_and(|r| r.starts_with('/')) {
            return false;
        }
        let first = |pick: fn(&Level) -> Option<&Gitignore>, stop_at_git: bool| -> Match<()> {
            for level in self.levels() {
                if let Some(g) = pick(level) {
                    let path = Path::new(rel.get(level.cut..).unwrap_or(rel));
                    match g.matched(path, is_dir) {
                        Match::None => {}
                        Match::Ignore(_) => return Match::Ignore(()),
                        Match::Whitelist(_) => return Match::Whitelist(()),
                    }
                }
                if stop_at_git && level.has_git {
                    break;
                }
            }
            Match::None
        };
        let verdict = [
            first(|l| l.custom.as_ref(), false),
            first(|l| l.ignore.as_ref(), false),
            first(|l| l.git.as_ref(), true),
            first(|l| l.exclude.as_ref(), true),
        ]
        .into_iter()
        .find(|m| !m.is_none())
        .unwrap_or(Match::None);
        verdict.is_ignore()
    }
}

/// The rules in force at `rel` (a root-relative start), from the ignore files of the
/// folders from the root down to its parent; None when it lies inside an ignored folder,
/// a nested root, `.git`, or a `.tmws/` below the root's own.
fn rules_above(root: &Path, rel: &str) -> Option<Arc<Rules>> {
    let mut rules = Arc::new(Rules::empty());
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    let mut dir = root.to_path_buf();
    let mut dir_rel = String::new();
    for (i, part) in parts.iter().enumerate() {
        let has = |name: &str| super::exists(&dir.join(name));
        if i > 0 && has(TMWS_DIR) {
            return None;
        }
        if let Some(level) = Level::of(&dir, &dir_rel, &has) {
            rules = Arc::new(Rules { level, parent: Some(rules) });
        }
        if i + 1 == parts.len() {
            break;
        }
        dir.push(part);
        let parent = std::mem::take(&mut dir_rel);
        join(&mut dir_rel, &parent, part);
        if *part == ".git" || (i > 0 && *part == TMWS_DIR) || rules.ignored(&dir_rel, true) {
            return None;
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }

    fn rels(root: &Path, starts: &[&str]) -> Vec<String> {
        let starts: Vec<PathBuf> = starts.iter().map(|s| root.join(s)).collect();
        scan(root, &starts, |_| true).into_iter().map(|s| s.rel).collect()
    }

    #[test]
    fn honours_ignore_files_with_their_precedence() {
        let dir = tree(&[
            (".gitignore", "*.draft.md\nbuild/\n!keep.draft.md\n"),
            (".tmwsignore", "secret/\n"),
            ("a/x.md", ""),
            ("a/x.draft.md", ""),
            ("a/keep.draft.md", ""),
            ("a/.gitignore", "local.md\n"),
            ("a/local.md", ""),
            ("b/local.md", ""),
            ("build/out.md", ""),
            ("secret/s.md", ""),
            ("c/.ignore", "!*.draft.md\n"),
            ("c/y.draft.md", ""),
        ]);
        let root = dir.path();
        assert_eq!(
            rels(root, &["a", "b", "build", "secret", "c"]),
            ["a/.gitignore", "a/keep.draft.md", "a/x.md", "b/local.md", "c/.ignore", "c/y.draft.md"]
        );
        // The same rules hold for a single file or folder given as a start (the watcher's
        // case): the ignore files above it count.
        assert_eq!(rels(root, &["a/x.draft.md", "a/local.md", "build/out.md", "build", "a/x.md"]), ["a/x.md"]);
    }

    #[test]
    fn skips_git_tmws_nested_roots_and_missing_starts() {
        let dir = tree(&[
            ("w/a.md", ""),
            ("w/.git/HEAD", ""),
            (".tmws/cache/x.md", ""),
            (".tmws/skills.yaml", ""),
            ("w/nested/.tmws/config.toml", ""),
            ("w/nested/n.md", ""),
        ]);
        let root = dir.path();
        assert_eq!(rels(root, &["", "missing", "w/nested/n.md", "w/nested", "w/.git/HEAD"]), ["w/a.md"]);
        assert_eq!(rels(root, &[".tmws/skills.yaml"]), [".tmws/skills.yaml"]);
        assert_eq!(rels(root, &[".tmws"]), [".tmws/skills.yaml"], "the cache is never walked");
    }

    #[cfg(unix)]
    #[test]
    fn skips_symlinks_and_reports_size_and_mtime() {
        let dir = tree(&[("w/a.md", "12345")]);
        std::os::unix::fs::symlink(dir.path().join("w/a.md"), dir.path().join("w/link.md")).unwrap();
        let found = scan(dir.path(), &[dir.path().join("w")], |_| true);
        let meta = fs::metadata(dir.path().join("w/a.md")).unwrap();
        assert_eq!(found, [Scanned { rel: "w/a.md".into(), size: 5, mtime: size_mtime(&meta).1 }]);
    }
}

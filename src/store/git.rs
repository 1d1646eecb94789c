//! Git, as memories see it (DESIGN §6): the branch and commit of HEAD, the default branch
//! and the local branches, read from `.git` without running git; and, where only git can
//! answer (a commit's parent and changed files, the hooks folder, the log of a window),
//! `git` run as a child process.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The branch and commit of a git work tree, read from `.git` without running git:
/// `HEAD`, loose refs and `packed-refs`, following a worktree's `.git` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitHead {
    /// None when HEAD is detached.
    pub branch: Option<String>,
    /// The full hash HEAD points at, when it can be resolved.
    pub commit: Option<String>,
}

/// The git dir of the work tree at `root` and its common dir (where refs live; they
/// differ in a linked worktree).
fn git_dirs(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        // A worktree or submodule: `.git` is a file `gitdir: PATH`.
        let text = fs::read_to_string(&dot_git).ok()?;
        let path = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
        if path.is_absolute() { path } else { root.join(path) }
    };
    let common = fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| {
            let p = PathBuf::from(c.trim());
            if p.is_absolute() { p } else { git_dir.join(p) }
        })
        .unwrap_or_else(|| git_dir.clone());
    Some((git_dir, common))
}

/// The hash a full reference name (`refs/heads/main`) points at: loose, else packed.
fn resolve(common: &Path, reference: &str) -> Option<String> {
    let loose = fs::read_to_string(common.join(reference)).ok().map(|c| c.trim().to_owned());
    loose.filter(|c| !c.is_empty()).or_else(|| {
        let packed = fs::read_to_string(common.join("packed-refs")).ok()?;
        packed.lines().find_map(|line| {
            let (hash, name) = line.split_once(' ')?;
            (name.trim() == reference && !hash.starts_with('#')).then(|| hash.to_owned())
        })
    })
}

/// Reads the git HEAD of the work tree at `root`; None when it is not in git.
pub fn git_head(root: &Path) -> Option<GitHead> {
    let (git_dir, common) = git_dirs(root)?;
    let head = fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref:").map(str::trim) else {
        return Some(GitHead { branch: None, commit: Some(head.to_owned()) });
    };
    let branch = reference.strip_prefix("refs/heads/").unwrap_or(reference).to_owned();
    Some(GitHead { branch: Some(branch), commit: resolve(&common, reference) })
}

/// The local branches of the repository at `root` and the commits they point at (loose
/// refs win over packed ones), read without running git; None outside git.
pub fn branch_tips(root: &Path) -> Option<BTreeMap<String, String>> {
    let (_, common) = git_dirs(root)?;
    let mut tips = BTreeMap::new();
    if let Ok(packed) = fs::read_to_string(common.join("packed-refs")) {
        for line in packed.lines().filter(|l| !l.starts_with('#') && !l.starts_with('^')) {
            if let Some((hash, name)) = line.split_once(' ')
                && let Some(name) = name.trim().strip_prefix("refs/heads/")
            {
                tips.insert(name.to_owned(), hash.to_owned());
            }
        }
    }
    let heads = common.join("refs/heads");
    let mut stack = vec![heads.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = fs::read_dir(&dir) else { continue };
        for e in read.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(&heads)
                && let Ok(hash) = fs::read_to_string(&path)
            {
                tips.insert(rel.to_string_lossy().replace('\\', "/"), hash.trim().to_owned());
            }
        }
    }
    Some(tips)
}

/// What changes when git's index does (a file added, removed, staged): its size and
/// modification time, read without running git; None outside git or without an index.
pub fn index_stamp(root: &Path) -> Option<String> {
    let (git_dir, _) = git_dirs(root)?;
    let meta = fs::metadata(git_dir.join("index")).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("{}:{}", meta.len(), mtime.as_nanos()))
}

/// The files below `dir` (root-relative) that git tracks.
pub fn tracked(root: &Path, dir: &str) -> Result<BTreeSet<String>> {
    let out = run(root, &["ls-files", "-z", "--", dir])?;
    Ok(out.split('\0').filter(|p| !p.is_empty()).map(str::to_owned).collect())
}

/// The local branches whose tip is HEAD or one of its ancestors.
pub fn merged_branches(root: &Path) -> Result<BTreeSet<String>> {
    let out = run(root, &["for-each-ref", "--merged", "HEAD", "--format=%(refname:short)", "refs/heads/"])?;
    Ok(out.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect())
}

/// Whether `commit` is HEAD or one of its ancestors; false for a commit git does not know.
pub fn is_ancestor_of_head(root: &Path, commit: &str) -> Result<bool> {
    if commit.is_empty() || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(false);
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-base", "--is-ancestor", commit, "HEAD"])
        .output()
        .map_err(|e| Error::Environment(format!("cannot run git: {e}")))?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        // 128: a commit git does not have (a rewritten or foreign history).
        _ => Ok(false),
    }
}

/// The local branches of the repository at `root` (loose and packed); None outside git.
pub fn branches(root: &Path) -> Option<BTreeSet<String>> {
    let (_, common) = git_dirs(root)?;
    let mut names = BTreeSet::new();
    let heads = common.join("refs/heads");
    let mut stack = vec![heads.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = fs::read_dir(&dir) else { continue };
        for e in read.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(&heads) {
                names.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    if let Ok(packed) = fs::read_to_string(common.join("packed-refs")) {
        for line in packed.lines().filter(|l| !l.starts_with('#') && !l.starts_with('^')) {
            if let Some(name) = line.split_once(' ').and_then(|(_, n)| n.trim().strip_prefix("refs/heads/")) {
                names.insert(name.to_owned());
            }
        }
    }
    Some(names)
}

/// The repository's default branch: what `origin/HEAD` names, else `main` or `master`
/// when such a branch exists.
pub fn default_branch(root: &Path) -> Option<String> {
    let (_, common) = git_dirs(root)?;
    if let Ok(text) = fs::read_to_string(common.join("refs/remotes/origin/HEAD"))
        && let Some(name) =
            text.trim().strip_prefix("ref:").map(str::trim).and_then(|r| r.strip_prefix("refs/remotes/origin/"))
    {
        return Some(name.to_owned());
    }
    let local = branches(root)?;
    ["main", "master"].into_iter().find(|b| local.contains(*b)).map(str::to_owned)
}

/// Runs `git ARGS` in `root` and returns its standard output; a git that is missing or
/// fails is an error with its message.
pub fn run(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(|e| Error::Environment(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Environment(format!("git {}: {}", args.join(" "), err.trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A commit as the index holds it (DESIGN §3, kind `commit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitInfo {
    /// The full hash.
    pub sha: String,
    pub author: String,
    /// The author date, RFC 3339.
    pub date: String,
    pub subject: String,
    pub body: String,
    /// The paths it changed (none for a merge), at most [`MAX_COMMIT_FILES`].
    pub files: Vec<String>,
}

/// At most this many changed paths of a commit are indexed.
pub const MAX_COMMIT_FILES: usize = 200;

/// The commits of `range` (`HEAD`, `a..b`), newest first, with their changed paths.
pub fn commits(root: &Path, range: &str) -> Result<Vec<CommitInfo>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "core.quotePath=false",
            "log",
            "--no-color",
            "--no-renames",
            "--name-only",
            "--format=%x1e%H%x1f%an%x1f%aI%x1f%s%x1f%b%x1f",
            range,
            "--",
        ])
        .output()
        .map_err(|e| Error::Environment(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Environment(format!("git log {range}: {}", err.trim())));
    }
    Ok(parse_log(&String::from_utf8_lossy(&out.stdout)))
}

/// Parses `git log` output in the format `commits` asks for.
fn parse_log(text: &str) -> Vec<CommitInfo> {
    text.split('\u{1e}')
        .filter_map(|record| {
            let mut fields = record.splitn(6, '\u{1f}');
            let sha = fields.next()?.trim().to_owned();
            if sha.is_empty() {
                return None;
            }
            let author = fields.next()?.to_owned();
            let date = fields.next()?.to_owned();
            let subject = fields.next()?.to_owned();
            let body = fields.next()?.trim().to_owned();
            let files = fields
                .next()
                .unwrap_or_default()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(MAX_COMMIT_FILES)
                .map(str::to_owned)
                .collect();
            Some(CommitInfo { sha, author, date, subject, body, files })
        })
        .collect()
}

/// The hashes of `range`.
pub fn rev_list(root: &Path, range: &str) -> Result<Vec<String>> {
    Ok(run(root, &["rev-list", range, "--"])?.lines().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_records_become_commits() {
        let text = "\u{1e}abc\u{1f}Ann\u{1f}2026-11-22T10:00:00+01:00\u{1f}Fix the retry\u{1f}Jitter, so\nclients spread.\n\u{1f}\n\nsrc/retry.rs\nREADME.md\n\u{1e}def\u{1f}Bo\u{1f}2026-11-21T09:00:00Z\u{1f}Start\u{1f}\u{1f}\n\na.txt\n";
        let commits = parse_log(text);
        assert_eq!(commits.len(), 2);
        assert_eq!(
            commits[0],
            CommitInfo {
                sha: "abc".into(),
                author: "Ann".into(),
                date: "2026-11-22T10:00:00+01:00".into(),
                subject: "Fix the retry".into(),
                body: "Jitter, so\nclients spread.".into(),
                files: vec!["src/retry.rs".into(), "README.md".into()],
            }
        );
        assert_eq!((commits[1].body.as_str(), commits[1].files.clone()), ("", vec!["a.txt".to_owned()]));
    }
}

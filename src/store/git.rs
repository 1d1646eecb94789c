//! Git, as memories see it (docs/memory-log.md#visibility-across-branches): the branch and commit
//! of HEAD, the default branch and the local branches, read from `.git` without running git; and,
//! where only git can answer (a commit's parent and changed files, the hooks folder, the log of a
//! window), `git` run as a child process.

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

/// Where the work tree at `root` stands in its repository: its own git dir and the
/// repository's common dir, the same for every worktree of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The common dir (`.git` of the main worktree, or a bare repository), canonical.
    pub common_dir: PathBuf,
    /// The main worktree's folder when `root` is in a linked worktree (`git worktree
    /// add`), canonical; None in the main worktree itself.
    pub main_worktree: Option<PathBuf>,
}

/// The repository of the work tree at `root`, read from `.git` (its `gitdir:` and
/// `commondir` files) without running git; None outside git.
pub fn repository(root: &Path) -> Option<Repository> {
    let (git_dir, common) = git_dirs(root)?;
    let canonical = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (git_dir, common_dir) = (canonical(&git_dir), canonical(&common));
    // A linked worktree's git dir is `<common>/worktrees/<name>`; the main worktree is
    // the folder that holds the common dir when that is a `.git` folder (not a bare
    // repository, which has no main worktree).
    let main_worktree = (git_dir != common_dir && common_dir.file_name().is_some_and(|n| n == ".git"))
        .then(|| common_dir.parent().map(Path::to_path_buf))
        .flatten();
    Some(Repository { common_dir, main_worktree })
}

/// The folder whose `.tmws/` holds what every worktree of the project shares (approvals'
/// key, the usage log, access counts, commit links): the main worktree for a root in a
/// linked one, else `root` itself.
pub fn project_root(root: &Path) -> PathBuf {
    // A `.git` folder is a main worktree's (or a plain repository's): the common case,
    // answered with one stat, as it is asked on every count of a memory's reads.
    if root.join(".git").is_dir() {
        return root.to_path_buf();
    }
    repository(root).and_then(|r| r.main_worktree).unwrap_or_else(|| root.to_path_buf())
}

/// One worktree of a repository, as `git worktree list --porcelain` gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Worktree {
    pub path: PathBuf,
    /// The branch checked out there (without `refs/heads/`), None when detached.
    pub branch: Option<String>,
    pub head: Option<String>,
    /// Git knows the folder is gone (`prunable`).
    pub prunable: bool,
}

/// Every worktree of the repository at `root`, the main one first.
pub fn worktrees(root: &Path) -> Result<Vec<Worktree>> {
    let out = run(root, &["worktree", "list", "--porcelain", "-z"])?;
    let mut list = Vec::new();
    let mut current: Option<Worktree> = None;
    for field in out.split('\0') {
        if field.is_empty() {
            list.extend(current.take());
            continue;
        }
        let (name, value) = field.split_once(' ').unwrap_or((field, ""));
        match name {
            "worktree" => {
                list.extend(current.take());
                current = Some(Worktree { path: PathBuf::from(value), ..Worktree::default() });
            }
            "HEAD" => current.iter_mut().for_each(|w| w.head = Some(value.to_owned())),
            "branch" => current
                .iter_mut()
                .for_each(|w| w.branch = Some(value.strip_prefix("refs/heads/").unwrap_or(value).to_owned())),
            "prunable" => current.iter_mut().for_each(|w| w.prunable = true),
            _ => {}
        }
    }
    list.extend(current);
    Ok(list)
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

/// A file git's index holds, with what git saw of it when it last wrote it to the work
/// tree or looked at it: enough to tell whether the file there now is the one git put
/// there (a file written since has another inode or modification time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Root-relative, with `/` separators.
    pub path: String,
    pub mtime_secs: u32,
    pub mtime_nanos: u32,
    /// The inode number, cut to 32 bits as git stores it.
    pub ino: u32,
}

/// The entries of git's index whose path starts with `prefix`, read without running git
/// (index versions 2, 3 and 4, SHA-1 and SHA-256 repositories). The entries are sorted,
/// so the read stops at the first path past the prefix: for a prefix such as
/// `.tmws/cache/`, which sorts early, that is a few entries in. None outside git, without
/// an index, or when it cannot be read (then ask git: [`tracked`]).
pub fn index_entries_under(root: &Path, prefix: &str) -> Option<Vec<IndexEntry>> {
    use std::io::{BufRead, BufReader, Read};
    let (git_dir, common) = git_dirs(root)?;
    let file = fs::File::open(git_dir.join("index")).ok()?;
    // The object format decides the length of each entry's hash.
    let hash_len = match fs::read_to_string(common.join("config")) {
        Ok(c) if c.to_ascii_lowercase().replace([' ', '\t'], "").contains("objectformat=sha256") => 32,
        _ => 20,
    };
    let mut r = BufReader::with_capacity(64 << 10, file);
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic).ok()?;
    if &magic != b"DIRC" {
        return None;
    }
    let version = be_u32(&mut r)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be_u32(&mut r)?;
    let mut found = Vec::new();
    let mut path: Vec<u8> = Vec::new();
    for _ in 0..count {
        // ctime (2), mtime (2), dev, ino, mode, uid, gid, size: ten 32-bit numbers.
        let mut stat = [0u32; 10];
        for s in &mut stat {
            *s = be_u32(&mut r)?;
        }
        let mut hash = [0u8; 32];
        r.read_exact(&mut hash[..hash_len]).ok()?;
        let mut flags = [0u8; 2];
        r.read_exact(&mut flags).ok()?;
        let flags = u16::from_be_bytes(flags);
        let mut fixed = 40 + hash_len + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            let mut extended = [0u8; 2];
            r.read_exact(&mut extended).ok()?;
            fixed += 2;
        }
        if version == 4 {
            // The path is the previous one less N bytes, then the bytes up to a NUL.
            let strip = read_offset_varint(&mut r)?;
            path.truncate(path.len().checked_sub(strip)?);
            let mut rest = Vec::new();
            r.read_until(0, &mut rest).ok()?;
            if rest.pop() != Some(0) {
                return None;
            }
            path.extend_from_slice(&rest);
        } else {
            path.clear();
            r.read_until(0, &mut path).ok()?;
            if path.pop() != Some(0) {
                return None;
            }
            // Entries are padded with NULs to a multiple of 8 bytes (1 to 8 of them, the
            // one that ended the path included).
            let entry = (fixed + path.len() + 8) & !7;
            let pad = entry.checked_sub(fixed + path.len() + 1)?;
            let mut skip = [0u8; 8];
            r.read_exact(&mut skip[..pad]).ok()?;
        }
        let name_len = usize::from(flags & 0x0fff);
        if name_len < 0x0fff && name_len != path.len() {
            // Not the layout this reader expects: let git answer instead.
            return None;
        }
        if path.starts_with(prefix.as_bytes()) {
            found.push(IndexEntry {
                path: String::from_utf8_lossy(&path).into_owned(),
                mtime_secs: stat[2],
                mtime_nanos: stat[3],
                ino: stat[5],
            });
        } else if path.as_slice() > prefix.as_bytes() {
            break;
        }
    }
    Some(found)
}

/// A big-endian 32-bit number.
fn be_u32(r: &mut impl std::io::Read) -> Option<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).ok()?;
    Some(u32::from_be_bytes(b))
}

/// Git's variable-length offset of index version 4 (`decode_varint`).
fn read_offset_varint(r: &mut impl std::io::Read) -> Option<usize> {
    let mut byte = [0u8; 1];
    r.read_exact(&mut byte).ok()?;
    let mut value = usize::from(byte[0] & 0x7f);
    while byte[0] & 0x80 != 0 {
        r.read_exact(&mut byte).ok()?;
        value = value.checked_add(1)?.checked_mul(128)?.checked_add(usize::from(byte[0] & 0x7f))?;
    }
    Some(value)
}

/// The stashes of the repository at `root`, newest first (`stash@{0}`, …), at most
/// `limit`; empty outside git or without stashes.
pub fn stashes(root: &Path, limit: usize) -> Vec<String> {
    if !root.join(".git").exists() {
        return Vec::new();
    }
    // The reflog of refs/stash, read without running git when it is there.
    let Some((_, common)) = git_dirs(root) else { return Vec::new() };
    if !common.join("logs/refs/stash").exists() && !common.join("refs/stash").exists() {
        return Vec::new();
    }
    match run(root, &["stash", "list", "--format=%gd"]) {
        Ok(out) => out.lines().map(str::trim).filter(|l| !l.is_empty()).take(limit).map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    }
}

/// The files below `dir` in the tree of `rev` (a stash, a commit), or none when git does
/// not know the revision.
pub fn files_at(root: &Path, rev: &str, dir: &str) -> Vec<String> {
    match run(root, &["ls-tree", "-r", "-z", "--name-only", rev, "--", dir]) {
        Ok(out) => out.split('\0').filter(|p| !p.is_empty()).map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    }
}

/// The bytes of `path` in `rev`, None when it is not there.
pub fn show(root: &Path, rev: &str, path: &str) -> Option<Vec<u8>> {
    let out = Command::new("git").arg("-C").arg(root).args(["show", &format!("{rev}:{path}")]).output().ok()?;
    out.status.success().then_some(out.stdout)
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
        .map_err(|e| Error::environment("cannot run git", e))?;
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
    let out = output(root, args)?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Environment(format!("git {}: {}", args.join(" "), err.trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `git ARGS` in `root`: `Ok(stdout)` when it succeeds, `Err(what it printed)` when
/// it fails (a merge with conflicts prints them on stdout); an error when git cannot run.
pub fn try_run(root: &Path, args: &[&str]) -> Result<std::result::Result<String, String>> {
    let out = output(root, args)?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(Ok(stdout));
    }
    Ok(Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr))))
}

/// What `git -C root ARGS` printed and how it ended; an error when git cannot run.
fn output(root: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new("git").arg("-C").arg(root).args(args).output().map_err(|e| Error::environment("cannot run git", e))
}

/// A commit as the index holds it (kind `commit`, docs/search-index.md#git-history).
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
    /// How many paths it changed, all of them.
    pub changed: usize,
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
        .map_err(|e| Error::environment("cannot run git", e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Environment(format!("git log {range}: {}", err.trim())));
    }
    Ok(parse_log(&String::from_utf8_lossy(&out.stdout)))
}

/// The changed paths of a `git log` record: the non-empty lines of its last field.
fn changed_paths<'a>(mut fields: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    fields.next().unwrap_or_default().lines().map(str::trim).filter(|l| !l.is_empty())
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
            let paths = || changed_paths(fields.clone());
            let changed = paths().count();
            let files = paths().take(MAX_COMMIT_FILES).map(str::to_owned).collect();
            Some(CommitInfo { sha, author, date, subject, body, files, changed })
        })
        .collect()
}

/// The hashes of `range`.
pub fn rev_list(root: &Path, range: &str) -> Result<Vec<String>> {
    Ok(run(root, &["rev-list", range, "--"])?.lines().map(str::to_owned).collect())
}

/// One long-lived `git cat-file --batch` process: each object asked for costs a line
/// written and read, not a process, so a check of many citations starts git once.
pub struct CatFile {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl CatFile {
    /// Starts the process in `root`; None when git cannot be run there.
    pub fn start(root: &Path) -> Option<CatFile> {
        use std::process::Stdio;
        let mut child = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = std::io::BufReader::new(child.stdout.take()?);
        Some(CatFile { child, stdin, stdout })
    }

    /// The content of the object `spec` names (`COMMIT:path`, `COMMIT^{commit}`): None when
    /// the repository has no such object (or the process has gone).
    pub fn get(&mut self, spec: &str) -> Option<Vec<u8>> {
        use std::io::{BufRead, Read, Write};
        // A newline in the name would be read as a second request.
        if spec.contains('\n') {
            return None;
        }
        writeln!(self.stdin, "{spec}").ok()?;
        self.stdin.flush().ok()?;
        let mut header = String::new();
        self.stdout.read_line(&mut header).ok()?;
        // `OID TYPE SIZE`, else `NAME missing` or `NAME ambiguous`.
        let header = header.trim_end();
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            return None;
        }
        let mut fields = header.split_whitespace();
        let (_, _, size) = (fields.next()?, fields.next()?, fields.next()?);
        let size: usize = size.parse().ok()?;
        let mut body = vec![0; size + 1];
        self.stdout.read_exact(&mut body).ok()?;
        body.pop();
        Some(body)
    }
}

impl std::fmt::Debug for CatFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatFile").field("pid", &self.child.id()).finish()
    }
}

impl Drop for CatFile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// git's own listing of its index below `prefix`, with each file's stat data.
    fn git_listing(dir: &Path, prefix: &str) -> Vec<IndexEntry> {
        let out = run(dir, &["ls-files", "-z", "--", prefix]).unwrap();
        out.split('\0')
            .filter(|p| !p.is_empty())
            .map(|p| {
                use std::os::unix::fs::MetadataExt;
                let m = fs::symlink_metadata(dir.join(p)).unwrap();
                IndexEntry {
                    path: p.to_owned(),
                    mtime_secs: m.mtime() as u32,
                    mtime_nanos: m.mtime_nsec() as u32,
                    ino: m.ino() as u32,
                }
            })
            .collect()
    }

    #[cfg(unix)]
    #[test]
    fn index_entries_below_a_prefix_are_read_as_git_lists_them_in_every_index_version() {
        for (format, version) in [("sha1", "2"), ("sha1", "3"), ("sha1", "4"), ("sha256", "2"), ("sha256", "4")] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            git(d, &["init", "-q", &format!("--object-format={format}")]);
            for f in [
                ".a",
                ".tmws/cache/index/v18/segments/.managed.json",
                ".tmws/cache/token",
                ".tmws/config.toml",
                ".tmws/z",
                "b/c.md",
                "zz",
            ] {
                fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
                fs::write(d.join(f), f).unwrap();
            }
            git(d, &["add", "-f", "."]);
            // An intent-to-add entry carries the extended flags of version 3.
            fs::write(d.join(".tmws/cache/later"), "x").unwrap();
            git(d, &["add", "-f", "-N", ".tmws/cache/later"]);
            git(d, &["update-index", "--index-version", version]);
            let read = index_entries_under(d, ".tmws/cache/").unwrap();
            let paths: Vec<&str> = read.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(
                paths,
                [".tmws/cache/index/v18/segments/.managed.json", ".tmws/cache/later", ".tmws/cache/token"],
                "{format} v{version}"
            );
            // `ls-files` refreshes nothing; the stat data is what git recorded when it added
            // the files (none for an intent to add).
            let listed = git_listing(d, ".tmws/cache/");
            for (r, l) in read.iter().zip(&listed) {
                let expected = if r.path.ends_with("later") { (0, 0, 0) } else { (l.ino, l.mtime_secs, l.mtime_nanos) };
                assert_eq!((r.ino, r.mtime_secs, r.mtime_nanos), expected, "{format} v{version} {}", r.path);
            }
            assert_eq!(index_entries_under(d, ".tmws/nothing/").unwrap(), vec![]);
        }
    }

    #[test]
    fn no_index_or_a_foreign_file_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(index_entries_under(dir.path(), ".tmws/cache/"), None);
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        fs::write(dir.path().join(".git/index"), b"DIRC\0\0\0\x09\0\0\0\x01").unwrap();
        assert_eq!(index_entries_under(dir.path(), ".tmws/cache/"), None);
        fs::write(dir.path().join(".git/index"), b"DIRC\0\0\0\x02\0\0\0\x05truncated").unwrap();
        assert_eq!(index_entries_under(dir.path(), ".tmws/cache/"), None);
    }

    #[test]
    fn a_linked_worktree_belongs_to_its_main_worktree_s_project() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("app");
        fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        git(
            &main,
            &["-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "s"],
        );
        let linked = dir.path().join("wt");
        git(&main, &["worktree", "add", "-q", "-b", "topic", &linked.to_string_lossy()]);
        let main = fs::canonicalize(&main).unwrap();
        let common = main.join(".git");
        assert_eq!(repository(&main), Some(Repository { common_dir: common.clone(), main_worktree: None }));
        assert_eq!(repository(&linked), Some(Repository { common_dir: common, main_worktree: Some(main.clone()) }));
        assert_eq!(project_root(&linked), main);
        assert_eq!(project_root(&main), main);
        assert_eq!(repository(dir.path()), None);
        let listed = worktrees(&linked).unwrap();
        let shown: Vec<(PathBuf, Option<&str>, bool)> =
            listed.iter().map(|w| (w.path.clone(), w.branch.as_deref(), w.prunable)).collect();
        let linked = fs::canonicalize(&linked).unwrap();
        assert_eq!(shown, [(main.clone(), Some("main"), false), (linked.clone(), Some("topic"), false)]);
        fs::remove_dir_all(&linked).unwrap();
        assert!(worktrees(&main).unwrap()[1].prunable);
    }

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
                changed: 2,
            }
        );
        assert_eq!((commits[1].body.as_str(), commits[1].files.clone()), ("", vec!["a.txt".to_owned()]));
    }
}

//! The store: the only module that touches the disk.
//!
//! It finds the root, walks the canonical folders, reads files and writes them atomically.
//! What the bytes mean is `parse`'s business; where a path belongs in the canonical layout
//! is `crate::layout`'s.

pub mod beneath;
pub mod cache;
pub mod git;
pub mod guard;
pub mod log;
mod scan;
pub mod watch;

pub use self::git::git_head;
pub use self::guard::cap;
pub use self::scan::{Scanned, list, scan};

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::error::{Error, Result};

pub use crate::layout::TMWS_DIR;

/// Walks up from `start` to the first folder holding `.tmws/`: a root (docs/layout.md). A git
/// repository where `tmws init` never ran is not one, so nothing is written there.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    up_to(start, |dir| dir.join(TMWS_DIR).is_dir())
}

/// Where `tmws init` makes a root when none is named: the root at or above `start`, else
/// the top of the git work tree holding it, else `start`.
pub fn init_root(start: &Path) -> Option<PathBuf> {
    find_root(start).or_else(|| up_to(start, |dir| dir.join(".git").exists()))
}

fn up_to(start: &Path, found: impl Fn(&Path) -> bool) -> Option<PathBuf> {
    let start = fs::canonicalize(start).ok()?;
    let mut dir = if start.is_dir() { start.as_path() } else { start.parent()? };
    loop {
        if found(dir) {
            return Some(dir.to_path_buf());
        }
        dir = dir.parent()?;
    }
}

/// Canonical absolute form of an existing path.
pub fn canonicalize(path: &Path) -> Result<PathBuf> {
    fs::canonicalize(path).map_err(|e| Error::io(path, e))
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Whether `path` is a regular file (following a final symlink).
pub fn is_file(path: &Path) -> bool {
    path.is_file()
}

pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// Whether `path`, below `root`, is a folder inside the root (a symlink to a folder
/// outside it is not).
pub fn is_dir_in(root: &Path, path: &Path) -> bool {
    path.is_dir() && guard::confine(root, path).is_ok()
}

/// A file's (length, modification time), or None when it does not exist: enough to tell
/// that a cached reading of it is still good.
pub fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Reads a whole regular file below `root`, at most `cap` bytes (docs/trust-boundary.md).
pub fn read(root: &Path, path: &Path, cap: u64) -> Result<Vec<u8>> {
    let (file, len) = guard::open_read(root, path, cap).map_err(|e| Error::io(path, e))?;
    guard::read_capped(file, len, cap).map_err(|e| Error::io(path, e))
}

/// Reads a whole regular file below `root` like [`read`], with the number of names it has
/// (more than one: hard links, which tmws never writes).
pub fn read_with_links(root: &Path, path: &Path, cap: u64) -> Result<(Vec<u8>, u64)> {
    use std::os::unix::fs::MetadataExt;
    let (file, len) = guard::open_read(root, path, cap).map_err(|e| Error::io(path, e))?;
    let links = file.metadata().map_or(1, |m| m.nlink());
    let bytes = guard::read_capped(file, len, cap).map_err(|e| Error::io(path, e))?;
    Ok((bytes, links))
}

/// Reads the files a scan just found, folder by folder. Each folder is opened once from
/// the root without following a link at any component, and its files relative to it with
/// `O_NOFOLLOW`: a folder swapped for a link between the scan and the read sends no read
/// outside the root. The buffer is sized from the length the scan saw, which spares the
/// `statx` and `lseek` that a file's own `read_to_end` makes to size its buffer (a sync
/// reads 100k files); a FIFO is not waited on, and a read stops at the Markdown cap.
#[derive(Debug)]
pub struct ScannedReader<'r> {
    root: &'r Path,
    /// The folder of the last file read (root-relative), open.
    folder: Option<(String, beneath::Dir)>,
}

impl<'r> ScannedReader<'r> {
    pub fn new(root: &'r Path) -> ScannedReader<'r> {
        ScannedReader { root, folder: None }
    }

    /// Reads the file at `rel` (root-relative, `/` separators), of about `len` bytes.
    pub fn read(&mut self, rel: &str, len: u64) -> Result<Vec<u8>> {
        use std::io::Read;
        let path = self.root.join(rel);
        let (folder, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        if self.folder.as_ref().is_none_or(|(f, _)| f != folder) {
            let dir = beneath::Dir::open(self.root, &self.root.join(folder), false).map_err(|e| Error::io(&path, e))?;
            self.folder = Some((folder.to_owned(), dir));
        }
        let Some((_, dir)) = &self.folder else { return Err(Error::io(&path, io::ErrorKind::NotFound.into())) };
        let f = dir
            .open_file(std::ffi::OsStr::new(name), OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)
            .map_err(|e| Error::io(&path, e))?;
        let cap = guard::cap::MARKDOWN;
        // One byte more, so the read that finds the end needs no second allocation.
        let mut out = Vec::with_capacity(usize::try_from(len.min(cap)).unwrap_or(0).saturating_add(1));
        // Through `Take`, which has no size probe of its own; a FIFO reads nothing.
        f.take(cap + 1).read_to_end(&mut out).map_err(|e| Error::io(&path, e))?;
        if out.len() as u64 > cap {
            let why = format!("larger than the {} limit (not read)", guard::human(cap));
            return Err(Error::io(&path, io::Error::new(io::ErrorKind::InvalidData, why)));
        }
        Ok(out)
    }
}

/// Reads a regular file below `root` from byte `offset` to its end (empty when it is
/// shorter), at most `cap` bytes in all.
pub fn read_from(root: &Path, path: &Path, offset: u64, cap: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut f, len) = guard::open_read(root, path, cap).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::with_capacity(usize::try_from(len.saturating_sub(offset)).unwrap_or(0));
    f.seek(SeekFrom::Start(offset)).and_then(|_| f.take(cap).read_to_end(&mut out)).map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// An exclusive advisory lock (the operating system's) on a lock file, held until dropped;
/// a process that dies holding it releases it.
#[derive(Debug)]
pub struct FileLock {
    _file: fs::File,
}

impl FileLock {
    /// Takes the lock at `path` below `root`, creating the file and its folders, and
    /// waiting while another process (or another handle in this one) holds it.
    pub fn exclusive(root: &Path, path: &Path) -> Result<FileLock> {
        let file = Self::lock_file(root, path)?;
        file.lock().map_err(|e| Error::io(path, e))?;
        Ok(FileLock { _file: file })
    }

    /// Takes the lock at `path` below `root` like [`FileLock::exclusive`], or answers None
    /// at once when another process (or another handle in this one) holds it.
    pub fn try_exclusive(root: &Path, path: &Path) -> Result<Option<FileLock>> {
        let file = Self::lock_file(root, path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }

    /// The lock as a child process's standard input: the child then holds it (the lock
    /// belongs to the open file, which it shares) for as long as it runs, after this
    /// process has ended.
    pub fn into_stdio(self) -> std::process::Stdio {
        std::process::Stdio::from(self._file)
    }

    /// Whether a process holds the lock of an existing lock file (one that is not there is
    /// held by no one). The file is neither created nor kept locked.
    pub fn is_held(root: &Path, path: &Path) -> Result<bool> {
        let file = match beneath::open(root, path, OFlag::O_RDWR | OFlag::O_NONBLOCK, 0) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(path, e)),
        };
        match file.try_lock() {
            Ok(()) => Ok(false),
            Err(fs::TryLockError::WouldBlock) => Ok(true),
            Err(fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }

    /// The lock file at `path` below `root`, created with its folders when missing, never
    /// through a symlink at any component. A lock file that is not a regular file (a FIFO
    /// a repository brought) is refused rather than waited on.
    fn lock_file(root: &Path, path: &Path) -> Result<fs::File> {
        let open = || -> io::Result<fs::File> {
            let (dir, name) = beneath::parent_of(root, path, true)?;
            let file = dir.open_file(&name, OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NONBLOCK, 0o666)?;
            let kind = file.metadata()?.file_type();
            if !kind.is_file() {
                let why = format!("{}, not a regular file", guard::kind_name(kind));
                return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
            }
            Ok(file)
        };
        open().map_err(|e| Error::io(path, e))
    }
}

/// A file open for reads at any offset: what reads a few blocks of a large file.
#[derive(Debug)]
pub struct FileAt {
    path: PathBuf,
    file: fs::File,
    len: u64,
}

impl FileAt {
    /// Opens a regular file below `root` (of any length), or None when it does not exist.
    pub fn open_opt(root: &Path, path: &Path) -> Result<Option<FileAt>> {
        let (file, len) = match guard::open_read(root, path, u64::MAX) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        Ok(Some(FileAt { path: path.to_path_buf(), file, len }))
    }

    /// The file's length when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Reads exactly `len` bytes from offset `at`.
    pub fn read_at(&self, at: u64, len: usize) -> Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut out = vec![0; len];
        self.file.read_exact_at(&mut out, at).map_err(|e| Error::io(&self.path, e))?;
        Ok(out)
    }
}

/// Reads a whole regular file below `root` (at most `cap` bytes), or None when it does
/// not exist.
pub fn read_opt(root: &Path, path: &Path, cap: u64) -> Result<Option<Vec<u8>>> {
    match guard::open_read(root, path, cap) {
        Ok((file, len)) => guard::read_capped(file, len, cap).map(Some).map_err(|e| Error::io(path, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Reads a regular file below `root` (at most `cap` bytes) as UTF-8 text, or None when it
/// does not exist.
pub fn read_text_opt(root: &Path, path: &Path, cap: u64) -> Result<Option<String>> {
    match read_opt(root, path, cap)? {
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| Error::io(path, io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8"))),
        None => Ok(None),
    }
}

/// Reads a small secret (the serve token) below `root` as UTF-8 text, or None when it does
/// not exist, with the permission bits of the file that was read (None where there are
/// none). Only a regular file inside the root is opened, and at most 64 KiB are read.
pub fn read_secret_opt(root: &Path, path: &Path) -> Result<Option<(String, Option<u32>)>> {
    const CAP: u64 = 64 << 10;
    let (file, len) = match guard::open_read(root, path, CAP) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    let mode = Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777);
    #[cfg(not(unix))]
    let mode = {
        let _ = meta;
        None
    };
    let bytes = guard::read_capped(file, len, CAP).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::io(path, io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8")))?;
    Ok(Some((text, mode)))
}

/// Which file is at a path, and its length and mtime: two stamps differ once another file
/// was put there (renamed over it) or it was rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: Option<std::time::SystemTime>,
}

impl FileStamp {
    /// The file at `path` now (following a symlink), None when there is none.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let m = fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Some(FileStamp { dev, ino, len: m.len(), mtime: m.modified().ok() })
    }

    /// Whether `other` is a stamp of the same file (not another put at its path), whatever
    /// its length and time.
    pub fn same_file(&self, other: &FileStamp) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }
}

/// What a path is, without following a final symlink: what an approval of the files a
/// server runs looks at (docs/registry.md#approval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Missing,
    Dir,
    /// A symlink, and what it says.
    Symlink(PathBuf),
    /// A regular file: whether any execute bit is set, and its state.
    File {
        executable: bool,
        state: FileState,
    },
    /// A FIFO, a device or a socket.
    Other,
}

/// What changes when a regular file is rewritten or replaced: its device and inode, its
/// length, and its modification and status-change times (nanoseconds), the last of which
/// no one can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileState {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i128,
    ctime: i128,
}

pub fn probe(path: &Path) -> Result<Probe> {
    let m = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            return Ok(Probe::Missing);
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let t = m.file_type();
    if t.is_symlink() {
        return Ok(Probe::Symlink(fs::read_link(path).map_err(|e| Error::io(path, e))?));
    }
    if t.is_dir() {
        return Ok(Probe::Dir);
    }
    if !t.is_file() {
        return Ok(Probe::Other);
    }
    #[cfg(unix)]
    let (executable, state) = {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        let state = FileState {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: ns(m.mtime(), m.mtime_nsec()),
            ctime: ns(m.ctime(), m.ctime_nsec()),
        };
        (m.mode() & 0o111 != 0, state)
    };
    #[cfg(not(unix))]
    let (executable, state) = {
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        (true, FileState { dev: 0, ino: 0, len: m.len(), mtime, ctime: 0 })
    };
    Ok(Probe::File { executable, state })
}

/// Whether `a` and `b` are one file (following symlinks): the same device and inode, or
/// where there are none, the same canonical path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// The length of the regular file at `path` (following symlinks), None for anything else.
pub fn file_len(path: &Path) -> Option<u64> {
    fs::metadata(path).ok().filter(fs::Metadata::is_file).map(|m| m.len())
}

/// Whether `path` is a regular file with an execute bit (following symlinks): what a
/// search of PATH takes.
pub fn is_executable(path: &Path) -> bool {
    let Ok(m) = fs::metadata(path) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        m.is_file()
    }
}

/// blake3 (hex) of a regular file's bytes, read in blocks (never all at once), not through
/// a final symlink, without waiting on a FIFO; a file over `cap` bytes is an error.
pub fn hash_file(path: &Path, cap: u64) -> Result<String> {
    use std::io::Read;
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut opts, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = opts.open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        let why = format!("{}, not a regular file (not read)", guard::kind_name(meta.file_type()));
        return Err(Error::io(path, io::Error::new(io::ErrorKind::InvalidInput, why)));
    }
    let mut hasher = blake3::Hasher::new();
    let read = hasher.update_reader(file.take(cap.saturating_add(1))).map_err(|e| Error::io(path, e))?;
    if read.count() > cap {
        let why = format!("larger than the {} limit (not read)", guard::human(cap));
        return Err(Error::io(path, io::Error::new(io::ErrorKind::InvalidData, why)));
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Names of the entries of a folder below `root` (files and folders), sorted; empty when
/// it is missing. A folder reached through a symlink out of the root is refused.
pub fn list_dir(root: &Path, dir: &Path) -> Result<Vec<String>> {
    names_where(root, dir, |_| true)
}

/// Names of the sub-folders of a folder below `root` (not following symlinks), sorted;
/// empty when it is missing. Reads the folder only: no stat per entry.
pub fn list_subdirs(root: &Path, dir: &Path) -> Result<Vec<String>> {
    names_where(root, dir, |t| t.is_dir())
}

/// Sorted names of the entries of `dir` whose type passes `keep`. Names that are not UTF-8
/// are left out (`check` reports them).
fn names_where(root: &Path, dir: &Path, keep: impl Fn(fs::FileType) -> bool) -> Result<Vec<String>> {
    guard::confine(root, dir).map_err(|e| Error::io(dir, e))?;
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().is_ok_and(&keep)
            && let Ok(name) = entry.file_name().into_string()
        {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Creates a folder and its parents, anywhere (for paths outside any root: the user's
/// config folder, a scratch folder).
pub fn create_dir_all(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Creates a folder below `root` and its parents, after checking that no symlink on the
/// way leads out of the root.
pub fn create_dir_in(root: &Path, dir: &Path) -> Result<()> {
    beneath::Dir::open(root, dir, true).map(drop).map_err(|e| Error::io(dir, e))
}

/// Writes a file below `root` atomically: a temporary file in the same folder, fsync,
/// rename over the target. A reader sees the old or the new content, never a mix. The
/// folder is reached without following a symlink, a symlink at the target is replaced,
/// never written through, and a hard-linked target is refused. Temporary files that a
/// killed process left for the same target are removed.
pub fn write_atomic(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(root, path, bytes, 0o666)
}

fn write_atomic_mode(root: &Path, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let (dir, name) = beneath::parent_of(root, path, true).map_err(|e| Error::io(path, e))?;
    single_link_at(&dir, &name).map_err(|e| Error::io(path, e))?;
    remove_stale_temps(path.parent().unwrap_or(root), &dir);
    let tmp = std::ffi::OsString::from(format!(".{}.tmws-{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| -> io::Result<()> {
        let mut f = dir.open_file(&tmp, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC, mode)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        dir.rename(&tmp, &name)?;
        // Persist the rename; not every platform can fsync a folder, which is fine.
        dir.sync();
        Ok(())
    })();
    if result.is_err() {
        let _ = dir.remove(&tmp);
    }
    result.map_err(|e| Error::io(path, e))
}

/// Refuses to replace or write a file that has other names (a hard link).
fn single_link_at(dir: &beneath::Dir, name: &std::ffi::OsStr) -> io::Result<()> {
    match dir.open_file(name, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(f) => beneath::single_link(&f),
        Err(_) => Ok(()),
    }
}

/// The process id in the name of a temporary file of an atomic write (`.{name}.tmws-{pid}.tmp`).
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, pid) = rest.rsplit_once(".tmws-")?;
    pid.parse().ok()
}

/// Removes the temporary files of atomic writes in `dir` (at `shown`) whose process is
/// gone: what a process killed between writing and renaming left, whatever file it wrote.
fn remove_stale_temps(shown: &Path, dir: &beneath::Dir) {
    let Ok(read) = fs::read_dir(shown) else { return };
    for entry in read.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        if pid != std::process::id() && !cache::is_running(pid) {
            let _ = dir.remove(&name);
        }
    }
}

/// Writes `bytes` at offset `at` of a journal file below `root`, cutting off whatever was
/// after `at` (a torn or stale tail), and syncs the data. Creates the file when it is
/// missing; never writes through a symlink.
pub fn append_at(root: &Path, path: &Path, at: u64, bytes: &[u8]) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let result = (|| -> io::Result<()> {
        let (dir, name) = beneath::parent_of(root, path, true)?;
        let mut f = dir.open_file(&name, OFlag::O_WRONLY | OFlag::O_CREAT, 0o666)?;
        beneath::single_link(&f)?;
        if f.metadata()?.len() != at {
            f.set_len(at)?;
        }
        f.seek(SeekFrom::Start(at))?;
        f.write_all(bytes)?;
        f.sync_data()
    })();
    result.map_err(|e| Error::io(path, e))
}

/// Appends `bytes` to a file below `root` without syncing it: for logs of the cache whose
/// last lines may be lost in a crash. Creates the file when it is missing; never writes
/// through a symlink.
pub fn append_unsynced(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let result = (|| -> io::Result<()> {
        let (dir, name) = beneath::parent_of(root, path, true)?;
        let mut f =
            dir.open_file(&name, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND | OFlag::O_NONBLOCK, 0o666)?;
        beneath::single_link(&f)?;
        f.write_all(bytes)
    })();
    result.map_err(|e| Error::io(path, e))
}

/// Writes a script below `root` atomically and makes it executable (mode 0755 on Unix).
pub fn write_executable(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(root, path, bytes, 0o755)?;
    // The mode a file is created with is cut by the umask; the script must run.
    let (dir, name) = beneath::parent_of(root, path, false).map_err(|e| Error::io(path, e))?;
    let f = dir.open_file(&name, OFlag::O_RDONLY, 0).map_err(|e| Error::io(path, e))?;
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(fs::Permissions::from_mode(0o755)).map_err(|e| Error::io(path, e))
}

/// Renames a file below `root` (within one file system).
pub fn rename(root: &Path, from: &Path, to: &Path) -> Result<()> {
    let (from_dir, from_name) = beneath::parent_of(root, from, false).map_err(|e| Error::io(from, e))?;
    let (to_dir, to_name) = beneath::parent_of(root, to, false).map_err(|e| Error::io(to, e))?;
    beneath::rename_between(&from_dir, &from_name, &to_dir, &to_name).map_err(|e| Error::io(from, e))
}

/// Writes a small file below `root` without syncing it: for markers whose loss in a crash
/// is harmless. Never writes through a symlink.
pub fn write_marker(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let result = (|| -> io::Result<()> {
        let (dir, name) = beneath::parent_of(root, path, true)?;
        let mut f = dir.open_file(&name, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK, 0o666)?;
        beneath::single_link(&f)?;
        f.set_len(0)?;
        f.write_all(bytes)
    })();
    result.map_err(|e| Error::io(path, e))
}

/// Creates `path` below `root` with `bytes`, readable and writable by its owner only (mode
/// 0600 on Unix), unless it exists already. Returns whether this call created it. The file
/// appears whole or not at all: it is written aside and then linked into place, so two
/// processes racing to create it agree on one content.
pub fn create_private(root: &Path, path: &Path, bytes: &[u8]) -> Result<bool> {
    let (dir, name) = beneath::parent_of(root, path, true).map_err(|e| Error::io(path, e))?;
    let tmp = std::ffi::OsString::from(format!(".{}.tmws-{}.tmp", name.to_string_lossy(), std::process::id()));
    let result = (|| -> io::Result<bool> {
        let mut f = dir.open_file(&tmp, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC, 0o600)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        match dir.link(&tmp, &name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    })();
    let _ = dir.remove(&tmp);
    result.map_err(|e| Error::io(path, e))
}

/// What a path is on disk, without following a final symlink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Missing,
    File,
    Dir,
    Symlink(PathBuf),
}

pub fn entry(path: &Path) -> Result<Entry> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Ok(Entry::Symlink(fs::read_link(path).map_err(|e| Error::io(path, e))?)),
        Ok(m) if m.is_dir() => Ok(Entry::Dir),
        Ok(_) => Ok(Entry::File),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Entry::Missing),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Makes `link` (below `root`) point at `target` (a relative path is relative to the
/// link's folder). Where symlinks are not available, copies the target instead.
pub fn symlink(root: &Path, target: &Path, link: &Path) -> Result<()> {
    if let Some(dir) = link.parent() {
        create_dir_in(root, dir)?;
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(target, link).map_err(|e| Error::io(link, e))
    }
    #[cfg(not(unix))]
    {
        let source = link.parent().unwrap_or(Path::new(".")).join(target);
        fs::copy(&source, link).map(|_| ()).map_err(|e| Error::io(link, e))
    }
}

/// Removes a folder and everything in it; a missing folder is fine.
pub fn remove_dir_all(dir: &Path) -> Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

/// Removes a file (a symlink itself, never its target).
pub fn remove_file(path: &Path) -> Result<()> {
    fs::remove_file(path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sized_read_gets_the_whole_file_whatever_length_it_was_told() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("docs")).unwrap();
        let text: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        fs::write(dir.path().join("docs/a.md"), &text).unwrap();
        fs::write(dir.path().join("top.md"), "top").unwrap();
        let mut reader = ScannedReader::new(dir.path());
        // Told the right length, a shorter one (the file grew since the scan), a longer
        // one (it shrank) and an absurd one.
        for told in [10_000, 0, 10, 20_000, u64::MAX] {
            assert_eq!(reader.read("docs/a.md", told).unwrap(), text, "told {told}");
        }
        assert_eq!(reader.read("top.md", 3).unwrap(), b"top");
        let err = reader.read("docs/gone.md", 5).unwrap_err().to_string();
        assert!(err.contains("gone.md"), "{err}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_the_scan_is_not_read_through() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("a.md"), "theirs").unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("docs")).unwrap();
        fs::write(dir.path().join("docs/a.md"), "ours").unwrap();
        fs::rename(dir.path().join("docs"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("docs")).unwrap();
        let err = ScannedReader::new(dir.path()).read("docs/a.md", 4).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
    }

    #[test]
    fn an_atomic_write_removes_what_killed_writers_left_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        // No process has pid 0x7fff_fff0; this process's own temporary files stay.
        let dead = format!(".260101-old.md.tmws-{}.tmp", 0x7fff_fff0u32);
        let alive = format!(".other.md.tmws-{}.tmp", std::process::id());
        for n in [&dead, &alive, &".notes.tmp".to_owned(), &"plain.md".to_owned()] {
            fs::write(r.join(n), "x").unwrap();
        }
        write_atomic(r, &r.join("260102-new.md"), b"new").unwrap();
        let mut names: Vec<String> =
            fs::read_dir(r).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, [".notes.tmp".to_owned(), alive, "260102-new.md".into(), "plain.md".into()]);
    }

    #[test]
    fn a_journal_append_cuts_off_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.log");
        append_at(dir.path(), &journal, 0, b"first").unwrap();
        append_at(dir.path(), &journal, 5, b"second").unwrap();
        assert_eq!(fs::read(&journal).unwrap(), b"firstsecond");
        fs::write(&journal, b"firstsecondTORN").unwrap();
        append_at(dir.path(), &journal, 11, b"third").unwrap();
        assert_eq!(fs::read(&journal).unwrap(), b"firstsecondthird");
    }
}

//! The store: the only module that touches the disk.
//!
//! It finds the root, walks the canonical folders, reads files and writes them atomically.
//! What the bytes mean is `parse`'s business; where a path belongs in the canonical layout
//! is `crate::layout`'s.

pub mod git;
pub mod log;
mod scan;
pub mod watch;

pub use self::git::git_head;
pub use self::scan::{Scanned, list, scan};

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub use crate::layout::TMWS_DIR;

/// Walks up from `start` to the first folder holding `.tmws/` or `.git`.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let start = fs::canonicalize(start).ok()?;
    let mut dir = if start.is_dir() { start.as_path() } else { start.parent()? };
    loop {
        if dir.join(TMWS_DIR).is_dir() || dir.join(".git").exists() {
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

/// A file's (length, modification time), or None when it does not exist: enough to tell
/// that a cached reading of it is still good.
pub fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Reads a whole file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| Error::io(path, e))
}

/// Reads a whole file whose length a scan just saw: the buffer is sized from it, which
/// spares the `statx` and `lseek` that a file's own `read_to_end` makes to size its
/// buffer (a sync reads 100k files). A file that grew since is still read to its end.
pub fn read_sized(path: &Path, len: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let f = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // One byte more, so the read that finds the end needs no second allocation.
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1).min(64 << 20));
    // Through `Take`, which has no size probe of its own.
    f.take(u64::MAX).read_to_end(&mut out).map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// Reads a file from byte `offset` to its end (empty when it is shorter).
pub fn read_from(path: &Path, offset: u64) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    f.seek(SeekFrom::Start(offset)).and_then(|_| f.read_to_end(&mut out)).map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// An exclusive advisory lock (the operating system's) on a lock file, held until dropped;
/// a process that dies holding it releases it.
#[derive(Debug)]
pub struct FileLock {
    _file: fs::File,
}

impl FileLock {
    /// Takes the lock at `path`, creating the file and its folders, and waiting while
    /// another process (or another handle in this one) holds it.
    pub fn exclusive(path: &Path) -> Result<FileLock> {
        if let Some(dir) = path.parent() {
            create_dir_all(dir)?;
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        file.lock().map_err(|e| Error::io(path, e))?;
        Ok(FileLock { _file: file })
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
    /// Opens a file, or None when it does not exist.
    pub fn open_opt(path: &Path) -> Result<Option<FileAt>> {
        let file = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
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

/// Reads a whole file, or None when it does not exist.
pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Reads a file as UTF-8 text, or None when it does not exist.
pub fn read_text_opt(path: &Path) -> Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| Error::io(path, io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Reads a small secret (the serve token) as UTF-8 text, or None when it does not exist,
/// with the permission bits of the file that was read (None where there are none). Only a
/// regular file is opened, and only its first 64 KiB are read.
pub fn read_secret_opt(path: &Path) -> Result<Option<(String, Option<u32>)>> {
    use std::io::Read;
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
        Ok(m) if !m.is_file() => {
            return Err(Error::io(path, io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
        }
        Ok(_) => {}
    }
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    let mode = Some(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777);
    #[cfg(not(unix))]
    let mode = {
        let _ = meta;
        None
    };
    let mut bytes = Vec::new();
    file.take(64 << 10).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::io(path, io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8")))?;
    Ok(Some((text, mode)))
}

/// Names of the entries of a folder (files and folders), sorted; empty when it is missing.
pub fn list_dir(dir: &Path) -> Result<Vec<String>> {
    names_where(dir, |_| true)
}

/// Names of the sub-folders of a folder (not following symlinks), sorted; empty when it
/// is missing. Reads the folder only: no stat per entry.
pub fn list_subdirs(dir: &Path) -> Result<Vec<String>> {
    names_where(dir, |t| t.is_dir())
}

/// Sorted names of the entries of `dir` whose type passes `keep`.
fn names_where(dir: &Path, keep: impl Fn(fs::FileType) -> bool) -> Result<Vec<String>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().is_ok_and(&keep) {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

pub fn create_dir_all(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Writes a file atomically: a temporary file in the same folder, fsync, rename over the
/// target. A reader sees the old or the new content, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmws-{}.tmp", std::process::id()));
    let result = (|| -> io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            // Persist the rename; not every platform can fsync a folder, which is fine.
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| Error::io(path, e))
}

/// Writes `bytes` at offset `at` of a journal file, cutting off whatever was after `at`
/// (a torn or stale tail), and syncs the data. Creates the file when it is missing.
pub fn append_at(path: &Path, at: u64, bytes: &[u8]) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let result = (|| -> io::Result<()> {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
        if f.metadata()?.len() != at {
            f.set_len(at)?;
        }
        f.seek(SeekFrom::Start(at))?;
        f.write_all(bytes)?;
        f.sync_data()
    })();
    result.map_err(|e| Error::io(path, e))
}

/// Writes a script atomically and makes it executable (mode 0755 on Unix).
pub fn write_executable(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

/// Renames a file (within one file system).
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| Error::io(from, e))
}

/// Writes a small file without syncing it: for markers whose loss in a crash is harmless.
pub fn write_marker(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        create_dir_all(dir)?;
    }
    fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

/// Creates `path` with `bytes`, readable and writable by its owner only (mode 0600 on
/// Unix), unless it exists already. Returns whether this call created it. The file appears
/// whole or not at all: it is written aside and then linked into place, so two processes
/// racing to create it agree on one content.
pub fn create_private(path: &Path, bytes: &[u8]) -> Result<bool> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmws-{}.tmp", std::process::id()));
    let result = (|| -> io::Result<bool> {
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    })();
    let _ = fs::remove_file(&tmp);
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

/// Makes `link` point at `target` (a relative path is relative to the link's folder).
/// Where symlinks are not available, copies the target instead.
pub fn symlink(target: &Path, link: &Path) -> Result<()> {
    if let Some(dir) = link.parent() {
        create_dir_all(dir)?;
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

pub fn remove_file(path: &Path) -> Result<()> {
    fs::remove_file(path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sized_read_gets_the_whole_file_whatever_length_it_was_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        let text: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        fs::write(&path, &text).unwrap();
        // Told the right length, a shorter one (the file grew since the scan), a longer
        // one (it shrank) and an absurd one.
        for told in [10_000, 0, 10, 20_000, u64::MAX] {
            assert_eq!(read_sized(&path, told).unwrap(), text, "told {told}");
        }
        let gone = dir.path().join("gone.md");
        let err = read_sized(&gone, 5).unwrap_err().to_string();
        assert!(err.contains("gone.md"), "{err}");
    }

    #[test]
    fn a_journal_append_cuts_off_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("j.log");
        append_at(&journal, 0, b"first").unwrap();
        append_at(&journal, 5, b"second").unwrap();
        assert_eq!(fs::read(&journal).unwrap(), b"firstsecond");
        fs::write(&journal, b"firstsecondTORN").unwrap();
        append_at(&journal, 11, b"third").unwrap();
        assert_eq!(fs::read(&journal).unwrap(), b"firstsecondthird");
    }
}

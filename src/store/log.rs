//! Append-only JSONL logs on disk (docs/memory-log.md): an exclusive lock while a writer reads and
//! appends, one `write` per line, fsync on request.
//!
//! The lock is the operating system's advisory file lock (`File::lock`) on a lock file
//! beside the derived cache (not on the log itself, so that compaction can rename a new log
//! into place without a waiting writer appending to the old one). Every tmws process
//! appending to one log is serialised, and a process killed while it holds the lock
//! releases it. A line is written with a single `write` call ending in `\n`; a
//! log whose last line is torn (no `\n`, from a writer killed mid-write) gets a `\n` first,
//! so the torn line stays alone and never swallows the next one. An append that fails
//! (a full disk) cuts the log back to its length before it, so no partial line is left.
//! A log is never written through a symlink (`O_NOFOLLOW`), and its folders must be inside
//! the root (docs/trust-boundary.md).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::{beneath, guard};
use crate::error::{Error, Result};

/// Where an append put its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The offset of the first line, when the lines follow the log's old end directly:
    /// None when a `\n` had to end a torn last line first, or when the log was replaced
    /// meanwhile and the lines were written again to the new one.
    pub at: Option<u64>,
}

/// A log opened for appending, locked exclusively until dropped.
#[derive(Debug)]
pub struct LockedLog {
    root: PathBuf,
    path: PathBuf,
    /// The log's folder, and its name there.
    dir: beneath::Dir,
    name: OsString,
    file: File,
    _lock: super::FileLock,
}

impl LockedLog {
    /// Takes the lock at `lock` (waiting for any other writer to finish), then opens the
    /// log at `path`, creating it and the folders if needed; both are below `root`.
    pub fn open(root: &Path, path: &Path, lock: &Path) -> Result<LockedLog> {
        let lock_file = super::FileLock::exclusive(root, lock)?;
        // The log's folder is reached from the root without following a symlink, and the
        // log is opened (and later replaced) relative to it: swapping a folder on the way
        // for a link while this process writes sends nothing elsewhere.
        let (dir, name) = beneath::parent_of(root, path, true).map_err(|e| Error::io(path, e))?;
        let file = open_log(&dir, &name).map_err(|e| Error::io(path, e))?;
        Ok(LockedLog { root: root.to_path_buf(), path: path.to_path_buf(), dir, name, file, _lock: lock_file })
    }

    /// The log's length in bytes.
    pub fn len(&self) -> Result<u64> {
        Ok(self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len())
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The whole log as it is now (nobody else appends while the lock is held).
    pub fn read_all(&mut self) -> Result<Vec<u8>> {
        self.read_from(0)
    }

    /// The log from byte `offset` to its end, at most `cap::LOG` bytes.
    pub fn read_from(&mut self, offset: u64) -> Result<Vec<u8>> {
        // Sized from the file's length: through `Take`, `read_to_end` grew the buffer by
        // doubling, copying a large log several times into fresh (zeroed) pages.
        let len = self.file.metadata().map_or(0, |m| m.len()).saturating_sub(offset).min(guard::cap::LOG);
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
        let result = self.file.seek(SeekFrom::Start(offset)).and_then(|_| {
            (&mut self.file).take(guard::cap::LOG + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > guard::cap::LOG {
                let why = format!("larger than the {} limit", guard::human(guard::cap::LOG));
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
            Ok(())
        });
        result.map_err(|e| Error::io(&self.path, e))?;
        Ok(bytes)
    }

    /// Replaces the whole log with `bytes`, atomically: they are written to a temporary
    /// file beside it (`.{name}.tmp`), synced, and renamed over the log, and the folder is
    /// synced. A process killed at any point leaves either the old log or the new one.
    pub fn replace(&mut self, bytes: &[u8]) -> Result<()> {
        let tmp = OsString::from(format!(".{}.tmp", self.name.to_string_lossy()));
        let result = (|| -> io::Result<File> {
            let mut f = self.dir.open_file(&tmp, OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC, 0o666)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            drop(f);
            self.dir.rename(&tmp, &self.name)?;
            // Makes the rename itself durable (not possible on every platform).
            self.dir.sync();
            open_log(&self.dir, &self.name)
        })();
        self.file = result.map_err(|e| Error::io(&self.path, e))?;
        Ok(())
    }

    /// Appends `lines` (each one JSON text without its `\n`) with one `write` each, after a
    /// `\n` when the log ends in a torn line; then fsyncs when `sync`. When any of it fails
    /// (a full disk), the log is cut back to its length before the call.
    pub fn append(&mut self, lines: &[String], sync: bool) -> Result<Appended> {
        let before = self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        let result = self.append_from(before, lines, sync);
        if result.is_err() {
            // Best effort: the lock is held, so nobody else appended since `before`.
            let _ = self.file.set_len(before).and_then(|()| self.file.sync_data());
        }
        let at = result.map_err(|e| Error::io(&self.path, e))?;
        // Git does not take tmws' lock: a checkout, a stash or a pull may have put another
        // file at the log's path (or none) while these lines were written to the old one.
        // Then they are written again, to the file that is there now.
        if self.replaced(before) {
            tracing::warn!(
                "{} was replaced while it was written (a git checkout, stash or pull?): its new lines are written again",
                self.path.display()
            );
            let (dir, name) = beneath::parent_of(&self.root, &self.path, true).map_err(|e| Error::io(&self.path, e))?;
            self.file = open_log(&dir, &name).map_err(|e| Error::io(&self.path, e))?;
            (self.dir, self.name) = (dir, name);
            let len = self.len()?;
            self.append_from(len, lines, sync).map_err(|e| Error::io(&self.path, e))?;
            return Ok(Appended { at: None });
        }
        Ok(Appended { at })
    }

    /// Whether the file at the log's path, reached again from the root, is no longer the
    /// one this log wrote (another file, or none), or is shorter than what was written.
    fn replaced(&self, before: u64) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok(ours) = self.file.metadata() else { return false };
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
        match beneath::open(&self.root, &self.path, flags, 0).and_then(|f| f.metadata()) {
            Ok(now) => (now.dev(), now.ino()) != (ours.dev(), ours.ino()) || now.len() < before,
            Err(_) => true,
        }
    }

    /// Appends at `len`, the log's length; gives `len` back when nothing went before the
    /// lines (None when a torn last line was ended first).
    fn append_from(&mut self, len: u64, lines: &[String], sync: bool) -> io::Result<Option<u64>> {
        let mut at = Some(len);
        if len > 0 {
            let mut last = [0u8; 1];
            self.file.seek(SeekFrom::Start(len - 1))?;
            self.file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                self.file.write_all(b"\n")?;
                at = None;
            }
        }
        for line in lines {
            let mut bytes = Vec::with_capacity(line.len() + 1);
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            // One write call: O_APPEND puts it at the end in one piece.
            let n = self.file.write(&bytes)?;
            if n != bytes.len() {
                // A short write (disk full): finish it, the line must not stay torn.
                self.file.write_all(&bytes[n..])?;
            }
        }
        if sync {
            self.file.sync_data()?;
        }
        Ok(at)
    }
}

/// Opens the log `name` of `dir` for reading and appending, creating it, never through a
/// symlink; anything but a regular file with one name is refused (a FIFO is not waited
/// on, and appending to a hard link would change the file of its other names too).
fn open_log(dir: &beneath::Dir, name: &OsStr) -> io::Result<File> {
    let flags = OFlag::O_RDWR | OFlag::O_APPEND | OFlag::O_CREAT | OFlag::O_NONBLOCK;
    let file = dir.open_file(name, flags, 0o666)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let why = format!("{}, not a regular file", guard::kind_name(kind));
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    }
    beneath::single_link(&file)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
    }

    #[test]
    fn lines_written_to_a_log_that_git_replaced_meanwhile_are_written_again_to_the_new_one() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let path = r.join(".tmws/memory/short-term.jsonl");
        let lock = r.join(".tmws/cache/locks/memory-short-term.lock");
        let mut log = LockedLog::open(r, &path, &lock).unwrap();
        log.append(&["{\"n\":1}".to_owned()], true).unwrap();
        // A checkout puts the committed version in place: a new file, without line 1.
        std::fs::write(r.join(".tmws/memory/.checkout"), "{\"n\":0}\n").unwrap();
        std::fs::rename(r.join(".tmws/memory/.checkout"), &path).unwrap();
        log.append(&["{\"n\":2}".to_owned()], true).unwrap();
        assert_eq!(lines(&path), ["{\"n\":0}", "{\"n\":2}"]);
        // A stash takes the file away altogether: the next lines make a new log.
        std::fs::remove_file(&path).unwrap();
        log.append(&["{\"n\":3}".to_owned()], true).unwrap();
        assert_eq!(lines(&path), ["{\"n\":3}"]);
        // Untouched, nothing is written twice.
        log.append(&["{\"n\":4}".to_owned()], true).unwrap();
        assert_eq!(lines(&path), ["{\"n\":3}", "{\"n\":4}"]);
    }
}

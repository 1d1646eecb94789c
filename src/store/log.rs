//! Append-only JSONL logs on disk (DESIGN §2.3): an exclusive lock while a writer reads and
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
//! the root (DESIGN §12).

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::guard;
use crate::error::{Error, Result};

/// A log opened for appending, locked exclusively until dropped.
#[derive(Debug)]
pub struct LockedLog {
    path: PathBuf,
    file: File,
    _lock: super::FileLock,
}

impl LockedLog {
    /// Takes the lock at `lock` (waiting for any other writer to finish), then opens the
    /// log at `path`, creating it and the folders if needed; both are below `root`.
    pub fn open(root: &Path, path: &Path, lock: &Path) -> Result<LockedLog> {
        if let Some(dir) = path.parent() {
            super::create_dir_in(root, dir)?;
        }
        let lock_file = super::FileLock::exclusive(root, lock)?;
        let file = open_log(path).map_err(|e| Error::io(path, guard::writing(path, e)))?;
        let kind = file.metadata().map_err(|e| Error::io(path, e))?.file_type();
        if !kind.is_file() {
            let why = format!("{}, not a regular file", guard::kind_name(kind));
            return Err(Error::io(path, io::Error::new(io::ErrorKind::InvalidInput, why)));
        }
        Ok(LockedLog { path: path.to_path_buf(), file, _lock: lock_file })
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
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = self.path.with_file_name(format!(".{name}.tmp"));
        let result = (|| -> io::Result<File> {
            let mut f = guard::write_options().create(true).truncate(true).open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            drop(f);
            fs::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                // Makes the rename itself durable (not possible on every platform).
                let _ = File::open(dir).and_then(|d| d.sync_all());
            }
            open_log(&self.path)
        })();
        self.file = result.map_err(|e| Error::io(&self.path, e))?;
        Ok(())
    }

    /// Appends `lines` (each one JSON text without its `\n`) with one `write` each, after a
    /// `\n` when the log ends in a torn line; then fsyncs when `sync`. When any of it fails
    /// (a full disk), the log is cut back to its length before the call.
    pub fn append(&mut self, lines: &[String], sync: bool) -> Result<()> {
        let before = self.file.metadata().map_err(|e| Error::io(&self.path, e))?.len();
        let result = self.append_from(before, lines, sync);
        if result.is_err() {
            // Best effort: the lock is held, so nobody else appended since `before`.
            let _ = self.file.set_len(before).and_then(|()| self.file.sync_data());
        }
        result.map_err(|e| Error::io(&self.path, e))
    }

    fn append_from(&mut self, len: u64, lines: &[String], sync: bool) -> io::Result<()> {
        if len > 0 {
            let mut last = [0u8; 1];
            self.file.seek(SeekFrom::Start(len - 1))?;
            self.file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                self.file.write_all(b"\n")?;
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
        Ok(())
    }
}

/// Opens a log for reading and appending, creating it, never through a symlink.
fn open_log(path: &Path) -> io::Result<File> {
    let mut opts = guard::write_options();
    opts.read(true).append(true).create(true);
    opts.open(path)
}

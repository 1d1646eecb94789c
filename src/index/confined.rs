//! tantivy's folder, confined to itself: the only directory tantivy is given.
//!
//! tantivy acts on names it reads from its own files: its garbage collection deletes every
//! file its `.managed.json` lists that no segment uses, joined to the folder's path, and
//! the mmap directory opens the folder by its canonical path, following links. A cache
//! that a repository brought could thus make a search delete or write files anywhere.
//! Here every name tantivy passes must be a plain file name of the folder (no separator,
//! no `..`); a file that is a symlink or not a regular file is never opened, and lock files
//! are opened without following a link; and the folder itself is opened only when no
//! component from the root down to it is a symlink. The cache's own check
//! (`store::cache`) sets such a cache aside before tantivy sees it; this is the guard that
//! holds whatever got past it.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

use crate::store::{self, FileLock};

/// tantivy's folder at `dir` below `root`.
#[derive(Debug, Clone)]
pub(super) struct Confined {
    inner: MmapDirectory,
    root: PathBuf,
    dir: PathBuf,
}

fn refused(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why.into())
}

/// Whether tantivy's `path` is a plain file name of its folder.
fn plain(path: &Path) -> io::Result<()> {
    let mut parts = path.components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(name)), None) if name.to_str().is_some_and(crate::store::cache::is_plain_name) => {
            Ok(())
        }
        _ => Err(refused(format!("{} is not a file of the index folder", path.display()))),
    }
}

impl Confined {
    /// Opens tantivy's folder `dir`, which must exist below `root` with no symlink on the way.
    pub(super) fn open(root: &Path, dir: &Path) -> tantivy::Result<Confined> {
        store::beneath::Dir::open(root, dir, false)
            .map_err(|e| OpenDirectoryError::wrap_io_error(e, dir.to_path_buf()))?;
        Ok(Confined { inner: MmapDirectory::open(dir)?, root: root.to_path_buf(), dir: dir.to_path_buf() })
    }

    /// Checks a name tantivy is about to read: plain, and a regular file when it exists.
    fn readable(&self, path: &Path) -> Result<(), OpenReadError> {
        let wrap = |e: io::Error| OpenReadError::wrap_io_error(e, path.to_path_buf());
        plain(path).map_err(wrap)?;
        store::guard::regular_or_missing(&self.dir.join(path)).map_err(wrap)
    }
}

impl Directory for Confined {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.readable(path)?;
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        plain(path).map_err(|e| DeleteError::IoError { io_error: Arc::new(e), filepath: path.to_path_buf() })?;
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        plain(path).map_err(|e| OpenReadError::wrap_io_error(e, path.to_path_buf()))?;
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        // tantivy creates new files only (`create_new`), which never follows a link.
        plain(path).map_err(|e| OpenWriteError::wrap_io_error(e, path.to_path_buf()))?;
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.readable(path)?;
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        // Written aside and renamed into place: a link there is replaced, not followed.
        plain(path)?;
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        plain(&lock.filepath).map_err(LockError::wrap_io_error)?;
        // The operating system's lock, as tantivy's own directory takes it (released when
        // the file is closed, by a process that dies too), on a file opened without
        // following a link.
        let path = self.dir.join(&lock.filepath);
        let as_io = |e: crate::error::Error| LockError::wrap_io_error(io::Error::other(e.to_string()));
        let held = if lock.is_blocking {
            FileLock::exclusive(&self.root, &path).map_err(as_io)?
        } else {
            FileLock::try_exclusive(&self.root, &path).map_err(as_io)?.ok_or(LockError::LockBusy)?
        };
        Ok(DirectoryLock::from(Box::new(held)))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn names_that_leave_the_folder_are_refused_for_every_operation() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("segments");
        fs::create_dir(&dir).unwrap();
        let d = Confined::open(root.path(), &dir).unwrap();
        let up = Path::new("../../").join(victim.strip_prefix("/").unwrap());
        for bad in [up.as_path(), victim.as_path(), Path::new(".."), Path::new("a/b")] {
            assert!(d.delete(bad).is_err(), "{}", bad.display());
            assert!(d.atomic_read(bad).is_err(), "{}", bad.display());
            assert!(d.atomic_write(bad, b"x").is_err(), "{}", bad.display());
            assert!(d.open_write(bad).is_err(), "{}", bad.display());
            assert!(d.exists(bad).is_err(), "{}", bad.display());
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn links_in_the_folder_are_never_read_or_locked_through() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        fs::write(&secret, "theirs").unwrap();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("segments");
        fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("meta.json")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("made"), dir.join(".tantivy-writer.lock")).unwrap();
        let d = Confined::open(root.path(), &dir).unwrap();
        assert!(d.atomic_read(Path::new("meta.json")).is_err());
        assert!(d.get_file_handle(Path::new("meta.json")).is_err());
        let lock = Lock { filepath: PathBuf::from(".tantivy-writer.lock"), is_blocking: false };
        assert!(d.acquire_lock(&lock).is_err());
        assert!(!outside.path().join("made").exists(), "no file was created through the link");
    }

    #[test]
    fn a_folder_reached_through_a_symlink_is_not_opened() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("cache")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("cache/index")).unwrap();
        assert!(Confined::open(root.path(), &root.path().join("cache/index")).is_err());
        fs::create_dir(outside.path().join("segments")).unwrap();
        assert!(Confined::open(root.path(), &root.path().join("cache/index/segments")).is_err());
    }
}

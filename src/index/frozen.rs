//! The index folder as a read-only mount or a full disk leaves it (docs/trust-boundary.md):
//! tantivy's directory, but nothing is written and no lock is taken. A reader takes tantivy's meta
//! lock, a file it creates, to open the segments; where nothing can be written, the lock protects
//! nothing (no writer can run either), so it is a no-op here.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{Directory, DirectoryLock, FileHandle, Lock, WatchCallback, WatchHandle, WritePtr};

use super::confined::Confined;

#[derive(Debug, Clone)]
pub(super) struct Frozen(Confined);

impl Frozen {
    pub(super) fn open(root: &Path, dir: &Path) -> tantivy::Result<Frozen> {
        Ok(Frozen(Confined::open(root, dir)?))
    }
}

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::ReadOnlyFilesystem, "the index is opened read-only")
}

impl Directory for Frozen {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError { io_error: Arc::new(read_only()), filepath: path.to_path_buf() })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError { io_error: Arc::new(read_only()), filepath: path.to_path_buf() })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.0.watch(watch_callback)
    }
}

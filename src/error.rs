//! The library's error type: what went wrong, and with which file.
//!
//! Per-file findings are not errors but `Diagnostic`s; an `Error` is what stops a command:
//! an unreadable file, a missing root, an invalid config, a client config that would be
//! lost if it were rewritten.

use std::io;
use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },

    #[error("{}:{line}:{column}: {message}", path.display())]
    WithLine { path: PathBuf, line: usize, column: usize, message: String, hint: Option<String> },

    #[error("no tmws root at or above {} (looked for a .tmws/ or .git folder)", .0.display())]
    NoRoot(PathBuf),

    #[error("{}: no such file or folder", .0.display())]
    NotFound(PathBuf),

    #[error("{0}")]
    Usage(String),

    /// A scope that does not exist; the message lists the ones that do.
    #[error("{0}")]
    UnknownScope(String),

    /// An id that names nothing (a memory that does not exist or was deleted).
    #[error("{0}")]
    NoSuchId(String),

    #[error("index: {0}")]
    Index(String),
}

impl Error {
    pub fn io(path: &Path, source: io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }

    /// A hint that helps the user fix the error, if there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::WithLine { hint, .. } => hint.as_deref(),
            Error::NoRoot(_) => Some("run `tmws init` in the project folder, or pass --root DIR"),
            _ => None,
        }
    }
}

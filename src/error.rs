//! The library's error type: what went wrong, and what kind of wrong it is.
//!
//! Per-file findings are not errors but `Diagnostic`s; an `Error` is what stops a request.
//! Every error has a [`Category`], and the category alone decides what each surface makes
//! of it: the CLI's exit code, the HTTP status, the category an MCP error result names.
//! Nothing else maps errors to codes, so a failure means the same on every surface.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder that could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },

    /// A file tmws must read (a config) that is not valid, at a place in it.
    #[error("{}:{line}:{column}: {message}", path.display())]
    WithLine { path: PathBuf, line: usize, column: usize, message: String, hint: Option<String> },

    #[error("no tmws root at or above {} (no .tmws/ folder)", .0.display())]
    NoRoot(PathBuf),

    /// A path named on the command line that does not exist.
    #[error("{}: no such file or folder", .0.display())]
    NoSuchPath(PathBuf),

    /// The request itself is wrong: a bad parameter, a missing one, a value out of range.
    #[error("{0}")]
    Usage(String),

    /// The request names something that does not exist: a scope, a memory id, a server.
    #[error("{0}")]
    NotFound(String),

    /// The request clashes with what is there: a file tmws did not write, a changed version.
    #[error("{0}")]
    Conflict(String),

    /// Something around tmws failed: git, the file watcher, the async runtime, a socket.
    #[error("{0}")]
    Environment(String),

    /// Another MCP server failed: it did not start, crashed, timed out, or the pool is full.
    #[error("{0}")]
    Downstream(String),

    /// The derived index failed.
    #[error("index: {0}")]
    Index(String),

    /// Any error with a hint that helps fix it.
    #[error("{error}")]
    Hinted { error: Box<Error>, hint: String },
}

/// What kind of failure an error is. Surfaces map categories, never errors, to codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The request is wrong (a bad flag, parameter or value).
    Usage,
    /// What the request names does not exist.
    NotFound,
    /// The request clashes with the state of the files.
    Conflict,
    /// The environment failed: no root, an unreadable file or config, git, a socket.
    Environment,
    /// A downstream MCP server failed.
    Downstream,
    /// The derived index failed.
    Index,
}

impl Category {
    /// The name answers carry (`not_found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Usage => "usage",
            Category::NotFound => "not_found",
            Category::Conflict => "conflict",
            Category::Environment => "environment",
            Category::Downstream => "downstream",
            Category::Index => "index",
        }
    }

    /// The CLI's exit code (docs/errors.md): 1 when the command ran and found a problem (no such
    /// id, a conflict, a failed downstream server), 2 for usage and environment errors.
    pub fn exit_code(self) -> u8 {
        match self {
            Category::NotFound | Category::Conflict | Category::Downstream => 1,
            Category::Usage | Category::Environment | Category::Index => 2,
        }
    }

    /// The HTTP status of an error answer.
    pub fn http_status(self) -> u16 {
        match self {
            Category::Usage => 400,
            Category::NotFound => 404,
            Category::Conflict => 409,
            Category::Downstream => 502,
            Category::Environment | Category::Index => 500,
        }
    }
}

impl Error {
    pub fn io(path: &Path, source: io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }

    /// This error with a hint (replacing any it had).
    pub fn with_hint(self, hint: impl Into<String>) -> Self {
        let error = match self {
            Error::Hinted { error, .. } => error,
            other => Box::new(other),
        };
        Error::Hinted { error, hint: hint.into() }
    }

    /// Whether this says that nothing can be written where it was tried: a read-only file
    /// system, a full disk, no permission (reads go on from what exists: docs/trust-boundary.md).
    pub fn cannot_write(&self) -> bool {
        match self {
            Error::Io { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::StorageFull
                    | io::ErrorKind::QuotaExceeded
                    | io::ErrorKind::PermissionDenied
            ),
            Error::Hinted { error, .. } => error.cannot_write(),
            _ => false,
        }
    }

    pub fn category(&self) -> Category {
        match self {
            Error::Usage(_) | Error::NoSuchPath(_) => Category::Usage,
            Error::NotFound(_) => Category::NotFound,
            Error::Conflict(_) => Category::Conflict,
            Error::Io { .. } | Error::WithLine { .. } | Error::NoRoot(_) | Error::Environment(_) => {
                Category::Environment
            }
            Error::Downstream(_) => Category::Downstream,
            Error::Index(_) => Category::Index,
            Error::Hinted { error, .. } => error.category(),
        }
    }

    /// A hint that helps the user fix the error, if there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Hinted { hint, .. } => Some(hint),
            Error::WithLine { hint, .. } => hint.as_deref(),
            Error::NoRoot(_) => Some("run `tmws init` in the project folder, or pass --root DIR"),
            _ => None,
        }
    }
}

/// An error as every surface answers it: the message, its category, a hint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorAnswer {
    pub error: String,
    pub category: Category,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ErrorAnswer {
    /// The answer for `e`; with a `root`, paths inside it are shown relative to it, so that
    /// an answer sent to a client never names where the server's files are.
    /// Secrets in the message (a token in a downstream server's error, a password in a
    /// URL) are redacted.
    pub fn new(e: &Error, root: Option<&Path>) -> ErrorAnswer {
        let shown = |text: String| {
            let text = match root {
                Some(root) => relative(&text, &root.display().to_string()),
                None => text,
            };
            crate::redact::redact(&text).text
        };
        ErrorAnswer { error: shown(e.to_string()), category: e.category(), hint: e.hint().map(|h| shown(h.to_owned())) }
    }
}

/// `text` with every path below `root` made relative to it, and `root` itself as `.`; a
/// longer name that only starts like the root (`/srv/rootless`) is left alone.
fn relative(text: &str, root: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(root) {
        let after = &rest[at + root.len()..];
        out.push_str(&rest[..at]);
        match after.chars().next() {
            Some('/') => rest = &after[1..],
            Some(c) if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') => {
                out.push_str(root);
                rest = after;
            }
            _ => {
                out.push('.');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_category_decides_the_exit_code_and_the_status() {
        let cases = [
            (Error::Usage("x".into()), "usage", 2, 400),
            (Error::NoSuchPath("p".into()), "usage", 2, 400),
            (Error::NotFound("x".into()), "not_found", 1, 404),
            (Error::Conflict("x".into()), "conflict", 1, 409),
            (Error::Environment("x".into()), "environment", 2, 500),
            (Error::NoRoot("/r".into()), "environment", 2, 500),
            (Error::Downstream("x".into()), "downstream", 1, 502),
            (Error::Index("x".into()), "index", 2, 500),
            (Error::NotFound("x".into()).with_hint("h"), "not_found", 1, 404),
        ];
        for (e, name, code, status) in cases {
            let c = e.category();
            assert_eq!((c.as_str(), c.exit_code(), c.http_status()), (name, code, status), "{e:?}");
        }
    }

    #[test]
    fn an_answer_names_paths_relative_to_the_root() {
        let e = Error::io(Path::new("/srv/root/.tmws/config.toml"), io::Error::other("denied"));
        let a = ErrorAnswer::new(&e, Some(Path::new("/srv/root")));
        assert_eq!(a.error, ".tmws/config.toml: denied");
        let near = Error::Usage("/srv/rootless/x and /srv/root/y and /srv/root".into());
        assert_eq!(ErrorAnswer::new(&near, Some(Path::new("/srv/root"))).error, "/srv/rootless/x and y and .");
        let secret = Error::Downstream("connect postgres://app:Xk2p9Lq7vR@db/x failed".into());
        assert_eq!(
            ErrorAnswer::new(&secret, None).error,
            "connect postgres://app:[REDACTED:url-credentials]@db/x failed"
        );
        assert_eq!(a.category, Category::Environment);
        let hinted = Error::Usage("bad".into()).with_hint("first").with_hint("second");
        assert_eq!((hinted.to_string().as_str(), hinted.hint()), ("bad", Some("second")));
    }
}

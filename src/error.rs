//! The library's error type: what went wrong, and what kind of wrong it is.
//!
//! Per-file findings are not errors but `Diagnostic`s; an `Error` is what stops a request.
//! Every error has a [`Category`], and the category alone decides what each surface makes
//! of it: the CLI's exit code, the HTTP status, the category an MCP error result names.
//! Nothing else maps errors to codes, so a failure means the same on every surface.
//!
//! An error that another library or the OS gave (an I/O error, tantivy's, git's, a JSON
//! serialiser's) is kept as the `source` of ours, not flattened into text: callers can walk
//! the chain and look at the original (`downcast_ref`), and logs print all of it with
//! [`Chain`]. The message a user sees is ours, which already says its cause.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of another library or of the OS, kept as the cause of one of ours.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder that could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },

    /// A file tmws must read (a config) that is not valid, at a place in it.
    /// `cause` keeps the parser's own error where there is one (a TOML or UTF-8 error).
    #[error("{}:{line}:{column}: {message}", path.display())]
    WithLine {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
        hint: Option<String>,
        #[source]
        cause: Option<Cause>,
    },

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

    /// Something around tmws failed because of another error, which `source` keeps; the
    /// message says it too ([`Error::environment`]).
    #[error("{message}")]
    EnvironmentCause {
        message: String,
        #[source]
        source: Cause,
    },

    /// Another MCP server failed: it did not start, crashed, timed out, or the pool is full.
    #[error("{0}")]
    Downstream(String),

    /// The derived index failed.
    #[error("index: {0}")]
    Index(String),

    /// The derived index failed because of another error (tantivy's, or the I/O under it),
    /// which `source` keeps; the message says it too ([`Error::index`]).
    #[error("index: {message}")]
    IndexCause {
        message: String,
        #[source]
        source: Cause,
    },

    /// Any error with a hint that helps fix it.
    #[error("{error}")]
    Hinted {
        #[source]
        error: Box<Error>,
        hint: String,
    },
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

    /// An environment error caused by `source`, said `{context}: {source}` (or the source's
    /// message alone when `context` is empty), keeping `source` as the cause.
    pub fn environment<E>(context: impl fmt::Display, source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let context = context.to_string();
        let message = if context.is_empty() { source.to_string() } else { format!("{context}: {source}") };
        Error::EnvironmentCause { message, source: Box::new(source) }
    }

    /// An environment error whose message is written in full (it says its cause), keeping
    /// `source` as the cause.
    pub fn environment_with<E>(message: impl Into<String>, source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        Error::EnvironmentCause { message: message.into(), source: Box::new(source) }
    }

    /// An index error caused by `source`, said `index: {source}`, keeping `source` as the
    /// cause.
    pub fn index<E>(source: E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        Error::IndexCause { message: source.to_string(), source: Box::new(source) }
    }

    /// This error and every cause below it, for logs: see [`Chain`].
    pub fn chain(&self) -> Chain<'_> {
        Chain(self)
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
            Error::Io { .. }
            | Error::WithLine { .. }
            | Error::NoRoot(_)
            | Error::Environment(_)
            | Error::EnvironmentCause { .. } => Category::Environment,
            Error::Downstream(_) => Category::Downstream,
            Error::Index(_) | Error::IndexCause { .. } => Category::Index,
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

/// An error with every cause below it, for logs: `{error}: {cause}: …`. A cause whose
/// message is already part of what was said (ours say their immediate cause) is not said
/// again, so nothing repeats and nothing a library kept below its own message is lost.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        let mut next = self.0.source();
        while let Some(cause) = next {
            // A parser's error may span lines (TOML shows the offending line under its
            // message): a log line stays one line.
            let text = cause.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
            if !said.contains(&text) {
                said.push_str(": ");
                said.push_str(&text);
            }
            next = cause.source();
        }
        f.write_str(&said)
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
            // Errors that keep their causes are in the category their message-only kin are.
            (Error::environment("cannot run git", io::Error::other("x")), "environment", 2, 500),
            (Error::environment_with("x", io::Error::other("x")), "environment", 2, 500),
            (Error::index(io::Error::other("x")), "index", 2, 500),
            (Error::index(io::Error::other("x")).with_hint("h"), "index", 2, 500),
            (crate::index::tantivy_err(tantivy::TantivyError::SchemaError("x".into())), "index", 2, 500),
        ];
        for (e, name, code, status) in cases {
            let c = e.category();
            assert_eq!((c.as_str(), c.exit_code(), c.http_status()), (name, code, status), "{e:?}");
        }
    }

    /// A tantivy error whose own message hides its cause: what an index error keeps.
    fn tantivy_write_error() -> tantivy::TantivyError {
        let io = io::Error::new(io::ErrorKind::PermissionDenied, "the disk said no");
        tantivy::directory::error::OpenWriteError::wrap_io_error(io, "meta.json".into()).into()
    }

    #[test]
    fn an_index_error_keeps_the_tantivy_error_as_its_source() {
        use std::error::Error as _;
        let e = crate::index::tantivy_err(tantivy_write_error());
        // The message is what it was when the error was flattened into text.
        assert_eq!(e.to_string(), format!("index: {}", tantivy_write_error()));
        let source = e.source().expect("a source");
        assert!(matches!(
            source.downcast_ref::<tantivy::TantivyError>(),
            Some(tantivy::TantivyError::OpenWriteError(_))
        ));
        // Through a hint too.
        let hinted = crate::index::tantivy_err(tantivy_write_error()).with_hint("rebuild");
        let inner = hinted.source().and_then(|s| s.source()).expect("the tantivy error");
        assert!(inner.downcast_ref::<tantivy::TantivyError>().is_some());
        // A full disk is an I/O error (reads go on), whose inner error is still tantivy's.
        let full = tantivy::TantivyError::IoError(std::sync::Arc::new(io::Error::from(io::ErrorKind::StorageFull)));
        let e = crate::index::tantivy_err(full);
        assert!(e.cannot_write());
        let Error::Io { source, .. } = &e else { panic!("{e:?}") };
        assert!(source.get_ref().is_some_and(|t| t.downcast_ref::<tantivy::TantivyError>().is_some()));
    }

    #[test]
    fn errors_from_other_libraries_keep_them_and_say_the_same() {
        use std::error::Error as _;
        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let e = Error::environment(".tmws/registry/index.json:1:1", json);
        assert_eq!(e.to_string(), ".tmws/registry/index.json:1:1: EOF while parsing an object at line 1 column 1");
        assert!(e.source().and_then(|s| s.downcast_ref::<serde_json::Error>()).is_some());
        let bare = Error::environment("", io::Error::other("no"));
        assert_eq!(bare.to_string(), "no");
        assert_eq!(Error::index(io::Error::other("torn")).to_string(), "index: torn");
    }

    /// Logs what tracing writes while `f` runs.
    fn logged(f: impl FnOnce()) -> String {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl io::Write for Sink {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        String::from_utf8(sink.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_logged_error_shows_its_whole_chain_once() {
        let e = crate::index::tantivy_err(tantivy_write_error()).with_hint("rebuild");
        let line = logged(|| tracing::warn!("index sync failed: {}", e.chain()));
        // Tantivy's message names its cause only in debug form; the chain adds the cause's
        // own message, and no part is said twice.
        let cause = "IoError 'Custom { kind: PermissionDenied, error: \"the disk said no\" }' while opening file for \
write: 'meta.json'.";
        assert_eq!(line, format!(" WARN index sync failed: index: {}: {cause}\n", tantivy_write_error()));
        let io = Error::io(Path::new("a.md"), io::Error::other("denied"));
        assert_eq!(io.chain().to_string(), "a.md: denied");
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

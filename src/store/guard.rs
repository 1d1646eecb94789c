//! The trust boundary on disk (docs/trust-boundary.md): a repository is untrusted input.
//!
//! Every path the store reads or writes lies below a root, and `confine` checks that it
//! stays there: a symlink on the way whose target is outside the root (or that loops) is
//! refused, for reading and for writing. Reads open regular files only — a FIFO, a device
//! or a socket is refused without blocking on it (`O_NONBLOCK`) — and stop at a cap, so a
//! link to `/dev/zero` or a huge file cannot grow the process. Writes never go through a
//! symlink: files are opened with `O_NOFOLLOW`, or written aside and renamed into place
//! (a rename replaces a link, it does not follow it).

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// The most bytes read from one file of each kind (docs/trust-boundary.md). The parsers cap what is
/// inside: a front-matter at 1 MiB (`parse::markdown`), a log line at 16 MiB
/// (`parse::jsonl`).
pub mod cap {
    /// A Markdown file (a document, a rule, AGENTS.md).
    pub const MARKDOWN: u64 = 64 << 20;
    /// The config, the registry, the client configs, schemas, and tmws' own cache files.
    pub const CONFIG: u64 = 16 << 20;
    /// An embedding model of a `[semantic] model` folder.
    pub const MODEL: u64 = 64 << 20;
    /// The weights of a `[semantic] memories` encoder (all-MiniLM-L6-v2's are 87 MiB).
    pub const ENCODER: u64 = 1 << 30;
    /// A whole JSONL log (its lines are capped one by one as well).
    pub const LOG: u64 = 1 << 30;
}

/// Why a path was refused: an I/O error whose text says it.
fn refused(kind: io::ErrorKind, why: impl Into<String>) -> io::Error {
    io::Error::new(kind, why.into())
}

/// The error of a path outside the root.
pub(crate) fn outside_root() -> io::Error {
    refused(io::ErrorKind::PermissionDenied, "a symlink to a place outside the root (not followed)")
}

/// What `err` from resolving a symlink means: a loop, a dangling target, or the error itself.
fn resolving(err: io::Error) -> io::Error {
    match err.raw_os_error() {
        #[cfg(unix)]
        Some(libc::ELOOP) => refused(io::ErrorKind::InvalidInput, "a symlink loop"),
        _ => err,
    }
}

/// Checks that `path`, below `root`, stays inside the root: no `..`, and every symlink on
/// the way (the last component included) resolves inside it. A missing part is fine (it is
/// created, or reported missing, by the caller). `root` should be canonical; it is made so
/// when a symlink has to be compared with it.
pub fn confine(root: &Path, path: &Path) -> io::Result<()> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Err(refused(io::ErrorKind::PermissionDenied, "outside the root"));
    };
    let mut at = root.to_path_buf();
    let mut real_root: Option<PathBuf> = None;
    for part in rel.components() {
        match part {
            Component::Normal(name) => at.push(name),
            Component::CurDir => continue,
            _ => return Err(refused(io::ErrorKind::PermissionDenied, "a path that leaves the root")),
        }
        let meta = match fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if meta.file_type().is_symlink() {
            let target = fs::canonicalize(&at).map_err(resolving)?;
            let real_root = match &real_root {
                Some(r) => r,
                None => real_root.insert(fs::canonicalize(root)?),
            };
            if !target.starts_with(real_root.as_path()) {
                return Err(outside_root());
            }
            at = target;
        }
    }
    Ok(())
}

/// Refuses a path that is a symlink or anything but a regular file; a missing one is fine.
pub fn regular_or_missing(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            Err(refused(io::ErrorKind::PermissionDenied, "a symlink (not followed)"))
        }
        Ok(m) if !m.is_file() => Err(refused(io::ErrorKind::InvalidInput, kind_name(m.file_type()))),
        _ => Ok(()),
    }
}

/// What a file that is not a regular one is, for messages.
pub(crate) fn kind_name(t: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// The error of a file that is too large to read.
fn too_large(cap: u64) -> io::Error {
    refused(io::ErrorKind::InvalidData, format!("larger than the {} limit (not read)", human(cap)))
}

/// `bytes` as "16 MiB" or "1 GiB".
pub(crate) fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// Opens a regular file below `root` for reading, after `confine`; a FIFO, a device or a
/// socket is refused without waiting for a writer, and so is a file over `cap` bytes.
pub fn open_read(root: &Path, path: &Path, cap: u64) -> io::Result<(File, u64)> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let file = super::beneath::open_reading(root, path, flags).map_err(resolving)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(
            io::ErrorKind::InvalidInput,
            format!("{}, not a regular file (not read)", kind_name(meta.file_type())),
        ));
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    Ok((file, meta.len()))
}

/// Reads at most `cap` bytes from `file`, failing when there are more (a file that grew).
pub fn read_capped(file: File, size_hint: u64, cap: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(size_hint.min(cap)).unwrap_or(0).saturating_add(1));
    file.take(cap.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(out)
}

//! Opening files below the root without following a symlink anywhere on the way.
//!
//! Checking a path and then opening it leaves a window: another process can swap a folder
//! on the way for a symlink in between, and the open goes where the link points. Here a
//! file is opened relative to a descriptor of its folder, and that folder was reached from
//! the root one component at a time, each opened with `O_NOFOLLOW` (or in one call with
//! `openat2` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it): a
//! symlink at any component is an error at the moment of the open, not a check before it.
//! Writes then happen relative to the folder's descriptor (`openat`, `renameat`,
//! `unlinkat`), so a swap after the open changes nothing either.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;

/// A folder below the root, open, reached without following a symlink.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

fn io_err(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// The error of a symlink where a file is opened.
fn linked() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a symlink; tmws never writes through one")
}

/// The error of a symlink met on the way to a file.
fn linked_on_the_way() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a folder on the way is a symlink; tmws never follows one")
}

/// What an error of an `O_NOFOLLOW` open means: `ELOOP` (and `ENOTDIR` for a folder, which a
/// link to one gives with `O_DIRECTORY`) is a symlink where a real file or folder must be.
fn nofollow_err(e: Errno, want_dir: bool) -> io::Error {
    match e {
        Errno::ELOOP if want_dir => linked_on_the_way(),
        Errno::ELOOP => linked(),
        Errno::ENOTDIR if want_dir => {
            io::Error::new(io::ErrorKind::PermissionDenied, "a symlink or a file where a folder must be")
        }
        e => io_err(e),
    }
}

/// The components of `path` below `root`; anything but plain names is refused.
fn below<'a>(root: &Path, path: &'a Path) -> io::Result<Vec<&'a OsStr>> {
    let rel =
        path.strip_prefix(root).map_err(|_| io::Error::new(io::ErrorKind::PermissionDenied, "outside the root"))?;
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(io::ErrorKind::PermissionDenied, "a path that leaves the root")),
        })
        .collect()
}

const DIR_FLAGS: OFlag = OFlag::O_DIRECTORY.union(OFlag::O_RDONLY).union(OFlag::O_CLOEXEC);

impl Dir {
    /// The root itself (a symlink in the root's own path is the user's choice, followed).
    fn root(root: &Path) -> io::Result<Dir> {
        let fd = openat(nix::fcntl::AT_FDCWD, root, DIR_FLAGS, Mode::empty()).map_err(io_err)?;
        Ok(Dir { fd })
    }

    /// The folder `dir` below `root`, reached without following a symlink; with `create`,
    /// missing folders are made on the way.
    pub fn open(root: &Path, dir: &Path, create: bool) -> io::Result<Dir> {
        #[cfg(target_os = "linux")]
        if !create {
            use nix::fcntl::ResolveFlag;
            let resolve = ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS;
            match openat2(root, dir, DIR_FLAGS, 0, resolve) {
                Some(Ok(file)) => return Ok(Dir { fd: OwnedFd::from(file) }),
                Some(Err(Errno::ELOOP | Errno::EXDEV)) => return Err(linked_on_the_way()),
                Some(Err(e)) => return Err(nofollow_err(e, true)),
                None => {}
            }
        }
        let names = below(root, dir)?;
        let mut at = Dir::root(root)?;
        for name in names {
            at = match at.child(name) {
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    match nix::sys::stat::mkdirat(at.fd.as_fd(), name, Mode::from_bits_truncate(0o777)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(io_err(e)),
                    }
                    at.child(name)?
                }
                other => other?,
            };
        }
        Ok(at)
    }

    /// The sub-folder `name`, not through a symlink.
    fn child(&self, name: &OsStr) -> io::Result<Dir> {
        let flags = DIR_FLAGS | OFlag::O_NOFOLLOW;
        let fd = openat(self.fd.as_fd(), name, flags, Mode::empty()).map_err(|e| nofollow_err(e, true))?;
        Ok(Dir { fd })
    }

    /// Opens the file `name` of this folder with `flags` (`O_NOFOLLOW` and `O_CLOEXEC`
    /// always added; `mode` for a file it creates).
    pub fn open_file(&self, name: &OsStr, flags: OFlag, mode: u32) -> io::Result<File> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd =
            openat(self.fd.as_fd(), name, flags, Mode::from_bits_truncate(mode)).map_err(|e| nofollow_err(e, false))?;
        Ok(File::from(fd))
    }

    /// Renames `from` to `to`, both in this folder (a link at `to` is replaced, not followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        rename_between(self, from, self, to)
    }

    /// Removes the file `name` of this folder (a link itself, never its target).
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        nix::unistd::unlinkat(self.fd.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir).map_err(io_err)
    }

    /// Makes what was renamed or created in this folder durable (best effort: not every
    /// platform can sync a folder).
    pub fn sync(&self) {
        let _ = nix::unistd::fsync(self.fd.as_fd());
    }

    /// A hard link `to` (in this folder) of the file `from` (in this folder); fails when
    /// `to` exists.
    pub fn link(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        nix::unistd::linkat(self.fd.as_fd(), from, self.fd.as_fd(), to, nix::fcntl::AtFlags::empty()).map_err(io_err)
    }
}

/// Renames `from_name` in `from` to `to_name` in `to`.
pub fn rename_between(from: &Dir, from_name: &OsStr, to: &Dir, to_name: &OsStr) -> io::Result<()> {
    nix::fcntl::renameat(from.fd.as_fd(), from_name, to.fd.as_fd(), to_name).map_err(io_err)
}

/// The folder of `path` (below `root`), reached without following a symlink (made when
/// `create`), and the file's name in it.
pub fn parent_of(root: &Path, path: &Path, create: bool) -> io::Result<(Dir, OsString)> {
    let name = path
        .file_name()
        .filter(|n| !n.as_bytes().is_empty())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file's path"))?;
    let dir = path.parent().unwrap_or(root);
    Ok((Dir::open(root, dir, create)?, name.to_os_string()))
}

/// Opens the file at `path` below `root` with `flags`, no symlink followed at any
/// component: in one `openat2` call where the kernel has it, else folder by folder.
pub fn open(root: &Path, path: &Path, flags: OFlag, mode: u32) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::ResolveFlag;
        let resolve = ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS;
        match openat2(root, path, flags, mode, resolve) {
            // The kernel gives ELOOP for a symlink anywhere on the way, and EXDEV for a
            // path that would leave the root.
            Some(Err(Errno::ELOOP | Errno::EXDEV)) => {
                let last_is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                return Err(if last_is_link { linked() } else { linked_on_the_way() });
            }
            Some(r) => return r.map_err(io_err),
            None => {}
        }
    }
    let (dir, name) = parent_of(root, path, false)?;
    dir.open_file(&name, flags, mode)
}

/// Opens the file at `path` below `root` to read it: a symlink is followed only where it
/// stays inside the root. Where the kernel has `openat2`, a relative link that stays
/// beneath the root is resolved in the same call that opens the file; anything else (an
/// absolute link, a link that leaves, an older kernel) is resolved and checked against the
/// root first ([`super::guard::confine`]), then opened.
pub fn open_reading(root: &Path, path: &Path, flags: OFlag) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::ResolveFlag;
        let resolve = ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS;
        match openat2(root, path, flags, 0, resolve) {
            Some(Ok(file)) => return Ok(file),
            Some(Err(Errno::ELOOP | Errno::EXDEV)) | None => {}
            Some(Err(e)) => return Err(io_err(e)),
        }
    }
    super::guard::confine(root, path)?;
    let fd = openat(nix::fcntl::AT_FDCWD, path, flags | OFlag::O_CLOEXEC, Mode::empty()).map_err(io_err)?;
    Ok(File::from(fd))
}

/// `openat2` from the root with `resolve`; None where the kernel (or a sandbox's filter)
/// does not offer it, which is remembered for the process.
#[cfg(target_os = "linux")]
fn openat2(
    root: &Path,
    path: &Path,
    flags: OFlag,
    mode: u32,
    resolve: nix::fcntl::ResolveFlag,
) -> Option<Result<File, Errno>> {
    use std::sync::atomic::{AtomicBool, Ordering};

    use nix::fcntl::OpenHow;
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    let rel: std::path::PathBuf = match below(root, path) {
        Ok(names) if !names.is_empty() => names.iter().collect(),
        _ => return None,
    };
    let root_dir = match Dir::root(root) {
        Ok(d) => d,
        Err(_) => return None,
    };
    let how = OpenHow::new()
        .flags(flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .mode(Mode::from_bits_truncate(mode))
        .resolve(resolve);
    match nix::fcntl::openat2(root_dir.fd.as_fd(), &rel, how) {
        Ok(fd) => Some(Ok(File::from(fd))),
        // No such call here (an old kernel, or a sandbox that filters it).
        Err(Errno::ENOSYS | Errno::EPERM | Errno::E2BIG) => {
            UNAVAILABLE.store(true, Ordering::Relaxed);
            None
        }
        Err(e) => Some(Err(e)),
    }
}

/// Refuses a file with other names (a hard link): writing it in place would change the
/// file of every other name too, wherever it is.
pub fn single_link(file: &File) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if file.metadata()?.nlink() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a hard-linked file (tmws never writes one: it would change the other names' file too)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_folder_on_the_way_is_refused_for_opening_and_creating() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join(".tmws")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join(".tmws/memory")).unwrap();
        let log = r.join(".tmws/memory/long-term.jsonl");
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND;
        let err = open(r, &log, flags, 0o666).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        let err = parent_of(r, &log, true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        let deeper = r.join(".tmws/memory/new/x.jsonl");
        assert!(parent_of(r, &deeper, true).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made outside");
    }

    #[test]
    fn a_final_symlink_is_refused_and_missing_folders_are_made() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let (dir, name) = parent_of(r, &r.join("a/b/c.txt"), true).unwrap();
        dir.open_file(&name, OFlag::O_WRONLY | OFlag::O_CREAT, 0o644).unwrap();
        assert!(r.join("a/b/c.txt").is_file());
        std::os::unix::fs::symlink(outside.path().join("t"), r.join("a/b/l.txt")).unwrap();
        let err = open(r, &r.join("a/b/l.txt"), OFlag::O_WRONLY | OFlag::O_CREAT, 0o644).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        assert!(!outside.path().join("t").exists());
        assert!(open(r, Path::new("/etc/passwd"), OFlag::O_RDONLY, 0).is_err());
        assert!(open(r, &r.join("a/../../x"), OFlag::O_RDONLY, 0).is_err());
    }

    #[test]
    fn hard_linked_files_are_told() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        std::fs::write(&a, "x").unwrap();
        single_link(&File::open(&a).unwrap()).unwrap();
        std::fs::hard_link(&a, root.path().join("b")).unwrap();
        assert!(single_link(&File::open(&a).unwrap()).is_err());
    }
}

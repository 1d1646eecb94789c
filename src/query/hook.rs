//! `tmws git-hook install` (docs/memory-log.md#commit-links): an optional git `post-commit` hook that
//! runs `tmws memory link-commit`, which reads the new commit into the commit-link cache under
//! `.tmws/cache/`, so that the next answer that shows `introduced_in` need not. It writes nothing
//! git tracks: the tree is as clean after the commit as the commit left it.
//!
//! The hook names no root: git runs it at the top of the work tree, where tmws finds the
//! root, so a repository that moves keeps working. A failure never fails the commit, and
//! says so on stderr (links are derived on demand anyway). A hook that was there before
//! is kept: it is renamed `post-commit.tmws-chained` and the new hook runs it first (with
//! the same arguments and its exit status). Installing again changes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store;

/// Marks a hook as tmws'.
const MARKER: &str = "# tmws post-commit hook";
/// The name a hook found in place is kept under.
const CHAINED: &str = "post-commit.tmws-chained";

/// The hooks folder git uses for the work tree at `root` (honours `core.hooksPath`).
fn hooks_dir(root: &Path) -> Result<PathBuf> {
    if store::git_head(root).is_none() {
        return Err(Error::Environment(format!("{} is not in a git work tree", root.display())));
    }
    let out = store::git::run(root, &["rev-parse", "--git-path", "hooks"])?;
    let p = PathBuf::from(out.trim());
    Ok(if p.is_absolute() { p } else { root.join(p) })
}

/// Single-quotes a path for sh.
fn quoted(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The hook script: the chained hook first, then link-commit in the work tree.
fn script(tmws: &Path) -> String {
    format!(
        "#!/bin/sh\n{MARKER}: reads the new commit into tmws' commit-link cache (.tmws/cache/).\n\
         # Installed by `tmws git-hook install`; a hook that was here before is {CHAINED}, run first.\n\
         status=0\n\
         chained=\"$(dirname \"$0\")/{CHAINED}\"\n\
         if [ -x \"$chained\" ]; then \"$chained\" \"$@\"; status=$?; fi\n\
         tmws={tmws}\n\
         [ -x \"$tmws\" ] || tmws=tmws\n\
         \"$tmws\" memory link-commit >/dev/null 2>&1 || \
         echo \"tmws: post-commit: could not read the commit into the link cache (run: tmws memory link-commit)\" >&2\n\
         exit $status\n",
        tmws = quoted(tmws),
    )
}

/// `tmws git-hook install`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookAnswer {
    /// The hook's path.
    pub hook: String,
    /// Whether this run wrote it (not when it was there already).
    pub installed: bool,
    /// Whether a hook that was there runs first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub chained: bool,
}

/// Installs the hook; `tmws` is the binary the hook should run.
pub(crate) fn install(root: &Path, tmws: &Path) -> Result<HookAnswer> {
    let dir = hooks_dir(root)?;
    let hook = dir.join("post-commit");
    let wanted = script(tmws);
    let mut chained = false;
    if let Some(existing) = store::read_text_opt(&dir, &hook, store::cap::CONFIG)? {
        if existing == wanted {
            return Ok(HookAnswer { hook: hook.display().to_string(), installed: false, chained: false });
        }
        if !existing.contains(MARKER) {
            // Someone else's hook: kept, and run first.
            if store::exists(&dir.join(CHAINED)) {
                return Err(Error::Conflict(format!(
                    "{} exists already: move it or the current post-commit hook aside and run again",
                    dir.join(CHAINED).display()
                )));
            }
            store::rename(&dir, &hook, &dir.join(CHAINED))?;
            chained = true;
        }
    }
    store::write_executable(&dir, &hook, wanted.as_bytes())?;
    Ok(HookAnswer { hook: hook.display().to_string(), installed: true, chained })
}

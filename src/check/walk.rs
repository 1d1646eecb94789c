//! Which files a check looks at: the paths given (or what tmws owns in the root), walked by the same
//! scan and ignore rules as the index (`.gitignore`, `.ignore`, `.tmwsignore`; no `.git/`,
//! no derived cache, no nested roots, no symlinks). A file named on the command line is
//! checked whatever the ignore rules say.

use std::path::{Path, PathBuf};

use crate::layout::{self, Includes};
use crate::store;

/// One path to check.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// As the user wrote it (for display when there is no root).
    pub given: PathBuf,
    pub abs: PathBuf,
    /// The root itself, with no PATH given: only what tmws owns and the includes.
    pub owned: bool,
}

/// A file to check: where it is, and its path as findings show it.
#[derive(Debug, Clone)]
pub(super) struct File {
    pub abs: PathBuf,
    /// The folder reads are confined to: the root, or the folder checked outside any root.
    pub base: PathBuf,
    /// Relative to the root with `/` separators, or as given below a path outside any root.
    pub shown: String,
    /// Relative to the root, when the file is inside one.
    pub rel: Option<String>,
}

/// The files of `target`, and the folders that could not be listed (as findings show them).
pub(super) fn files(root: Option<&Path>, target: &Target, includes: &Includes) -> (Vec<File>, Vec<(String, String)>) {
    let is_file = store::is_file(&target.abs);
    let base = match root {
        Some(root) if target.abs.starts_with(root) => root.to_path_buf(),
        _ if is_file => target.abs.parent().map_or_else(|| target.abs.clone(), Path::to_path_buf),
        _ => target.abs.clone(),
    };
    let inside_root = root.is_some_and(|r| base == r);
    let show = |rel: &str| -> String {
        if inside_root {
            return rel.to_owned();
        }
        let below = if is_file { Path::new("") } else { Path::new(rel) };
        let shown = target.given.join(below).to_string_lossy().replace('\\', "/");
        shown.trim_end_matches('/').to_owned()
    };
    let rel_of = |abs: &Path| abs.strip_prefix(&base).ok().map(|r| r.to_string_lossy().replace('\\', "/"));
    if is_file {
        let rel = rel_of(&target.abs).unwrap_or_default();
        let file = File { abs: target.abs.clone(), base, shown: show(&rel), rel: inside_root.then_some(rel) };
        return (vec![file], Vec::new());
    }
    let owned = inside_root && target.owned;
    let (found, problems) = if owned {
        let starts: Vec<PathBuf> = layout::check_starts(includes).iter().map(|s| base.join(s)).collect();
        store::list(&base, &starts, |rel| layout::is_checked_in_root(rel, includes))
    } else {
        let mut starts = vec![target.abs.clone()];
        // Walks from a root skip `.tmws/` (a nested root's state, or the derived cache): the
        // root's own is checked too, but its cache.
        if inside_root && target.abs == base {
            starts.push(base.join(layout::TMWS_DIR));
        }
        store::list(&base, &starts, |rel| {
            layout::is_markdown(rel) || (rel.starts_with(layout::TMWS_DIR) && layout::classify(rel).is_checked())
        })
    };
    let mut found = found;
    if owned {
        // The files tmws reads at fixed paths are read through a symlink that stays in
        // the root, which the walk skips: they are checked as they are read.
        for fixed in [layout::CONFIG_FILE, layout::REGISTRY_FILE, layout::SKILLS_FILE] {
            let linked = matches!(store::entry(&base.join(fixed)), Ok(store::Entry::Symlink(_)));
            if linked && store::is_file(&base.join(fixed)) && !found.iter().any(|f| f == fixed) {
                found.push(fixed.to_owned());
            }
        }
    }
    let files = found
        .into_iter()
        .map(|rel| File {
            abs: base.join(&rel),
            base: base.clone(),
            shown: show(&rel),
            rel: inside_root.then_some(rel),
        })
        .collect();
    let problems = problems.into_iter().map(|(rel, why)| (show(&rel), why)).collect();
    (files, problems)
}

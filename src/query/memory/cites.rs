//! The citations of a memory as it is written (docs/memory-log.md#citations): each read as
//! written, its file read through the store (inside the root, a regular file, capped), and
//! the commit (HEAD, in git) and the hash of the cited text filled in. A citation that
//! cannot be made whole is an error naming it, and nothing is written.

use std::path::Path;

use crate::error::{Error, Result};
use crate::memory::cite::{Cite, hash_of};
use crate::store;

/// The largest file a citation may name.
const CAP: u64 = store::guard::cap::MARKDOWN;

/// `texts` as citations with their commit and hash, in the order given, duplicates once.
pub fn resolve(root: &Path, texts: &[String]) -> Result<Vec<Cite>> {
    let head = store::git_head(root).and_then(|h| h.commit);
    let mut out: Vec<Cite> = Vec::new();
    for text in texts {
        let cite = one(root, text, head.as_deref())?;
        if !out.contains(&cite) {
            out.push(cite);
        }
    }
    Ok(out)
}

/// `cited` with each file a problem names (`--file`) cited whole, after the citations given
/// (a file cited already is not cited twice). What is not a file there now (a folder, a
/// file not written yet) is kept as named only: it cannot be said to hold. A path out of
/// the root is an error, as a citation's is; one written absolute inside the root is taken
/// from the root.
pub fn with_files(root: &Path, files: &[String], mut cited: Vec<Cite>) -> Result<Vec<Cite>> {
    let head = store::git_head(root).and_then(|h| h.commit);
    for file in files.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
        let rel = Path::new(file).strip_prefix(root).ok().and_then(Path::to_str).unwrap_or(file);
        if rel.starts_with('/') || rel.split(['/', '\\']).any(|part| part == "..") {
            return Err(Error::Usage(format!(
                "file `{file}`: a problem's files are inside the root (no `..`, not absolute)"
            )));
        }
        let Ok(cite) = Cite::parse(rel) else { continue };
        if cited.iter().any(|c| c.path == cite.path)
            || matches!(store::entry(&root.join(&cite.path)), Ok(store::Entry::Missing | store::Entry::Dir))
        {
            continue;
        }
        cited.push(fill(root, cite, head.as_deref())?);
    }
    Ok(cited)
}

/// One citation made whole.
fn one(root: &Path, text: &str, head: Option<&str>) -> Result<Cite> {
    let cite = Cite::parse(text).map_err(|why| {
        Error::Usage(format!("citation `{}`: {}", text.trim(), why.rsplit_once(": ").map_or(&*why, |(_, w)| w)))
    })?;
    fill(root, cite, head)
}

/// A citation with its commit (the one it names, or `head`) and the hash of its text then.
pub fn fill(root: &Path, mut cite: Cite, head: Option<&str>) -> Result<Cite> {
    let text = cite.to_text();
    let named = |why: &str| Error::Usage(format!("citation `{text}`: {why}"));
    // The working tree's file is read first, through the store: whatever the commit, a
    // citation names a file that is there now, and a link out of the root or a FIFO is
    // never followed or waited on.
    let bytes = store::read(root, &root.join(&cite.path), CAP).map_err(|e| named(&unreadable(&e)))?;
    let commit = cite.commit.clone().or_else(|| head.map(str::to_owned));
    // In git, the text hashed is the file's at the commit, as the check will read it; a
    // file the commit does not hold (not committed yet) is hashed as it is now.
    let at_commit =
        commit.as_deref().and_then(|c| store::git::show(root, c, &cite.path)).filter(|b| b.len() as u64 <= CAP);
    let text_bytes = at_commit.unwrap_or(bytes);
    let cited = String::from_utf8_lossy(&text_bytes);
    cite.hash = Some(hash_of(&cited, &cite).ok_or_else(|| {
        named(match (&cite.lines, &cite.symbol) {
            (Some(_), _) => "the file has fewer lines than that",
            (_, Some(_)) => "no line of the file defines that symbol",
            _ => "cannot be hashed",
        })
    })?);
    cite.commit = commit;
    Ok(cite)
}

/// Why a cited file could not be read, in words without the absolute path.
fn unreadable(e: &Error) -> String {
    match e {
        Error::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            _ => format!("cannot be read ({source})"),
        },
        other => format!("cannot be read ({other})"),
    }
}

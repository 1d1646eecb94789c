//! Scopes as a request names them: the names checked, the folders found, and an unknown
//! one answered with what exists at the nearest level that does (DESIGN §2.1).

use std::path::Path;

use crate::error::{Error, Result};
use crate::layout;
use crate::model::{Scope, validate_component};
use crate::store;

/// The scope of `workspace[/domain[/repository]]`, checked: its names are valid and its
/// folders exist. An unknown one is a not-found error that lists the known names at the
/// level where the path stops.
pub(crate) fn resolve(root: &Path, workspace: &str, domain: Option<&str>, repository: Option<&str>) -> Result<Scope> {
    if workspace.is_empty() {
        return Err(Error::Usage("`workspace` is required".into()));
    }
    if repository.is_some() && domain.is_none() {
        return Err(Error::Usage("a `repository` needs its `domain`".into()));
    }
    let parts: Vec<&str> = [Some(workspace), domain, repository].into_iter().flatten().collect();
    for part in &parts {
        validate_component(part).map_err(|e| Error::Usage(e.to_string()))?;
    }
    let mut dir = root.join(layout::WORKSPACES_DIR);
    let levels = ["workspace", "domain", "repository"];
    let mut at = String::new();
    for (i, part) in parts.iter().enumerate() {
        let next = dir.join(part);
        if !store::is_dir_in(root, &next) {
            let known = children(root, &dir)?;
            let place = if at.is_empty() { String::new() } else { format!(" in `{at}`") };
            let list = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(Error::NotFound(format!("unknown {} `{part}`{place}; known: {list}", levels[i])));
        }
        dir = next;
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
    }
    Scope::parse(&at).map_err(|e| Error::Usage(e.to_string()))
}

/// The sub-scope folders of a folder: not topics (`_x`), not hidden.
fn children(root: &Path, dir: &Path) -> Result<Vec<String>> {
    Ok(store::list_subdirs(root, dir)?.into_iter().filter(|n| !n.starts_with('_') && !n.starts_with('.')).collect())
}

/// Whether a `_{topic}/` folder exists at the scope or above it.
pub(crate) fn topic_folder_exists(root: &Path, scope: &Scope, topic: &str) -> bool {
    layout::scope_ladder(scope).iter().any(|s| store::is_dir_in(root, &root.join(layout::topic_dir(s, topic))))
}

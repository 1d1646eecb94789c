//! Scopes as a request names them: the names checked, the folders found, and an unknown
//! one answered with what exists at the nearest level that does (docs/workspace-documents.md).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{Index, ItemQuery};
use crate::layout;
use crate::model::{DocKind, Scope, validate_component};
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
            let error = Error::NotFound(format!("unknown {} `{part}`{place}; known: {list}", levels[i]));
            return Err(error.with_hint(unknown_scope_hint(levels[i], part, &at, &known)));
        }
        dir = next;
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
    }
    Scope::parse(&at).map_err(|e| Error::Usage(e.to_string()))
}

/// What to do about an unknown scope name: the known one it is a typo of, if any, and how
/// to create it (a folder and its `OVERVIEW.md`), so that nobody has to look it up.
fn unknown_scope_hint(level: &str, name: &str, parent: &str, known: &[String]) -> String {
    let folder = if parent.is_empty() {
        format!("{}/{name}", layout::WORKSPACES_DIR)
    } else {
        format!("{}/{parent}/{name}", layout::WORKSPACES_DIR)
    };
    let mut flags = String::new();
    for (flag, part) in ["-w", "-d"].iter().zip(parent.split('/').filter(|p| !p.is_empty())) {
        flags.push_str(&format!("{flag} {part} "));
    }
    let flag = ["-w", "-d", "-r"][parent.split('/').filter(|p| !p.is_empty()).count().min(2)];
    let create = format!(
        "to create the {level} `{name}`, run `tmws new overview NAME {flags}{flag} {name} --description TEXT` \
(entry_write with topic `overview`), or write {folder}/OVERVIEW.md with `name` and `description` in its front-matter"
    );
    match crate::suggest::closest(name, known.iter().map(String::as_str)) {
        Some(near) => format!("did you mean `{near}`? Or, {create}"),
        None => create,
    }
}

/// A scope as a list of them shows it: its path and its overview's name and description
/// (empty where it has no `OVERVIEW.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ScopeSummary {
    pub scope: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// Every workspace, domain and repository, in path order, each with its overview's name
/// and description as the index holds them.
pub(crate) fn list(root: &Path, index: &Index) -> Result<Vec<ScopeSummary>> {
    let mut overviews: BTreeMap<String, (String, String)> = BTreeMap::new();
    for item in index.items(&ItemQuery { kinds: vec![DocKind::Overview], ..ItemQuery::default() })? {
        if let Some(scope) = item.scope {
            overviews.insert(scope, (item.name, item.description));
        }
    }
    let mut scopes = Vec::new();
    let mut pending = vec![(root.join(layout::WORKSPACES_DIR), String::new(), 0)];
    while let Some((dir, at, depth)) = pending.pop() {
        if depth == 3 || !store::is_dir_in(root, &dir) {
            continue;
        }
        for name in children(root, &dir)? {
            let scope = if at.is_empty() { name.clone() } else { format!("{at}/{name}") };
            pending.push((dir.join(&name), scope.clone(), depth + 1));
            scopes.push(scope);
        }
    }
    scopes.sort();
    Ok(scopes
        .into_iter()
        .map(|scope| {
            let (name, description) = overviews.get(&scope).cloned().unwrap_or_default();
            ScopeSummary { scope, name, description }
        })
        .collect())
}

/// The sub-scope folders of a folder: not topics (`_x`), not hidden.
fn children(root: &Path, dir: &Path) -> Result<Vec<String>> {
    Ok(store::list_subdirs(root, dir)?.into_iter().filter(|n| !n.starts_with('_') && !n.starts_with('.')).collect())
}

/// Whether a `_{topic}/` folder exists at the scope or above it.
pub(crate) fn topic_folder_exists(root: &Path, scope: &Scope, topic: &str) -> bool {
    layout::scope_ladder(scope).iter().any(|s| store::is_dir_in(root, &root.join(layout::topic_dir(s, topic))))
}

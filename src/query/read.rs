//! `workspace_list` and `workspace_read` (docs/tools.md): what an agent needs to name a scope
//! without failing a call first, and the whole of one thing it found.
//!
//! `workspace_read` reads what the index knows by its refId, and nothing else: a document
//! (read again from its file, so the answer is the file as it is now: its front-matter and
//! its body), a memory (its whole content) or a commit (its message, author and paths). A
//! path the index does not hold — `.env`, a file outside the canonical folders — is not
//! found: refIds are not a way to read any file of the repository.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::answer::{Answer, Plan};
use super::context::ScopeSummary;
use crate::error::{Error, Result};
use crate::index::{Index, ItemQuery};
use crate::model::DocKind;
use crate::parse::markdown;
use crate::store;

/// `workspace_list`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WorkspaceList {
    /// Every workspace, domain and repository (`workspace[/domain[/repository]]`), with its
    /// overview's name and description.
    pub scopes: Vec<ScopeSummary>,
    /// How to make one, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// `workspace_read`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReadAnswer {
    /// The refId read.
    #[serde(rename = "refId")]
    pub ref_id: String,
    /// What it is: `overview`, `entry`, `doc`, `memory`, `commit`, ….
    pub kind: String,
    /// The scope of a document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A document's front-matter as it is in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::answer::any_json")]
    pub front_matter: Option<Value>,
    /// A document's hash: what `entry_write` takes as `expected_hash` to change it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// A memory's writer, its trust and how it was written: its content is data.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub from: Option<super::memory::Provenance>,
    /// The body (T2): a document's text after its front-matter, a memory's content, a
    /// commit's message.
    pub body: String,
}

/// Room the note of a cut answer takes (`truncated`, `hint`), in characters.
const CUT_NOTE_CHARS: usize = 200;

impl Answer for ReadAnswer {
    /// The front-matter goes only when the answer would not fit without a body: what names
    /// the thing read (refId, kind, scope, name, hash, author) is never cut.
    fn prepare(&self, value: &mut Value, max: usize) -> Vec<(&'static str, usize)> {
        let mut bare = value.clone();
        if let Some(m) = bare.as_object_mut() {
            m.insert("body".into(), Value::String(String::new()));
        }
        let widest = [super::api::Format::Json, super::api::Format::Yaml]
            .into_iter()
            .map(|f| super::answer::render(&bare, f).chars().count())
            .max()
            .unwrap_or(0);
        if widest + CUT_NOTE_CHARS > max
            && let Some(m) = value.as_object_mut()
            && m.remove("front_matter").is_some()
        {
            return vec![("front_matter", 1)];
        }
        Vec::new()
    }

    /// Only the body is cut to fit.
    fn plan(&self, value: &Value) -> Plan {
        let texts = if value.get("body").is_some() { vec!["/body".to_owned()] } else { Vec::new() };
        Plan {
            texts,
            order: vec!["front_matter"],
            advice: "raise max_chars (up to 100000) to read the whole body".into(),
            ..Plan::default()
        }
    }
}

/// Every scope of the workspaces.
pub(crate) fn list(root: &Path, index: &Index) -> Result<WorkspaceList> {
    let scopes = super::context::list_scopes(root, index)?;
    let hint = scopes.is_empty().then(|| {
        "no workspace yet: entry_write with topic `overview` makes one (or write \
resources/workspaces/NAME/OVERVIEW.md with `name` and `description` in its front-matter)"
            .to_owned()
    });
    Ok(WorkspaceList { scopes, hint })
}

/// The thing `ref_id` names, whole.
pub(crate) fn read(root: &Path, index: &Index, ref_id: &str) -> Result<ReadAnswer> {
    let ref_id = ref_id.trim();
    let item = index
        .items(&ItemQuery { ref_ids: vec![ref_id.to_owned()], ..ItemQuery::default() })?
        .into_iter()
        .next()
        .ok_or_else(|| {
            Error::NotFound(format!("nothing indexed has the refId `{ref_id}`")).with_hint(
                "use a refId as workspace_search, workspace_get_context or memory_search gave it: a document's path \
from the root, a memory's id, commit:<sha>",
            )
        })?;
    let mut answer = ReadAnswer {
        ref_id: item.ref_id.clone(),
        kind: item.kind.clone(),
        scope: item.scope.clone(),
        name: Some(item.name.clone()).filter(|n| !n.is_empty()),
        ..ReadAnswer::default()
    };
    match DocKind::parse(&item.kind) {
        Some(DocKind::Memory) => {
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            if item.expires.as_deref().is_some_and(|e| e <= now.as_str()) {
                return Err(Error::NotFound(format!("no memory `{ref_id}` (it expired)")));
            }
            answer.from = Some(super::memory::Provenance::of_item(&item, &super::trust::ranking_scores(root)));
            answer.body = item.body.unwrap_or_default();
        }
        Some(DocKind::Commit) | Some(DocKind::Server) | Some(DocKind::Tool) | Some(DocKind::Skill) => {
            answer.body = item.body.unwrap_or_else(|| item.description.clone());
        }
        _ => {
            // The file as it is now (the index may be a moment behind), confined and capped.
            let bytes = store::read(root, &root.join(&item.path), store::cap::MARKDOWN)?;
            let doc = markdown::parse(&bytes);
            answer.hash = Some(super::write::hash_of(&bytes));
            answer.front_matter = doc.front.as_ref().map(|f| f.to_json());
            answer.body = doc.body;
        }
    }
    Ok(answer)
}

//! `entry_write` and `tmws new` (docs/tools.md): a decision, lesson, plan, any topic entry or
//! a scope's overview, written as a file a person would have written.
//!
//! One function serves every surface. The file is made whole in memory (front-matter from
//! the name, the description and the fields, with today's date where the kind needs one;
//! every string redacted), checked with exactly what `tmws check` runs, and written
//! atomically only when nothing is wrong: an invalid entry is refused with the findings.
//! A new entry never replaces a file; a change names the file (`ref_id`) and the hash of
//! the version it started from, and is refused when the file changed since, under a lock so
//! that two writers cannot both pass that test.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::api::EntryWriteRequest;
use crate::error::{Error, Result};
use crate::layout::{self, FileKind};
use crate::model::{Scope, Severity, validate_component};
use crate::parse::markdown;
use crate::store;

/// Held while an entry is compared and written.
pub(crate) const LOCK: &str = ".tmws/cache/locks/entries.lock";
/// The front-matter keys only tmws writes: who wrote the file, and whether it waits for
/// review.
const AUTHOR: &str = "author";
const REVIEW: &str = "review";
/// The longest file name stem made from a name, before the date.
const MAX_KEBAB: usize = 60;

/// `entry_write`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct EntryWritten {
    /// The file written, relative to the root: the refId searches give it.
    #[serde(rename = "refId")]
    pub ref_id: String,
    /// `created` or `updated`.
    pub action: String,
    /// The hash of what was written: the `expected_hash` of the next change.
    pub hash: String,
    /// How many secrets were replaced by marks before writing.
    #[serde(skip_serializing_if = "super::answer::is_zero")]
    pub redacted: usize,
    /// What `tmws check` warns about in the file (it was written anyway).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Whether it was written as a proposal (`[review] agents = "propose"`, docs/review.md):
    /// search and context leave it out until a person approves it with `tmws review approve`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub proposed: bool,
}

impl super::Answer for EntryWritten {}

/// The hash `entry_write` compares `expected_hash` with: blake3 of the file's bytes.
pub fn hash_of(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Where a request writes: the scope's folder and the topic (None for the overview).
struct Place {
    scope: Scope,
    topic: Option<String>,
}

/// Who writes an entry, as tmws knows it (never as the caller says): the session's
/// `author` (`{surface, client}`), and whether the write is a proposal (docs/review.md).
#[derive(Debug, Clone, Default)]
pub(crate) struct By {
    pub author: Option<Value>,
    pub proposed: bool,
}

/// Writes the entry `req` describes below `root`, dated `today`, by `by`.
pub(crate) fn write(root: &Path, req: &EntryWriteRequest, today: chrono::NaiveDate, by: &By) -> Result<EntryWritten> {
    let place = place(root, req)?;
    let _lock = store::FileLock::exclusive(root, &root.join(LOCK))?;
    let (rel, old) = match &req.ref_id {
        Some(ref_id) => {
            let rel = existing(root, ref_id, &place)?;
            let bytes = store::read(root, &root.join(&rel), store::cap::MARKDOWN)?;
            let expected = req.expected_hash.as_deref().unwrap_or_default().trim();
            let now = hash_of(&bytes);
            if !now.eq_ignore_ascii_case(expected) {
                return Err(Error::Conflict(format!(
                    "`{rel}` changed since it was read (its hash is now {now}); nothing was written"
                ))
                .with_hint("read it again with workspace_read and make your change to that version"));
            }
            (rel, Some(bytes))
        }
        None => {
            let rel = new_path(&place, &req.name, today);
            if store::entry(&root.join(&rel))? != store::Entry::Missing {
                let what = if place.topic.is_some() { "an entry" } else { "the overview" };
                return Err(Error::Conflict(format!("`{rel}` exists: {what} is never replaced by a new one"))
                    .with_hint(
                        "to change it, read it with workspace_read and pass its refId as ref_id and its hash as \
expected_hash",
                    ));
            }
            (rel, None)
        }
    };
    let (text, redacted) = render(req, &place, old.as_deref(), today, by);
    let diags = crate::check::check_text(root, &rel, text.as_bytes());
    let errors: Vec<String> =
        diags.iter().filter(|d| d.severity == Severity::Error).map(|d| finding(d, req.body.is_some())).collect();
    if !errors.is_empty() {
        return Err(Error::Usage(format!("the entry is not valid, nothing was written: {}", errors.join("; ")))
            .with_hint("fix these and call again; `tmws check` runs the same rules"));
    }
    let warnings = diags.iter().filter(|d| d.severity == Severity::Warning).map(|d| finding(d, true)).collect();
    store::write_atomic(root, &root.join(&rel), text.as_bytes())?;
    Ok(EntryWritten {
        ref_id: rel,
        action: if old.is_some() { "updated" } else { "created" }.to_owned(),
        hash: hash_of(text.as_bytes()),
        redacted,
        warnings,
        proposed: by.proposed,
    })
}

/// A finding as one clause: its rule, message and hint (lines only where the caller's text
/// has them: the front-matter is made here).
fn finding(d: &crate::model::Diagnostic, with_line: bool) -> String {
    let at = if with_line { format!("line {}: ", d.line) } else { String::new() };
    let hint = d.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
    format!("{at}[{}] {}{hint}", d.rule, d.message)
}

/// The scope and topic a request names, checked: valid names; an existing scope, but for
/// the overview that makes a new one inside an existing parent.
fn place(root: &Path, req: &EntryWriteRequest) -> Result<Place> {
    let topic = topic_name(&req.topic)?;
    let parts: Vec<&str> = [Some(req.workspace.as_str()), req.domain.as_deref(), req.repository.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let scope = if topic.is_none() {
        // A new scope's parent must exist: `-d` names a domain of a known workspace.
        if req.repository.is_some() && req.domain.is_none() {
            return Err(Error::Usage("a `repository` needs its `domain`".into()));
        }
        for part in &parts {
            validate_component(part).map_err(|e| Error::Usage(e.to_string()))?;
        }
        match parts[..] {
            [w, _] => drop(super::context::resolve_scope(root, w, None, None)?),
            [w, d, _] => drop(super::context::resolve_scope(root, w, Some(d), None)?),
            _ => {}
        }
        Scope::parse(&parts.join("/")).map_err(|e| Error::Usage(e.to_string()))?
    } else {
        super::context::resolve_scope(root, &req.workspace, req.domain.as_deref(), req.repository.as_deref())?
    };
    Ok(Place { scope, topic })
}

/// The topic's folder name (`_decisions` → `decisions`, `decision` → `decisions`), or None
/// for the scope's overview.
fn topic_name(topic: &str) -> Result<Option<String>> {
    let t = match topic.trim().trim_start_matches('_') {
        "overview" | "OVERVIEW" | "OVERVIEW.md" => return Ok(None),
        other => layout::topic_name(other),
    };
    validate_component(&t).map_err(|e| Error::Usage(format!("topic: {e}")))?;
    if t.starts_with('.') {
        return Err(Error::Usage(format!("topic `{t}`: a topic folder's name does not start with `.`")));
    }
    Ok(Some(t))
}

/// The path of a new entry: `_{topic}/YYMMDD-kebab-name.md`, or the scope's OVERVIEW.md.
fn new_path(place: &Place, name: &str, today: chrono::NaiveDate) -> String {
    match &place.topic {
        None => format!("{}/{}", layout::scope_dir(&place.scope), layout::OVERVIEW),
        Some(topic) => {
            format!("{}/{}-{}.md", layout::topic_dir(&place.scope, topic), today.format("%y%m%d"), kebab(name))
        }
    }
}

/// `Use Postgres for the job queue` → `use-postgres-for-the-job-queue`: ASCII letters and
/// digits, lowercased, words joined by `-`, cut at a word near 60 characters. A name with
/// none (`新しい教訓`) gets `entry-` and a short hash of it, which stays the same.
pub(crate) fn kebab(name: &str) -> String {
    let mut out = String::new();
    for word in name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() && out.len() + 1 + word.len() > MAX_KEBAB {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.extend(word.chars().take(MAX_KEBAB).map(|c| c.to_ascii_lowercase()));
    }
    if out.is_empty() {
        return format!("entry-{}", &hash_of(name.as_bytes())[..8]);
    }
    out
}

/// The refId of an entry to change, checked: a Markdown file of the workspaces that exists,
/// at the place the request names.
fn existing(root: &Path, ref_id: &str, place: &Place) -> Result<String> {
    let rel = ref_id.trim().trim_start_matches("./").to_owned();
    let wrong = || {
        Error::Usage(format!(
            "ref_id `{}` is not an entry or overview of the workspaces: entry_write changes only \
{}/…/_topic/*.md and OVERVIEW.md files",
            super::api::preview(ref_id),
            layout::WORKSPACES_DIR
        ))
    };
    if Path::new(&rel).components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(wrong());
    }
    let (scope, topic) = match layout::classify(&rel) {
        FileKind::Entry { scope, topic } => (scope, Some(topic)),
        FileKind::ScopeOverview { scope } => (scope, None),
        _ => return Err(wrong()),
    };
    if scope != place.scope || topic != place.topic {
        let named = match &place.topic {
            Some(t) => format!("topic `{t}` of `{}`", place.scope),
            None => format!("the overview of `{}`", place.scope),
        };
        return Err(Error::Usage(format!("ref_id `{rel}` is not in {named}, where the other parameters point"))
            .with_hint("give the workspace, domain, repository and topic of the file you change"));
    }
    if store::entry(&root.join(&rel))? != store::Entry::File {
        return Err(Error::NotFound(format!("no file `{rel}` to change"))
            .with_hint("leave out ref_id and expected_hash to create a new entry"));
    }
    Ok(rel)
}

/// The file's text and how many secrets were redacted from it. A change keeps the fields
/// of the old front-matter it does not name and sets `updated`; a new entry gets `created`
/// (and a plan `status: new`) unless the fields say otherwise.
/// `author` and `review` are tmws' to write: whatever the fields or the old file say, the
/// file says who wrote this version, and `review: proposed` when it is a proposal.
fn render(
    req: &EntryWriteRequest,
    place: &Place,
    old: Option<&[u8]>,
    today: chrono::NaiveDate,
    by: &By,
) -> (String, usize) {
    let date = today.format("%Y-%m-%d").to_string();
    let old_doc = old.map(markdown::parse);
    let mut front: Map<String, Value> = match old_doc.as_ref().and_then(|d| d.mapping()).map(|m| m.to_json()) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    front.insert("name".into(), Value::from(req.name.trim()));
    front.insert("description".into(), Value::from(req.description.trim()));
    if let Some(topic) = &place.topic {
        if topic == "plans" && !front.contains_key("status") {
            front.insert("status".into(), Value::from("new"));
        }
        if !front.contains_key("created") {
            front.insert("created".into(), Value::from(date.clone()));
        }
    }
    if old.is_some() {
        front.insert("updated".into(), Value::from(date));
    }
    for (key, value) in &req.fields {
        if value.is_null() {
            front.remove(key);
        } else {
            front.insert(key.clone(), value.clone());
        }
    }
    // Taken out keeping the other keys' order: each version names its own author last.
    front.shift_remove(AUTHOR);
    front.shift_remove(REVIEW);
    if let Some(author) = &by.author {
        front.insert(AUTHOR.into(), author.clone());
    }
    if by.proposed {
        front.insert(REVIEW.into(), Value::from(crate::memory::op::PROPOSED));
    }
    let mut front = Value::Object(front);
    let mut redacted = crate::redact::redact_value(&mut front);
    let mut body = match (&req.body, &old_doc) {
        (Some(body), _) => body.clone(),
        (None, Some(doc)) => doc.body.clone(),
        (None, None) => template(place.topic.as_deref()).to_owned(),
    };
    redacted += crate::redact::redact_in_place(&mut body);
    let body = body.trim_start_matches('\n');
    let mut text = format!("---\n{}---\n", super::yaml::to_yaml(&front));
    if !body.is_empty() {
        text.push('\n');
        text.push_str(body);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    (text, redacted)
}

/// The headings a new entry of a well-known topic starts with.
fn template(topic: Option<&str>) -> &'static str {
    match topic {
        Some("decisions") => "## Context\n\n## Decision\n\n## Consequences\n",
        Some("lessons") => "## What happened\n\n## What we learned\n",
        Some("plans") => "## Goal\n\n## Steps\n\n- [ ] \n",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_kebab_file_names() {
        assert_eq!(kebab("Use Postgres for the job queue"), "use-postgres-for-the-job-queue");
        assert_eq!(kebab("  OAuth2: token refresh (v2)! "), "oauth2-token-refresh-v2");
        assert_eq!(kebab("新しい教訓"), format!("entry-{}", &hash_of("新しい教訓".as_bytes())[..8]));
        let long = kebab(&"word ".repeat(40));
        assert_eq!((long.len(), long.ends_with('-')), (59, false));
        assert!(crate::check::entry_name_ok(&format!("261125-{}.md", kebab("新しい教訓"))));
        assert!(crate::check::entry_name_ok(&format!("261125-{}.md", kebab("Use Postgres, now!"))));
    }

    #[test]
    fn topics_are_folder_names_and_overview_is_the_scope_s_own() {
        assert_eq!(topic_name("decision").unwrap().as_deref(), Some("decisions"));
        assert_eq!(topic_name("_lessons").unwrap().as_deref(), Some("lessons"));
        assert_eq!(topic_name("spikes").unwrap().as_deref(), Some("spikes"));
        assert_eq!(topic_name("overview").unwrap(), None);
        assert!(topic_name("../x").is_err());
        assert!(topic_name(".git").is_err());
    }
}

//! From a file's bytes to the items the index holds.
//!
//! Pure: the caller reads the file and classifies its path. A document whose front-matter
//! does not parse is still indexed by its body and file name, and flagged, so it never
//! silently disappears.

use crate::layout::FileKind;
use crate::model::{Diagnostic, DocKind, IndexDoc};
use crate::parse::markdown::{self, FrontMatterState};
use crate::parse::text::{first_heading, first_sentences};
use crate::parse::{self, yaml};

/// Longest description taken from a body when the front-matter has none.
/// The front-matter fields of an overview that answers carry (docs/workspace-documents.md).
pub const OVERVIEW_META: [&str; 4] = ["folder_structure", "status_values", "category_values", "tag_values"];

/// The citations of a front-matter's `cites:` that read as such, as written.
fn cite_texts(cites: Option<&serde_json::Value>) -> Vec<String> {
    let items = match cites {
        Some(serde_json::Value::Array(items)) => items.as_slice(),
        Some(one @ serde_json::Value::String(_)) => std::slice::from_ref(one),
        _ => return Vec::new(),
    };
    items
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter(|t| crate::memory::cite::Cite::parse(t).is_ok())
        .map(|t| t.trim().to_owned())
        .collect()
}

/// The files a front-matter's `cites:` names (docs/workspace-documents.md): each valid
/// citation's path once; items that are not citations are `check`'s to report.
fn cited_paths(cites: Option<&serde_json::Value>) -> Vec<String> {
    let mut paths = Vec::new();
    for item in cite_texts(cites) {
        if let Ok(c) = crate::memory::cite::Cite::parse(&item)
            && !paths.contains(&c.path)
        {
            paths.push(c.path);
        }
    }
    paths
}

/// Whether the file at `kind` is an entry or an overview held back for review: what
/// [`extract_with_diagnostics`] makes no items of, for the index to keep the list of.
pub fn held_for_review(kind: &FileKind, bytes: &[u8]) -> bool {
    matches!(kind, FileKind::Entry { .. } | FileKind::ScopeOverview { .. })
        // Parsed only when the word is there: nearly every file holds no proposal.
        && memchr::memmem::find(bytes, crate::memory::op::PROPOSED.as_bytes()).is_some()
        && crate::memory::op::proposes(markdown::parse(bytes).front_matter().extra.get("review"))
}

/// The items of one file. `rel` is its root-relative path with `/` separators.
#[cfg(test)]
pub fn extract(kind: &FileKind, rel: &str, bytes: &[u8]) -> Vec<IndexDoc> {
    extract_with_diagnostics(kind, rel, bytes).0
}

/// The items of one file and the syntax problems found while reading it.
pub fn extract_with_diagnostics(kind: &FileKind, rel: &str, bytes: &[u8]) -> (Vec<IndexDoc>, Vec<Diagnostic>) {
    let (doc_kind, scope, topic) = match kind {
        FileKind::ScopeOverview { scope } => (DocKind::Overview, Some(scope.to_string()), None),
        FileKind::TopicOverview { scope, topic } => {
            (DocKind::TopicOverview, Some(scope.to_string()), Some(topic.clone()))
        }
        FileKind::Entry { scope, topic } => (DocKind::Entry, Some(scope.to_string()), Some(topic.clone())),
        FileKind::Rule => (DocKind::Rule, None, None),
        FileKind::Markdown | FileKind::BadScope { .. } => (DocKind::Doc, None, None),
        FileKind::Skills => return (skills(rel, bytes), Vec::new()),
        FileKind::Registry => return (registry(rel, bytes), Vec::new()),
        _ => return (Vec::new(), Vec::new()),
    };
    let mut doc = markdown::parse(bytes);
    let fm = doc.front_matter();
    // An entry an agent proposed is not searchable until a person approves it
    // (docs/review.md); `check` still reads it.
    if matches!(doc_kind, DocKind::Entry | DocKind::Overview) && crate::memory::op::proposes(fm.extra.get("review")) {
        return (Vec::new(), std::mem::take(&mut doc.diagnostics));
    }
    let diagnostics = std::mem::take(&mut doc.diagnostics);
    let mut flags = Vec::new();
    match doc.state {
        FrontMatterState::Invalid | FrontMatterState::Unclosed | FrontMatterState::LeadingBlank => {
            flags.push("invalid-front-matter".to_owned());
        }
        FrontMatterState::Absent if doc_kind != DocKind::Rule && doc_kind != DocKind::Doc => {
            flags.push("missing-front-matter".to_owned());
        }
        _ => {}
    }
    if diagnostics.iter().any(|d| d.rule == crate::model::Rule::Encoding) {
        flags.push("encoding".to_owned());
    }
    if matches!(kind, FileKind::BadScope { .. }) {
        flags.push("bad-scope".to_owned());
    }
    let body = doc.body.trim().to_owned();
    if mostly_links(&body) {
        flags.push(LINK_LIST.to_owned());
    }
    let name = fm
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| first_heading(&body).unwrap_or_else(|| stem_name(rel)));
    let description = fm.description.clone().filter(|d| !d.trim().is_empty()).unwrap_or_else(|| first_sentences(&body));
    let store_body = matches!(doc_kind, DocKind::Overview | DocKind::TopicOverview)
        || (doc_kind == DocKind::Entry && matches!(topic.as_deref(), Some("decisions" | "lessons")));
    let meta = if matches!(doc_kind, DocKind::Overview | DocKind::TopicOverview) {
        let fields: serde_json::Map<String, serde_json::Value> = fm
            .extra
            .iter()
            .filter(|(k, _)| OVERVIEW_META.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!fields.is_empty()).then(|| serde_json::Value::Object(fields).to_string())
    } else {
        // An entry's citations as written, for answers to say whether they still hold
        // (docs/citations.md); the paths alone are also indexed, for briefings.
        let cites = cite_texts(fm.extra.get("cites"));
        (!cites.is_empty()).then(|| serde_json::json!({ "cites": cites }).to_string())
    };
    let item = IndexDoc {
        ref_id: rel.to_owned(),
        kind: Some(doc_kind),
        scope,
        topic,
        name,
        description,
        tags: fm.tags,
        status: fm.status,
        category: fm.category,
        created: fm.created,
        updated: fm.updated,
        path: rel.to_owned(),
        body,
        store_body,
        flags,
        meta,
        cites: cited_paths(fm.extra.get("cites")),
        ..IndexDoc::default()
    };
    (vec![item], diagnostics)
}

/// The flag of a page that is mostly a list of links to other pages (an index of members
/// such as `<algorithm>` or `IWbemServices Methods`): search counts it less than the pages
/// it lists when neither's name is the query (docs/ranking.md). Never shown.
pub const LINK_LIST: &str = "link-list";

/// Whether a body is mostly a list of links: at least ten of its lines of text, and three
/// in four, are list items or table rows that start with a link (`- [x](x.md)`,
/// `|[x](x.md#x)|what x does|`). Code, headings and table rules are not counted.
fn mostly_links(body: &str) -> bool {
    let (mut links, mut lines) = (0usize, 0usize);
    let mut code = false;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            code = !code;
            continue;
        }
        if code || t.is_empty() || t.starts_with('#') || t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')) {
            continue;
        }
        lines += 1;
        let item = t.trim_start_matches(|c: char| matches!(c, '|' | '*' | '+' | '-' | ' ' | '.') || c.is_ascii_digit());
        if item.starts_with('[') && item.contains("](") {
            links += 1;
        }
    }
    links >= 10 && links * 4 >= lines * 3
}

/// One item per skill in `.tmws/skills.yaml`.
fn skills(rel: &str, bytes: &[u8]) -> Vec<IndexDoc> {
    let (text, _) = parse::decode(bytes);
    let (Some(node), _) = yaml::parse(&text, 1) else { return Vec::new() };
    let yaml::Value::Seq(items) = &node.value else { return Vec::new() };
    let mut out = Vec::new();
    for item in items {
        let field = |k: &str| item.get(k).map(|e| e.value.key_text().into_owned()).filter(|s| !s.is_empty());
        let Some(name) = field("name") else { continue };
        out.push(IndexDoc {
            ref_id: format!("{rel}#{name}"),
            kind: Some(DocKind::Skill),
            description: field("description").unwrap_or_default(),
            body: field("skill_path").unwrap_or_default(),
            store_body: true,
            name,
            path: rel.to_owned(),
            ..IndexDoc::default()
        });
    }
    out
}

/// The servers and tools of the registry (docs/registry.md): a server's refId is its name, a
/// tool's `server/tool`; a tool's category is its `category`, its body the usage hint and
/// the names of its parameters (so that `path` finds a tool taking a `path`).
fn registry(rel: &str, bytes: &[u8]) -> Vec<IndexDoc> {
    let Some(registry) =
        std::str::from_utf8(bytes).ok().and_then(|t| crate::parse::registry::Registry::read(t).ok().flatten())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (server, entry) in registry.servers {
        out.push(IndexDoc {
            ref_id: server.clone(),
            kind: Some(DocKind::Server),
            name: server.clone(),
            description: entry.description.unwrap_or_default(),
            path: rel.to_owned(),
            ..IndexDoc::default()
        });
        for (tool, t) in entry.tools {
            let params: Vec<&str> = t
                .input_schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(serde_json::Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            out.push(IndexDoc {
                ref_id: format!("{server}/{tool}"),
                kind: Some(DocKind::Tool),
                name: tool.clone(),
                description: t.description.clone().unwrap_or_default(),
                category: t.category.clone().filter(|c| !c.is_empty()),
                body: format!("{}\n{}", t.usage_hint.as_deref().unwrap_or_default(), params.join(" "))
                    .trim()
                    .to_owned(),
                namespace: Some(server.clone()),
                path: rel.to_owned(),
                ..IndexDoc::default()
            });
        }
    }
    out
}

/// The first `# heading` of a body.
/// `docs/adr/0001-use-tantivy.md` → `0001 use tantivy`.
fn stem_name(rel: &str) -> String {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    stem.replace(['-', '_'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scope;

    #[test]
    fn an_entry_keeps_its_front_matter() {
        let kind = FileKind::Entry { scope: Scope::parse("w/d").unwrap(), topic: "decisions".into() };
        let docs = extract(
            &kind,
            "resources/workspaces/w/d/_decisions/260101-x.md",
            b"---\nname: X\ndescription: Why X.\ntags: [a, b]\ncreated: 2026-01-01\n---\nBody text.\n",
        );
        assert_eq!(docs.len(), 1);
        let d = &docs[0];
        assert_eq!(
            (d.kind, d.scope.as_deref(), d.topic.as_deref()),
            (Some(DocKind::Entry), Some("w/d"), Some("decisions"))
        );
        assert_eq!((d.name.as_str(), d.description.as_str(), d.body.as_str()), ("X", "Why X.", "Body text."));
        assert_eq!(d.tags, vec!["a", "b"]);
        assert!(d.store_body);
        assert!(d.flags.is_empty());
    }

    #[test]
    fn broken_front_matter_is_indexed_by_body_and_file_name_and_flagged() {
        let kind = FileKind::Entry { scope: Scope::parse("w").unwrap(), topic: "plans".into() };
        let docs = extract(
            &kind,
            "resources/workspaces/w/_plans/260101-token-refresh.md",
            b"---\nname: [oops\n---\nRetry once on 401.\n\nMore.\n",
        );
        let d = &docs[0];
        assert_eq!(d.name, "260101 token refresh");
        assert_eq!(d.description, "Retry once on 401.");
        assert_eq!(d.flags, vec!["invalid-front-matter"]);
    }

    #[test]
    fn docs_read_title_and_rules_their_heading() {
        let d =
            &extract(&FileKind::Markdown, "docs/adr/0001.md", b"---\ntitle: Use ADRs\nstatus: accepted\n---\ntext\n")
                [0];
        assert_eq!((d.kind, d.name.as_str(), d.status.as_deref()), (Some(DocKind::Doc), "Use ADRs", Some("accepted")));
        let r = &extract(
            &FileKind::Rule,
            "agent/rules/common/00-core.md",
            b"<!-- budget: 5 lines -->\n# Core rules\n\n- Files are the truth.\n",
        )[0];
        assert_eq!((r.name.as_str(), r.description.as_str()), ("Core rules", "Files are the truth."));
    }

    #[test]
    fn skills_become_one_item_each() {
        let docs = extract(
            &FileKind::Skills,
            ".tmws/skills.yaml",
            b"- name: a\n  description: A.\n  skill_path: s/a.md\n- description: no name\n",
        );
        assert_eq!(docs.len(), 1);
        assert_eq!((docs[0].ref_id.as_str(), docs[0].kind), (".tmws/skills.yaml#a", Some(DocKind::Skill)));
    }
}

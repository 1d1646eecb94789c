//! Where a file belongs in the canonical layout (DESIGN §2).
//!
//! Classification is pure: it looks only at the path relative to the root. Below
//! `resources/workspaces/`, folders are scopes (`workspace/domain/repository`) until the
//! first folder whose name starts with `_`, which is a topic; topics are discovered from
//! the folders that exist, never from a list.

use std::path::{Component, Path};

use crate::model::{Scope, ScopeError, validate_component};

/// The folder of workspaces, relative to the root.
pub const WORKSPACES_DIR: &str = "resources/workspaces";
/// The folder of hot-memory rule files, relative to the root.
pub const RULES_DIR: &str = "agent/rules/common";
/// The memory logs, one per namespace.
pub const MEMORY_DIR: &str = ".tmws/memory";
/// The sparse registry and its usage log.
pub const REGISTRY_DIR: &str = ".tmws/registry";
/// The file name of scope and topic overviews.
pub const OVERVIEW: &str = "OVERVIEW.md";

/// What a file is to tmws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// `resources/workspaces/{scope}/OVERVIEW.md`.
    ScopeOverview { scope: Scope },
    /// `…/{scope}/_{topic}/OVERVIEW.md`.
    TopicOverview { scope: Scope, topic: String },
    /// Any other Markdown file inside a topic folder.
    Entry { scope: Scope, topic: String },
    /// Markdown below `resources/workspaces/` whose folders are not a valid scope or topic.
    BadScope { folder: String, error: ScopeError },
    /// `agent/rules/common/*.md`.
    Rule,
    /// Markdown anywhere else: syntax checks only.
    Markdown,
    /// `.tmws/memory/{namespace}.jsonl`.
    MemoryLog { namespace: String },
    /// Any other `.tmws/**/*.jsonl` (usage, trust…).
    Log,
    /// `.tmws/registry/index.json`.
    Registry,
    /// `.tmws/config.toml`.
    Config,
    /// `.tmws/skills.yaml`.
    Skills,
    /// `.tmws/schemas/{name}.schema.json`.
    SchemaOverride { name: String },
    /// Not a file tmws reads.
    Other,
}

impl FileKind {
    /// Whether tmws' own front-matter rules apply (not just YAML syntax).
    pub fn is_canonical_markdown(&self) -> bool {
        matches!(
            self,
            FileKind::ScopeOverview { .. }
                | FileKind::TopicOverview { .. }
                | FileKind::Entry { .. }
                | FileKind::BadScope { .. }
        )
    }
}

/// Whether a path names a Markdown file.
pub fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"))
}

/// Classifies a path relative to the root. `None` for the root-less case is `classify_loose`.
pub fn classify(rel: &Path) -> FileKind {
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let Some((&file, dirs)) = parts.split_last() else {
        return FileKind::Other;
    };
    let markdown = is_markdown(rel);
    match dirs {
        ["resources", "workspaces", rest @ ..] if markdown => classify_workspace(rest, file),
        ["agent", "rules", "common"] if markdown => FileKind::Rule,
        [".tmws", "cache", ..] => FileKind::Other,
        [".tmws"] if file == "config.toml" => FileKind::Config,
        [".tmws"] if file == "skills.yaml" => FileKind::Skills,
        [".tmws", "registry"] if file == "index.json" => FileKind::Registry,
        [".tmws", "memory"] if file.ends_with(".jsonl") => {
            FileKind::MemoryLog { namespace: file.trim_end_matches(".jsonl").to_owned() }
        }
        [".tmws", "schemas"] if file.ends_with(".schema.json") => {
            FileKind::SchemaOverride { name: file.trim_end_matches(".schema.json").to_owned() }
        }
        [".tmws", ..] if file.ends_with(".jsonl") => FileKind::Log,
        _ if markdown => FileKind::Markdown,
        _ => FileKind::Other,
    }
}

fn classify_workspace(dirs: &[&str], file: &str) -> FileKind {
    let topic_at = dirs.iter().position(|d| d.starts_with('_'));
    let scope_parts = &dirs[..topic_at.unwrap_or(dirs.len())];
    if scope_parts.is_empty() {
        // Markdown directly in resources/workspaces/ (a README, say) belongs to no scope.
        return FileKind::Markdown;
    }
    for part in scope_parts {
        if let Err(error) = validate_component(part) {
            return FileKind::BadScope { folder: (*part).to_owned(), error };
        }
    }
    if scope_parts.len() > 3 {
        let folder = scope_parts.join("/");
        return FileKind::BadScope { error: ScopeError::TooDeep(folder.clone()), folder };
    }
    let scope = Scope {
        workspace: scope_parts[0].to_owned(),
        domain: scope_parts.get(1).map(|s| (*s).to_owned()),
        repository: scope_parts.get(2).map(|s| (*s).to_owned()),
    };
    match topic_at {
        None if file == OVERVIEW => FileKind::ScopeOverview { scope },
        None => FileKind::Markdown,
        Some(i) => {
            let topic_dir = dirs[i];
            let topic = &topic_dir[1..];
            if let Err(error) = validate_component(topic) {
                return FileKind::BadScope { folder: topic_dir.to_owned(), error };
            }
            let nested = dirs.len() > i + 1;
            if file == OVERVIEW && !nested {
                FileKind::TopicOverview { scope, topic: topic.to_owned() }
            } else if file == OVERVIEW {
                FileKind::Markdown
            } else {
                FileKind::Entry { scope, topic: topic.to_owned() }
            }
        }
    }
}

/// The topic folder's path relative to the root for a scope and topic.
pub fn topic_dir(scope: &Scope, topic: &str) -> String {
    format!("{WORKSPACES_DIR}/{scope}/_{topic}")
}

/// The scopes from `scope` up to its workspace, nearest first.
pub fn scope_ladder(scope: &Scope) -> Vec<Scope> {
    let mut out = vec![scope.clone()];
    let mut s = scope.clone();
    while s.repository.is_some() || s.domain.is_some() {
        if s.repository.is_some() {
            s.repository = None;
        } else {
            s.domain = None;
        }
        out.push(s.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(s: &str) -> Scope {
        Scope::parse(s).unwrap()
    }

    fn check(path: &str, expect: FileKind) {
        assert_eq!(classify(Path::new(path)), expect, "{path}");
    }

    #[test]
    fn classification() {
        let ws = "resources/workspaces";
        check(&format!("{ws}/devtools/OVERVIEW.md"), FileKind::ScopeOverview { scope: scope("devtools") });
        check(
            &format!("{ws}/devtools/common/tmws/OVERVIEW.md"),
            FileKind::ScopeOverview { scope: scope("devtools/common/tmws") },
        );
        check(
            &format!("{ws}/devtools/common/_plans/OVERVIEW.md"),
            FileKind::TopicOverview { scope: scope("devtools/common"), topic: "plans".into() },
        );
        check(
            &format!("{ws}/devtools/_spikes/261101-x.md"),
            FileKind::Entry { scope: scope("devtools"), topic: "spikes".into() },
        );
        check(
            &format!("{ws}/devtools/_plans/archive/250101-x.md"),
            FileKind::Entry { scope: scope("devtools"), topic: "plans".into() },
        );
        check(&format!("{ws}/devtools/_plans/archive/OVERVIEW.md"), FileKind::Markdown);
        check(&format!("{ws}/README.md"), FileKind::Markdown);
        check(&format!("{ws}/devtools/NOTES.md"), FileKind::Markdown);
        check(&format!("{ws}/devtools/notes.txt"), FileKind::Other);
        check(
            &format!("{ws}/bad name/OVERVIEW.md"),
            FileKind::BadScope { folder: "bad name".into(), error: ScopeError::BadName("bad name".into()) },
        );
        check(
            &format!("{ws}/a/b/c/d/OVERVIEW.md"),
            FileKind::BadScope { folder: "a/b/c/d".into(), error: ScopeError::TooDeep("a/b/c/d".into()) },
        );
        check("agent/rules/common/10-style.md", FileKind::Rule);
        check("agent/rules/other/x.md", FileKind::Markdown);
        check(".tmws/config.toml", FileKind::Config);
        check(".tmws/skills.yaml", FileKind::Skills);
        check(".tmws/registry/index.json", FileKind::Registry);
        check(".tmws/registry/usage.jsonl", FileKind::Log);
        check(".tmws/memory/long-term.jsonl", FileKind::MemoryLog { namespace: "long-term".into() });
        check(".tmws/schemas/plans.schema.json", FileKind::SchemaOverride { name: "plans".into() });
        check(".tmws/cache/x.jsonl", FileKind::Other);
        check("docs/adr/0001.md", FileKind::Markdown);
        check("src/main.rs", FileKind::Other);
    }

    #[test]
    fn ladder() {
        let l: Vec<String> = scope_ladder(&scope("a/b/c")).iter().map(ToString::to_string).collect();
        assert_eq!(l, vec!["a/b/c", "a/b", "a"]);
        assert_eq!(topic_dir(&scope("a/b"), "plans"), "resources/workspaces/a/b/_plans");
    }
}

//! The canonical layout (docs/layout.md): every root-relative path tmws reads or writes, where a
//! file belongs, and the one decision of which files the index holds and `check` checks.
//!
//! Pure: it looks only at paths, never at the disk. Below `resources/workspaces/`, folders
//! are scopes (`workspace/domain/repository`) until the first folder whose name starts with
//! `_`, which is a topic; topics are discovered from the folders that exist, never from a
//! list. Paths are root-relative strings with `/` separators, as the scan builds them.

use std::path::{Component, Path};

use crate::error::{Error, Result};
use crate::model::{Scope, ScopeError, validate_component};

/// tmws' own folder; a folder holding one is a root.
pub const TMWS_DIR: &str = ".tmws";
/// Derived and local state: safe to delete at any time, git-ignored.
pub const CACHE_DIR: &str = ".tmws/cache";
/// The folder of workspaces.
pub const WORKSPACES_DIR: &str = "resources/workspaces";
/// Everything of the agents' that `tmws check` looks at with no PATH.
pub const AGENT_RULES_DIR: &str = "agent/rules";
/// The hot-memory rule files.
pub const RULES_DIR: &str = "agent/rules/common";
/// The memory logs, one per namespace.
pub const MEMORY_DIR: &str = ".tmws/memory";
/// The sparse registry's folder.
pub const REGISTRY_DIR: &str = ".tmws/registry";
/// The sparse registry.
pub const REGISTRY_FILE: &str = ".tmws/registry/index.json";
/// The log of tool calls (docs/pool.md).
pub const USAGE_FILE: &str = ".tmws/cache/usage.jsonl";
/// Where each running client session keeps what it did so far (`{pid}-{n}.json`), so that
/// a server killed before it could record a session leaves it for the next process.
pub const SESSIONS_DIR: &str = ".tmws/cache/sessions";
/// Issues as their trackers last gave them (docs/trackers.md#cache), one file each.
pub const TRACKERS_DIR: &str = ".tmws/cache/trackers";
/// Where the usage log was kept before it moved to the cache (it is this machine's, and
/// appending to a tracked file dirtied the tree on every call): read once, left alone.
pub const OLD_USAGE_FILE: &str = ".tmws/registry/usage.jsonl";
/// Agent verifications (docs/trust.md).
pub const TRUST_FILE: &str = ".tmws/trust.jsonl";
/// The loaded skills.
pub const SKILLS_FILE: &str = ".tmws/skills.yaml";
/// The configuration.
pub const CONFIG_FILE: &str = ".tmws/config.toml";
/// Project schema overrides, `{topic}.schema.json`.
pub const SCHEMAS_DIR: &str = ".tmws/schemas";
/// The file name of scope and topic overviews.
pub const OVERVIEW: &str = "OVERVIEW.md";
/// The generated hot memory.
pub const AGENTS_MD: &str = "AGENTS.md";
/// The hot-memory files of other agents (`rules.targets`).
pub const CLAUDE_MD: &str = "CLAUDE.md";
pub const GEMINI_MD: &str = "GEMINI.md";
pub const CURSOR_RULES: &str = ".cursor/rules/tmws.mdc";
pub const COPILOT_INSTRUCTIONS: &str = ".github/copilot-instructions.md";
/// Links to the rule files, made by `build-rules`.
pub const LINKS_DIR: &str = ".agents/rules";
/// The project configs of the MCP clients tmws registers itself with and reads servers
/// from: Claude Code, Cursor, VS Code.
pub const CLAUDE_CONFIG: &str = ".mcp.json";
pub const CURSOR_CONFIG: &str = ".cursor/mcp.json";
pub const VSCODE_CONFIG: &str = ".vscode/mcp.json";
pub const CODEX_CONFIG: &str = ".codex/config.toml";
pub const GEMINI_CONFIG: &str = ".gemini/settings.json";
/// The project files agent clients read their hooks from (docs/hooks.md): Claude Code's
/// settings, Codex's hooks file, and the file of tmws' own among Copilot CLI's hook files;
/// Gemini CLI's are in its settings, [`GEMINI_CONFIG`].
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";
pub const CODEX_HOOKS: &str = ".codex/hooks.json";
pub const COPILOT_HOOKS: &str = ".github/hooks/tmws.json";
/// Ignore rules of tmws' own, beside `.gitignore` and `.ignore`.
pub const IGNORE_FILE: &str = ".tmwsignore";

/// The folder of every version's index (docs/search-index.md).
pub const INDEX_PARENT: &str = ".tmws/cache/index";

/// A path in this version's folder of the index.
macro_rules! index_home {
    () => {
        ".tmws/cache/index/v19"
    };
    ($name:literal) => {
        concat!(index_home!(), "/", $name)
    };
}

/// This version's index and everything bound to its format, in a folder of its own
/// (`v` + [`crate::index::SCHEMA_VERSION`], which a test holds equal): a process of
/// another version, such as a watcher or MCP server started before an upgrade, keeps its
/// own folder, so neither deletes or rewrites the other's index under it. The folders of
/// versions that no process writes any more are removed (`index::retire`).
pub const INDEX_HOME: &str = index_home!();
/// The derived index (tantivy's files).
pub const INDEX_DIR: &str = index_home!("segments");
/// Held while a process finds, creates or rebuilds the index (beside it: a rebuild deletes
/// the index folder).
pub const INDEX_OPEN_LOCK: &str = index_home!("open.lock");
/// Present while the writer applies changes it has found.
pub const SYNCING_MARKER: &str = index_home!("syncing");
/// A sync asked of the process that keeps the index (`tmws index` beside `tmws mcp`), and
/// its answer.
pub const SYNC_REQUEST: &str = index_home!("sync-request.json");
pub const SYNC_ANSWER: &str = index_home!("sync-answer.json");
/// When a command-line query last asked a process that keeps the index (the time in ms):
/// a `tmws watch --idle-exit` stops once it is old.
pub const QUERIED_MARKER: &str = index_home!("queried");
/// The indexed files' states.
pub const MANIFEST_FILE: &str = index_home!("manifest.bin");
/// Changes appended to the manifest since it was written whole.
pub const JOURNAL_FILE: &str = index_home!("manifest.log");
/// Where versions up to 10 kept the index's files: tantivy's straight in
/// [`INDEX_PARENT`], these beside it.
pub const LEGACY_INDEX_FILES: [&str; 7] = [
    ".tmws/cache/index-open.lock",
    ".tmws/cache/syncing",
    ".tmws/cache/sync-request.json",
    ".tmws/cache/sync-answer.json",
    ".tmws/cache/queried",
    ".tmws/cache/manifest.bin",
    ".tmws/cache/manifest.log",
];
/// What the last memory upkeep did, and when (docs/memory-log.md#upkeep).
pub const UPKEEP_FILE: &str = ".tmws/cache/upkeep.json";
/// How often each memory was read (a derived count).
pub const ACCESS_FILE: &str = ".tmws/cache/memory-access.json";
/// The commit that introduced each memory, read from git history (derived).
pub const COMMIT_LINKS_FILE: &str = ".tmws/cache/commit-links.json";
/// What git says about the memory logs and branches at a HEAD (derived: visibility).
pub const VISIBILITY_FILE: &str = ".tmws/cache/git-visibility.json";
/// The bearer token of `tmws serve` when `TMWS_TOKEN` is not set.
pub const TOKEN_FILE: &str = ".tmws/cache/token";
/// Held by the `tmws watch --idle-exit` a query started, for as long as it runs: the one
/// query that takes it starts the watcher, the others start none.
pub const AUTOWATCH_LOCK: &str = ".tmws/cache/locks/autowatch.lock";
/// The lock of the usage log.
pub const USAGE_LOCK: &str = ".tmws/cache/locks/usage.lock";
/// The lock of the trust log.
pub const TRUST_LOCK: &str = ".tmws/cache/locks/trust.lock";

/// The log of a memory namespace.
pub fn memory_log(namespace: &str) -> String {
    format!("{MEMORY_DIR}/{namespace}.jsonl")
}

/// The lock of a memory namespace's log (in the cache, so that compaction can rename the log).
pub fn memory_lock(namespace: &str) -> String {
    format!("{CACHE_DIR}/locks/memory-{namespace}.lock")
}

/// The namespace of a memory log's path (`.tmws/memory/{namespace}.jsonl`).
pub fn memory_namespace(rel: &str) -> Option<&str> {
    rel.strip_prefix(MEMORY_DIR)?.strip_prefix('/')?.strip_suffix(".jsonl").filter(|n| !n.contains('/'))
}

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
    /// Any other `.tmws/**/*.jsonl` (trust…).
    Log,
    /// `.tmws/registry/usage.jsonl`: the usage log's old place.
    OldUsage,
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
    /// Whether `tmws check` checks a file of this kind.
    pub fn is_checked(&self) -> bool {
        *self != FileKind::Other
    }
}

/// Whether a path names a Markdown file.
pub fn is_markdown(path: &str) -> bool {
    Path::new(path).extension().is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"))
}

/// Where a root-relative path belongs.
pub fn classify(rel: &str) -> FileKind {
    let parts: Vec<&str> = Path::new(rel)
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
        [".tmws", "registry"] if file == "usage.jsonl" => FileKind::OldUsage,
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

/// The topics every workspace may have, by their folder names (plural).
const BUILT_IN_TOPICS: [&str; 5] = ["plans", "decisions", "lessons", "features", "spikes"];

/// A topic as a person or an agent names it, as its folder is named: without the folder's
/// `_`, and a built-in topic in the plural (`decision`, `_decisions` → `decisions`). The
/// one normalisation of topic names: the CLI's flags, the tools' parameters over MCP and
/// HTTP, and the schema overrides of `.tmws/schemas/` all go through it.
pub fn topic_name(topic: &str) -> String {
    let t = topic.trim().trim_start_matches('_');
    match BUILT_IN_TOPICS.iter().find(|p| p.strip_suffix('s') == Some(t)) {
        Some(plural) => (*plural).to_owned(),
        None => t.to_owned(),
    }
}

/// The topic folder of `topic` at `scope`.
pub fn topic_dir(scope: &Scope, topic: &str) -> String {
    format!("{WORKSPACES_DIR}/{scope}/_{topic}")
}

/// The folder of a scope.
pub fn scope_dir(scope: &Scope) -> String {
    format!("{WORKSPACES_DIR}/{scope}")
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

/// Whether `rel` is below the folder `dir` (both root-relative).
pub fn in_dir(rel: &str, dir: &str) -> bool {
    rel.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// The extra Markdown folders and globs of `index.include`, indexed as kind `doc`.
#[derive(Debug, Default)]
pub struct Includes {
    dirs: Vec<String>,
    globs: Option<globset::GlobSet>,
    glob_roots: Vec<String>,
}

/// Whether an include pattern is a glob rather than a folder.
fn is_glob(p: &str) -> bool {
    p.contains(['*', '?', '[', '{'])
}

impl Includes {
    /// Reads the patterns; one that leaves the root or does not parse is an error.
    pub fn new(patterns: &[String]) -> Result<Includes> {
        let mut inc = Includes::default();
        let mut set = globset::GlobSetBuilder::new();
        let mut any_glob = false;
        for p in patterns {
            let p = p.trim_start_matches("./").trim_end_matches('/').to_owned();
            if p.is_empty() || p.split('/').any(|c| c == "..") || p.starts_with('/') {
                return Err(Error::Usage(format!("index include `{p}` must be a path inside the root")));
            }
            if is_glob(&p) {
                let glob = globset::Glob::new(&p).map_err(|e| Error::Usage(format!("index include `{p}`: {e}")))?;
                set.add(glob);
                any_glob = true;
                let literal: Vec<&str> = p.split('/').take_while(|c| !is_glob(c)).collect();
                inc.glob_roots.push(literal.join("/"));
            } else {
                inc.dirs.push(p);
            }
        }
        if any_glob {
            inc.globs = Some(set.build().map_err(|e| Error::Usage(format!("index include: {e}")))?);
        }
        Ok(inc)
    }

    /// Where the included files are: the folders, and the literal start of each glob.
    pub fn starts(&self) -> impl Iterator<Item = &String> {
        self.dirs.iter().chain(self.glob_roots.iter())
    }

    /// The included folders (not globs): what a watcher watches besides the layout.
    pub fn dirs(&self) -> &[String] {
        &self.dirs
    }

    pub fn matches(&self, rel: &str) -> bool {
        if !is_markdown(rel) {
            return false;
        }
        self.dirs.iter().any(|d| in_dir(rel, d) || rel == d) || self.globs.as_ref().is_some_and(|g| g.is_match(rel))
    }
}

/// Where a sync of the whole root looks: the layout's folders and files, then the includes.
pub fn index_starts(includes: &Includes) -> Vec<String> {
    [WORKSPACES_DIR, RULES_DIR, SKILLS_FILE, MEMORY_DIR, REGISTRY_FILE]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(includes.starts().cloned())
        .collect()
}

/// Where `tmws check` with no PATH looks (docs/surfaces.md): what tmws owns, and the includes.
pub fn check_starts(includes: &Includes) -> Vec<String> {
    [WORKSPACES_DIR, AGENT_RULES_DIR, TMWS_DIR]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(includes.starts().cloned())
        .collect()
}

/// Whether `tmws check` with no PATH checks the file at `rel`: Markdown of the workspaces
/// and of `agent/rules/`, tmws' own files under `.tmws/`, and the `index.include` docs.
/// Any other Markdown of the repository (a site's templates, a vendored README) is not
/// tmws' to judge unless it is named.
pub fn is_checked_in_root(rel: &str, includes: &Includes) -> bool {
    (is_markdown(rel) && (in_dir(rel, WORKSPACES_DIR) || in_dir(rel, AGENT_RULES_DIR)))
        || (in_dir(rel, TMWS_DIR) && classify(rel).is_checked())
        || includes.matches(rel)
}

/// The folders a watcher watches recursively: the layout's, and the included folders.
pub fn watched_dirs(includes: &Includes) -> Vec<String> {
    [WORKSPACES_DIR, RULES_DIR, MEMORY_DIR, REGISTRY_DIR]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(includes.dirs().iter().cloned())
        .collect()
}

/// What the index makes of a file: its layout kind, or `Markdown` when only an include
/// brings it in. `None` when the index does not hold it.
pub fn index_kind(rel: &str, includes: &Includes) -> Option<FileKind> {
    let kind = classify(rel);
    match kind {
        FileKind::ScopeOverview { .. }
        | FileKind::TopicOverview { .. }
        | FileKind::Entry { .. }
        | FileKind::BadScope { .. }
        | FileKind::Rule
        | FileKind::Skills
        | FileKind::Registry
        | FileKind::MemoryLog { .. } => Some(kind),
        FileKind::Markdown if in_dir(rel, WORKSPACES_DIR) => Some(kind),
        _ if includes.matches(rel) => Some(FileKind::Markdown),
        _ => None,
    }
}

/// Whether the index holds the file at `rel`: the same answer as `index_kind(..).is_some()`
/// without classifying (this runs for every file of every sync).
pub fn is_indexed(rel: &str, includes: &Includes) -> bool {
    let markdown = is_markdown(rel);
    let rule = rel.strip_prefix(RULES_DIR).and_then(|r| r.strip_prefix('/')).is_some_and(|name| !name.contains('/'));
    (markdown && (in_dir(rel, WORKSPACES_DIR) || rule))
        || rel == SKILLS_FILE
        || rel == REGISTRY_FILE
        || memory_namespace(rel).is_some()
        || includes.matches(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_is_named_in_the_singular_or_the_plural_alike() {
        for (given, name) in [
            ("decision", "decisions"),
            ("decisions", "decisions"),
            ("_decisions", "decisions"),
            (" plan ", "plans"),
            ("lesson", "lessons"),
            ("spike", "spikes"),
            ("feature", "features"),
            ("architecture", "architecture"),
            ("*", "*"),
        ] {
            assert_eq!(topic_name(given), name, "{given}");
        }
    }

    fn scope(s: &str) -> Scope {
        Scope::parse(s).unwrap()
    }

    fn check(path: &str, expect: FileKind) {
        assert_eq!(classify(path), expect, "{path}");
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
        check(".tmws/registry/usage.jsonl", FileKind::OldUsage);
        check(".tmws/memory/long-term.jsonl", FileKind::MemoryLog { namespace: "long-term".into() });
        check(".tmws/schemas/plans.schema.json", FileKind::SchemaOverride { name: "plans".into() });
        check(".tmws/cache/x.jsonl", FileKind::Other);
        check("docs/adr/0001.md", FileKind::Markdown);
        check("src/main.rs", FileKind::Other);
    }

    #[test]
    fn the_paths_agree_with_the_classification() {
        assert_eq!(classify(CONFIG_FILE), FileKind::Config);
        assert_eq!(classify(SKILLS_FILE), FileKind::Skills);
        assert_eq!(classify(REGISTRY_FILE), FileKind::Registry);
        assert_eq!(classify(USAGE_FILE), FileKind::Other);
        assert_eq!(classify(TRUST_FILE), FileKind::Log);
        assert_eq!(classify(&memory_log("long-term")), FileKind::MemoryLog { namespace: "long-term".into() });
        assert_eq!(memory_namespace(&memory_log("short-term")), Some("short-term"));
        assert_eq!(
            classify(&format!("{SCHEMAS_DIR}/plans.schema.json")),
            FileKind::SchemaOverride { name: "plans".into() }
        );
        for derived in [
            INDEX_DIR,
            SYNCING_MARKER,
            SYNC_REQUEST,
            SYNC_ANSWER,
            QUERIED_MARKER,
            UPKEEP_FILE,
            MANIFEST_FILE,
            JOURNAL_FILE,
            ACCESS_FILE,
            VISIBILITY_FILE,
            TOKEN_FILE,
            USAGE_LOCK,
            AUTOWATCH_LOCK,
        ] {
            assert!(in_dir(derived, CACHE_DIR), "{derived}");
            assert_eq!(classify(&format!("{derived}.jsonl")), FileKind::Other, "{derived}");
        }
        assert!(in_dir(&memory_lock("long-term"), CACHE_DIR));
    }

    #[test]
    fn this_versions_index_lives_in_a_folder_named_by_its_schema_version() {
        assert_eq!(INDEX_HOME, format!("{INDEX_PARENT}/v{}", crate::index::SCHEMA_VERSION));
        for f in [
            INDEX_DIR,
            INDEX_OPEN_LOCK,
            SYNCING_MARKER,
            SYNC_REQUEST,
            SYNC_ANSWER,
            QUERIED_MARKER,
            MANIFEST_FILE,
            JOURNAL_FILE,
        ] {
            assert!(in_dir(f, INDEX_HOME), "{f}");
        }
        for f in LEGACY_INDEX_FILES {
            assert!(in_dir(f, CACHE_DIR) && !in_dir(f, INDEX_PARENT), "{f}");
        }
    }

    #[test]
    fn ladder() {
        let l: Vec<String> = scope_ladder(&scope("a/b/c")).iter().map(ToString::to_string).collect();
        assert_eq!(l, vec!["a/b/c", "a/b", "a"]);
        assert_eq!(topic_dir(&scope("a/b"), "plans"), "resources/workspaces/a/b/_plans");
    }

    #[test]
    fn the_quick_decision_agrees_with_classification() {
        let includes = Includes::new(&["docs/adr".to_owned(), "guide/**/*.md".to_owned()]).unwrap();
        for rel in [
            "resources/workspaces/w/OVERVIEW.md",
            "resources/workspaces/w/_plans/260101-a.md",
            "resources/workspaces/bad name/x.md",
            "resources/workspaces/README.md",
            "resources/workspaces/w/notes.txt",
            "resources/workspacesX/a.md",
            "agent/rules/common/00-core.md",
            "agent/rules/common/sub/x.md",
            "agent/rules/other.md",
            ".tmws/skills.yaml",
            ".tmws/config.toml",
            ".tmws/memory/long-term.jsonl",
            ".tmws/memory/sub/x.jsonl",
            ".tmws/memory/notes.md",
            ".tmws/registry/usage.jsonl",
            "docs/adr/0001.md",
            "docs/other.md",
            "guide/a/b.md",
            "README.md",
        ] {
            assert_eq!(is_indexed(rel, &includes), index_kind(rel, &includes).is_some(), "{rel}");
        }
    }

    #[test]
    fn includes_stay_inside_the_root() {
        for bad in ["../x", "/etc", "a/../../b", ""] {
            assert!(Includes::new(&[bad.to_owned()]).is_err(), "{bad}");
        }
        let inc = Includes::new(&["./docs/".to_owned(), "site/**/*.md".to_owned()]).unwrap();
        assert_eq!(inc.starts().collect::<Vec<_>>(), ["docs", "site"]);
        assert!(inc.matches("docs/a/b.md") && inc.matches("site/x/y.md") && !inc.matches("docs/a.txt"));
    }
}

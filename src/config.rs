//! The configuration: `.tmws/config.toml`, every key optional (docs/config.md).
//!
//! `Config` is plain data with the defaults of the contract. This module is the only reader
//! of the TOML text; the store hands it the text. An unknown key, a wrong type or a value
//! outside its limit is an error naming the key and its line. Every limit and default is
//! [`crate::limits`]'s, the same the tools' parameters are checked against, so a config that
//! loads never makes a tool fail.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::model::{Diagnostic, Rule, validate_component};

use crate::layout::{self, CONFIG_FILE};
use crate::limits::{self, Limit, Number};

/// The hard cap of `pool.max_size` (docs/pool.md).
pub const POOL_HARD_CAP: usize = limits::POOL_SIZE.max as usize;

/// Every section of `.tmws/config.toml`. The doc comments of the sections' fields are the
/// descriptions of `docs/config.md`, which a test generates from this type.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Config {
    /// Memory namespaces, one log each (`.tmws/memory/{name}.jsonl`): `short-term` and
    /// `long-term` always exist; any other name may be added, with the defaults of
    /// `short-term` for the keys it leaves out.
    pub namespaces: BTreeMap<String, NamespaceConfig>,
    pub retrieval: RetrievalConfig,
    pub memory: MemoryConfig,
    pub watch: WatchConfig,
    pub index: IndexConfig,
    pub pool: PoolConfig,
    pub registry: RegistryConfig,
    pub rules: RulesConfig,
    pub sessions: SessionsConfig,
    pub upkeep: UpkeepConfig,
    pub semantic: SemanticConfig,
    pub review: ReviewConfig,
    pub hooks: HooksConfig,
    pub tasks: TasksConfig,
    pub trackers: TrackersConfig,
}

/// One memory namespace: how long its entries live, how many it keeps, how fast they fade.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NamespaceConfig {
    /// Days an entry lives after it was added; an expired entry is invisible at once and
    /// compacted away later.
    pub ttl_days: u64,
    /// The most live entries the namespace keeps: an add beyond it evicts the oldest.
    pub max_entries: usize,
    /// The longest content, in characters: longer content is cut and the answer says
    /// `truncated`.
    pub max_content_chars: usize,
    /// The longest summary a caller may give, in characters (an extracted one is at most
    /// 280).
    pub max_summary_chars: usize,
    /// Days in which the importance of a note or a session record halves, for ranking
    /// (other kinds, such as decisions and lessons, do not fade).
    pub half_life_days: f64,
}

/// Defaults of the tools that search and answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RetrievalConfig {
    /// How many results `memory_search` gives when the request names no `limit`.
    pub top_k: usize,
    /// Results scoring under this fraction of the best are left out (`memory_search`'s
    /// default `min_score`, and `recall`'s floor).
    pub min_score: f64,
    /// The default answer cap in characters of every tool that takes `max_chars`.
    pub answer_cap_chars: usize,
    /// What a stale item's score is multiplied by: one whose cited code changed or is gone
    /// ranks below an otherwise equal fresh one.
    pub stale_factor: f64,
}

/// How memory logs are written and kept small.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Whether each append to a memory log is synced to disk before it is answered.
    pub fsync: bool,
    /// A log of 64 lines or more is compacted by itself once more than this fraction of the
    /// lines its entries hold are dead (expired, deleted or superseded; the tombstones that
    /// compaction keeps are not counted).
    pub compact_garbage_ratio: f64,
    /// The upkeep prunes entries whose current importance is below this (off when unset).
    pub prune_below: Option<f64>,
}

/// Sessions recorded without being asked (docs/memory-log.md#sessions): when a client session of
/// `tmws mcp` or `tmws serve` ends, or after `idle_minutes` without a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// Whether client sessions of `tmws mcp` and `tmws serve` are recorded by themselves.
    pub auto: bool,
    /// Minutes without a call after which a session is recorded (fractions allowed).
    pub idle_minutes: f64,
}

/// Memory upkeep inside `tmws watch`, `mcp` and `serve`: cleanup of expired entries,
/// prune below `memory.prune_below`, gc-branches, every `every_secs` (0: never), once no
/// request came for `idle_secs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UpkeepConfig {
    /// Seconds between two upkeeps (0: never).
    pub every_secs: u64,
    /// Seconds without a request before a due upkeep runs.
    pub idle_secs: u64,
}

/// Tasks, each on its own branch and linked git worktree (docs/tasks.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TasksConfig {
    /// The folder that holds the tasks' worktrees, one folder per task named after it:
    /// relative to the main worktree, or absolute; `{repo}` is the main worktree's folder
    /// name. It must lie in the folder that holds the main worktree (beside it or inside
    /// it): a repository's config sends no worktree elsewhere.
    pub worktrees_dir: String,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig { worktrees_dir: "../{repo}-worktrees".to_owned() }
    }
}

/// Recall by meaning: the embedding model that gives every indexed item a vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SemanticConfig {
    /// `builtin` (the model inside tmws), `off` (words only), or a folder inside the root
    /// holding `model.safetensors` of the same format. A change rebuilds the index.
    pub model: String,
    /// `off`, or a folder inside the root holding a sentence-transformers BERT encoder
    /// (`model.safetensors`, `vocab.txt`, `config.json`, such as all-MiniLM-L6-v2): the
    /// vectors of memories, and of the questions asked of them, are then the encoder's.
    /// Slower to write and to ask (milliseconds a memory), closer in meaning. A change
    /// rebuilds the index.
    pub memories: String,
}

impl Default for SemanticConfig {
    fn default() -> Self {
        SemanticConfig { model: "builtin".to_owned(), memories: "off".to_owned() }
    }
}

/// What people review of what agents write (docs/review.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    /// What agents' writes become: `write` (stored as they come) or `propose` (long-term
    /// memories and workspace entries written through MCP, HTTP or a hook wait for a
    /// person's `tmws review approve` before any answer shows them).
    #[schemars(with = "String")]
    pub agents: AgentWrites,
    /// How close in meaning (cosine, 0.5–1) a new memory must be to a live one for
    /// `memory_add` to name it in `similar_to`.
    pub duplicate_similarity: f64,
}

/// The namespace of an agent's working notes, which review never holds back.
pub const SHORT_TERM: &str = "short-term";

/// What an agent's write becomes (`review.agents`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentWrites {
    // Stored and searchable at once.
    #[default]
    Write,
    // Stored as a proposal, left out of answers until a person approves it.
    Propose,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig { agents: AgentWrites::Write, duplicate_similarity: limits::DUPLICATE_SIMILARITY.default }
    }
}

impl ReviewConfig {
    /// Whether a write through `surface` (`cli`, `mcp`, `http`, `hook`) to `namespace` (None:
    /// a workspace entry) is a proposal: only under `agents = "propose"`, never a person's
    /// command line, and never the short-term namespace, an agent's working notes.
    pub fn proposes(&self, surface: Option<&str>, namespace: Option<&str>) -> bool {
        self.agents == AgentWrites::Propose && surface.is_some_and(|s| s != "cli") && namespace != Some(SHORT_TERM)
    }
}

/// Issue trackers (docs/trackers.md), each off until its section is written. A token is
/// read from the environment variable the section names, or from the OS keyring account
/// its `keyring` names, never from a file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrackersConfig {
    /// GitHub or GitHub Enterprise: `[trackers.github]` with `repo` ("owner/name"),
    /// `api_url` (https://api.github.com), `token_env` (GITHUB_TOKEN) and `keyring` (none).
    pub github: Option<TrackerConfig>,
    /// GitLab, hosted or self-managed: `[trackers.gitlab]` with `project` ("group/name" or
    /// its numeric id), `api_url` (https://gitlab.com), `token_env` (GITLAB_TOKEN) and
    /// `keyring` (none).
    pub gitlab: Option<TrackerConfig>,
    /// Jira Cloud or Server: `[trackers.jira]` with `project` (its key, "PROJ"), `api_url`
    /// (the site, https://example.atlassian.net), `token_env` (JIRA_TOKEN) and `user_env`
    /// (JIRA_USER: with a user, Cloud's basic authentication; without, a Server token),
    /// and `keyring` (none).
    pub jira: Option<TrackerConfig>,
}

/// One tracker's section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackerConfig {
    /// The repository (`owner/name`), project (`group/name` or id) or project key.
    #[serde(alias = "project")]
    pub repo: String,
    /// The API's base address; plain http only for a loopback address.
    #[serde(default)]
    pub api_url: Option<String>,
    /// The environment variable holding the token (a default per tracker).
    #[serde(default)]
    pub token_env: Option<String>,
    /// Jira: the environment variable holding the account's e-mail for Cloud (JIRA_USER).
    #[serde(default)]
    pub user_env: Option<String>,
    /// The account whose token the OS keyring keeps under the service `tmws`, read when
    /// `token_env` is unset (off when not given).
    #[serde(default)]
    pub keyring: Option<String>,
}

impl TrackerConfig {
    /// What is wrong with the section of tracker `name`: the key and a message.
    fn problem(&self, name: &str) -> Option<(&'static str, String)> {
        let repo = self.repo.trim();
        let shape = match name {
            "jira" => {
                repo.len() <= 64 && !repo.is_empty() && repo.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }
            "gitlab" if repo.bytes().all(|b| b.is_ascii_digit()) => !repo.is_empty(),
            _ => {
                let parts: Vec<&str> = repo.split('/').collect();
                parts.len() >= 2
                    && (name == "gitlab" || parts.len() == 2)
                    && parts.iter().all(|p| {
                        !p.is_empty()
                            && !p.starts_with('.')
                            && p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                    })
            }
        };
        if !shape {
            let want = match name {
                "jira" => "a project key such as PROJ",
                "gitlab" => "a project path such as group/name, or its numeric id",
                _ => "a repository such as owner/name",
            };
            return Some((
                "repo",
                format!("trackers.{name}: `{}` is not {want}", repo.chars().take(80).collect::<String>()),
            ));
        }
        if let Some(url) = &self.api_url {
            let loopback =
                ["http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:", "http://localhost/", "http://[::1]:"];
            let ok = url.len() <= 512
                && (url.starts_with("https://") || loopback.iter().any(|p| url.starts_with(p)))
                && !url.contains(['@', ' ', '?', '#']);
            if !ok {
                return Some((
                    "api_url",
                    format!(
                        "trackers.{name}.api_url must be an https address (plain http only on a loopback address), without credentials"
                    ),
                ));
            }
        }
        if let Some(account) = &self.keyring
            && (account.is_empty()
                || account.len() > 128
                || !account.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'@')))
        {
            return Some((
                "keyring",
                format!("trackers.{name}.keyring must name a keyring account (letters, digits, `_ - . @`)"),
            ));
        }
        for (key, var) in [("token_env", &self.token_env), ("user_env", &self.user_env)] {
            if let Some(var) = var
                && (var.is_empty() || var.len() > 128 || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            {
                return Some((
                    key,
                    format!("trackers.{name}.{key} must name an environment variable (letters, digits, `_`)"),
                ));
            }
        }
        None
    }
}

/// Briefings through the agents' hooks (docs/hooks.md): each event's budget in characters
/// and the least relevance of what a prompt or a tool call is briefed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HooksConfig {
    /// The characters of a briefing when a session starts (0: none).
    pub session_start_chars: u64,
    /// The characters of a briefing after the client compacted its context (0: none).
    pub post_compact_chars: u64,
    /// The characters of a briefing on a prompt (0: none).
    pub prompt_chars: u64,
    /// The characters of a briefing before a shell command, an edit or a write (0: none).
    pub pre_tool_chars: u64,
    /// 0–1: how much of a prompt's or a command's words an item must hold, or how close
    /// in meaning it must be.
    pub min_score: f64,
}

impl Default for HooksConfig {
    fn default() -> Self {
        HooksConfig {
            session_start_chars: limits::BRIEF_START_CHARS.default,
            post_compact_chars: limits::BRIEF_START_CHARS.default,
            prompt_chars: limits::BRIEF_PROMPT_CHARS.default,
            pre_tool_chars: limits::BRIEF_PRE_TOOL_CHARS.default,
            min_score: limits::BRIEF_MIN_SCORE.default,
        }
    }
}

/// Which embedding model `[semantic] model` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChoice {
    Builtin,
    Off,
    /// A folder, relative to the root.
    Folder(PathBuf),
}

impl SemanticConfig {
    /// What `model` names; a folder outside the root is refused when the config loads.
    pub fn choice(&self) -> ModelChoice {
        match self.model.as_str() {
            "builtin" => ModelChoice::Builtin,
            "off" => ModelChoice::Off,
            folder => ModelChoice::Folder(PathBuf::from(folder)),
        }
    }

    /// The encoder folder `memories` names (None: `off`, or meaning is off altogether).
    pub fn encoder(&self) -> Option<PathBuf> {
        match (self.choice(), self.memories.as_str()) {
            (ModelChoice::Off, _) | (_, "off") => None,
            (_, folder) => Some(PathBuf::from(folder)),
        }
    }
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig { auto: true, idle_minutes: limits::SESSION_IDLE_MINUTES.default }
    }
}

impl Default for UpkeepConfig {
    fn default() -> Self {
        UpkeepConfig { every_secs: limits::UPKEEP_EVERY_SECS.default, idle_secs: limits::UPKEEP_IDLE_SECS.default }
    }
}

/// The watcher of `tmws watch`, `mcp` and `serve`, and the one a command-line query starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WatchConfig {
    /// Milliseconds a watcher waits after the last file event before it applies a batch.
    pub debounce_ms: u64,
    /// A CLI query that had to stat a root of at least `auto_min_files` files itself (no
    /// tmws process keeps its index) starts `tmws watch --idle-exit auto_idle_secs` in the
    /// background, so that the next queries skip that scan.
    pub auto: bool,
    /// The least number of files whose stat by a command-line query starts a watcher.
    pub auto_min_files: usize,
    /// Seconds without a query after which a watcher started that way stops.
    pub auto_idle_secs: u64,
}

/// What the index holds besides the canonical folders.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IndexConfig {
    /// Extra Markdown folders or globs inside the root (`docs/adr`, `docs/**/*.md`),
    /// indexed in place as kind `doc` and checked by `tmws check`.
    pub include: Vec<String>,
}

/// The pool of downstream MCP servers inside `tmws mcp` and `tmws serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// The most downstream server processes alive at once (at most 10).
    pub max_size: usize,
    /// Seconds a downstream connection lives after its last use, unless its registry entry
    /// sets `ttl_secs` or `persistent`.
    pub default_ttl_secs: u64,
    /// Read and range-checked but unused: the pool closes the connection idle longest
    /// first, which puts those idle past any grace period first anyway.
    pub grace_secs: u64,
    /// Seconds one downstream call (and a server's start) may take.
    pub call_timeout_secs: u64,
    /// How long a call waits for a place when every one is busy or persistent.
    pub queue_timeout_secs: u64,
}

/// Where `tmws registry build` finds the MCP servers of the project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RegistryConfig {
    /// The MCP client configs, paths inside the root, whose servers `tmws registry build`
    /// catalogues.
    pub sources: Vec<String>,
}

/// Hot memory: the rule files' total budget, and what `tmws build-rules` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RulesConfig {
    /// The most lines all hot-memory rule files may hold together.
    pub total_budget_lines: usize,
    /// The files `build-rules` writes for the agents that read them (docs/hot-rules.md).
    pub targets: Vec<RulesTarget>,
}

/// An agent's file of hot memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RulesTarget {
    /// `AGENTS.md` and `.agents/rules/` links (Codex, Gemini with a setting, and others).
    Agents,
    /// `CLAUDE.md` with the rules themselves (Claude Code, every version).
    Claude,
    /// `.cursor/rules/tmws.mdc`, always applied (Cursor).
    Cursor,
    /// `.github/copilot-instructions.md` (GitHub Copilot in VS Code).
    Copilot,
    /// `GEMINI.md` (Gemini CLI).
    Gemini,
}

impl NamespaceConfig {
    /// The defaults of a namespace: `long-term` has its own, every other name gets those of
    /// `short-term`, which are the limits' defaults.
    pub fn defaults_for(name: &str) -> NamespaceConfig {
        let short_term = NamespaceConfig {
            ttl_days: limits::TTL_DAYS.default,
            max_entries: limits::MAX_ENTRIES.default as usize,
            max_content_chars: limits::MAX_CONTENT_CHARS.default as usize,
            max_summary_chars: limits::MAX_SUMMARY_CHARS.default as usize,
            half_life_days: limits::HALF_LIFE_DAYS.default,
        };
        if name == "long-term" {
            NamespaceConfig { ttl_days: 3650, max_entries: 20_000, max_content_chars: 500_000, ..short_term }
        } else {
            short_term
        }
    }
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            top_k: limits::MEMORY_SEARCH_RESULTS.default as usize,
            min_score: limits::MIN_SCORE.default,
            answer_cap_chars: limits::ANSWER_CHARS.default as usize,
            stale_factor: limits::STALE_FACTOR.default,
        }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { fsync: true, compact_garbage_ratio: limits::COMPACT_GARBAGE_RATIO.default, prune_below: None }
    }
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            debounce_ms: limits::DEBOUNCE_MS.default,
            auto: true,
            auto_min_files: limits::AUTO_MIN_FILES.default as usize,
            auto_idle_secs: limits::AUTO_IDLE_SECS.default,
        }
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_size: limits::POOL_SIZE.default as usize,
            default_ttl_secs: limits::POOL_TTL_SECS.default,
            grace_secs: limits::POOL_GRACE_SECS.default,
            call_timeout_secs: limits::CALL_TIMEOUT_SECS.default,
            queue_timeout_secs: limits::QUEUE_TIMEOUT_SECS.default,
        }
    }
}

impl Default for RegistryConfig {
    fn default() -> Self {
        let sources = [
            layout::CLAUDE_CONFIG,
            layout::CURSOR_CONFIG,
            layout::VSCODE_CONFIG,
            layout::CODEX_CONFIG,
            layout::GEMINI_CONFIG,
        ];
        RegistryConfig { sources: sources.iter().map(|s| (*s).to_owned()).collect() }
    }
}

impl Default for RulesConfig {
    fn default() -> Self {
        RulesConfig {
            total_budget_lines: limits::RULES_BUDGET_LINES.default as usize,
            targets: vec![RulesTarget::Agents],
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        let namespaces =
            ["short-term", "long-term"].into_iter().map(|n| (n.to_owned(), NamespaceConfig::defaults_for(n))).collect();
        Config {
            namespaces,
            retrieval: RetrievalConfig::default(),
            memory: MemoryConfig::default(),
            watch: WatchConfig::default(),
            index: IndexConfig::default(),
            pool: PoolConfig::default(),
            registry: RegistryConfig::default(),
            rules: RulesConfig::default(),
            sessions: SessionsConfig::default(),
            upkeep: UpkeepConfig::default(),
            semantic: SemanticConfig::default(),
            review: ReviewConfig::default(),
            hooks: HooksConfig::default(),
            tasks: TasksConfig::default(),
            trackers: TrackersConfig::default(),
        }
    }
}

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawConfig {
    namespaces: BTreeMap<String, RawNamespace>,
    retrieval: RetrievalConfig,
    memory: MemoryConfig,
    watch: WatchConfig,
    index: IndexConfig,
    pool: PoolConfig,
    registry: RegistryConfig,
    rules: RulesConfig,
    sessions: SessionsConfig,
    upkeep: UpkeepConfig,
    semantic: SemanticConfig,
    review: ReviewConfig,
    hooks: HooksConfig,
    tasks: TasksConfig,
    trackers: TrackersConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawNamespace {
    ttl_days: Option<u64>,
    max_entries: Option<usize>,
    max_content_chars: Option<usize>,
    max_summary_chars: Option<usize>,
    half_life_days: Option<f64>,
}

/// The longest time a config may set (100 years): `ttl_days`, `half_life_days`, TTLs.
pub const MAX_DAYS: u64 = limits::MAX_DAYS;

impl Config {
    /// Reads `<root>/.tmws/config.toml`; a missing file gives the defaults. An invalid file
    /// is an error naming the file, the line and the key.
    pub fn load(root: &Path) -> Result<Config, Error> {
        let path = root.join(CONFIG_FILE);
        let Some(text) = crate::store::read_text_opt(root, &path, crate::store::cap::CONFIG)? else {
            return Ok(Config::default());
        };
        Config::parse_keeping_cause(&text).map_err(|(d, cause)| Error::WithLine {
            path: PathBuf::from(CONFIG_FILE),
            line: d.line,
            column: d.column,
            message: d.message,
            hint: d.hint,
            cause: cause.map(|e| e.into()),
        })
    }

    /// Parses the text of `config.toml`. The error is a `config` diagnostic with the line
    /// and column of the offending key or value.
    #[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
    pub fn parse(text: &str) -> Result<Config, Diagnostic> {
        Config::parse_keeping_cause(text).map_err(|(d, _)| d)
    }

    /// [`Config::parse`], keeping the TOML parser's own error when the text is not TOML.
    #[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
    fn parse_keeping_cause(text: &str) -> Result<Config, (Diagnostic, Option<toml::de::Error>)> {
        let raw: RawConfig = match toml::from_str(text) {
            Ok(raw) => raw,
            Err(e) => {
                let (line, column) = e.span().map_or((1, 1), |s| super::parse::line_col(text, s.start));
                let message = e.message().trim().to_owned();
                let d = Diagnostic::error(Rule::Config, line, column, message)
                    .with_hint("every key is optional; see the commented defaults written by `tmws init`");
                return Err((d, Some(e)));
            }
        };
        Config::from_raw(text, raw).map_err(|d| (d, None))
    }

    /// The config `raw` was read as, each value checked against its limit.
    #[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
    fn from_raw(text: &str, raw: RawConfig) -> Result<Config, Diagnostic> {
        let mut config = Config {
            retrieval: raw.retrieval,
            memory: raw.memory,
            watch: raw.watch,
            index: raw.index,
            pool: raw.pool,
            registry: raw.registry,
            rules: raw.rules,
            sessions: raw.sessions,
            upkeep: raw.upkeep,
            semantic: raw.semantic,
            review: raw.review,
            hooks: raw.hooks,
            tasks: raw.tasks,
            trackers: raw.trackers,
            ..Config::default()
        };
        let trackers = &config.trackers;
        for (name, t) in [("github", &trackers.github), ("gitlab", &trackers.gitlab), ("jira", &trackers.jira)] {
            if let Some((key, message)) = t.as_ref().and_then(|t| t.problem(name)) {
                let section = format!("trackers.{name}");
                // `repo` is also written `project`: the one written is below the header.
                let (line, column) = if key == "repo" {
                    key_position(text, &section, "repo").max(key_position(text, &section, "project"))
                } else {
                    key_position(text, &section, key)
                };
                return Err(Diagnostic::error(Rule::Config, line, column, message));
            }
        }
        for (name, ns) in raw.namespaces {
            let section = format!("namespaces.{name}");
            if validate_component(&name).is_err() {
                let (line, column) = key_position(text, &section, "");
                return Err(Diagnostic::error(
                    Rule::Config,
                    line,
                    column,
                    format!("namespace name `{name}` must use only letters, digits, `.`, `_` and `-`"),
                ));
            }
            // The `namespace` parameter of every memory tool takes names up to this long: a
            // longer one could be configured but never named.
            let chars = name.chars().count();
            if chars > limits::MAX_NAME_CHARS {
                let (line, column) = key_position(text, &section, "");
                return Err(Diagnostic::error(
                    Rule::Config,
                    line,
                    column,
                    format!("a namespace name is {chars} characters, over the limit of {}", limits::MAX_NAME_CHARS),
                ));
            }
            let base = NamespaceConfig::defaults_for(&name);
            let merged = NamespaceConfig {
                ttl_days: ns.ttl_days.unwrap_or(base.ttl_days),
                max_entries: ns.max_entries.unwrap_or(base.max_entries),
                max_content_chars: ns.max_content_chars.unwrap_or(base.max_content_chars),
                max_summary_chars: ns.max_summary_chars.unwrap_or(base.max_summary_chars),
                half_life_days: ns.half_life_days.unwrap_or(base.half_life_days),
            };
            // Upper bounds keep times within year 9999 and a memory's line within the
            // 16 MiB a reader takes (docs/config.md and docs/trust-boundary.md).
            for (key, limit, value) in [
                ("ttl_days", &limits::TTL_DAYS, merged.ttl_days),
                ("max_entries", &limits::MAX_ENTRIES, merged.max_entries as u64),
                ("max_content_chars", &limits::MAX_CONTENT_CHARS, merged.max_content_chars as u64),
                ("max_summary_chars", &limits::MAX_SUMMARY_CHARS, merged.max_summary_chars as u64),
            ] {
                within(text, &section, key, limit, value)?;
            }
            within(text, &section, "half_life_days", &limits::HALF_LIFE_DAYS, merged.half_life_days)?;
            config.namespaces.insert(name, merged);
        }
        // Every bounded key against its limit, the keys that give tools their defaults
        // (`retrieval.*`) with the limits of those tools' parameters.
        let c = &config;
        let counts = [
            ("retrieval", "top_k", &limits::MEMORY_SEARCH_RESULTS, c.retrieval.top_k as u64),
            ("retrieval", "answer_cap_chars", &limits::ANSWER_CHARS, c.retrieval.answer_cap_chars as u64),
            ("pool", "max_size", &limits::POOL_SIZE, c.pool.max_size as u64),
            ("pool", "call_timeout_secs", &limits::CALL_TIMEOUT_SECS, c.pool.call_timeout_secs),
            ("pool", "default_ttl_secs", &limits::POOL_TTL_SECS, c.pool.default_ttl_secs),
            ("pool", "grace_secs", &limits::POOL_GRACE_SECS, c.pool.grace_secs),
            ("pool", "queue_timeout_secs", &limits::QUEUE_TIMEOUT_SECS, c.pool.queue_timeout_secs),
            ("watch", "debounce_ms", &limits::DEBOUNCE_MS, c.watch.debounce_ms),
            ("watch", "auto_idle_secs", &limits::AUTO_IDLE_SECS, c.watch.auto_idle_secs),
            ("watch", "auto_min_files", &limits::AUTO_MIN_FILES, c.watch.auto_min_files as u64),
            ("rules", "total_budget_lines", &limits::RULES_BUDGET_LINES, c.rules.total_budget_lines as u64),
            ("upkeep", "every_secs", &limits::UPKEEP_EVERY_SECS, c.upkeep.every_secs),
            ("upkeep", "idle_secs", &limits::UPKEEP_IDLE_SECS, c.upkeep.idle_secs),
            ("hooks", "session_start_chars", &limits::BRIEF_START_CHARS, c.hooks.session_start_chars),
            ("hooks", "post_compact_chars", &limits::BRIEF_START_CHARS, c.hooks.post_compact_chars),
            ("hooks", "prompt_chars", &limits::BRIEF_PROMPT_CHARS, c.hooks.prompt_chars),
            ("hooks", "pre_tool_chars", &limits::BRIEF_PRE_TOOL_CHARS, c.hooks.pre_tool_chars),
        ];
        for (section, key, limit, value) in counts {
            within(text, section, key, limit, value)?;
        }
        let mut fractions = vec![
            ("retrieval", "min_score", &limits::MIN_SCORE, c.retrieval.min_score),
            ("retrieval", "stale_factor", &limits::STALE_FACTOR, c.retrieval.stale_factor),
            ("memory", "compact_garbage_ratio", &limits::COMPACT_GARBAGE_RATIO, c.memory.compact_garbage_ratio),
            ("sessions", "idle_minutes", &limits::SESSION_IDLE_MINUTES, c.sessions.idle_minutes),
            ("review", "duplicate_similarity", &limits::DUPLICATE_SIMILARITY, c.review.duplicate_similarity),
            ("hooks", "min_score", &limits::BRIEF_MIN_SCORE, c.hooks.min_score),
        ];
        if let Some(p) = c.memory.prune_below {
            fractions.push(("memory", "prune_below", &limits::IMPORTANCE, p));
        }
        for (section, key, limit, value) in fractions {
            within(text, section, key, limit, value)?;
        }
        // A client config is read from the root only: a source elsewhere is an error here,
        // once, rather than a failure of every registry command.
        let outside = config.registry.sources.iter().find(|s| {
            s.is_empty() || !Path::new(s).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        });
        if let Some(source) = outside {
            let (line, column) = key_position(text, "registry", "sources");
            return Err(Diagnostic::error(
                Rule::Config,
                line,
                column,
                format!("`registry.sources` entry `{source}` must be a path inside the root"),
            ));
        }
        // A model is read from the root only, like every other file a repository names.
        if let ModelChoice::Folder(folder) = config.semantic.choice()
            && !inside_root(&folder)
        {
            let (line, column) = key_position(text, "semantic", "model");
            return Err(Diagnostic::error(
                Rule::Config,
                line,
                column,
                format!(
                    "`semantic.model` `{}` must be `builtin`, `off` or a folder inside the root",
                    config.semantic.model
                ),
            ));
        }
        if let Some(folder) = config.semantic.encoder()
            && !inside_root(&folder)
        {
            let (line, column) = key_position(text, "semantic", "memories");
            return Err(Diagnostic::error(
                Rule::Config,
                line,
                column,
                format!("`semantic.memories` `{}` must be `off` or a folder inside the root", config.semantic.memories),
            ));
        }
        if let Err(e) = crate::layout::Includes::new(&config.index.include) {
            let (line, column) = key_position(text, "index", "include");
            return Err(Diagnostic::error(Rule::Config, line, column, e.to_string()));
        }
        Ok(config)
    }
}

/// `value` of `[section] key` within `limit`, else the config's error at the key's line:
/// `` `retrieval.top_k` must be between 1 and 100 ``.
#[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
fn within<T: Number>(text: &str, section: &str, key: &str, limit: &Limit<T>, value: T) -> Result<(), Diagnostic> {
    if limit.contains(value) {
        return Ok(());
    }
    let (line, column) = key_position(text, section, key);
    Err(Diagnostic::error(Rule::Config, line, column, format!("`{section}.{key}` {}", limit.rule())))
}

/// Whether a folder a config names is a path inside the root (relative, no `..`).
fn inside_root(folder: &Path) -> bool {
    !folder.as_os_str().is_empty() && folder.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The line and column of `key` inside `[section]` (or of the section header when `key` is
/// empty or not found), for errors found after deserialising.
fn key_position(text: &str, section: &str, key: &str) -> (usize, usize) {
    let mut in_section = false;
    let mut header = (1, 1);
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t.trim_start_matches('[').split(']').next().unwrap_or("").trim();
            in_section = name == section || name.trim_matches('"') == section;
            if in_section {
                header = (i + 1, 1);
            }
            continue;
        }
        if in_section && !key.is_empty() {
            let k = t.split('=').next().unwrap_or("").trim();
            if k == key {
                return (i + 1, line.len() - line.trim_start().len() + 1);
            }
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, usize, String) {
        let d = Config::parse(text).unwrap_err();
        assert_eq!(d.rule, Rule::Config);
        (d.line, d.column, d.message)
    }

    #[test]
    fn load_reads_the_root_file_and_names_it_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(dir.path()).unwrap(), Config::default());
        std::fs::create_dir_all(dir.path().join(".tmws")).unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "[watch]\ndebounce_ms = 5\n").unwrap();
        assert_eq!(Config::load(dir.path()).unwrap().watch.debounce_ms, 5);
        std::fs::write(dir.path().join(CONFIG_FILE), "[watch]\ndebounce = 5\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err().to_string();
        assert!(err.starts_with(".tmws/config.toml:2:1: unknown field `debounce`"), "{err}");
    }

    #[test]
    fn a_config_that_is_not_toml_keeps_the_parsers_error_as_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".tmws")).unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "[watch]\ndebounce_ms = = 5\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err();
        let cause = std::error::Error::source(&err).expect("the TOML error is kept");
        assert!(cause.downcast_ref::<toml::de::Error>().is_some(), "{cause:?}");
        // A value the checks refuse has no parser error under it.
        std::fs::write(dir.path().join(CONFIG_FILE), "[retrieval]\ntop_k = 0\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err();
        assert!(std::error::Error::source(&err).is_none());
        assert_eq!(err.to_string(), ".tmws/config.toml:2:1: `retrieval.top_k` must be between 1 and 100");
    }

    #[test]
    fn empty_text_gives_every_default() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.namespaces["short-term"].ttl_days, 14);
        assert_eq!(c.namespaces["long-term"].max_entries, 20_000);
        assert_eq!(c.retrieval.answer_cap_chars, 24_000);
        assert_eq!(c.pool.max_size, 10);
        assert_eq!(c.rules.total_budget_lines, 500);
        assert_eq!(
            c.registry.sources,
            vec![".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".codex/config.toml", ".gemini/settings.json"]
        );
    }

    #[test]
    fn partial_sections_keep_the_other_defaults() {
        let c = Config::parse(
            "[namespaces.long-term]\nttl_days = 10\n[namespaces.scratch]\nmax_entries = 5\n[watch]\ndebounce_ms = 20\n",
        )
        .unwrap();
        assert_eq!(c.namespaces["long-term"].ttl_days, 10);
        assert_eq!(c.namespaces["long-term"].max_entries, 20_000);
        assert_eq!(c.namespaces["scratch"].ttl_days, 14);
        assert_eq!(c.namespaces["scratch"].max_entries, 5);
        assert_eq!(c.watch.debounce_ms, 20);
        assert!(c.memory.fsync);
    }

    #[test]
    fn unknown_keys_wrong_types_and_bad_values_name_their_line() {
        let (line, col, msg) = err("[pool]\nmax_size = 4\nmax_sise = 5\n");
        assert_eq!((line, col), (3, 1));
        assert!(msg.contains("unknown field `max_sise`"), "{msg}");
        let (line, col, msg) = err("\n[watch]\ndebounce_ms = \"fast\"\n");
        assert_eq!((line, col), (3, 15));
        assert!(msg.contains("invalid type"), "{msg}");
        let (line, _, msg) = err("[colour]\n");
        assert_eq!(line, 1);
        assert!(msg.contains("unknown field `colour`"), "{msg}");
        assert_eq!(err("[pool]\n  max_size = 11\n"), (2, 3, "`pool.max_size` must be between 1 and 10".to_owned()));
        assert_eq!(err("[namespaces.\"a b\"]\nttl_days = 1\n").0, 1);
        assert_eq!(
            err("[namespaces.x]\nttl_days = 0\n"),
            (2, 1, "`namespaces.x.ttl_days` must be between 1 and 36500".to_owned())
        );
        assert_eq!(err("[rules]\ntotal_budget_lines = -1\n").0, 2);
        assert_eq!(err("this is = = not toml").0, 1);
        assert_eq!(
            err("[sessions]\nidle_minutes = 0.0\n"),
            (2, 1, "`sessions.idle_minutes` must be greater than 0 and at most 52560000".to_owned())
        );
        assert_eq!(
            err("[memory]\nprune_below = 1.5\n"),
            (2, 1, "`memory.prune_below` must be between 0 and 1".to_owned())
        );
        assert_eq!(err("[upkeep]\nidle_secs = 90000\n"), (2, 1, "`upkeep.idle_secs` must be at most 86400".to_owned()));
        let c = Config::parse("[sessions]\nauto = false\nidle_minutes = 0.5\n[upkeep]\nevery_secs = 0\n").unwrap();
        assert_eq!((c.sessions.auto, c.sessions.idle_minutes, c.upkeep.every_secs), (false, 0.5, 0));
    }

    #[test]
    fn values_that_would_overflow_a_time_or_a_line_are_errors() {
        // 3,000,000 days wrote a year-10240 expiry that sorted before today's; 100,000,000
        // panicked `memory add`.
        for ttl in ["3000000", "100000000", "36501"] {
            let text = format!("[namespaces.long-term]\n\nttl_days = {ttl}\n");
            let why = "`namespaces.long-term.ttl_days` must be between 1 and 36500";
            assert_eq!(err(&text), (3, 1, why.to_owned()), "{ttl}");
        }
        assert!(Config::parse("[namespaces.long-term]\nttl_days = 36500\n").is_ok());
        assert_eq!(
            err("[namespaces.x]\nhalf_life_days = 1e300\n"),
            (2, 1, "`namespaces.x.half_life_days` must be greater than 0 and at most 36500".to_owned())
        );
        // A namespace the `namespace` parameter could never name.
        let long = "n".repeat(257);
        assert_eq!(
            err(&format!("[namespaces.{long}]\nttl_days = 1\n")),
            (1, 1, "a namespace name is 257 characters, over the limit of 256".to_owned())
        );
        assert!(Config::parse(&format!("[namespaces.{}]\nttl_days = 1\n", "n".repeat(256))).is_ok());
        assert_eq!(err("[namespaces.x]\nmax_content_chars = 99999999\n").0, 2);
        assert_eq!(
            err("[watch]\ndebounce_ms = 86400000\n"),
            (2, 1, "`watch.debounce_ms` must be at most 60000".into())
        );
        let idle = format!("`watch.auto_idle_secs` must be between 1 and {}", MAX_DAYS * 86_400);
        assert_eq!(err("[watch]\nauto_idle_secs = 0\n"), (2, 1, idle.clone()));
        assert_eq!(err("[watch]\nauto_idle_secs = 999999999999\n"), (2, 1, idle));
        // An include that leaves the root is an error once, at load, naming its line.
        let (line, _, msg) = err("[semantic]\nmodel = \"/opt/models/e5\"\n");
        assert_eq!(
            (line, msg.as_str()),
            (2, "`semantic.model` `/opt/models/e5` must be `builtin`, `off` or a folder inside the root")
        );
        assert_eq!(err("[semantic]\nmodel = \"../models\"\n").0, 2);
        let (line, _, msg) = err("[semantic]\nmodel = \"builtin\"\nmemories = \"/home/me/minilm\"\n");
        assert_eq!(
            (line, msg.as_str()),
            (3, "`semantic.memories` `/home/me/minilm` must be `off` or a folder inside the root")
        );
        assert_eq!(err("[semantic]\nmemories = \"models/../../x\"\n").0, 2);
        assert_eq!(err("[semantic]\nmemories = \"\"\n").0, 2);
        // Meaning off leaves no encoder to run, wherever it is.
        let c = Config::parse("[semantic]\nmodel = \"off\"\nmemories = \"models/minilm\"\n").unwrap();
        assert_eq!(c.semantic.encoder(), None);
        let c = Config::parse("[semantic]\nmemories = \"models/minilm\"\n").unwrap();
        assert_eq!(c.semantic.encoder(), Some(PathBuf::from("models/minilm")));
        assert_eq!(Config::parse("").unwrap().semantic.encoder(), None);
        let (line, _, msg) = err("[index]\ninclude = [\"/etc\"]\n");
        assert_eq!((line, msg.as_str()), (2, "index include `/etc` must be a path inside the root"));
        assert_eq!(err("[index]\ninclude = [\"\"]\n").0, 2);
    }

    #[test]
    fn durations_and_sizes_out_of_range_name_their_key_and_line() {
        // u64::MAX seconds overflowed an Instant in the pool, and the calls hung.
        assert_eq!(
            err("[pool]\nqueue_timeout_secs = 18446744073709551615\n"),
            (2, 1, "`pool.queue_timeout_secs` must be at most 86400".to_owned())
        );
        // Each of these was accepted, and then every tool failed.
        let top_k = "`retrieval.top_k` must be between 1 and 100";
        assert_eq!(err("[retrieval]\ntop_k = 0\n"), (2, 1, top_k.to_owned()));
        // `memory_search` takes at most 100 results: a larger default failed every search.
        assert_eq!(err("[retrieval]\ntop_k = 101\n"), (2, 1, top_k.to_owned()));
        assert_eq!(err("[retrieval]\nmin_score = nan\n").2, "`retrieval.min_score` must be between 0 and 1");
        assert_eq!(
            err("[retrieval]\nanswer_cap_chars = 99\n"),
            (2, 1, "`retrieval.answer_cap_chars` must be between 100 and 100000".to_owned())
        );
        for source in ["/etc/passwd", "../x/.mcp.json", ""] {
            assert_eq!(
                err(&format!("[registry]\n\nsources = [\".mcp.json\", \"{source}\"]\n")),
                (3, 1, format!("`registry.sources` entry `{source}` must be a path inside the root"))
            );
        }
        assert_eq!(err("[rules]\ntotal_budget_lines = 99999999999\n").0, 2);
        assert_eq!(err("[watch]\nauto_min_files = 99999999999\n").0, 2);
        let c =
            Config::parse("[pool]\nqueue_timeout_secs = 0\n[registry]\nsources = [\"./tools/mcp.json\"]\n").unwrap();
        assert_eq!((c.pool.queue_timeout_secs, c.registry.sources.len()), (0, 1));
    }
}

//! The command line: flags in, library calls, rendered answers out.
//!
//! This layer only translates. It parses flags with clap, turns them into the library's
//! plain option structs, calls the library, and renders the result as text, JSON or
//! GitHub annotations. Exit codes follow DESIGN §7.1: 0 success, 1 problems found, 2 usage
//! or environment error.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use clap::{Parser, Subcommand, ValueEnum};

use crate::check::{self, CheckOptions, Report};
use crate::config::Config;
use crate::error::Error;
use crate::index::extract::cut;
use crate::index::watch::WatchUpdate;
use crate::index::{SearchRequest, SearchResults, SyncOptions};
use crate::init::{self, Action, McpClient};
use crate::model::{Diagnostic, DocKind, Severity};
use crate::query::context::{self, ContextRequest};
use crate::query::{Workspace, memory};
use crate::rules;
use crate::store;
use crate::surface::http::{self, TokenSource};
use crate::surface::progress::Progress;

/// tmws: memory and context for AI coding agents, kept as plain files in your repository.
#[derive(Debug, Parser)]
#[command(name = "tmws", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Project root (default: the nearest folder at or above the current one with .tmws/ or .git).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,

    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make this folder a tmws root: .tmws/config.toml, .gitignore and .gitattributes entries.
    Init {
        /// Also register `tmws mcp` in this MCP client's project config (repeatable).
        #[arg(long = "mcp-client", value_enum, value_delimiter = ',', value_name = "CLIENT")]
        mcp_client: Vec<ClientArg>,
    },
    /// Validate front-matter, file names, rule budgets, JSONL logs, registry and config.
    ///
    /// With no PATH, checks the whole root. Markdown outside resources/workspaces/ and
    /// agent/rules/ gets the syntax checks only. Exits 1 when errors are found (or warnings,
    /// with --strict).
    Check {
        /// Files or folders to check (default: the whole root).
        paths: Vec<PathBuf>,
        /// Output format (default: human; json with --json).
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Fail on warnings too.
        #[arg(long)]
        strict: bool,
    },
    /// Sync the search index with the files now (incremental; --rebuild starts over).
    Index {
        /// Drop the index and build it again from the files.
        #[arg(long)]
        rebuild: bool,
        /// Also index the Markdown of this folder (or glob) for this run, as kind `doc`.
        #[arg(long, value_name = "DIR")]
        include: Vec<String>,
    },
    /// Keep the index in sync with the files until interrupted; one line per change.
    Watch,
    /// Search overviews, entries, rules, skills and docs; best first.
    ///
    /// Words are matched after stemming and identifier splitting; "double quotes" make a
    /// phrase. Filters narrow without changing the order.
    Search {
        /// What to look for.
        query: String,
        /// Only this scope and below (workspace[/domain[/repository]]).
        #[arg(long)]
        scope: Option<String>,
        /// Only entries of this topic (repeatable).
        #[arg(long = "topic", value_name = "TOPIC")]
        topics: Vec<String>,
        /// Only this kind (repeatable): overview, topic_overview, entry, rule, skill, doc.
        #[arg(long = "kind", value_name = "KIND")]
        kinds: Vec<String>,
        /// Only this status (repeatable).
        #[arg(long, value_name = "STATUS")]
        status: Vec<String>,
        /// Only items with this tag (repeatable: all must match).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// table: aligned columns (the default on a terminal); yaml: every field (the
        /// default when piped, as agents read it); json: for scripts (also --json).
        #[arg(long, value_enum)]
        format: Option<SearchFormat>,
    },
    /// Orient in a scope: its overview, folders, overviews, decisions, lessons and skills,
    /// and the entries of the topics you name (workspace_get_context).
    ///
    /// YAML by default; --format json (or --json) for scripts. Unknown scopes exit 1 and
    /// list the known ones.
    Context {
        #[arg(long, short = 'w', value_name = "WORKSPACE")]
        workspace: String,
        #[arg(long, short = 'd', value_name = "DOMAIN")]
        domain: Option<String>,
        #[arg(long, short = 'r', value_name = "REPOSITORY")]
        repository: Option<String>,
        /// Topics to include (comma-separated): plans, decisions, lessons, any `_topic`, `overview`, or `*` for all.
        #[arg(long, value_delimiter = ',', value_name = "TOPICS")]
        topics: Vec<String>,
        /// Leave out the defaults (scope overview, folders, overviews, decisions, lessons, skills).
        #[arg(long)]
        no_defaults: bool,
        /// Only entries with this status (repeatable: any of them).
        #[arg(long, value_name = "STATUS")]
        status: Vec<String>,
        /// Only entries with this tag (repeatable: all of them).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Only entries of this category.
        #[arg(long, value_name = "CATEGORY")]
        category: Option<String>,
        /// Cap the answer at this many characters (default 24000, at most 100000).
        #[arg(long, value_name = "N")]
        max_chars: Option<usize>,
        #[arg(long, value_enum)]
        format: Option<AnswerFormat>,
    },
    /// Remember and recall: short- and long-term memories in .tmws/memory/*.jsonl.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// The sparse registry of other MCP servers (.tmws/registry/index.json).
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// Trust between agents: verifications in .tmws/trust.jsonl boost memory search.
    #[command(subcommand)]
    Trust(TrustCommand),
    /// Git hooks.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Sessions: one memory that sums up a window of work.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Serve the MCP tools over stdio (for agents); the index syncs and watches in the background.
    Mcp,
    /// Serve HTTP: REST routes and the MCP tools (streamable HTTP at /mcp) on one port.
    ///
    /// Every route but /health needs `Authorization: Bearer TOKEN`: TMWS_TOKEN, else the
    /// content of .tmws/cache/token (made on the first start). A non-loopback address is
    /// refused without a token. Stops on Ctrl-C or SIGTERM.
    Serve {
        /// Address and port to listen on (port 0 picks a free one).
        #[arg(long, default_value = crate::surface::http::DEFAULT_ADDR, value_name = "ADDR")]
        addr: String,
    },
    /// Generate AGENTS.md and .agents/rules/ links from agent/rules/common/*.md.
    BuildRules {
        /// Change nothing; exit 1 if AGENTS.md or the links are stale.
        #[arg(long)]
        check: bool,
        /// Replace an AGENTS.md that tmws did not generate.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
enum MemoryCommand {
    /// Remember something: CONTENT, or stdin when CONTENT is `-` or left out.
    ///
    /// Secrets are redacted before anything is written; the same content in the same
    /// namespace is stored once; `--key` replaces the live entry with that key.
    Add {
        content: Option<String>,
        /// Namespace (default short-term; long-term keeps for years).
        #[arg(long, short = 'n')]
        namespace: Option<String>,
        /// One-line summary (default: the first sentences of the content).
        #[arg(long)]
        summary: Option<String>,
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// note (default), session, problem, pattern, decision, or any word.
        #[arg(long)]
        kind: Option<String>,
        /// Upsert key, e.g. auth/token-refresh.
        #[arg(long)]
        key: Option<String>,
        /// Who or what it came from (default user).
        #[arg(long)]
        source: Option<String>,
        /// 0 to 1 (default 0.5).
        #[arg(long)]
        importance: Option<f64>,
        /// The agent that wrote it.
        #[arg(long)]
        agent: Option<String>,
    },
    /// Find memories by words (or by id); best first.
    Search {
        query: String,
        #[arg(long, short = 'n')]
        namespace: Option<String>,
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        #[arg(long)]
        kind: Option<String>,
        /// Only memories written on this branch (`*` for all).
        #[arg(long)]
        branch: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
        /// Leave out results scoring under this (0 to 1, relative to the best).
        #[arg(long)]
        min_score: Option<f64>,
        /// Add the first 1,200 characters of each content.
        #[arg(long)]
        include_content: bool,
    },
    /// Show one memory (exit 1 if there is no such id).
    Get {
        id: String,
        /// Include the whole content.
        #[arg(long)]
        content: bool,
    },
    /// Forget one memory (appends a delete op; exit 1 if there is no such id).
    Delete { id: String },
    /// Live entries per namespace, expired ones not yet cleaned up, log sizes.
    Stats,
    /// Compact every log: expired entries and dead lines out (atomic, under the log's lock).
    Cleanup,
    /// Forget every memory of a namespace (or of all); refused without --yes.
    Clear {
        #[arg(long, short = 'n', conflicts_with = "all", required_unless_present = "all")]
        namespace: Option<String>,
        /// Every namespace.
        #[arg(long)]
        all: bool,
        /// Yes, really: this cannot be undone.
        #[arg(long)]
        yes: bool,
    },
    /// Forget the memories whose current importance (decayed, DESIGN §6) is under F.
    Prune {
        #[arg(long, value_name = "F")]
        below: f64,
    },
    /// Link the memories added on this branch since the previous commit to HEAD (the
    /// post-commit hook runs this).
    LinkCommit,
    /// Forget the short-term memories of branches that no longer exist.
    GcBranches,
}

#[derive(Debug, Subcommand)]
enum RegistryCommand {
    /// Introspect the servers of the MCP client configs (registry.sources) once each and
    /// write .tmws/registry/index.json; exit 1 if any server failed.
    Build {
        /// Introspect every server, changed or not.
        #[arg(long)]
        force: bool,
        /// How long one server may take to start and list its tools.
        #[arg(long, value_name = "MS", default_value_t = 30_000)]
        timeout_ms: u64,
    },
    /// The registered servers: tools, cold start, popularity, last error.
    List,
    /// Find servers and tools by words (from the index: no server is started).
    Search {
        query: String,
        #[arg(long, default_value_t = 8)]
        limit: usize,
        #[arg(long, value_enum)]
        format: Option<SearchFormat>,
    },
    /// A tool's description, usage hint and input schema (from the registry: no server is
    /// started).
    Describe { server: String, tool: String },
    /// Call a tool the way `tool_call` does (config checked, server started, usage logged)
    /// and print its result; exit 1 when the result is an error.
    Call {
        server: String,
        tool: String,
        /// The arguments as a JSON object, e.g. '{"text": "hello"}'.
        #[arg(default_value = "{}")]
        arguments: String,
    },
}

#[derive(Debug, Subcommand)]
enum TrustCommand {
    /// Record that VERIFIER checked AGENT's work, with the outcome and the evidence.
    Verify {
        #[arg(long)]
        agent: String,
        #[arg(long)]
        verifier: String,
        /// The work held up.
        #[arg(long, conflicts_with = "failure", required_unless_present = "failure")]
        success: bool,
        /// The work did not hold up.
        #[arg(long)]
        failure: bool,
        /// What was checked: a test run, a review, a commit.
        #[arg(long)]
        evidence: String,
    },
    /// Every agent's trust score (0.5 to start, +0.05 a success, -0.10 a failure).
    Show,
}

#[derive(Debug, Subcommand)]
enum HookCommand {
    /// Install the git post-commit hook that runs `tmws memory link-commit` (an existing
    /// hook is kept and run first; installing twice changes nothing).
    Install,
}

#[derive(Debug, Subcommand)]
enum SessionCommand {
    /// Write one long-term `session` memory summing up the window: memories added,
    /// commits, tool calls, agents.
    Record {
        /// Start: a time (2026-11-22T10:00:00Z, 2026-11-22) or a commit; default: the last
        /// recorded session, else 24 hours ago.
        #[arg(long, value_name = "TIME|COMMIT")]
        since: Option<String>,
        /// The agent recording it.
        #[arg(long)]
        agent: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClientArg {
    Claude,
    Cursor,
    Vscode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AnswerFormat {
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SearchFormat {
    Table,
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
    Github,
}

/// Runs the CLI with the process's arguments and returns its exit code.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    init_logging();
    if matches!(cli.command, Command::Mcp | Command::Serve { .. } | Command::Watch) {
        crate::sys::long_running();
    }
    let result = if matches!(cli.command, Command::Mcp) {
        // The protocol owns stdout: holding its lock here would block every answer.
        root(&cli).and_then(|root| crate::surface::mcp::run_stdio(&root)).map(|()| 0).map_err(Failure::from)
    } else {
        let mut out = io::stdout().lock();
        let result = dispatch(&cli, &mut out);
        let _ = out.flush();
        result
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Error(e)) => {
            eprintln!("tmws: {e}");
            if let Some(hint) = e.hint() {
                eprintln!("  hint: {hint}");
            }
            ExitCode::from(e.category().exit_code())
        }
    }
}

enum Failure {
    BrokenPipe,
    Error(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Error(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Error(Error::io(Path::new("<stdout>"), e))
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TMWS_LOG")
        // rmcp's transport worker logs a downstream server's failures as errors; tmws reports
        // them itself, once, in its own words.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::transport::worker=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
}

fn cwd() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))
}

/// The root for commands that need one: --root, else found from the current folder.
fn root(cli: &Cli) -> Result<PathBuf, Error> {
    let cwd = cwd()?;
    match &cli.root {
        Some(r) => {
            let r = cwd.join(r);
            if !store::is_dir(&r) {
                return Err(Error::NoSuchPath(r));
            }
            store::canonicalize(&r)
        }
        None => store::find_root(&cwd).ok_or(Error::NoRoot(cwd)),
    }
}

fn dispatch(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    match &cli.command {
        Command::Init { mcp_client } => {
            let cwd = cwd()?;
            let root = match &cli.root {
                Some(r) => cwd.join(r),
                None => store::find_root(&cwd).unwrap_or(cwd),
            };
            let clients: Vec<McpClient> = mcp_client
                .iter()
                .map(|c| match c {
                    ClientArg::Claude => McpClient::Claude,
                    ClientArg::Cursor => McpClient::Cursor,
                    ClientArg::Vscode => McpClient::Vscode,
                })
                .collect();
            let report = init::init(&root, &clients)?;
            if cli.json {
                writeln!(out, "{}", to_json(&report))?;
            } else {
                writeln!(out, "tmws root: {}", report.root.display())?;
                for c in &report.changes {
                    let verb = match c.action {
                        Action::Created => "created",
                        Action::Updated => "updated",
                        Action::Unchanged => "unchanged",
                    };
                    writeln!(out, "  {verb:<9}  {:<22}  {}", c.path, c.detail)?;
                }
                if !report.changed() {
                    writeln!(out, "already initialised: nothing changed")?;
                }
            }
            Ok(0)
        }
        Command::Check { paths, format, strict } => {
            let counter = Arc::new(AtomicUsize::new(0));
            let opts = CheckOptions {
                root: cli.root.clone(),
                paths: paths.clone(),
                cwd: cwd()?,
                progress: Some(counter.clone()),
            };
            let progress = Progress::start(counter, "files checked");
            let report = check::run(&opts);
            progress.finish();
            let report = report?;
            let format = format.unwrap_or(if cli.json { Format::Json } else { Format::Human });
            match format {
                Format::Human => render_human(out, &report)?,
                Format::Json => writeln!(out, "{}", to_json(&json_diagnostics(&report.diagnostics)))?,
                Format::Github => render_github(out, &report)?,
            }
            Ok(u8::from(report.failed(*strict)))
        }
        Command::Index { rebuild, include } => {
            let root = root(cli)?;
            let cwd = cwd()?;
            let mut extra = Vec::new();
            for dir in include {
                let abs = cwd.join(dir);
                let abs = if store::exists(&abs) { store::canonicalize(&abs)? } else { abs };
                let rel = abs
                    .strip_prefix(&root)
                    .map_err(|_| Error::Usage(format!("--include {dir}: not inside the root {}", root.display())))?;
                extra.push(rel.to_string_lossy().replace('\\', "/"));
            }
            let mut ws = Workspace::open(&root)?;
            if let Some(why) = ws.rebuilt_on_open() {
                eprintln!("tmws: rebuilt the index from the files: {why}");
            }
            let counter = Arc::new(AtomicUsize::new(0));
            let progress = Progress::start(counter.clone(), "files indexed");
            let opts = SyncOptions { rebuild: *rebuild, include: extra, progress: Some(counter) };
            let report = ws.sync(&opts);
            progress.finish();
            let report = report?;
            if cli.json {
                writeln!(out, "{}", to_json(&report))?;
            } else if report.reader_only {
                writeln!(out, "another tmws process is keeping the index up to date ({} items)", report.items)?;
            } else {
                let rebuilt = if report.rebuilt { " (rebuilt)" } else { "" };
                writeln!(
                    out,
                    "indexed {} new, {} changed, {} removed in {} ms{rebuilt}",
                    report.new, report.changed, report.removed, report.millis
                )?;
            }
            Ok(0)
        }
        Command::Watch => {
            let root = root(cli)?;
            let mut ws = Workspace::open(&root)?;
            if let Some(why) = ws.rebuilt_on_open() {
                eprintln!("tmws: rebuilt the index from the files: {why}");
            }
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
                .map_err(|e| Error::Environment(format!("cannot handle Ctrl-C: {e}")))?;
            eprintln!("watching {} (Ctrl-C to stop)", root.display());
            let mut write_err = None;
            ws.watch(&stop, |update| {
                let r = render_watch(out, &update);
                if let Err(e) = r.and_then(|()| out.flush()) {
                    write_err.get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                }
            })?;
            if let Some(e) = write_err {
                return Err(e.into());
            }
            Ok(0)
        }
        Command::Context {
            workspace,
            domain,
            repository,
            topics,
            no_defaults,
            status,
            tags,
            category,
            max_chars,
            format,
        } => {
            let root = root(cli)?;
            let req = ContextRequest {
                workspace: workspace.clone(),
                domain: domain.clone(),
                repository: repository.clone(),
                topics: topics.clone(),
                include_defaults: !no_defaults,
                filter_status: status.clone(),
                filter_tags: tags.clone(),
                filter_category: category.clone(),
                max_chars: *max_chars,
            };
            let mut ws = Workspace::open(&root)?;
            let answer = ws.context(&req)?;
            let format = match format {
                Some(AnswerFormat::Json) => context::Format::Json,
                Some(AnswerFormat::Yaml) => context::Format::Yaml,
                None if cli.json => context::Format::Json,
                None => context::Format::Yaml,
            };
            let text = context::render(&answer, format);
            write!(out, "{text}")?;
            if format == context::Format::Json {
                writeln!(out)?;
            }
            Ok(0)
        }
        Command::Memory(cmd) => {
            let root = root(cli)?;
            // An add only appends to its log: no index to open.
            let ws = || Workspace::open(&root);
            let answer = match cmd {
                MemoryCommand::Add { content, namespace, summary, tags, kind, key, source, importance, agent } => {
                    let content = match content.as_deref() {
                        Some(c) if c != "-" => c.to_owned(),
                        _ => {
                            let mut text = String::new();
                            io::Read::read_to_string(&mut io::stdin(), &mut text)
                                .map_err(|e| Error::io(Path::new("<stdin>"), e))?;
                            text
                        }
                    };
                    let req = memory::AddRequest {
                        content,
                        namespace: namespace.clone(),
                        summary: summary.clone(),
                        tags: tags.clone(),
                        source: source.clone(),
                        kind: kind.clone(),
                        key: key.clone(),
                        importance: *importance,
                        agent: agent.clone(),
                        extra: serde_json::Map::new(),
                    };
                    let config = crate::config::Config::load(&root)?;
                    let added = memory::add(&root, &config, &req, chrono::Utc::now())?;
                    serde_json::to_value(added).map_err(|e| Error::Usage(e.to_string()))?
                }
                MemoryCommand::Search { query, namespace, tags, kind, branch, limit, min_score, include_content } => {
                    let req = memory::MemorySearch {
                        query: query.clone(),
                        namespace: namespace.clone(),
                        tags: tags.clone(),
                        kind: kind.clone(),
                        branch: branch.clone(),
                        limit: *limit,
                        min_score: *min_score,
                        include_content: *include_content,
                    };
                    ws()?.memory_search(&req)?
                }
                MemoryCommand::Get { id, content } => ws()?.memory_get(id, *content)?,
                MemoryCommand::Delete { id } => ws()?.memory_delete(id)?,
                MemoryCommand::Stats => ws()?.memory_stats()?,
                MemoryCommand::Cleanup => memory::maint::cleanup(&root, &Config::load(&root)?)?,
                MemoryCommand::Clear { namespace, all, yes } => {
                    memory::maint::clear(&root, &Config::load(&root)?, namespace.as_deref(), *all, *yes)?
                }
                MemoryCommand::Prune { below } => {
                    memory::maint::prune(&root, &Config::load(&root)?, *below, chrono::Utc::now())?
                }
                MemoryCommand::LinkCommit => memory::maint::link_commit(&root, &Config::load(&root)?)?,
                MemoryCommand::GcBranches => memory::maint::gc_branches(&root, &Config::load(&root)?)?,
            };
            if cli.json {
                writeln!(out, "{}", to_json(&answer))?;
            } else {
                write!(out, "{}", context::render(&answer, context::Format::Yaml))?;
            }
            Ok(0)
        }
        Command::Registry(RegistryCommand::Build { force, timeout_ms }) => {
            use crate::query::registry::{self, Outcome};
            let root = root(cli)?;
            let config = Config::load(&root)?;
            let registry::Built { outcomes, problems } =
                registry::build(&root, &config, *force, std::time::Duration::from_millis(*timeout_ms))?;
            for p in &problems {
                eprintln!("tmws: {p}");
            }
            let failed = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Failed(_))).count();
            if cli.json {
                let rows: Vec<serde_json::Value> = outcomes
                    .iter()
                    .map(|(name, o)| match o {
                        Outcome::Introspected { tools, cold_start_ms } => serde_json::json!({"server": name, "status": "introspected", "tools": tools, "cold_start_ms": cold_start_ms}),
                        Outcome::Unchanged { tools } => serde_json::json!({"server": name, "status": "unchanged", "tools": tools}),
                        Outcome::Failed(why) => serde_json::json!({"server": name, "status": "failed", "error": why}),
                    })
                    .collect();
                writeln!(out, "{}", to_json(&serde_json::Value::Array(rows)))?;
            } else {
                for (name, o) in &outcomes {
                    match o {
                        Outcome::Introspected { tools, cold_start_ms } => {
                            writeln!(out, "{name}: {tools} tools, cold start {cold_start_ms} ms")?;
                        }
                        Outcome::Unchanged { tools } => writeln!(out, "{name}: unchanged ({tools} tools)")?,
                        Outcome::Failed(why) => writeln!(out, "{name}: failed: {why}")?,
                    }
                }
                if outcomes.is_empty() {
                    writeln!(out, "no servers in {}", config.registry.sources.join(", "))?;
                }
            }
            Ok(if failed > 0 || !problems.is_empty() { 1 } else { 0 })
        }
        Command::Registry(RegistryCommand::Search { query, limit, format }) => {
            let root = root(cli)?;
            let req = SearchRequest {
                query: query.clone(),
                kinds: vec![DocKind::Tool, DocKind::Server],
                limit: *limit,
                ..SearchRequest::default()
            };
            let results = Workspace::open(&root)?.search(&req)?;
            print_results(out, &results, *format, cli.json)?;
            Ok(0)
        }
        Command::Registry(RegistryCommand::Describe { server, tool }) => {
            let root = root(cli)?;
            let registry = crate::query::tools::Registry::new(&root);
            let v = crate::query::tools::describe(&registry, server, tool)?;
            if cli.json {
                writeln!(out, "{}", to_json(&v))?;
            } else {
                write!(out, "{}", crate::query::context::render(&v, crate::query::context::Format::Yaml))?;
            }
            Ok(0)
        }
        Command::Registry(RegistryCommand::Call { server, tool, arguments }) => {
            let root = root(cli)?;
            let config = Config::load(&root)?;
            let args = match serde_json::from_str::<serde_json::Value>(arguments) {
                Ok(serde_json::Value::Object(m)) => m,
                Ok(_) => {
                    return Err(
                        Error::Usage("the arguments must be a JSON object, e.g. '{\"text\": \"hi\"}'".into()).into()
                    );
                }
                Err(e) => return Err(Error::Usage(format!("the arguments are not valid JSON: {e}")).into()),
            };
            let registry = crate::query::tools::Registry::new(&root);
            let pool = crate::pool::Pool::new(crate::pool::Settings::from_config(&config.pool));
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
            let called = runtime.block_on(async {
                let called = crate::query::tools::call(&root, &config, &registry, &pool, server, tool, args).await;
                pool.shutdown().await;
                called
            })?;
            let result = called.result;
            if cli.json {
                writeln!(out, "{}", to_json(&serde_json::to_value(&result).unwrap_or_default()))?;
            } else {
                for c in &result.content {
                    match c.as_text() {
                        Some(t) => writeln!(out, "{}", t.text)?,
                        None => writeln!(out, "{}", serde_json::to_string(c).unwrap_or_default())?,
                    }
                }
            }
            Ok(if result.is_error == Some(true) { 1 } else { 0 })
        }
        Command::Registry(RegistryCommand::List) => {
            let root = root(cli)?;
            let rows = crate::query::registry::list(&root)?;
            if cli.json {
                writeln!(out, "{}", to_json(&serde_json::to_value(&rows).unwrap_or_default()))?;
            } else {
                let w = rows.iter().map(|r| r.server.chars().count()).max().unwrap_or(6).max(6);
                writeln!(out, "{:<w$}  tools  cold start  popularity  last error", "server")?;
                for r in &rows {
                    let cold = r.cold_start_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
                    writeln!(
                        out,
                        "{:<w$}  {:>5}  {:>10}  {:>10.2}  {}",
                        r.server,
                        r.tools,
                        cold,
                        r.popularity,
                        r.error.as_deref().unwrap_or("-")
                    )?;
                }
            }
            Ok(0)
        }
        Command::Trust(cmd) => {
            let root = root(cli)?;
            match cmd {
                TrustCommand::Verify { agent, verifier, success, failure: _, evidence } => {
                    let t =
                        crate::query::trust::verify(&root, agent, verifier, *success, evidence, chrono::Utc::now())?;
                    if cli.json {
                        writeln!(out, "{}", to_json(&serde_json::to_value(&t).unwrap_or_default()))?;
                    } else {
                        writeln!(
                            out,
                            "{}: trust {:.2} ({} successes, {} failures)",
                            t.agent, t.score, t.successes, t.failures
                        )?;
                    }
                }
                TrustCommand::Show => {
                    let all = crate::query::trust::show(&root);
                    if cli.json {
                        writeln!(out, "{}", to_json(&serde_json::to_value(&all).unwrap_or_default()))?;
                    } else if all.is_empty() {
                        writeln!(
                            out,
                            "no verifications yet (tmws trust verify --agent A --verifier V --success --evidence E)"
                        )?;
                    } else {
                        let w = all.iter().map(|t| t.agent.chars().count()).max().unwrap_or(5).max(5);
                        writeln!(out, "{:<w$}  score  successes  failures  last verified", "agent")?;
                        for t in &all {
                            writeln!(
                                out,
                                "{:<w$}  {:>5.2}  {:>9}  {:>8}  {}",
                                t.agent, t.score, t.successes, t.failures, t.last
                            )?;
                        }
                    }
                }
            }
            Ok(0)
        }
        Command::Hook(HookCommand::Install) => {
            let root = root(cli)?;
            let exe =
                std::env::current_exe().map_err(|e| Error::Environment(format!("cannot find the tmws binary: {e}")))?;
            let answer = crate::query::hook::install(&root, &exe)?;
            if cli.json {
                writeln!(out, "{}", to_json(&answer))?;
            } else if answer["installed"] == serde_json::Value::Bool(true) {
                let chained = if answer["chained"] == serde_json::Value::Bool(true) {
                    " (the hook that was there runs first)"
                } else {
                    ""
                };
                writeln!(out, "installed {}{chained}", answer["hook"].as_str().unwrap_or_default())?;
            } else {
                writeln!(out, "already installed: {}", answer["hook"].as_str().unwrap_or_default())?;
            }
            Ok(0)
        }
        Command::Session(SessionCommand::Record { since, agent }) => {
            let root = root(cli)?;
            let config = Config::load(&root)?;
            let answer =
                crate::query::session::record(&root, &config, since.as_deref(), agent.as_deref(), chrono::Utc::now())?;
            if cli.json {
                writeln!(out, "{}", to_json(&answer))?;
            } else {
                write!(out, "{}", context::render(&answer, context::Format::Yaml))?;
            }
            Ok(0)
        }
        Command::Mcp => unreachable!("run() serves mcp before it locks stdout"),
        Command::Serve { addr } => {
            let root = root(cli)?;
            let addr = http::parse_addr(addr)?;
            let mut written = Ok(());
            http::serve(&root, addr, |l| {
                let token = match l.token_source {
                    TokenSource::Env => "the token is TMWS_TOKEN".to_owned(),
                    TokenSource::File => format!("the token is in {}", crate::layout::TOKEN_FILE),
                    TokenSource::Created => format!("a new token was written to {}", crate::layout::TOKEN_FILE),
                };
                eprintln!("tmws: serving {} ({token}; Ctrl-C to stop)", root.display());
                written = if cli.json {
                    let v = serde_json::json!({ "url": format!("http://{}", l.addr), "mcp": format!("http://{}/mcp", l.addr) });
                    writeln!(out, "{v}")
                } else {
                    writeln!(out, "listening on http://{}", l.addr)
                }
                .and_then(|()| out.flush());
            })?;
            written?;
            Ok(0)
        }
        Command::Search { query, scope, topics, kinds, status, tags, limit, format } => {
            let root = root(cli)?;
            let req = SearchRequest {
                query: query.clone(),
                scope: scope.clone(),
                topics: topics.clone(),
                kinds: DocKind::parse_all(kinds)?,
                status: status.clone(),
                tags: tags.clone(),
                limit: *limit,
                ..SearchRequest::default()
            };
            let mut ws = Workspace::open(&root)?;
            let results = ws.search(&req)?;
            print_results(out, &results, *format, cli.json)?;
            Ok(0)
        }
        Command::BuildRules { check, force } => {
            let root = root(cli)?;
            let report = rules::build_rules(&root, *check, *force)?;
            if cli.json {
                writeln!(out, "{}", to_json(&report))?;
            } else if report.up_to_date() {
                writeln!(
                    out,
                    "AGENTS.md and {} are up to date ({} rule files, {} lines)",
                    crate::layout::LINKS_DIR,
                    report.sources.len(),
                    report.lines
                )?;
            } else {
                let lead = if *check { "stale:" } else { "done:" };
                writeln!(out, "{lead}")?;
                let width = report.steps.iter().map(|s| s.path.chars().count()).max().unwrap_or(0);
                for s in &report.steps {
                    let verb = if *check { format!("would {}", s.action) } else { s.action.to_owned() };
                    writeln!(out, "  {verb:<12}  {:<width$}  {}", s.path, s.detail)?;
                }
                if *check {
                    writeln!(out, "run `tmws build-rules` to bring them up to date")?;
                }
            }
            let stale = report.steps.iter().any(|s| s.action != "skip");
            Ok(u8::from(*check && stale))
        }
    }
}

/// One line per applied change; problems of changed files on stderr.
fn render_watch(out: &mut impl Write, update: &WatchUpdate<'_>) -> io::Result<()> {
    let report = match update {
        WatchUpdate::Synced(r) => {
            let rebuilt = if r.rebuilt { " (rebuilt)" } else { "" };
            writeln!(
                out,
                "synced: {} new, {} changed, {} removed in {} ms; {} items{rebuilt}",
                r.new, r.changed, r.removed, r.millis, r.items
            )?;
            r
        }
        WatchUpdate::Applied(r) => {
            for (path, what) in &r.changes {
                writeln!(out, "{what:<8} {path}")?;
            }
            r
        }
        WatchUpdate::Syncing => return Ok(()),
        WatchUpdate::Following => return writeln!(out, "another tmws process holds the index: following its commits"),
        WatchUpdate::TookOver => return writeln!(out, "the index writer went away: this process took over"),
        WatchUpdate::ClientConfigs => {
            return writeln!(out, "client config changed: introspecting changed servers in the background");
        }
        WatchUpdate::Failed(e) => {
            eprintln!("tmws: sync failed: {e} (the whole root is synced again shortly)");
            return Ok(());
        }
    };
    for d in report.problems.iter().filter(|d| d.severity == Severity::Error) {
        eprintln!("{}:{}:{}: {}[{}]: {}", d.path, d.line, d.column, d.severity.as_str(), d.rule, d.message);
    }
    Ok(())
}

/// One result per line in aligned columns: score, kind, scope (a memory's namespace), refId,
/// then name and summary.
/// Search results as asked: a table on a terminal, YAML when piped, JSON with `--json`.
fn print_results(
    out: &mut impl Write,
    results: &SearchResults,
    format: Option<SearchFormat>,
    json: bool,
) -> Result<(), Failure> {
    let format = match format {
        Some(f) => f,
        None if json => SearchFormat::Json,
        None if io::stdout().is_terminal() => SearchFormat::Table,
        None => SearchFormat::Yaml,
    };
    match format {
        SearchFormat::Table => render_hits(out, results)?,
        SearchFormat::Json => writeln!(out, "{}", to_json(results))?,
        SearchFormat::Yaml => {
            let v = serde_json::to_value(results).map_err(|e| Error::Usage(e.to_string()))?;
            write!(out, "{}", context::render(&v, context::Format::Yaml))?;
        }
    }
    Ok(())
}

fn render_hits(out: &mut impl Write, results: &SearchResults) -> io::Result<()> {
    if results.results.is_empty() {
        return writeln!(out, "no results for `{}`", results.query);
    }
    let kind_w = results.results.iter().map(|h| h.kind.len()).max().unwrap_or(0);
    let scope_w = results
        .results
        .iter()
        .map(|h| h.scope.as_deref().or(h.namespace.as_deref()).unwrap_or("-").chars().count())
        .max()
        .unwrap_or(0);
    let ref_w = results.results.iter().map(|h| h.ref_id.chars().count()).max().unwrap_or(0);
    for h in &results.results {
        let summary = cut(&h.summary.replace('\n', " "), 80);
        let text = match (h.name.is_empty(), summary.is_empty()) {
            (true, _) => summary,
            (false, true) => h.name.clone(),
            (false, false) => format!("{}: {summary}", h.name),
        };
        let scope = h.scope.as_deref().or(h.namespace.as_deref()).unwrap_or("-");
        writeln!(out, "{:>4}%  {:<kind_w$}  {scope:<scope_w$}  {:<ref_w$}  {text}", h.score, h.kind, h.ref_id)?;
    }
    Ok(())
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The JSON shape of diagnostics: exactly the fields of DESIGN §7.1.
fn json_diagnostics(diags: &[Diagnostic]) -> Vec<serde_json::Value> {
    diags
        .iter()
        .map(|d| {
            serde_json::json!({
                "path": d.path,
                "line": d.line,
                "column": d.column,
                "severity": d.severity.as_str(),
                "rule": d.rule.as_str(),
                "message": d.message,
            })
        })
        .collect()
}

struct Paint {
    on: bool,
}

impl Paint {
    fn stdout() -> Paint {
        Paint { on: io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
}

/// Compiler-style diagnostics: location, severity and rule, message, the line, a caret, a hint.
fn render_human(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let paint = Paint::stdout();
    for d in &report.diagnostics {
        let sev = match d.severity {
            Severity::Error => paint.wrap("1;31", &format!("error[{}]", d.rule)),
            Severity::Warning => paint.wrap("1;33", &format!("warning[{}]", d.rule)),
        };
        writeln!(out, "{}:{}:{}: {sev}: {}", d.path, d.line, d.column, paint.wrap("1", &d.message))?;
        if let Some(src) = &d.source {
            let num = d.line.to_string();
            let pad = " ".repeat(num.len());
            let shown: String = src.chars().take(200).collect::<String>().replace('\t', " ");
            let width = shown.chars().count();
            let col = (d.column - 1).min(width);
            let len = d.len.min(width.saturating_sub(col)).max(1);
            writeln!(out, "{pad} |")?;
            writeln!(out, "{num} | {shown}")?;
            writeln!(out, "{pad} | {}{}", " ".repeat(col), paint.wrap("1;31", &"^".repeat(len)))?;
        }
        if let Some(hint) = &d.hint {
            let pad = " ".repeat(d.line.to_string().len());
            writeln!(out, "{pad} = hint: {hint}")?;
        }
        writeln!(out)?;
    }
    if !report.diagnostics.is_empty() {
        let (e, w) = (report.errors(), report.warnings());
        writeln!(
            out,
            "{} error{}, {} warning{} in {} file{} checked",
            e,
            if e == 1 { "" } else { "s" },
            w,
            if w == 1 { "" } else { "s" },
            report.files,
            if report.files == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// GitHub Actions workflow commands, escaped as GitHub requires.
fn render_github(out: &mut impl Write, report: &Report) -> io::Result<()> {
    fn data(s: &str) -> String {
        s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
    }
    fn prop(s: &str) -> String {
        data(s).replace(':', "%3A").replace(',', "%2C")
    }
    for d in &report.diagnostics {
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        writeln!(
            out,
            "::{level} file={},line={},col={}::[{}] {}",
            prop(&d.path),
            d.line,
            d.column,
            d.rule,
            data(&d.message)
        )?;
    }
    Ok(())
}

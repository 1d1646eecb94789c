//! The command line: flags in, engine calls, rendered answers out.
//!
//! This layer only translates. The commands that answer an agent's questions (`context`,
//! `search`, `memory …`, `session record`, `registry search|describe|call`) take their
//! flags from the tool's request type (`args`) and run the tool through the engine as MCP
//! and HTTP do; the others map their flags onto engine calls. Exit codes come from the
//! error's category (DESIGN §7.1): 0 success, 1 problems found, 2 usage or environment
//! error. One file per group of commands: `files` (init, check, index, watch, build-rules),
//! `query` (context, search, memory, session, registry), `admin` (trust, hook, mcp, serve).

mod admin;
mod args;
mod files;
mod query;
mod render;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use self::args::ToolArgs;
use crate::error::Error;
use crate::query::api::{
    ContextRequest, Format, FormatOnly, MemoryAddRequest, MemoryClearRequest, MemoryDeleteRequest, MemoryGetRequest,
    MemorySearchRequest, Params, SearchRequest, SessionRecordRequest, ToolCallRequest, ToolDescribeRequest,
    ToolSearchRequest,
};
use crate::store;

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

/// A tool's flags and the answer's format.
#[derive(Debug, clap::Args)]
struct Tool<T: Params> {
    #[command(flatten)]
    params: ToolArgs<T>,
    /// yaml (the default) or json (also --json).
    #[arg(long, value_enum)]
    format: Option<AnswerFormat>,
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
        format: Option<CheckFormat>,
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
    /// Search overviews, entries, rules, skills, docs and memories; best first
    /// (workspace_search).
    ///
    /// Words are matched after stemming and identifier splitting; "double quotes" make a
    /// phrase. Filters narrow without changing the order.
    Search {
        #[command(flatten)]
        params: ToolArgs<SearchRequest>,
        /// table: aligned columns (the default on a terminal); yaml: every field (the
        /// default when piped, as agents read it); json: for scripts (also --json).
        #[arg(long, value_enum)]
        format: Option<TableFormat>,
    },
    /// Orient in a scope: its overview, folders, overviews, decisions, lessons and skills,
    /// and the entries of the topics you name (workspace_get_context).
    ///
    /// YAML by default; --format json (or --json) for scripts. Unknown scopes exit 1 and
    /// list the known ones.
    Context(Tool<ContextRequest>),
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
    /// Remember something: CONTENT, or stdin when CONTENT is `-` or left out (memory_add).
    ///
    /// Secrets are redacted before anything is written; the same content in the same
    /// namespace is stored once; `--key` replaces the live entry with that key.
    Add(Tool<MemoryAddRequest>),
    /// Find memories by words (or by id); best first (memory_search).
    Search(Tool<MemorySearchRequest>),
    /// Show one memory; exit 1 if there is no such id (memory_get).
    Get(Tool<MemoryGetRequest>),
    /// Forget one memory (appends a delete op); exit 1 if there is no such id (memory_delete).
    Delete(Tool<MemoryDeleteRequest>),
    /// Live entries per namespace, expired ones not yet cleaned up, log sizes (memory_stats).
    Stats(Tool<FormatOnly>),
    /// Compact every log: expired entries and dead lines out, atomically under the log's lock
    /// (memory_cleanup).
    Cleanup(Tool<FormatOnly>),
    /// Forget every memory of a namespace (or of all); refused without --yes (memory_clear).
    Clear(Tool<MemoryClearRequest>),
    /// Forget the memories whose current importance (importance decayed with age, lifted by
    /// reads) is under F.
    Prune {
        /// The least current importance kept, 0 to 1.
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
    /// The registered servers: tools, cold start, popularity, last error, and whether each is
    /// approved on this machine.
    List,
    /// Approve servers of the client configs on this machine, exactly as they are now: until
    /// then nothing starts them (a `git pull` that adds or changes one runs nothing). Shows
    /// what each runs.
    ///
    /// Examples:
    ///   tmws registry approve serena context7
    ///   tmws registry approve --all
    Approve {
        /// The servers to approve, by name.
        servers: Vec<String>,
        /// Every server that awaits approval.
        #[arg(long)]
        all: bool,
    },
    /// Find tools of the registered servers by what they do (tool_search: from the index,
    /// no server is started).
    Search {
        #[command(flatten)]
        params: ToolArgs<ToolSearchRequest>,
        /// table (the default on a terminal), yaml (the default when piped) or json.
        #[arg(long, value_enum)]
        format: Option<TableFormat>,
    },
    /// A tool's description, usage hint and input schema (tool_describe: from the registry,
    /// no server is started).
    Describe(Tool<ToolDescribeRequest>),
    /// Call a tool the way `tool_call` does (config checked, server started, usage logged)
    /// and print its text result (--json: the whole result); exit 1 when it is an error.
    Call {
        #[command(flatten)]
        params: ToolArgs<ToolCallRequest>,
    },
}

#[derive(Debug, Subcommand)]
enum TrustCommand {
    /// Record that VERIFIER checked AGENT's work, with the outcome and the evidence.
    Verify {
        /// The agent whose work was checked.
        #[arg(long)]
        agent: String,
        /// The agent (or person) who checked it; never the agent itself.
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
    /// commits, tool calls, agents (session_record).
    Record(Tool<SessionRecordRequest>),
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
enum TableFormat {
    Table,
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CheckFormat {
    Human,
    Json,
    Github,
}

impl Cli {
    /// The format of an answer: `--format`, else JSON with `--json`, else YAML.
    fn answer_format(&self, format: Option<AnswerFormat>) -> Format {
        match format {
            Some(AnswerFormat::Json) => Format::Json,
            Some(AnswerFormat::Yaml) => Format::Yaml,
            None if self.json => Format::Json,
            None => Format::Yaml,
        }
    }

    /// The format of a list of results: `--format`, else JSON with `--json`, a table on a
    /// terminal, YAML when piped.
    fn table_format(&self, format: Option<TableFormat>) -> TableFormat {
        match format {
            Some(f) => f,
            None if self.json => TableFormat::Json,
            None if io::stdout().is_terminal() => TableFormat::Table,
            None => TableFormat::Yaml,
        }
    }
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
            let answer = crate::error::ErrorAnswer::new(&e, None);
            let esc = crate::parse::text::escape_controls;
            eprintln!("tmws: {}", esc(&answer.error));
            if let Some(hint) = &answer.hint {
                eprintln!("  hint: {}", esc(hint));
            }
            ExitCode::from(e.category().exit_code())
        }
    }
}

fn dispatch(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    match &cli.command {
        Command::Init { mcp_client } => files::init(cli, mcp_client, out),
        Command::Check { paths, format, strict } => files::check(cli, paths, *format, *strict, out),
        Command::Index { rebuild, include } => files::index(cli, *rebuild, include, out),
        Command::Watch => files::watch(cli, out),
        Command::BuildRules { check, force } => files::build_rules(cli, *check, *force, out),
        Command::Search { params, format } => query::search(cli, params, *format, out),
        Command::Context(tool) => query::tool(cli, "workspace_get_context", tool, out),
        Command::Memory(cmd) => query::memory(cli, cmd, out),
        Command::Session(SessionCommand::Record(tool)) => query::tool(cli, "session_record", tool, out),
        Command::Registry(cmd) => query::registry(cli, cmd, out),
        Command::Trust(cmd) => admin::trust(cli, cmd, out),
        Command::Hook(HookCommand::Install) => admin::hook_install(cli, out),
        Command::Serve { addr } => admin::serve(cli, addr, out),
        Command::Mcp => unreachable!("run() serves mcp before it locks stdout"),
    }
}

/// Why a command did not finish: an error, or a reader that went away.
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
        .with_writer(|| Redacting(io::stderr()))
        .with_ansi(io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
}

/// Log lines as they are written: each event comes in one write, redacted whole.
struct Redacting<W>(W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(crate::redact::redact(&text).text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
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

/// The engine of the root the command runs in.
fn engine(cli: &Cli) -> Result<crate::query::Engine, Error> {
    crate::query::Engine::open(&root(cli)?)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::Redacting;

    #[test]
    fn a_log_line_is_written_redacted() {
        let mut log = Redacting(Vec::new());
        let line = b"WARN registry: gh: failed: bad credentials for ghp_Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4\n";
        assert_eq!(log.write(line).unwrap(), line.len(), "the caller learns its whole line was taken");
        assert_eq!(
            String::from_utf8(log.0).unwrap(),
            "WARN registry: gh: failed: bad credentials for [REDACTED:github-pat]\n"
        );
    }
}

//! The command line: flags in, engine calls, rendered answers out.
//!
//! This layer only translates. The commands that run a tool (`context`, `search`,
//! `memory add`, `registry call`, …) are made from the tool table (`tools`): their names,
//! help and examples from the tool's entry, their flags from its request type (`args`);
//! they run the tool through the engine as MCP and HTTP do. The others (`commands`) map
//! their flags onto engine calls. Exit codes come from the error's category: 0 success, 1
//! problems found, 2 usage or environment error. One file per group of commands: `files`
//! (init, check, index, watch, build-rules), `query` (the tools, memory, registry),
//! `admin` (trust, hooks, git-hook, mcp, serve).

mod admin;
mod args;
mod commands;
mod files;
mod help;
mod query;
mod render;
mod stderr;
mod tools;

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use self::commands::{
    CheckFormat, ClientArg, GitHookCommand, HookClientArg, HooksCommand, IssueCommand, MemoryCommand, OldHookCommand,
    RegistryCommand, ReviewCommand, SessionCommand, TaskCommand, TrustCommand,
};
use self::render::{Paint, print_parse_error, report, usage_answer};
use self::tools::ToolCommand;
use crate::error::{Error, ErrorAnswer};
use crate::query::api::Format;
use crate::query::catalog::{Shape, Table};
use crate::store;

/// The heading of the flags every command takes.
const GLOBAL: &str = "Global options";

/// Where a tool command's own flags (`--format`) go in its help: after the tool's
/// parameters, which are numbered from 0 as they are added.
const AFTER_PARAMS: usize = 1000;

/// tmws: memory and context for AI coding agents, kept as plain files in your repository.
#[derive(Debug, Parser)]
#[command(name = "tmws", version, about, long_about = None, propagate_version = true, after_help = help::TMWS)]
struct Cli {
    /// Project root (default: the nearest folder at or above the current one with .tmws/ or .git).
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    root: Option<PathBuf>,

    /// Print JSON instead of text; errors too, as one JSON object on stderr.
    #[arg(long, global = true, help_heading = GLOBAL)]
    json: bool,

    /// When to colour the output: auto (on a terminal, unless NO_COLOR is set), always or
    /// never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, help_heading = GLOBAL)]
    color: ColorWhen,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make this folder a tmws root: .tmws/config.toml, .gitignore and .gitattributes entries.
    #[command(after_help = help::INIT)]
    Init {
        /// Also register `tmws mcp --agent CLIENT` in this MCP client's project config, and
        /// add its rules file to `rules.targets` (repeatable).
        #[arg(long = "mcp-client", value_enum, value_delimiter = ',', value_name = "CLIENT")]
        mcp_client: Vec<ClientArg>,
        /// Also install the agent hooks of this client, as `tmws hooks install` does (repeatable).
        #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENT")]
        hooks: Vec<HookClientArg>,
    },
    /// Validate front-matter, file names, rule budgets, JSONL logs, registry and config.
    ///
    /// With no PATH, checks what tmws owns: resources/workspaces/, agent/rules/, .tmws/
    /// and the index.include docs; other Markdown of the repository (site templates, a
    /// vendored README) is checked only when named. Markdown outside resources/workspaces/
    /// and agent/rules/ gets the syntax checks only. Files matched by .tmwsignore,
    /// .ignore or .gitignore are skipped. Exits 1 when errors are found (or warnings,
    /// with --strict).
    #[command(after_help = help::CHECK)]
    Check {
        /// Files or folders to check (default: what tmws owns in the root).
        paths: Vec<PathBuf>,
        /// Output format (default: human; json with --json).
        #[arg(long, value_enum)]
        format: Option<CheckFormat>,
        /// Fail on warnings too.
        #[arg(long)]
        strict: bool,
    },
    /// Check the citations of memories against the code: list those whose cited text
    /// moved, changed or is gone (or cannot be told); exit 1 when any changed or is gone.
    #[command(after_help = help::VERIFY)]
    Verify {
        /// Rewrite each memory's moved citations to where their text is now (never a
        /// changed or missing one).
        #[arg(long)]
        fix: bool,
        /// Give each citation written without a commit HEAD's: a memory's by an update op
        /// (with the hash of its text), an entry's by writing `@COMMIT` after it.
        #[arg(long)]
        stamp: bool,
        /// Output format (default: human; json with --json).
        #[arg(long, value_enum)]
        format: Option<CheckFormat>,
    },
    /// Sync the search index with the files now (incremental; --rebuild starts over).
    ///
    /// On a terminal, a progress line on stderr names the phase (scan, parse, write,
    /// commit) with a bar while files are read; it is cleared when the sync ends.
    #[command(after_help = help::INDEX)]
    Index {
        /// Drop the index and build it again from the files.
        #[arg(long)]
        rebuild: bool,
        /// Gone: `index.include` in .tmws/config.toml adds folders for good (what this flag
        /// added, the next sync dropped). Kept to say so.
        #[arg(long, value_name = "DIR", hide = true)]
        include: Vec<String>,
    },
    /// Keep the index in sync with the files until interrupted; one line per change.
    ///
    /// With --json, one JSON object per line: `{"event":"change","change":"new","path":…}`
    /// for each applied change, `{"event":"synced",…}` after a whole sync, and the problems
    /// of changed files as `{"event":"problem",…}`.
    ///
    /// A query from the command line on a root of `[watch] auto_min_files` files or more
    /// (5000) starts `tmws watch --idle-exit` by itself when no tmws process keeps the index,
    /// so that the next queries skip the stat of every file; `[watch] auto = false`: never.
    #[command(after_help = help::WATCH)]
    Watch {
        /// Stop after SECS seconds in which no query from the command line asked this
        /// process, or as soon as another tmws process keeps the index.
        #[arg(long, value_name = "SECS", value_parser = commands::whole_seconds)]
        idle_exit: Option<u64>,
    },
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Top>),
    /// Remember and recall: short- and long-term memories in .tmws/memory/*.jsonl.
    #[command(subcommand, after_help = help::MEMORY)]
    Memory(MemoryCommand),
    /// The sparse registry of other MCP servers (.tmws/registry/index.json).
    #[command(subcommand, after_help = help::REGISTRY)]
    Registry(RegistryCommand),
    /// Trust between agents: verifications in .tmws/trust.jsonl boost memory search.
    #[command(subcommand, after_help = help::TRUST)]
    Trust(TrustCommand),
    /// Proposals agents wrote under `[review] agents = "propose"`: list, approve, reject.
    #[command(after_help = help::REVIEW)]
    Review {
        #[command(subcommand)]
        cmd: Option<ReviewCommand>,
    },
    /// Agent hooks: Claude Code, Codex, Gemini CLI or Copilot CLI run `tmws brief` at their moments.
    #[command(subcommand, after_help = help::HOOKS)]
    Hooks(HooksCommand),
    /// The git post-commit hook (not an agent's: see `tmws hooks`).
    #[command(subcommand, after_help = help::GIT_HOOK)]
    GitHook(GitHookCommand),
    /// The old name of `tmws git-hook`.
    #[command(subcommand, hide = true, after_help = help::OLD_HOOK)]
    Hook(OldHookCommand),
    /// Issues of the configured tracker (GitHub, GitLab, Jira): `[trackers.*]` in .tmws/config.toml.
    #[command(subcommand, after_help = help::ISSUE)]
    Issue(IssueCommand),
    /// Sessions: one memory that sums up a window of work.
    #[command(subcommand, after_help = help::SESSION)]
    Session(SessionCommand),
    /// Tasks: each on its own branch and linked git worktree, started and finished here.
    #[command(subcommand, after_help = help::TASK)]
    Task(TaskCommand),
    /// Serve the MCP tools over stdio (for agents); the index syncs and watches in the background.
    #[command(after_help = help::MCP)]
    Mcp {
        /// The name every client of this server writes memories and verifies as (e.g.
        /// `claude-code`), whatever name the client gives; by default the client's own name
        /// from initialize. Never `human`, the person at the command line.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Serve HTTP: REST routes and the MCP tools (streamable HTTP at /mcp) on one port.
    ///
    /// Every route but /health needs `Authorization: Bearer TOKEN`: TMWS_TOKEN, else the
    /// content of .tmws/cache/token (made on the first start). A non-loopback address is
    /// refused without a token. Stops on Ctrl-C or SIGTERM.
    #[command(after_help = help::SERVE)]
    Serve {
        /// Address and port to listen on (port 0 picks a free one).
        #[arg(long, default_value = crate::surface::http::DEFAULT_ADDR, value_name = "ADDR")]
        addr: String,
        /// The name every request writes memories and verifies as (e.g. `ci-bot`); by
        /// default an MCP client's own name from initialize, and `http` for REST requests.
        /// Never `human`, the person at the command line.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Generate AGENTS.md and .agents/rules/ links from agent/rules/common/*.md.
    #[command(after_help = help::BUILD_RULES)]
    BuildRules {
        /// Change nothing; exit 1 if AGENTS.md or the links are stale.
        #[arg(long)]
        check: bool,
        /// Replace an AGENTS.md that tmws did not generate.
        #[arg(long)]
        force: bool,
    },
    /// Show the embedding model that recall by meaning uses, and the index's vectors.
    ///
    /// `[semantic] model` in .tmws/config.toml chooses it: `builtin` (inside tmws, nothing
    /// to download), `off` (words only), or a folder inside the root holding
    /// model.safetensors of the same format. The index is synced first.
    #[command(after_help = help::MODEL)]
    Model,
    /// Brief an agent from its client's hook: read the hook's JSON payload on stdin and
    /// print, in that client's form, the project memory that matters now (or nothing).
    ///
    /// Agent clients run this from their hooks (`tmws hooks install CLIENT`). The root is
    /// found from the payload's working folder; the index is read as it is, never synced.
    /// It always exits 0: on bad input, a missing root, an error or a timeout it prints
    /// nothing and notes why in .tmws/cache/briefings/log.
    #[command(after_help = help::BRIEF)]
    Brief {
        /// When the hook runs: session-start, post-compact, prompt, pre-tool or session-end.
        #[arg(long, value_name = "EVENT", value_parser = clap::builder::PossibleValuesParser::new(crate::query::brief::Event::ALL.map(crate::query::brief::Event::as_str)))]
        event: String,
        /// The client whose hook runs (its payload's fields and its output form): claude,
        /// codex, gemini or copilot.
        #[arg(long, value_name = "CLIENT", value_parser = clap::builder::PossibleValuesParser::new(crate::query::brief::Client::ALL.map(crate::query::brief::Client::as_str)))]
        client: String,
        /// Give up and print nothing after this many milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 5_000)]
        timeout_ms: u64,
    },
    /// Print a completion script for bash, zsh, fish or PowerShell on stdout.
    #[command(after_help = help::COMPLETIONS)]
    Completions {
        /// The shell to complete tmws in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff, section 1) on stdout: every command, flag and example.
    #[command(after_help = help::MAN)]
    Man,
}

/// When to colour what a person reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set or TERM is dumb.
    Auto,
    /// Always, even when piped (NO_COLOR does not apply).
    Always,
    /// Never.
    Never,
}

impl ColorWhen {
    /// Whether a stream is coloured: `terminal` says whether it is one.
    fn colours(self, terminal: bool) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => terminal && colour_allowed_by_env(),
        }
    }

    fn clap(self) -> clap::ColorChoice {
        match self {
            ColorWhen::Auto => clap::ColorChoice::Auto,
            ColorWhen::Always => clap::ColorChoice::Always,
            ColorWhen::Never => clap::ColorChoice::Never,
        }
    }
}

/// Whether the environment lets a terminal be coloured: no `NO_COLOR` with a value
/// (no-color.org) and a terminal that is not `dumb`.
fn colour_allowed_by_env() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    !no_color && !dumb
}

impl Cli {
    /// How a tool's answer is shown: `--format`, else JSON with `--json`, else as the
    /// command's shape says (a list as a table on a terminal, YAML when piped).
    fn shown_as(&self, shape: Shape, format: Option<&str>) -> Shown {
        let table = match shape {
            Shape::Text => None,
            Shape::Table(t) => io::stdout().is_terminal().then_some(t),
            Shape::Lines(t) => Some(t),
        };
        match (format, table) {
            (Some("json"), _) => Shown::Text(Format::Json),
            (Some("yaml"), _) => Shown::Text(Format::Yaml),
            (Some("table"), Some(t)) => Shown::Table(t),
            (Some("table"), None) => match shape {
                Shape::Table(t) | Shape::Lines(t) => Shown::Table(t),
                Shape::Text => Shown::Text(Format::Yaml),
            },
            _ if self.json => Shown::Text(Format::Json),
            (_, Some(t)) => Shown::Table(t),
            (_, None) => Shown::Text(Format::Yaml),
        }
    }

    /// How what goes to stdout is coloured.
    fn paint(&self) -> Paint {
        Paint::new(self.color.colours(io::stdout().is_terminal()))
    }
}

/// How a tool's answer goes to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Table(Table),
    Text(Format),
}

/// What the command line says before it is parsed, so that a parse error or help honours
/// it too: `--json` and `--color WHEN` (before a `--`).
#[derive(Debug, Clone, Copy)]
struct Early {
    json: bool,
    color: ColorWhen,
}

impl Early {
    fn scan(args: &[OsString]) -> Early {
        let mut early = Early { json: false, color: ColorWhen::Auto };
        let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
        while let Some(word) = words.next() {
            let value = match word.as_ref() {
                "--" => break,
                "--json" => {
                    early.json = true;
                    continue;
                }
                "--color" => words.next().map(|v| v.into_owned()),
                w => w.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(when) = value.and_then(|v| ColorWhen::from_str(&v, false).ok()) {
                early.color = when;
            }
        }
        early
    }
}

/// The command tree, as `--help`, completions and the man page show it.
fn command() -> clap::Command {
    Cli::command()
}

/// Runs the CLI with the process's arguments and returns its exit code.
pub fn run() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let early = Early::scan(&args);
    let parsed =
        command().color(early.color.clap()).try_get_matches_from(&args).and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        // A hook's command line that does not parse must not block the agent either.
        Err(e) if e.use_stderr() && args.get(1).is_some_and(|a| a == "brief") => {
            print_parse_error(&e);
            return ExitCode::SUCCESS;
        }
        Err(e) if e.use_stderr() && early.json => {
            report(&usage_answer(&e), true);
            return ExitCode::from(2);
        }
        Err(e) => {
            print_parse_error(&e);
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let serving = matches!(cli.command, Command::Mcp { .. } | Command::Serve { .. } | Command::Watch { .. });
    stderr::init_logging(cli.color.colours(io::stderr().is_terminal()), serving);
    if serving {
        crate::sys::lean();
    }
    let result = if let Command::Mcp { agent } = &cli.command {
        // The protocol owns stdout: holding its lock here would block every answer.
        root(&cli).and_then(|root| crate::surface::mcp::run_stdio(&root, agent.as_deref())).map_err(Failure::from)
    } else {
        let mut out = io::stdout().lock();
        let result = dispatch(&cli, &mut out);
        let _ = out.flush();
        result
    };
    // A server's last log lines reach stderr before it exits, if anyone reads it.
    stderr::flush(std::time::Duration::from_secs(2));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Error(e)) => {
            report(&ErrorAnswer::new(&e, None), cli.json);
            ExitCode::from(e.category().exit_code())
        }
    }
}

fn dispatch(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    match &cli.command {
        Command::Init { mcp_client, hooks } => files::init(cli, mcp_client, hooks, out),
        Command::Check { paths, format, strict } => files::check(cli, paths, *format, *strict, out),
        Command::Verify { fix, stamp, format } => {
            admin::verify(cli, crate::query::verify::Options { fix: *fix, stamp: *stamp }, *format, out)
        }
        Command::Index { rebuild, include } => files::index(cli, *rebuild, include, out),
        Command::Watch { idle_exit } => files::watch(cli, *idle_exit, out),
        Command::BuildRules { check, force } => files::build_rules(cli, *check, *force, out),
        Command::Tool(t) => query::tool(cli, t, out),
        Command::Memory(cmd) => query::memory(cli, cmd, out),
        Command::Session(SessionCommand::Tool(t)) => query::tool(cli, t, out),
        Command::Task(TaskCommand::Tool(t)) => query::tool(cli, t, out),
        Command::Issue(IssueCommand::Tool(t)) => query::tool(cli, t, out),
        Command::Registry(cmd) => query::registry(cli, cmd, out),
        Command::Trust(cmd) => admin::trust(cli, cmd, out),
        Command::Review { cmd } => admin::review(cli, cmd.as_ref(), out),
        Command::Hooks(cmd) => admin::hooks(cli, cmd, out),
        Command::GitHook(GitHookCommand::Install) => admin::hook_install(cli, out),
        Command::Hook(OldHookCommand::Install) => admin::old_hook_install(cli, out),
        Command::Serve { addr, agent } => admin::serve(cli, addr, agent.as_deref(), out),
        Command::Completions { shell } => admin::completions(*shell, out),
        Command::Man => admin::man(out),
        Command::Model => admin::model(cli, out),
        Command::Brief { event, client, timeout_ms } => admin::brief(cli, event, client, *timeout_ms, out),
        Command::Mcp { .. } => unreachable!("run() serves mcp before it locks stdout"),
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

fn cwd() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))
}

/// The root for commands that need one: --root, else the nearest folder at or above the
/// current one holding `.tmws/`, else the one Claude Code names in `CLAUDE_PROJECT_DIR`
/// (it starts servers from the folder it was started in). A folder without `.tmws/` is
/// not a root: nothing is written there, and the error says to run `tmws init`.
fn root(cli: &Cli) -> Result<PathBuf, Error> {
    let cwd = cwd()?;
    match &cli.root {
        Some(r) => {
            let r = cwd.join(r);
            if !store::is_dir(&r) {
                return Err(Error::NoSuchPath(r));
            }
            let r = store::canonicalize(&r)?;
            if !store::is_dir(&r.join(store::TMWS_DIR)) {
                return Err(Error::NoRoot(r));
            }
            Ok(r)
        }
        None => store::find_root(&cwd)
            .or_else(|| {
                std::env::var_os("CLAUDE_PROJECT_DIR")
                    .filter(|d| !d.is_empty())
                    .and_then(|d| store::find_root(Path::new(&d)))
            })
            .ok_or(Error::NoRoot(cwd)),
    }
}

/// The engine of the root; its queries may start `tmws watch` in the background on a large
/// root (`[watch] auto`).
fn engine(cli: &Cli) -> Result<crate::query::Engine, Error> {
    let engine = crate::query::Engine::open(&root(cli)?)?;
    if let Ok(exe) = std::env::current_exe() {
        let tell: fn(&str) = |note| eprintln!("tmws: {note}");
        engine.launch_watchers_with(exe, (io::stderr().is_terminal() && !cli.json).then_some(tell));
    }
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::stderr::Redacting;
    use super::{ColorWhen, Early, command};

    /// Every command below `cmd`, depth first, with its path (`tmws memory add`); clap's
    /// own `help` commands aside.
    fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_owned(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            commands(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_has_examples_and_every_argument_a_help_line() {
        let mut root = command();
        root.build();
        let mut all = Vec::new();
        commands(&root, "tmws", &mut all);
        assert!(all.len() > 30, "the whole tree is walked: {}", all.len());
        let mut missing = Vec::new();
        for (path, mut cmd) in all {
            let examples = cmd.get_after_help().map(ToString::to_string).unwrap_or_default();
            let lines: Vec<&str> = examples.lines().collect();
            if lines.first() != Some(&"Examples:") || lines.len() < 2 {
                missing.push(format!("{path}: no \"Examples:\" block"));
            } else if !lines[1..].iter().all(|l| l.starts_with("  "))
                || !lines[1..].iter().any(|l| l.contains(&format!("{path} ")) || l.trim_end().ends_with(&path))
            {
                missing.push(format!("{path}: examples that do not run `{path}`"));
            }
            if cmd.get_about().is_none() {
                missing.push(format!("{path}: no about line"));
            }
            for arg in cmd.get_arguments() {
                if arg.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path} {}: no help", arg.get_id()));
                }
            }
            let help = cmd.render_long_help().to_string();
            if help.contains("DESIGN") {
                missing.push(format!("{path}: its help cites DESIGN, which users do not have"));
            }
        }
        assert!(missing.is_empty(), "{missing:#?}");
    }

    #[test]
    fn json_and_color_are_seen_before_the_command_line_is_parsed() {
        let scan = |words: &[&str]| {
            let args: Vec<std::ffi::OsString> = words.iter().map(Into::into).collect();
            let e = Early::scan(&args);
            (e.json, e.color)
        };
        assert_eq!(scan(&["tmws", "search", "x"]), (false, ColorWhen::Auto));
        assert_eq!(scan(&["tmws", "--json", "search", "--bogus"]), (true, ColorWhen::Auto));
        assert_eq!(scan(&["tmws", "check", "--color", "never"]), (false, ColorWhen::Never));
        assert_eq!(scan(&["tmws", "--color=always", "check"]), (false, ColorWhen::Always));
        assert_eq!(scan(&["tmws", "memory", "add", "--", "--json"]), (false, ColorWhen::Auto));
        assert!(ColorWhen::Always.colours(false));
        assert!(!ColorWhen::Never.colours(true));
        assert!(!ColorWhen::Auto.colours(false), "never when piped");
    }

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

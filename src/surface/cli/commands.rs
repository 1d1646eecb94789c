//! The subcommands of `tmws memory`, `registry`, `trust`, `review`, `hooks`, `git-hook` and `session`, and the
//! value lists of flags. The commands of a group that run a tool come from the tool table
//! (`tools`); the others are declared here.

use clap::{Subcommand, ValueEnum};

use super::help;
use super::tools::{self, ToolCommand};

#[derive(Debug, Subcommand)]
pub(super) enum MemoryCommand {
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Memory>),
    /// Forget the memories whose current importance is under F.
    ///
    /// A memory's current importance is the importance it was written with, halved every
    /// `half_life_days` of its namespace (30 by default) and lifted by up to half by reads.
    /// Each forgotten memory gets a delete op in its log.
    #[command(after_help = help::MEMORY_PRUNE)]
    Prune {
        /// Forget memories whose current importance is under this, 0 to 1 (e.g. 0.1).
        #[arg(long, value_name = "F")]
        below: f64,
    },
    /// Link the memories added on this branch since the previous commit to HEAD (the
    /// post-commit hook runs this).
    #[command(after_help = help::MEMORY_LINK_COMMIT)]
    LinkCommit,
    /// Forget the short-term memories of branches that no longer exist.
    #[command(after_help = help::MEMORY_GC_BRANCHES)]
    GcBranches,
}

#[derive(Debug, Subcommand)]
pub(super) enum RegistryCommand {
    /// Introspect the servers of the MCP client configs (registry.sources) once each and
    /// write .tmws/registry/index.json; exit 1 if any server failed or awaits approval.
    /// A server new or changed since approved on this machine is shown first (command,
    /// folder, env names, URL, header names, the files of the root it runs) and started
    /// only once approved: asked on a terminal, or with --yes.
    #[command(after_help = help::REGISTRY_BUILD)]
    Build {
        /// Introspect every server, changed or not.
        #[arg(long)]
        force: bool,
        /// How long one server may take to start and list its tools, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 30_000)]
        timeout_ms: u64,
        /// Approve the new or changed servers as shown, without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// The registered servers: tools, cold start, popularity, last error, and whether each is
    /// approved on this machine.
    #[command(after_help = help::REGISTRY_LIST)]
    List,
    /// Approve servers of the client configs on this machine, exactly as they are now: until
    /// then nothing starts them (a `git pull` that adds or changes one, or a file one runs,
    /// runs nothing). Shows what each runs and asks (on a terminal, or --yes), then
    /// introspects those the registry lacks.
    #[command(after_help = help::REGISTRY_APPROVE)]
    Approve {
        /// The servers to approve, by name.
        servers: Vec<String>,
        /// Every server that awaits approval.
        #[arg(long)]
        all: bool,
        /// Approve them as shown, without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Registry>),
}

#[derive(Debug, Subcommand)]
pub(super) enum TrustCommand {
    /// Record that you, the person at this command line, checked AGENT's work, with the
    /// outcome and the evidence.
    ///
    /// The verifier is `human`: agents verify each other over MCP, each as the name its
    /// client gave (or the server's --agent), never a name of their choosing. A success adds
    /// 0.05 to AGENT's trust, a failure takes 0.10 (from 0.5, within 0 to 1); only the
    /// latest three verifications by one verifier count, so trust above 0.65 takes several
    /// verifiers. Memory search lifts AGENT's memories by 1 + 0.5 × trust, and counts the
    /// importance AGENT gives its memories only up to its trust.
    #[command(after_help = help::TRUST_VERIFY)]
    Verify {
        /// The agent whose work was checked, as its memories name it (e.g. `claude-code`);
        /// names compare case-folded, in Unicode NFKC, without invisible characters.
        #[arg(long, value_name = "AGENT")]
        agent: String,
        /// Who checked it: only `human` (the default), the person at this command line.
        /// Kept so that scripts that name it keep working; any other name is refused.
        #[arg(long, value_name = "VERIFIER", default_value = "human", value_parser = ["human"])]
        verifier: String,
        /// The work held up.
        #[arg(long, conflicts_with = "failure", required_unless_present = "failure")]
        success: bool,
        /// The work did not hold up.
        #[arg(long)]
        failure: bool,
        /// What was checked: a test run, a review, a commit.
        #[arg(long, value_name = "TEXT")]
        evidence: String,
    },
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Trust>),
}

#[derive(Debug, Subcommand)]
pub(super) enum ReviewCommand {
    /// Approve proposals: a memory becomes live (a `review` op in its log, with a `delete`
    /// of each memory it supersedes: the one holding its key, and those named), an entry
    /// loses `review: proposed` from its front-matter.
    #[command(after_help = help::REVIEW_APPROVE)]
    Approve {
        /// The proposals: memory ids (`m_…`) or entries' paths, as `tmws review` lists them.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        /// Also supersede this live memory of the proposal's namespace (repeatable).
        #[arg(long, value_name = "ID")]
        supersede: Vec<String>,
        /// Also supersede every live memory the listing names in `similar_to`.
        #[arg(long)]
        supersede_similar: bool,
    },
    /// Reject proposals: a memory is deleted (a `review` op and a `delete` in its log), an
    /// entry's file is removed (git still has it).
    #[command(after_help = help::REVIEW_REJECT)]
    Reject {
        /// The proposals: memory ids (`m_…`) or entries' paths, as `tmws review` lists them.
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
    },
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Review>),
}

#[derive(Debug, Subcommand)]
pub(super) enum GitHookCommand {
    /// Install the git post-commit hook that runs `tmws memory link-commit` (an existing
    /// hook is kept and run first; installing twice changes nothing).
    #[command(after_help = help::GIT_HOOK_INSTALL)]
    Install,
}

#[derive(Debug, Subcommand)]
pub(super) enum OldHookCommand {
    /// `tmws git-hook install` under its old name, which says so on stderr.
    #[command(after_help = help::OLD_HOOK_INSTALL)]
    Install,
}

#[derive(Debug, Subcommand)]
pub(super) enum HooksCommand {
    /// Put tmws' hooks into each client's project settings, keeping every other hook, key
    /// and comment; installing twice changes nothing. With --check, change nothing: exit 1
    /// when a hook is missing or differs from what install would write.
    #[command(after_help = help::HOOKS_INSTALL)]
    Install {
        /// The clients (repeatable, or a comma list).
        #[arg(value_enum, value_delimiter = ',', required = true, value_name = "CLIENT")]
        clients: Vec<HookClientArg>,
        /// Change nothing; exit 1 when tmws' hooks are missing or differ.
        #[arg(long)]
        check: bool,
    },
    /// The same as `install --check`.
    #[command(after_help = help::HOOKS_CHECK)]
    Check {
        /// The clients (repeatable, or a comma list).
        #[arg(value_enum, value_delimiter = ',', required = true, value_name = "CLIENT")]
        clients: Vec<HookClientArg>,
    },
    /// Take tmws' hooks out of each client's project settings, and nothing else (an event
    /// list or a file left empty by it goes too).
    #[command(after_help = help::HOOKS_UNINSTALL)]
    Uninstall {
        /// The clients (repeatable, or a comma list).
        #[arg(value_enum, value_delimiter = ',', required = true, value_name = "CLIENT")]
        clients: Vec<HookClientArg>,
    },
}

/// A client whose hooks `tmws hooks` installs, with its file and the moments it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum HookClientArg {
    /// Claude Code: .claude/settings.json (every moment)
    Claude,
    /// Codex CLI: .codex/hooks.json (every moment; review the hooks once in Codex's /hooks)
    Codex,
    /// Gemini CLI: .gemini/settings.json (no hook after a compaction; the tool briefing comes after the tool ran)
    Gemini,
    /// Copilot CLI: .github/hooks/tmws.json (no hook after a compaction)
    Copilot,
}

impl HookClientArg {
    pub(super) fn client(self) -> crate::agent_hooks::HookClient {
        use crate::agent_hooks::HookClient;
        match self {
            HookClientArg::Claude => HookClient::Claude,
            HookClientArg::Codex => HookClient::Codex,
            HookClientArg::Gemini => HookClient::Gemini,
            HookClientArg::Copilot => HookClient::Copilot,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(super) enum IssueCommand {
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Issue>),
}

#[derive(Debug, Subcommand)]
pub(super) enum SessionCommand {
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Session>),
}

#[derive(Debug, Subcommand)]
pub(super) enum TaskCommand {
    /// The commands that run a tool, from the tool table.
    #[command(flatten)]
    Tool(ToolCommand<tools::Task>),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum ClientArg {
    /// Claude Code: .mcp.json
    Claude,
    /// Cursor: .cursor/mcp.json
    Cursor,
    /// VS Code: .vscode/mcp.json
    Vscode,
    /// Codex CLI: .codex/config.toml
    Codex,
    /// Gemini CLI: .gemini/settings.json
    Gemini,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum CheckFormat {
    /// Compiler-style: path:line:col, the line, a caret, a hint.
    Human,
    /// One array of {path, line, column, severity, rule, message}.
    Json,
    /// GitHub Actions annotations.
    Github,
}

/// A number of seconds, 1 or more, with an error in words (clap's own range parser says
/// `0 is not in 1..18446744073709551615`).
pub(super) fn whole_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("not a whole number of seconds".into()),
    }
}

//! The examples that end every command's help.
//!
//! Each command's `--help` closes with an "Examples:" block of commands a person can copy,
//! written against the layout a fresh root has (`tmws init`, a workspace `acme`). A test
//! walks the whole command tree and fails when a command has none, so a new command
//! needs its examples: here, or in the tool table for a command that runs a tool.

pub(super) const TMWS: &str = "\
Examples:
  tmws init --mcp-client claude       make this folder a root, register tmws with Claude Code
  tmws check                          validate every file tmws owns
  tmws search connection pool         search overviews, entries, rules, memories, tools
  tmws context -w acme                what an agent reads first about the workspace `acme`
  tmws completions bash > ~/.local/share/bash-completion/completions/tmws";

pub(super) const INIT: &str = "\
Examples:
  tmws init                           .tmws/config.toml, .gitignore and .gitattributes entries
  tmws init --mcp-client claude       also register `tmws mcp` in .mcp.json
  tmws init --mcp-client cursor,vscode
  tmws init --mcp-client claude --hooks claude   and the agent hooks of .claude/settings.json";

pub(super) const CHECK: &str = "\
Examples:
  tmws check                          what tmws owns, and the index.include docs
  tmws check resources/workspaces/acme --strict
  tmws check --format github          annotations for GitHub Actions
  tmws check docs/adr/0007-queues.md  any Markdown file: the syntax checks";

pub(super) const VERIFY: &str = "\
Examples:
  tmws verify                         the memories whose citations no longer hold
  tmws verify --format github         annotations on the memory log's lines
  tmws verify --fix                   rewrite moved citations to where their text is now
  tmws verify --json                  each citation's state, for scripts";

pub(super) const INDEX: &str = "\
Examples:
  tmws index                          read only what changed since the last sync
  tmws index --rebuild                drop the index and build it again from the files
  tmws --json index                   the counts as JSON";

pub(super) const WATCH: &str = "\
Examples:
  tmws watch                          one line per applied change, until Ctrl-C
  tmws watch --json                   one JSON object per change, for scripts
  tmws watch --idle-exit 600          stop after 10 min without a query from the command line";

pub(super) const MEMORY: &str = "\
Examples:
  tmws memory add \"The staging database is reset every Monday\"
  tmws memory search staging database
  tmws memory list --since 7d
  tmws memory stats";

pub(super) const MEMORY_PRUNE: &str = "\
Examples:
  tmws memory prune --below 0.1       forget what has faded under a tenth of its importance";

pub(super) const MEMORY_LINK_COMMIT: &str = "\
Examples:
  tmws memory link-commit             after `git commit` (the post-commit hook runs it)";

pub(super) const MEMORY_GC_BRANCHES: &str = "\
Examples:
  tmws memory gc-branches";

pub(super) const REGISTRY: &str = "\
Examples:
  tmws registry build
  tmws registry search find symbol
  tmws registry describe serena find_symbol";

pub(super) const REGISTRY_BUILD: &str = "\
Examples:
  tmws registry build                 introspect the servers whose config changed
  tmws registry build --yes           approve new or changed servers as shown (scripts, CI)
  tmws registry build --force --timeout-ms 60000";

pub(super) const REGISTRY_LIST: &str = "\
Examples:
  tmws registry list
  tmws registry list --json";

pub(super) const REGISTRY_APPROVE: &str = "\
Examples:
  tmws registry approve serena context7  approve two servers, shown what each runs
  tmws registry approve --all            every server that awaits approval
  tmws registry approve --all --yes      without asking (a script)";

pub(super) const TRUST: &str = "\
Examples:
  tmws trust verify --agent claude-code --success --evidence \"cargo test passed\"
  tmws trust show";

pub(super) const REVIEW: &str = "\
Examples:
  tmws review                                  what waits for review
  tmws review approve m_3fa9c1d2e4b5
  tmws review approve m_3fa9c1d2e4b5 --supersede-similar
  tmws review reject resources/workspaces/acme/_decisions/261128-use-redis.md";

pub(super) const REVIEW_APPROVE: &str = "\
Examples:
  tmws review approve m_3fa9c1d2e4b5 m_0a1b2c3d4e5f
  tmws review approve m_3fa9c1d2e4b5 --supersede m_77aa00bb11cc";

pub(super) const REVIEW_REJECT: &str = "\
Examples:
  tmws review reject m_3fa9c1d2e4b5";

pub(super) const TRUST_VERIFY: &str = "\
Examples:
  tmws trust verify --agent claude-code --success --evidence \"cargo test passed at abc1234\"
  tmws trust verify --agent codex --failure --evidence \"review of #42: wrong lock order\"";

pub(super) const HOOKS: &str = "\
Examples:
  tmws hooks install claude           .claude/settings.json runs `tmws brief` at each moment
  tmws hooks install claude,codex,gemini,copilot
  tmws hooks check claude             exit 1 when a hook is missing or differs
  tmws hooks uninstall gemini         take tmws' hooks out again";

pub(super) const HOOKS_INSTALL: &str = "\
Examples:
  tmws hooks install claude           SessionStart, UserPromptSubmit, PreToolUse, SessionEnd
  tmws hooks install codex gemini     .codex/hooks.json and .gemini/settings.json
  tmws hooks install --check claude   change nothing; exit 1 when missing or different";

pub(super) const HOOKS_CHECK: &str = "\
Examples:
  tmws hooks check claude,copilot     exit 1 when a hook is missing or differs";

pub(super) const HOOKS_UNINSTALL: &str = "\
Examples:
  tmws hooks uninstall claude         every other hook and key of the file is kept";

pub(super) const GIT_HOOK: &str = "\
Examples:
  tmws git-hook install";

pub(super) const GIT_HOOK_INSTALL: &str = "\
Examples:
  tmws git-hook install               .git/hooks/post-commit runs `tmws memory link-commit`";

pub(super) const OLD_HOOK: &str = "\
Examples:
  tmws hook install                   the old name of `tmws git-hook install`";

pub(super) const OLD_HOOK_INSTALL: &str = "\
Examples:
  tmws hook install                   runs `tmws git-hook install` and says so";

pub(super) const ISSUE: &str = "\
Examples:
  tmws issue show 123               #123 of [trackers.github] (or [trackers.gitlab])
  tmws issue show PROJ-7 --json     a Jira issue, as JSON (the token: JIRA_TOKEN)";

pub(super) const SESSION: &str = "\
Examples:
  tmws session record";

pub(super) const TASK: &str = "\
Examples:
  tmws task start login-fix --issue '#123'
  tmws task list
  tmws task done login-fix --merge";

pub(super) const MCP: &str = "\
Examples:
  tmws mcp                            what an MCP client runs (see `tmws init --mcp-client`)
  tmws mcp --agent claude-code        every client writes and verifies as claude-code
  tmws --root /path/to/project mcp";

pub(super) const SERVE: &str = "\
Examples:
  tmws serve                          http://127.0.0.1:3456, token in .tmws/cache/token
  tmws serve --addr 127.0.0.1:0       any free port (printed)
  tmws serve --agent ci-bot           requests write and verify as ci-bot
  curl -H \"Authorization: Bearer $(cat .tmws/cache/token)\" 'http://127.0.0.1:3456/workspace/search?query=pool'";

pub(super) const BUILD_RULES: &str = "\
Examples:
  tmws build-rules                    write AGENTS.md and .agents/rules/
  tmws build-rules --check            in CI: exit 1 when AGENTS.md is stale";

pub(super) const COMPLETIONS: &str = "\
Examples:
  tmws completions bash > ~/.local/share/bash-completion/completions/tmws
  tmws completions zsh > ~/.zfunc/_tmws     (with `fpath+=~/.zfunc` before compinit)
  tmws completions fish > ~/.config/fish/completions/tmws.fish
  tmws completions powershell >> $PROFILE";

pub(super) const BRIEF: &str = "\
Examples:
  tmws brief --event prompt --client claude < payload.json
  tmws brief --event pre-tool --client codex < payload.json
  tmws --json brief --event session-start --client gemini < payload.json
  Events: session-start brings the overviews, decisions and lessons, open problems and
  the last session; post-compact the same and what was briefed before the compaction;
  prompt what the prompt's words or meaning find above [hooks] min_score; pre-tool what
  cites the file about to be edited or what the command's words find; session-end prints
  nothing and records the session (its commits and transcript). An item is briefed once
  per client session, again after a compaction. Budgets and the gate: [hooks].";

pub(super) const MODEL: &str = "\
Examples:
  tmws model                          the model, and how many items have a vector
  tmws model --json                   the same as one JSON object";

pub(super) const MAN: &str = "\
Examples:
  tmws man | man -l -                 read it now
  tmws man > ~/.local/share/man/man1/tmws.1";

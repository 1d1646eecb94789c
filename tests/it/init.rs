//! `tmws init`: creates what is missing, merges into what exists, and is idempotent.

use super::util::TestRoot;

#[test]
fn init_creates_config_ignore_and_attributes() {
    let root = TestRoot::bare().file(".gitignore", "/target");
    let out = root.run(&["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(root.read(".tmws/config.toml"), tmws::init::CONFIG_TEMPLATE);
    assert_eq!(root.read(".gitignore"), "/target\n.tmws/cache/\n");
    assert_eq!(root.read(".gitattributes"), ".tmws/**/*.jsonl merge=union\n");
    let lines: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(
        lines,
        vec![
            "  created    .tmws/config.toml       every key commented, with its default",
            "  updated    .gitignore              added `.tmws/cache/`",
            "  created    .gitattributes          added `.tmws/**/*.jsonl merge=union`",
            "",
            "next steps:",
            "  tmws new overview Acme -w acme --description TEXT  a workspace; then decisions, lessons, plans (tmws new --help)",
            "  tmws check                                         validate what tmws owns (exit 1 on problems)",
            "  tmws context                                       list the workspaces; `tmws context -w NAME` orients in one",
            "  tmws search WORDS                                  search everything, memories and tools included",
            "  tmws init --mcp-client claude                      let an agent use tmws (or cursor, vscode)",
            "  tmws completions bash                              shell completions (zsh, fish, powershell too)",
        ]
    );
    // --json gets the data only.
    let again = root.run(&["--json", "init"]);
    let v: serde_json::Value = serde_json::from_str(&again.stdout).unwrap_or_else(|e| panic!("{e}: {}", again.stdout));
    assert_eq!(v["changes"].as_array().map(Vec::len), Some(3));
    assert!(!again.stdout.contains("next steps"), "{}", again.stdout);
    // The fresh root checks clean.
    let out = root.run(&["check"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
}

#[test]
fn init_twice_changes_nothing_and_keeps_existing_config() {
    let config = "# mine\n[watch]\ndebounce_ms = 20\n";
    let root = TestRoot::bare().file(".tmws/config.toml", config).file(".gitignore", ".tmws/cache\n");
    let first = root.run(&["init", "--mcp-client", "claude,vscode"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    // The clients' hot-rules targets are added; the rest is kept.
    assert_eq!(
        root.read(".tmws/config.toml"),
        format!("{config}\n[rules]\ntargets = [\"agents\", \"claude\", \"copilot\"]\n")
    );
    assert_eq!(root.read(".gitignore"), ".tmws/cache\n");
    let before = root.snapshot();
    let second = root.run(&["init", "--mcp-client", "claude,vscode"]);
    assert_eq!(second.code, 0);
    assert_eq!(root.snapshot(), before);
    assert!(second.stdout.contains("already initialised: nothing changed\n\nnext steps:\n"), "{}", second.stdout);
    // With a client registered and a workspace there, the steps skip what is done.
    root.write("resources/workspaces/w/OVERVIEW.md", "---\nname: W\ndescription: d\n---\n");
    let third = root.run(&["init", "--mcp-client", "claude"]);
    let steps: Vec<&str> = third.stdout.lines().skip_while(|l| *l != "next steps:").skip(1).collect();
    assert_eq!(
        steps,
        vec![
            "  tmws check             validate what tmws owns (exit 1 on problems)",
            "  tmws context           list the workspaces; `tmws context -w NAME` orients in one",
            "  tmws search WORDS      search everything, memories and tools included",
            "  tmws completions bash  shell completions (zsh, fish, powershell too)",
        ]
    );
}

/// Runs `tmws init` with `PATH` set to `path` (where a `tmws` may or may not be).
fn init_with_path(root: &TestRoot, path: &std::path::Path, args: &[&str]) -> super::util::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("PATH", path)
        .env_remove("TMWS_LOG")
        .arg("init")
        .args(args)
        .current_dir(root.path())
        .output()
        .unwrap();
    super::util::Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn mcp_client_configs_keep_every_other_entry() {
    let mcp = r#"{
  "mcpServers": {
    "serena": {"command": "uvx", "args": ["serena-mcp"]},
    "docs": {"command": "npx", "args": ["-y", "docs-mcp"]}
  },
  "other": true
}"#;
    let root = TestRoot::new().file(".mcp.json", mcp);
    // No `tmws` on PATH (cargo built it, nothing installed it): the entries run this binary.
    let empty = tempfile::tempdir().unwrap();
    let out = init_with_path(&root, empty.path(), &["--mcp-client", "claude,cursor,vscode,codex,gemini"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exe = env!("CARGO_BIN_EXE_tmws");
    let claude: serde_json::Value = serde_json::from_str(&root.read(".mcp.json")).unwrap();
    let names: Vec<&String> = claude["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, vec!["serena", "docs", "tmws"]);
    assert_eq!(claude["mcpServers"]["serena"], serde_json::json!({"command": "uvx", "args": ["serena-mcp"]}));
    assert_eq!(claude["mcpServers"]["tmws"], serde_json::json!({"command": exe, "args": ["mcp", "--agent", "claude"]}));
    assert_eq!(claude["other"], serde_json::json!(true));
    // VS Code and Cursor may start a server in another folder: the root is named with their
    // workspace-folder variable.
    let cursor: serde_json::Value = serde_json::from_str(&root.read(".cursor/mcp.json")).unwrap();
    assert_eq!(
        cursor,
        serde_json::json!({"mcpServers": {"tmws": {"command": exe, "args": ["mcp", "--root", "${workspaceFolder}", "--agent", "cursor"]}}})
    );
    let vscode: serde_json::Value = serde_json::from_str(&root.read(".vscode/mcp.json")).unwrap();
    assert_eq!(
        vscode,
        serde_json::json!({"servers": {"tmws": {"type": "stdio", "command": exe, "args": ["mcp", "--root", "${workspaceFolder}", "--agent", "vscode"]}}})
    );
    assert_eq!(
        root.read(".codex/config.toml"),
        format!("[mcp_servers.tmws]\ncommand = \"{exe}\"\nargs = [\"mcp\", \"--agent\", \"codex\"]\n")
    );
    let gemini: serde_json::Value = serde_json::from_str(&root.read(".gemini/settings.json")).unwrap();
    assert_eq!(
        gemini,
        serde_json::json!({"mcpServers": {"tmws": {"command": exe, "args": ["mcp", "--agent", "gemini"]}}})
    );

    // With a `tmws` on PATH, the entries say `tmws`.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(exe, bin.path().join("tmws")).unwrap();
    let other = TestRoot::new();
    assert_eq!(init_with_path(&other, bin.path(), &["--mcp-client", "claude"]).code, 0);
    let claude: serde_json::Value = serde_json::from_str(&other.read(".mcp.json")).unwrap();
    assert_eq!(
        claude["mcpServers"]["tmws"],
        serde_json::json!({"command": "tmws", "args": ["mcp", "--agent", "claude"]})
    );
}

/// Regression: a `.vscode/mcp.json` with comments was refused; a Codex config lost its
/// comments. Their entries are now added where they go, and the rest of the text stays.
#[test]
fn comments_and_other_entries_of_client_configs_are_kept() {
    let vscode = "{\n  // my servers\n  \"servers\": {\n    \"docs\": {\"command\": \"npx\", \"args\": [\"docs\"]}, // trailing comma next\n  },\n}\n";
    let codex = "# Codex, by hand\nmodel = \"o4\"\n\n[mcp_servers.docs] # the docs server\ncommand = \"npx\"\n";
    let root = TestRoot::new().file(".vscode/mcp.json", vscode).file(".codex/config.toml", codex);
    let out = root.run(&["init", "--mcp-client", "vscode,codex"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = root.read(".vscode/mcp.json");
    assert!(text.starts_with("{\n  // my servers\n  \"servers\": {\n    \"docs\": {\"command\": \"npx\", \"args\": [\"docs\"]}, // trailing comma next\n"), "{text}");
    assert!(text.contains("\"tmws\": {"), "{text}");
    // tmws reads the file back: its one other server, never tmws itself.
    let list = root.run(&["--json", "registry", "list"]);
    let rows: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["server"].as_str().unwrap()).collect();
    assert_eq!(names, ["docs"], "{}", list.stdout);
    let text = root.read(".codex/config.toml");
    assert!(text.starts_with(codex), "{text}");
    assert!(text.contains("\n[mcp_servers.tmws]\ncommand = "), "{text}");
    // Again: nothing changes.
    let again = root.run(&["init", "--mcp-client", "vscode,codex"]);
    assert_eq!(again.code, 0);
    assert_eq!(root.read(".codex/config.toml"), text);
}

/// An entry of tmws's own under another server name is recognised, and only brought up to
/// date: it gets `--agent`, and keeps its command (`/opt/bin/tmws-dev` is not this
/// binary, and no `tmws` is on PATH).
#[test]
fn an_existing_tmws_entry_is_recognised_under_any_name() {
    let mcp = "{\"mcpServers\": {\"memory\": {\"command\": \"/opt/bin/tmws-dev\", \"args\": [\"mcp\"]}}}";
    let root = TestRoot::new().file(".mcp.json", mcp);
    let empty = tempfile::tempdir().unwrap();
    let out = init_with_path(&root, empty.path(), &["--mcp-client", "claude"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        root.read(".mcp.json"),
        "{\"mcpServers\": {\"memory\": {\"command\": \"/opt/bin/tmws-dev\", \"args\": [\"mcp\", \"--agent\", \"claude\"]}}}"
    );
    assert!(out.stdout.contains("server `memory`: added `--agent claude`"), "{}", out.stdout);
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tmws"), bin.path().join("tmws")).unwrap();
    let again = init_with_path(&root, bin.path(), &["--mcp-client", "claude"]);
    assert!(again.stdout.contains("server `memory` already runs `tmws mcp`"), "{}", again.stdout);
    assert!(root.read(".mcp.json").contains("/opt/bin/tmws-dev"), "another tmws's path is the user's choice");
}

/// Regression: `tmws init` before tmws was installed wrote this machine's path into the
/// committed `.mcp.json` and kept it for good ("already runs `tmws mcp`"). It now says the
/// path is this machine's, and a later `init` with `tmws` on PATH rewrites tmws's own
/// entries to `tmws`, keeping comments and every other server.
#[test]
fn an_entry_written_before_tmws_was_on_path_becomes_tmws_once_it_is() {
    let exe = env!("CARGO_BIN_EXE_tmws");
    let codex = "# by hand\n[mcp_servers.docs]\ncommand = \"/usr/local/bin/docs\"\n";
    let root = TestRoot::new().file(".codex/config.toml", codex).file(
        ".vscode/mcp.json",
        "{\n  // mine\n  \"servers\": {\"docs\": {\"command\": \"/usr/local/bin/docs\"}},\n}\n",
    );
    let empty = tempfile::tempdir().unwrap();
    let first = init_with_path(&root, empty.path(), &["--mcp-client", "claude,codex,vscode"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stdout.contains(&format!(
            "added server `tmws` (runs `{exe} mcp --agent claude`); `{exe}` is this machine's path (tmws is not on \
PATH): run `tmws init --mcp-client claude` again once it is"
        )),
        "{}",
        first.stdout
    );
    // Still not on PATH: nothing changes, and it says so again.
    let before = root.snapshot();
    let second = init_with_path(&root, empty.path(), &["--mcp-client", "claude,codex,vscode"]);
    assert_eq!(root.snapshot(), before);
    assert!(second.stdout.contains("is this machine's path"), "{}", second.stdout);

    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(exe, bin.path().join("tmws")).unwrap();
    let third = init_with_path(&root, bin.path(), &["--mcp-client", "claude,codex,vscode"]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(
        third.stdout.contains("updated    .mcp.json               server `tmws`: now runs `tmws` (on PATH) instead of this machine's path\n"),
        "{}",
        third.stdout
    );
    let claude: serde_json::Value = serde_json::from_str(&root.read(".mcp.json")).unwrap();
    assert_eq!(
        claude["mcpServers"]["tmws"],
        serde_json::json!({"command": "tmws", "args": ["mcp", "--agent", "claude"]})
    );
    assert_eq!(
        root.read(".codex/config.toml"),
        format!("{codex}\n[mcp_servers.tmws]\ncommand = \"tmws\"\nargs = [\"mcp\", \"--agent\", \"codex\"]\n")
    );
    let vscode = root.read(".vscode/mcp.json");
    assert!(vscode.starts_with("{\n  // mine\n  \"servers\": {"), "{vscode}");
    assert!(vscode.contains("\"docs\": {\"command\": \"/usr/local/bin/docs\"}"), "{vscode}");
    assert!(vscode.contains("\"command\": \"tmws\""), "{vscode}");
    assert!(!vscode.contains(exe) && !root.read(".mcp.json").contains(exe));
    // Done: the next run changes nothing.
    let before = root.snapshot();
    init_with_path(&root, bin.path(), &["--mcp-client", "claude,codex,vscode"]);
    assert_eq!(root.snapshot(), before);
}

/// Regression: an entry `init` wrote started a server that wrote as whatever name the
/// client gave in initialize. It now carries `--agent CLIENT`; an older entry gets it on
/// the next run, and an `--agent` the user chose is kept.
#[test]
fn each_client_entry_names_its_agent_and_a_chosen_agent_is_kept() {
    let root = TestRoot::new()
        .file(".mcp.json", "{\"mcpServers\": {\"tmws\": {\"command\": \"tmws\", \"args\": [\"mcp\"]}}}\n")
        .file(
            ".gemini/settings.json",
            "{\"mcpServers\": {\"tmws\": {\"command\": \"tmws\", \"args\": [\"mcp\", \"--agent\", \"gemini-ann\"]}}}\n",
        )
        .file(".codex/config.toml", "[mcp_servers.tmws] # ours\ncommand = \"tmws\"\nargs = [\"mcp\"]\n");
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tmws"), bin.path().join("tmws")).unwrap();
    let out = init_with_path(&root, bin.path(), &["--mcp-client", "claude,gemini,codex,cursor"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json = |rel: &str| serde_json::from_str::<serde_json::Value>(&root.read(rel)).unwrap();
    assert_eq!(json(".mcp.json")["mcpServers"]["tmws"]["args"], serde_json::json!(["mcp", "--agent", "claude"]));
    assert_eq!(
        json(".gemini/settings.json")["mcpServers"]["tmws"]["args"],
        serde_json::json!(["mcp", "--agent", "gemini-ann"])
    );
    assert_eq!(
        json(".cursor/mcp.json")["mcpServers"]["tmws"]["args"],
        serde_json::json!(["mcp", "--root", "${workspaceFolder}", "--agent", "cursor"])
    );
    assert_eq!(
        root.read(".codex/config.toml"),
        "[mcp_servers.tmws] # ours\ncommand = \"tmws\"\nargs = [\"mcp\", \"--agent\", \"codex\"]\n"
    );
    assert!(out.stdout.contains("server `tmws`: added `--agent claude`"), "{}", out.stdout);
    assert!(out.stdout.contains(".gemini/settings.json   server `tmws` already runs `tmws mcp`"), "{}", out.stdout);
}

#[test]
fn invalid_client_config_is_an_error_and_left_untouched() {
    let broken = "{\n  \"servers\": {\n    \"a\": {,}\n  }\n}\n";
    let root = TestRoot::new().file(".vscode/mcp.json", broken).file(".mcp.json", "[1]");
    let out = root.run(&["init", "--mcp-client", "vscode"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("tmws: .vscode/mcp.json:3:11: invalid JSON: "), "{}", out.stderr);
    assert!(
        out.stderr.contains("the file was left as it is\n  hint: fix the file, then run `tmws init` again"),
        "{}",
        out.stderr
    );
    assert_eq!(root.read(".vscode/mcp.json"), broken);
    let out = root.run(&["init", "--mcp-client", "claude"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        "tmws: .mcp.json:1:1: the document is not an object; the file was left as it is"
    );
    assert_eq!(root.read(".mcp.json"), "[1]");
}

#[test]
fn init_json_output_lists_changes() {
    let root = TestRoot::bare();
    let out = root.run(&["--json", "init"]);
    assert_eq!(out.code, 0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let actions: Vec<(&str, &str)> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        vec![(".tmws/config.toml", "created"), (".gitignore", "created"), (".gitattributes", "created")]
    );
}

/// Regression: in a git repository where `tmws init` never ran, `tmws search` made
/// `.tmws/cache/` (untracked, not ignored) and answered empty. A root is a folder holding
/// `.tmws/`: elsewhere commands write nothing and say to run `tmws init`.
#[test]
fn a_folder_without_tmws_is_not_a_root_and_nothing_is_written_there() {
    let repo = TestRoot::bare();
    super::memory_git::git(repo.path(), &["init", "-q"]);
    for args in [&["search", "x"][..], &["memory", "add", "a note"], &["context", "-w", "w"], &["--root", ".", "mcp"]] {
        let out = repo.run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stdout);
        assert!(out.stderr.contains("no tmws root at or above"), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("run `tmws init`"), "{args:?}: {}", out.stderr);
        assert!(!repo.path().join(".tmws").exists(), "{args:?} wrote .tmws/");
    }
    // `init` in a subfolder makes the root at the top of the work tree.
    std::fs::create_dir_all(repo.path().join("src/deep")).unwrap();
    assert_eq!(super::util::tmws(&repo.path().join("src/deep"), &["init"]).code, 0);
    assert!(repo.path().join(".tmws/config.toml").exists());
    assert!(!repo.path().join("src/deep/.tmws").exists());
}

/// A client that starts the server from another folder: `--root` names the root (as the
/// VS Code and Cursor entries do), or Claude Code's `CLAUDE_PROJECT_DIR` does.
#[test]
fn a_server_started_elsewhere_finds_its_root() {
    let root = TestRoot::sample();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = super::util::tmws(
        elsewhere.path(),
        &["search", "connection pool", "--root", root.path().to_str().unwrap(), "--json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let claude = std::process::Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("CLAUDE_PROJECT_DIR", root.path())
        .args(["--json", "search", "connection pool"])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert!(claude.status.success(), "{}", String::from_utf8_lossy(&claude.stderr));
    assert_eq!(String::from_utf8_lossy(&claude.stdout), out.stdout);
}

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
            "  mkdir -p resources/workspaces/acme  a workspace; give it an OVERVIEW.md with `name` and `description`",
            "  tmws check                          validate what tmws owns (exit 1 on problems)",
            "  tmws context                        list the workspaces; `tmws context -w NAME` orients in one",
            "  tmws search WORDS                   search everything, memories and tools included",
            "  tmws init --mcp-client claude       let an agent use tmws (or cursor, vscode)",
            "  tmws completions bash               shell completions (zsh, fish, powershell too)",
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
    assert_eq!(root.read(".tmws/config.toml"), config);
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
    let out = root.run(&["init", "--mcp-client", "claude", "--mcp-client", "cursor", "--mcp-client", "vscode"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let claude: serde_json::Value = serde_json::from_str(&root.read(".mcp.json")).unwrap();
    let names: Vec<&String> = claude["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, vec!["serena", "docs", "tmws"]);
    assert_eq!(claude["mcpServers"]["serena"], serde_json::json!({"command": "uvx", "args": ["serena-mcp"]}));
    assert_eq!(claude["mcpServers"]["tmws"], serde_json::json!({"command": "tmws", "args": ["mcp"]}));
    assert_eq!(claude["other"], serde_json::json!(true));
    assert_eq!(
        root.read(".cursor/mcp.json"),
        "{\n  \"mcpServers\": {\n    \"tmws\": {\n      \"command\": \"tmws\",\n      \"args\": [\n        \"mcp\"\n      ]\n    }\n  }\n}\n"
    );
    let vscode: serde_json::Value = serde_json::from_str(&root.read(".vscode/mcp.json")).unwrap();
    assert_eq!(vscode, serde_json::json!({"servers": {"tmws": {"type": "stdio", "command": "tmws", "args": ["mcp"]}}}));
}

#[test]
fn an_existing_tmws_entry_is_recognised_under_any_name() {
    let mcp = "{\"mcpServers\": {\"memory\": {\"command\": \"/opt/bin/tmws\", \"args\": [\"mcp\"]}}}";
    let root = TestRoot::new().file(".mcp.json", mcp);
    let out = root.run(&["init", "--mcp-client", "claude"]);
    assert_eq!(out.code, 0);
    assert_eq!(root.read(".mcp.json"), mcp);
    assert!(out.stdout.contains("server `memory` already runs `tmws mcp`"), "{}", out.stdout);
}

#[test]
fn invalid_client_config_is_an_error_and_left_untouched() {
    let broken = "{\n  \"mcpServers\": {\n    // a comment\n  }\n}\n";
    let root = TestRoot::new().file(".vscode/mcp.json", broken).file(".mcp.json", "[1]");
    let out = root.run(&["init", "--mcp-client", "vscode"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "tmws: .vscode/mcp.json:3:5: invalid JSON (key must be a string); the file was left as it is\n  \
         hint: fix the file (comments are not JSON), then run `tmws init` again\n"
    );
    assert_eq!(root.read(".vscode/mcp.json"), broken);
    let out = root.run(&["init", "--mcp-client", "claude"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        "tmws: .mcp.json:1:1: the document is not a JSON object; the file was left as it is"
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

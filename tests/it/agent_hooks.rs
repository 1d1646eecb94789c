//! `tmws hooks install|check|uninstall CLIENT…` (docs/hooks.md): the agent hooks that run
//! `tmws brief`, written into each client's project settings as the client reads them,
//! beside everything else the file holds; `tmws init --hooks`; and `tmws hook install`, the
//! git hook's old name. Claude Code itself reads the written settings and runs the hooks.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::util::{TestRoot, missing, repo};

/// The clients, their settings files, and the value `--client` takes.
const CLIENTS: [(&str, &str); 4] = [
    ("claude", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
    ("gemini", ".gemini/settings.json"),
    ("copilot", ".github/hooks/tmws.json"),
];

/// The program the hooks run: `tmws` when one is on PATH, else the binary under test, as
/// `tmws init` names it in MCP client entries.
fn program() -> String {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.is_absolute() && d.join("tmws").is_file()));
    if on_path { "tmws".into() } else { env!("CARGO_BIN_EXE_tmws").into() }
}

fn brief(moment: &str, client: &str) -> String {
    format!("{} brief --event {moment} --client {client} || true", program())
}

/// A group of one command hook, as Claude Code and Codex read it.
fn group(matcher: Option<&str>, moment: &str, client: &str) -> Value {
    let hook = json!({"type": "command", "command": brief(moment, client), "timeout": 10});
    match matcher {
        Some(m) => json!({"matcher": m, "hooks": [hook]}),
        None => json!({"hooks": [hook]}),
    }
}

/// Gemini CLI's: a name, and the timeout in milliseconds.
fn gemini(matcher: Option<&str>, moment: &str) -> Value {
    let hook = json!({"name": format!("tmws-{moment}"), "type": "command", "command": brief(moment, "gemini"), "timeout": 10000});
    match matcher {
        Some(m) => json!({"matcher": m, "hooks": [hook]}),
        None => json!({"hooks": [hook]}),
    }
}

/// Copilot CLI's flat entry: a command per shell, seconds in `timeoutSec`.
fn copilot(matcher: Option<&str>, moment: &str) -> Value {
    let mut e = json!({
        "type": "command",
        "bash": brief(moment, "copilot"),
        "powershell": format!("{} brief --event {moment} --client copilot; exit 0", powershell_program()),
        "timeoutSec": 10,
    });
    if let Some(m) = matcher {
        e["matcher"] = json!(m);
    }
    e
}

fn powershell_program() -> String {
    let p = program();
    if p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c)) { p } else { format!("& '{p}'") }
}

/// What `tmws hooks install CLIENT` writes into an empty project, as the client's docs
/// and its own release describe the format.
fn expected(client: &str) -> Value {
    match client {
        "claude" => json!({"hooks": {
            "SessionStart": [group(Some("startup|resume"), "session-start", "claude"), group(Some("compact"), "post-compact", "claude")],
            "UserPromptSubmit": [group(None, "prompt", "claude")],
            "PreToolUse": [group(Some("Bash|Edit|Write|MultiEdit|NotebookEdit"), "pre-tool", "claude")],
            "SessionEnd": [group(None, "session-end", "claude")],
        }}),
        "codex" => json!({"hooks": {
            "SessionStart": [group(Some("startup|resume"), "session-start", "codex"), group(Some("compact"), "post-compact", "codex")],
            "UserPromptSubmit": [group(None, "prompt", "codex")],
            "PreToolUse": [group(Some("^(Bash|apply_patch)$"), "pre-tool", "codex")],
            "SessionEnd": [group(None, "session-end", "codex")],
        }}),
        "gemini" => json!({"hooks": {
            "SessionStart": [gemini(Some("startup"), "session-start"), gemini(Some("resume"), "session-start")],
            "BeforeAgent": [gemini(None, "prompt")],
            "AfterTool": [gemini(Some("^(run_shell_command|replace|write_file)$"), "pre-tool")],
            "SessionEnd": [gemini(None, "session-end")],
        }}),
        _ => json!({"version": 1, "hooks": {
            "sessionStart": [copilot(None, "session-start")],
            "userPromptSubmitted": [copilot(None, "prompt")],
            "preToolUse": [copilot(Some("bash|powershell|create|edit|str_replace_editor|apply_patch"), "pre-tool")],
            "sessionEnd": [copilot(None, "session-end")],
        }}),
    }
}

/// A settings file someone already keeps: comments where the client allows them (Gemini
/// CLI; Claude Code refuses a settings file with a comment as malformed), other keys, and a
/// hook of their own on an event tmws uses too.
fn theirs(client: &str) -> &'static str {
    match client {
        "claude" => concat!(
            "{\n",
            "  \"model\": \"opus\",\n",
            "  \"permissions\": { \"allow\": [\"Bash(cargo test:*)\"] },\n",
            "  \"hooks\": {\n",
            "    \"PreToolUse\": [\n",
            "      {\n",
            "        \"matcher\": \"Bash\",\n",
            "        \"hooks\": [{ \"type\": \"command\", \"command\": \"./scripts/guard.sh\" }]\n",
            "      }\n",
            "    ]\n",
            "  },\n",
            "  \"env\": { \"RUST_LOG\": \"info\" }\n",
            "}\n"
        ),
        "codex" => concat!(
            "{\n",
            "  \"description\": \"Hooks of this workspace.\",\n",
            "  \"hooks\": {\n",
            "    \"Stop\": [\n",
            "      { \"hooks\": [{ \"type\": \"command\", \"command\": \"python3 .codex/stop.py\", \"timeout\": 30 }] }\n",
            "    ]\n",
            "  }\n",
            "}\n"
        ),
        "gemini" => concat!(
            "{\n",
            "  // Project settings.\n",
            "  \"mcpServers\": { \"other\": { \"command\": \"uvx\", \"args\": [\"other-mcp\"] } },\n",
            "  \"hooks\": {\n",
            "    /* theirs */\n",
            "    \"BeforeTool\": [\n",
            "      { \"matcher\": \"write_file\", \"hooks\": [{ \"type\": \"command\", \"command\": \"./lint.sh\" }] }\n",
            "    ]\n",
            "  },\n",
            "  \"ui\": { \"theme\": \"GitHub\" }\n",
            "}\n"
        ),
        _ => concat!(
            "{\n",
            "  \"version\": 1,\n",
            "  \"hooks\": {\n",
            "    \"sessionStart\": [\n",
            "      { \"type\": \"command\", \"bash\": \"echo started >> logs/session.log\", \"timeoutSec\": 5 }\n",
            "    ]\n",
            "  }\n",
            "}\n"
        ),
    }
}

fn parse(text: &str) -> Value {
    let options = jsonc_parser::ParseOptions::default();
    jsonc_parser::parse_to_serde_value::<Value>(text, &options).unwrap()
}

#[test]
fn each_client_gets_exactly_its_hooks_in_an_empty_project() {
    for (client, file) in CLIENTS {
        let root = TestRoot::new();
        let out = root.run(&["hooks", "install", client]);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        assert!(out.stdout.starts_with(&format!("created    {file}")), "{client}: {}", out.stdout);
        let written = root.read(file);
        assert!(written.ends_with("}\n"), "{client}: {written}");
        assert_eq!(parse(&written), expected(client), "{client}:\n{written}");
    }
}

#[test]
fn install_keeps_every_other_hook_key_and_comment_and_uninstall_gives_the_bytes_back() {
    for (client, file) in CLIENTS {
        let root = TestRoot::new().file(file, theirs(client));
        let out = root.run(&["hooks", "install", client]);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        assert!(out.stdout.starts_with(&format!("updated    {file}")), "{client}: {}", out.stdout);
        let installed = root.read(file);
        // Theirs is all there, in its place: the file starts as it did, up to where tmws'
        // first hook went.
        let doc = parse(&installed);
        let mine = expected(client);
        let theirs_doc = parse(theirs(client));
        for (key, value) in theirs_doc.as_object().unwrap() {
            if key != "hooks" {
                assert_eq!(doc[key], *value, "{client}: {key}");
            }
        }
        for (event, list) in theirs_doc["hooks"].as_object().unwrap() {
            let now = doc["hooks"][event].as_array().unwrap();
            assert_eq!(now[..list.as_array().unwrap().len()], list.as_array().unwrap()[..], "{client}: {event}");
        }
        for comment in ["// Project settings.", "/* theirs */"] {
            assert_eq!(installed.contains(comment), theirs(client).contains(comment), "{client}: {comment}");
        }
        // And tmws' hooks are appended to each event's list.
        for (event, list) in mine["hooks"].as_object().unwrap() {
            let now = doc["hooks"][event].as_array().unwrap().clone();
            assert_eq!(
                now[now.len() - list.as_array().unwrap().len()..],
                list.as_array().unwrap()[..],
                "{client}: {event}"
            );
        }

        let again = root.run(&["hooks", "install", client]);
        assert_eq!(again.code, 0, "{client}: {}", again.stderr);
        assert!(again.stdout.starts_with(&format!("unchanged  {file}")), "{client}: {}", again.stdout);
        assert_eq!(root.read(file), installed, "{client}: installing twice changes no byte");

        let out = root.run(&["hooks", "uninstall", client]);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        assert_eq!(root.read(file), theirs(client), "{client}: uninstall gives the file back byte for byte");
        let out = root.run(&["hooks", "uninstall", client]);
        assert!(out.stdout.starts_with(&format!("unchanged  {file}")), "{client}: {}", out.stdout);
    }
}

#[test]
fn uninstalling_from_a_file_tmws_made_removes_the_file() {
    for (client, file) in CLIENTS {
        let root = TestRoot::new();
        assert_eq!(root.run(&["hooks", "install", client]).code, 0);
        let out = root.run(&["--json", "hooks", "uninstall", client]);
        assert_eq!(out.code, 0, "{client}: {}", out.stderr);
        let answer: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(answer["files"][0]["state"], "removed", "{client}: {answer}");
        assert!(!root.path().join(file).exists(), "{client}");
    }
}

#[test]
fn check_exits_1_while_hooks_are_missing_or_edited_and_0_when_current() {
    for (client, file) in CLIENTS {
        let root = TestRoot::new().file(file, theirs(client));
        let before = theirs(client);
        for args in [&["hooks", "install", "--check", client][..], &["hooks", "check", client][..]] {
            let out = root.run(args);
            assert_eq!(out.code, 1, "{client} {args:?}: {}", out.stdout);
            assert!(out.stdout.starts_with(&format!("missing    {file}")), "{client}: {}", out.stdout);
        }
        assert_eq!(root.read(file), before, "{client}: a check writes nothing");
        assert_eq!(root.run(&["hooks", "install", client]).code, 0);
        let out = root.run(&["--json", "hooks", "check", client]);
        assert_eq!(out.code, 0, "{client}: {}", out.stdout);
        let answer: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(answer["files"][0]["state"], "current", "{client}: {answer}");
        assert_eq!(answer["files"][0]["path"], file);

        // A hand edit of tmws' own hook: its timeout.
        let installed = root.read(file);
        let (from, to) = match client {
            "gemini" => ("\"timeout\": 10000", "\"timeout\": 30000"),
            "copilot" => ("\"timeoutSec\": 10", "\"timeoutSec\": 30"),
            _ => ("\"timeout\": 10\n", "\"timeout\": 30\n"),
        };
        assert!(installed.contains(from), "{client}: {installed}");
        root.write(file, installed.replacen(from, to, 1));
        let out = root.run(&["hooks", "install", "--check", client]);
        assert_eq!(out.code, 1, "{client}: {}", out.stdout);
        assert!(out.stdout.starts_with(&format!("differs    {file}")), "{client}: {}", out.stdout);
        // Install puts it back as it was.
        assert_eq!(root.run(&["hooks", "install", client]).code, 0);
        assert_eq!(root.run(&["hooks", "check", client]).code, 0, "{client}: {}", root.read(file));
        assert_eq!(parse(&root.read(file)), parse(&installed), "{client}");
    }
}

#[test]
fn a_settings_file_that_does_not_parse_is_named_with_its_line_and_left_as_it_is() {
    for (client, file) in CLIENTS {
        let broken = "{\n  \"hooks\": {\n    \"SessionStart\": [,]\n  }\n}\n";
        let root = TestRoot::new().file(file, broken);
        for args in [&["hooks", "install", client][..], &["hooks", "check", client], &["hooks", "uninstall", client]] {
            let out = root.run(args);
            assert_eq!(out.code, 2, "{client} {args:?}: {}", out.stderr);
            let first = out.stderr.lines().next().unwrap_or("");
            assert!(first.starts_with(&format!("tmws: {file}:3:")), "{client}: {}", out.stderr);
            assert!(first.contains("the file was left as it is"), "{client}: {first}");
            assert_eq!(root.read(file), broken, "{client}: nothing written");
        }
        // A `hooks` that is not an object is refused the same way, at its line.
        let wrong = "{\n  \"model\": \"x\",\n  \"hooks\": []\n}\n";
        root.write(file, wrong);
        let out = root.run(&["hooks", "install", client]);
        assert_eq!(out.code, 2, "{client}: {}", out.stderr);
        assert!(out.stderr.starts_with(&format!("tmws: {file}:3:")), "{client}: {}", out.stderr);
        assert_eq!(root.read(file), wrong);
    }
}

#[test]
fn init_with_hooks_writes_what_hooks_install_writes() {
    let by_init = TestRoot::bare();
    let out = by_init.run(&["init", "--hooks", "claude,gemini", "--mcp-client", "gemini"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let by_hooks = TestRoot::new();
    // The MCP entry init writes is in the same file as Gemini CLI's hooks.
    assert_eq!(by_hooks.run(&["init", "--mcp-client", "gemini"]).code, 0);
    assert_eq!(by_hooks.run(&["hooks", "install", "claude", "gemini"]).code, 0);
    for file in [".claude/settings.json", ".gemini/settings.json"] {
        assert_eq!(by_init.read(file), by_hooks.read(file), "{file}");
    }
    assert_eq!(parse(&by_init.read(".claude/settings.json")), expected("claude"));
    let again = by_init.run(&["init", "--hooks", "claude"]);
    assert!(again.stdout.contains("claude hooks already run `tmws brief`"), "{}", again.stdout);
}

#[test]
fn the_old_hook_install_still_works_and_says_it_is_git_hook_install_now() {
    let root = TestRoot::new();
    let git = Command::new("git").arg("init").arg("-q").current_dir(root.path()).status().unwrap();
    assert!(git.success());
    let out = root.run(&["hook", "install"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "tmws: `tmws hook install` is now `tmws git-hook install`\n");
    assert!(out.stdout.starts_with("installed "), "{}", out.stdout);
    let hook = root.read(".git/hooks/post-commit");
    assert!(hook.contains("Installed by `tmws git-hook install`"), "{hook}");
    let out = root.run(&["git-hook", "install"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(out.stdout.starts_with("already installed: "), "{}", out.stdout);
    let help = root.run(&["--help"]).stdout;
    assert!(help.contains("git-hook") && help.contains("hooks"), "{help}");
    assert!(!help.lines().any(|l| l.trim_start().starts_with("hook ")), "the old name is hidden: {help}");
}

/// Claude Code's program: `TMWS_CLAUDE`, else where `.ci/run` installs it.
fn claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TMWS_CLAUDE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let p = target.join("claude/node_modules/.bin/claude");
    if p.exists() {
        return Some(p);
    }
    missing("no Claude Code (set TMWS_CLAUDE, or run .ci/run, which installs it in target/claude)");
    None
}

/// A model API that refuses every request at once (HTTP 400, which Claude Code does not
/// retry), so that a run ends as soon as the prompt has gone through the hooks.
fn refusing_api() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"no model here"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn claude_code_reads_the_installed_settings_without_a_complaint_and_runs_the_hooks() {
    let Some(claude) = claude() else { return };
    let root = TestRoot::new().file(".claude/settings.json", theirs("claude"));
    let out = root.run(&["hooks", "install", "claude"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let home = tempfile::tempdir().unwrap();
    let debug = home.path().join("debug.log");
    let run = Command::new(&claude)
        .args(["-p", "hello"])
        .arg("--debug-file")
        .arg(&debug)
        .current_dir(root.path())
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .env("ANTHROPIC_BASE_URL", refusing_api())
        .env("ANTHROPIC_API_KEY", "no-model-takes-any-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let log = std::fs::read_to_string(&debug).unwrap_or_default();
    // Claude Code checks every settings entry and says which it skipped.
    assert!(!said.contains("were skipped") && !log.contains("Invalid setting"), "{said}\n{log}");
    // It ran tmws' hooks at session start, on the prompt and at the end, with their
    // commands as written.
    for (event, moment) in
        [("SessionStart:startup", "session-start"), ("UserPromptSubmit", "prompt"), ("SessionEnd:other", "session-end")]
    {
        let ran = format!("{event} [{}]", brief(moment, "claude"));
        assert!(log.contains(&ran), "{ran} not in the debug log:\n{log}");
    }
}

/// Gemini CLI's program: `TMWS_GEMINI`, else where `.ci/run` installs it.
fn gemini_cli() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TMWS_GEMINI").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let p = target.join("gemini/node_modules/.bin/gemini");
    if p.exists() {
        return Some(p);
    }
    missing("no Gemini CLI (set TMWS_GEMINI, or run .ci/run, which installs it in target/gemini)");
    None
}

#[test]
fn gemini_cli_registers_the_installed_hooks_and_runs_them() {
    let Some(gemini_cli) = gemini_cli() else { return };
    let root = TestRoot::new().file(".gemini/settings.json", theirs("gemini"));
    assert_eq!(root.run(&["hooks", "install", "gemini"]).code, 0);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    let user = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
    });
    std::fs::write(home.path().join(".gemini/settings.json"), user.to_string()).unwrap();
    let project = root.path().canonicalize().unwrap().display().to_string();
    std::fs::write(home.path().join(".gemini/trustedFolders.json"), json!({project: "TRUST_FOLDER"}).to_string())
        .unwrap();
    let run = Command::new(&gemini_cli)
        .args(["-m", "no-model", "-p", "hello", "--skip-trust", "--debug"])
        .current_dir(root.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .env("GOOGLE_GEMINI_BASE_URL", refusing_api())
        .env("GEMINI_API_KEY", "no-model-takes-any-key")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    // Its own hook (BeforeTool) and tmws' five.
    assert!(said.contains("Hook registry initialized with 6 hook entries"), "{said}");
    for moment in ["session-start", "prompt", "session-end"] {
        let ran = format!("Expanding hook command: {} (cwd:", brief(moment, "gemini"));
        assert!(said.contains(&ran), "{ran} not in:\n{said}");
    }
}

//! What an approval of a downstream server covers, against real files and the real binary:
//! a server is approved as the user is shown it (command, folder, env names, URL, header
//! names, the files of the root it runs), and a change to any file of the root that it runs
//! — a script, a Python script, a module the root shadows, a `node_modules/.bin` shim, a
//! command on a PATH folder inside the root — or to its live connection makes it await
//! approval again; it always runs in the root, whatever folder tmws runs in. Also the
//! bounds around servers: nothing started without a yes, no variable of the user's
//! environment sent before it, no tmws serving `tool_call` under another tmws, a registry
//! never written larger than tmws reads, errors without a URL's secrets, and an approvals
//! file that cannot be read left alone.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::util::{Output, TestRoot, mcp_tools, mock};

/// A tmws run with its own approvals folder, extra environment and working folder.
struct Run<'a> {
    home: &'a Path,
    cwd: &'a Path,
    env: Vec<(String, String)>,
}

impl Run<'_> {
    fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_owned(), v.to_owned()));
        self
    }

    fn tmws(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
        cmd.env("TMWS_CONFIG_HOME", self.home)
            .args(args)
            .current_dir(self.cwd)
            .env_remove("TMWS_LOG")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

fn run<'a>(home: &'a Path, cwd: &'a Path) -> Run<'a> {
    Run { home, cwd, env: Vec::new() }
}

/// Writes an executable file (and its folders).
fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A shell script that runs the mock server as `name`.
fn mock_script(name: &str) -> String {
    format!("#!/bin/sh\nexec '{}' --name {name} \"$@\"\n", mock())
}

/// A Python script that runs the mock server as `name`.
fn mock_python(name: &str) -> String {
    format!("import os\nos.execv({0:?}, [{0:?}, '--name', {name:?}])\n", mock())
}

fn mcp_json(server: Value) -> String {
    json!({"mcpServers": {"srv": server}}).to_string()
}

fn echo(r: &Run, text: &str) -> Output {
    r.tmws(&["registry", "call", "srv", "echo", &json!({"text": text}).to_string()])
}

/// The approval of `srv` in `r`'s root, a call that works, the change, and then: the call
/// refused with the reason, `registry list` saying so, and approving refused without a
/// terminal or `--yes`.
fn approved_then_changed(r: &Run, change: impl FnOnce(), why: &str) {
    let built = r.tmws(&["registry", "build", "--yes"]);
    assert_eq!(built.code, 0, "{built:?}");
    assert_eq!(echo(r, "before").stdout, "before\n");
    change();
    let refused = echo(r, "after");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.starts_with(&format!("tmws: `srv` is awaiting approval: since it was approved, {why}; ")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.ends_with("; run `tmws registry approve srv` to see what it runs and allow it\n"));
    let list = r.tmws(&["--json", "registry", "list"]);
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(rows[0]["approval"], "awaiting approval", "{rows}");
    let asked = r.tmws(&["registry", "approve", "srv"]);
    assert_eq!(asked.code, 1, "{asked:?}");
    assert!(asked.stderr.contains(&format!("  srv (changed: {why})\n")), "{}", asked.stderr);
    assert!(asked.stderr.contains("not approved (no terminal to ask on), so not started: srv"), "{}", asked.stderr);
    assert_eq!(echo(r, "still").code, 1);
}

/// Approved again as it is now, it is called again.
fn approved_again(r: &Run) {
    let approved = r.tmws(&["registry", "approve", "srv", "--yes"]);
    assert_eq!(approved.code, 0, "{approved:?}");
    assert_eq!(echo(r, "again").stdout, "again\n");
}

#[test]
fn a_changed_script_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new().file(".mcp.json", mcp_json(json!({"command": "./scripts/srv.sh"})));
    executable(&root.path().join("scripts/srv.sh"), &mock_script("srv"));
    let r = run(home.path(), root.path());
    approved_then_changed(
        &r,
        || executable(&root.path().join("scripts/srv.sh"), &format!("{}# pulled\n", mock_script("srv"))),
        "`scripts/srv.sh` changed",
    );
    approved_again(&r);
}

#[test]
fn a_changed_python_script_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": "python3", "args": ["srv.py"]})))
        .file("srv.py", mock_python("srv"));
    let r = run(home.path(), root.path());
    approved_then_changed(&r, || root.write("srv.py", format!("{}# pulled\n", mock_python("srv"))), "`srv.py` changed");
    approved_again(&r);
}

#[test]
fn a_module_the_root_shadows_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    let site = tempfile::tempdir().unwrap();
    std::fs::write(site.path().join("mcpsrv.py"), mock_python("srv")).unwrap();
    let root = TestRoot::new().file(
        ".mcp.json",
        mcp_json(json!({"command": "python3", "args": ["-m", "mcpsrv"], "env": {"PYTHONPATH": site.path()}})),
    );
    let r = run(home.path(), root.path());
    // Python looks in the root first: a pulled `mcpsrv.py` there would run instead.
    approved_then_changed(&r, || root.write("mcpsrv.py", mock_python("srv")), "`mcpsrv.py` is new");
    approved_again(&r);
}

#[test]
fn a_changed_node_modules_shim_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    // An `npx` that runs the local bin, as npx does when the package is installed.
    let bin = tempfile::tempdir().unwrap();
    executable(
        &bin.path().join("npx"),
        "#!/bin/sh\nwhile [ \"$1\" = -y ]; do shift; done\nexec \"./node_modules/.bin/${1%@*}\"\n",
    );
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": "npx", "args": ["-y", "mcp-pkg@1.0.0"]})))
        .file("node_modules/mcp-pkg/package.json", r#"{"name": "mcp-pkg", "bin": {"mcp-pkg": "cli.sh"}}"#);
    executable(&root.path().join("node_modules/mcp-pkg/cli.sh"), &mock_script("srv"));
    executable(&root.path().join("node_modules/mcp-pkg/other.sh"), &mock_script("srv"));
    std::fs::create_dir_all(root.path().join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink("../mcp-pkg/cli.sh", root.path().join("node_modules/.bin/mcp-pkg")).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap());
    let r = run(home.path(), root.path()).env("PATH", &path);
    // The shim now leads to another script.
    approved_then_changed(
        &r,
        || {
            std::fs::remove_file(root.path().join("node_modules/.bin/mcp-pkg")).unwrap();
            std::os::unix::fs::symlink("../mcp-pkg/other.sh", root.path().join("node_modules/.bin/mcp-pkg")).unwrap();
        },
        "`node_modules/.bin/mcp-pkg` changed",
    );
    approved_again(&r);
    // And what it points to changes.
    executable(&root.path().join("node_modules/mcp-pkg/other.sh"), &format!("{}# pulled\n", mock_script("srv")));
    let refused = echo(&r, "x");
    assert!(refused.stderr.contains("`node_modules/.bin/mcp-pkg` changed"), "{}", refused.stderr);
}

#[test]
fn a_command_pulled_into_a_path_folder_inside_the_root_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    executable(&elsewhere.path().join("mcpsrv"), &mock_script("srv"));
    let root = TestRoot::new().file(".mcp.json", mcp_json(json!({"command": "mcpsrv"})));
    let path =
        format!("{}/bin:{}:{}", root.path().display(), elsewhere.path().display(), std::env::var("PATH").unwrap());
    let r = run(home.path(), root.path()).env("PATH", &path);
    // `bin/` comes first on PATH: a pulled `bin/mcpsrv` would be what runs.
    let pulled =
        format!("#!/bin/sh\ntouch ran-from-the-root\n{}", mock_script("srv").trim_start_matches("#!/bin/sh\n"));
    approved_then_changed(
        &r,
        || executable(&root.path().join("bin/mcpsrv"), &pulled),
        "`bin/mcpsrv` is new, the commands in `bin/` (on PATH) changed",
    );
    assert!(!root.path().join("ran-from-the-root").exists(), "nothing of the pull ran");
    approved_again(&r);
    assert!(root.path().join("ran-from-the-root").exists(), "what was approved runs");
}

#[test]
fn a_changed_live_connection_still_awaits_approval_again() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": mock(), "args": ["--name", "srv"], "env": {"MODE": "${MODE}"}})));
    let before = run(home.path(), root.path()).env("MODE", "a");
    let built = before.tmws(&["registry", "build", "--yes"]);
    assert_eq!(built.code, 0, "{built:?}");
    assert_eq!(echo(&before, "x").stdout, "x\n");
    let after = run(home.path(), root.path()).env("MODE", "b");
    let refused = echo(&after, "x");
    assert!(
        refused.stderr.starts_with(
            "tmws: `srv` is awaiting approval: since it was approved, its connection (command, args, env, URL or \
headers, with your environment's values) changed;"
        ),
        "{}",
        refused.stderr
    );
}

/// Regression: servers ran in the folder tmws was started in, so a relative command ran
/// whatever that folder held. They run in the root, from any folder, approved from any.
#[test]
fn a_relative_command_runs_from_the_root_whatever_folder_tmws_runs_in() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": "./scripts/srv.sh", "args": ["--pid-log", "pids.log"]})));
    executable(&root.path().join("scripts/srv.sh"), &mock_script("good"));
    std::fs::create_dir_all(root.path().join("sub")).unwrap();
    let other = tempfile::tempdir().unwrap();
    executable(&other.path().join("scripts/srv.sh"), "#!/bin/sh\ntouch pwned\nexit 1\n");
    let from_sub = run(home.path(), &root.path().join("sub")).tmws(&["registry", "build", "--yes"]);
    assert_eq!(from_sub.code, 0, "{from_sub:?}");
    let root_arg = root.path().display().to_string();
    let r = run(home.path(), other.path());
    let called = r.tmws(&["--root", &root_arg, "registry", "call", "srv", "echo", r#"{"text": "here"}"#]);
    assert_eq!((called.code, called.stdout.as_str()), (0, "here\n"), "{called:?}");
    assert!(!other.path().join("pwned").exists(), "the other folder's script never ran");
    let pids = root.read("pids.log");
    assert!(pids.lines().all(|l| l.starts_with("good ")) && pids.lines().count() == 2, "{pids}");
}

/// Regression: `registry build` approved and started every server of the repository's
/// configs without showing them, and sent the user's `${GITHUB_TOKEN}` and
/// `${AWS_SECRET_ACCESS_KEY}` to a server the repository named.
#[test]
fn a_build_without_a_yes_shows_what_would_run_and_starts_nothing() {
    let home = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = TestRoot::new().file(
        ".mcp.json",
        json!({"mcpServers": {
            "collector": {"url": format!("http://127.0.0.1:{port}/mcp?token=${{GITHUB_TOKEN}}&region=eu"),
                "headers": {"Authorization": "Bearer ${AWS_SECRET_ACCESS_KEY}"}},
            "local": {"command": mock(), "args": ["--name", "local", "--pid-log", "pids.log"], "env": {"LOG": "info"}}
        }})
        .to_string(),
    );
    let gh = "ghp_Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4";
    let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq3Xv9Lm2N";
    let r = run(home.path(), root.path()).env("GITHUB_TOKEN", gh).env("AWS_SECRET_ACCESS_KEY", aws);
    let out = r.tmws(&["registry", "build"]);
    assert_eq!(out.code, 1, "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(!said.contains(gh) && !said.contains(aws), "{said}");
    let cwd = std::fs::canonicalize(root.path()).unwrap();
    let expected = format!(
        "tmws: 2 servers of the client configs are new or changed since approved on this machine; nothing starts them \
before you approve:
  collector (new)
    url: http://127.0.0.1:{port}/mcp?token=${{GITHUB_TOKEN}}&region=[REDACTED:url-query]
    headers: Authorization
    takes from your environment: AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN
  local (new)
    runs: {} --name local --pid-log pids.log
    in: {}
    env: LOG
tmws: not approved (no terminal to ask on), so not started: collector, local; run `tmws registry approve collector \
local` on a terminal to review them, or `tmws registry build --yes` to approve them as shown
",
        mock(),
        cwd.display()
    );
    assert_eq!(out.stderr, expected);
    assert_eq!(out.stdout, "collector: awaiting approval (not started)\nlocal: awaiting approval (not started)\n");
    assert!(listener.accept().is_err(), "nothing connected to the repository's server");
    assert!(!root.path().join("pids.log").exists(), "nothing was started");
    assert_eq!(r.tmws(&["registry", "call", "local", "echo", "{}"]).code, 1);

    // Approved as shown, the local server starts.
    let yes = r.tmws(&["registry", "approve", "local", "--yes"]);
    assert_eq!(yes.code, 0, "{yes:?}");
    assert_eq!(yes.stdout, format!("local: approved: runs {} --name local --pid-log pids.log\n", mock()));
    assert!(root.path().join("pids.log").exists());
    assert!(listener.accept().is_err(), "the other one is still not contacted");
}

/// A terminal asks, and a yes approves: driven through `script`, which gives tmws a
/// pseudo-terminal and passes it what the test types.
#[test]
fn on_a_terminal_the_build_asks_and_a_yes_approves() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new().file(".mcp.json", mcp_json(json!({"command": mock(), "args": ["--name", "srv"]})));
    let ask = |answer: &str| {
        let line = format!(
            "TMWS_CONFIG_HOME='{}' NO_COLOR=1 '{}' registry build",
            home.path().display(),
            env!("CARGO_BIN_EXE_tmws")
        );
        let mut child = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(root.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("`script` (util-linux) runs");
        child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).replace('\r', "")
    };
    let screen = ask("n\n");
    assert!(screen.contains("  srv (new)\n    runs: "), "{screen}");
    assert!(screen.contains("Approve it and let tmws start it? [y/N] "), "{screen}");
    assert!(screen.contains("tmws: not approved, so not started: srv;"), "{screen}");
    assert!(screen.contains("srv: awaiting approval (not started)"), "{screen}");
    let screen = ask("y\n");
    assert!(screen.contains("srv: 4 tools, cold start "), "{screen}");
    let list = run(home.path(), root.path()).tmws(&["--json", "registry", "list"]);
    assert_eq!(serde_json::from_str::<Value>(&list.stdout).unwrap()[0]["approval"], "approved");
}

/// Regression: an entry that ran tmws through a wrapper and a `tool_call` nested 120 deep
/// started 121 `tmws mcp` processes. A tmws started as a downstream server serves no
/// `tool_call`, so the chain stops at the first.
#[test]
fn tmws_started_as_a_downstream_server_serves_no_tool_call() {
    let home = tempfile::tempdir().unwrap();
    let tmws = env!("CARGO_BIN_EXE_tmws");
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": "sh", "args": ["-c", format!("exec '{tmws}' mcp")]})));
    let r = run(home.path(), root.path());
    let built = r.tmws(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(built.code, 0, "{built:?}");
    assert!(built.stdout.starts_with(&format!("srv: {} tools, cold start ", mcp_tools().len())), "{}", built.stdout);
    let mut nested = json!({"server": "srv", "tool": "tool_search", "arguments": {"query": "x"}});
    for _ in 0..5 {
        nested = json!({"server": "srv", "tool": "tool_call", "arguments": nested});
    }
    let out = r.tmws(&["registry", "call", "srv", "tool_call", &nested["arguments"].to_string()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.contains(
            "tool_call is not served here: this tmws runs as a downstream server of another tmws (TMWS_DOWNSTREAM is \
set)"
        ),
        "{}",
        out.stdout
    );
    // The marker reaches the server however it is started, and only it.
    let direct = r.env("TMWS_DOWNSTREAM", "1").tmws(&["registry", "call", "srv", "tool_search", r#"{"query": "x"}"#]);
    assert_eq!(direct.code, 1, "{direct:?}");
    assert!(direct.stderr.starts_with("tmws: tool_call is not served here"), "{}", direct.stderr);
}

/// Regression: the error of an HTTP server whose URL held a key without a provider's prefix
/// was stored in the tracked registry and printed with the key.
#[test]
fn a_registry_error_shows_a_url_without_its_query_values() {
    let home = tempfile::tempdir().unwrap();
    let key = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"url": format!("http://user:pw1234567@127.0.0.1:1/mcp?key={key}")})));
    let out = run(home.path(), root.path()).tmws(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(out.code, 1, "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(!said.contains(key) && !said.contains("pw1234567"), "{said}");
    assert!(
        out.stdout.starts_with(
            "srv: failed: http://[REDACTED:url-credentials]@127.0.0.1:1/mcp?key=[REDACTED:url-query]: initialize \
failed: error sending request for url (http://127.0.0.1:1/mcp?key=[REDACTED:url-query])"
        ),
        "{}",
        out.stdout
    );
    let index = root.read(".tmws/registry/index.json");
    assert!(!index.contains(key) && !index.contains("pw1234567"), "{index}");
}

/// Regression: a build wrote a 32.7 MB registry that every later command refused to read
/// (16 MiB cap). Too many tools fail their server; a registry over the cap is not written.
#[test]
fn a_registry_larger_than_tmws_reads_is_never_written() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new().file(
        ".mcp.json",
        json!({"mcpServers": {
            "many": {"command": mock(), "args": ["--name", "many", "--tools", "10001"]},
            "small": {"command": mock(), "args": ["--name", "small"]}
        }})
        .to_string(),
    );
    let r = run(home.path(), root.path());
    let out = r.tmws(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout.lines().next().unwrap(),
        "many: failed: it lists 10005 tools, more than the 10000 a server may have in the registry; its previous entry \
is kept"
    );
    assert_eq!(r.tmws(&["registry", "list"]).code, 0);

    // Large tools, each server within the count: the whole would pass the cap.
    let servers: serde_json::Map<String, Value> = (0..3)
        .map(|i| {
            let name = format!("big{i}");
            (
                name.clone(),
                json!({"command": mock(), "args": ["--name", name, "--tools", "700", "--tool-bytes", "10000"]}),
            )
        })
        .collect();
    root.write(".mcp.json", json!({"mcpServers": servers}).to_string());
    let before = root.read(".tmws/registry/index.json");
    let out = r.tmws(&["registry", "build", "--yes", "--timeout-ms", "60000"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("\ntmws: .tmws/registry/index.json: the registry would be "), "{}", out.stderr);
    assert!(out.stderr.contains(" MiB, more than the 16 MiB tmws reads; the largest server is `big"), "{}", out.stderr);
    assert_eq!(root.read(".tmws/registry/index.json"), before, "the old registry is kept");
    assert_eq!(r.tmws(&["registry", "list"]).code, 0, "and every command still reads it");

    // One that an older build wrote over the cap is built again, not left to block.
    root.write(".mcp.json", mcp_json(json!({"command": mock(), "args": ["--name", "srv"]})));
    root.write(
        ".tmws/registry/index.json",
        format!("{{\"version\": \"1\", \"servers\": {{}}, \"pad\": \"{}\"}}", "x".repeat(17 << 20)),
    );
    assert_eq!(r.tmws(&["registry", "list"]).code, 2);
    let out = r.tmws(&["registry", "build", "--yes"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("tmws: .tmws/registry/index.json: larger than the 16 MiB limit (not read): built again from the client configs\n"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.starts_with("srv: 4 tools, cold start "), "{}", out.stdout);
    assert_eq!(r.tmws(&["registry", "list"]).code, 0);
}

/// Regression: a server whose input schema was nested 100,000 deep was reported as "no
/// answer within 30000 ms".
#[test]
fn a_schema_nested_too_deep_is_an_error_that_says_so() {
    let home = tempfile::tempdir().unwrap();
    let root = TestRoot::new()
        .file(".mcp.json", mcp_json(json!({"command": mock(), "args": ["--name", "srv", "--schema-depth", "1000"]})));
    let out = run(home.path(), root.path()).tmws(&["registry", "build", "--yes", "--timeout-ms", "30000"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stdout,
        "srv: failed: tools/list failed: the server sent a message nested more than 127 levels deep (an input schema \
that deep?), which no JSON reader here takes\n"
    );
}

/// Regression: an approvals file that could not be read, or was over the cap, was replaced
/// by one holding this project's approval only: every other project's was lost.
#[test]
fn an_approvals_file_that_cannot_be_read_is_left_alone_and_named() {
    let root = TestRoot::new().file(".mcp.json", mcp_json(json!({"command": mock(), "args": ["--name", "srv"]})));
    for bytes in [b"{\"roots\": {\"/elsewhere\": ".to_vec(), vec![b' '; (16 << 20) + 1]] {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("approvals.json");
        std::fs::write(&file, &bytes).unwrap();
        let r = run(home.path(), root.path());
        let out = r.tmws(&["registry", "approve", "srv", "--yes"]);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.starts_with(&format!("tmws: {}: ", file.display())), "{}", out.stderr);
        assert!(
            out.stderr
                .trim_end()
                .ends_with("it is left as it is: fix it or move it away (its approvals are then asked for again)"),
            "{}",
            out.stderr
        );
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "the file is as it was");
        let call = r.tmws(&["registry", "call", "srv", "echo", "{}"]);
        assert_ne!(call.code, 0);
    }
}

/// Regression: `queue_timeout_secs = u64::MAX` was taken, a worker panicked and the calls
/// hung; other values were taken and then failed every tool.
#[test]
fn config_values_out_of_range_are_errors_naming_key_and_line() {
    for (config, error) in [
        (
            "[pool]\nqueue_timeout_secs = 18446744073709551615\n",
            "tmws: .tmws/config.toml:2:1: `pool.queue_timeout_secs` must be at most 86400",
        ),
        ("[retrieval]\ntop_k = 0\n", "tmws: .tmws/config.toml:2:1: `retrieval.top_k` must be between 1 and 100"),
        (
            "[registry]\nsources = [\"/etc/passwd\"]\n",
            "tmws: .tmws/config.toml:2:1: `registry.sources` entry `/etc/passwd` must be a path inside the root",
        ),
    ] {
        let root = TestRoot::new().file(".tmws/config.toml", config);
        let out = root.run(&["registry", "list"]);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.starts_with(error), "{}", out.stderr);
    }
}

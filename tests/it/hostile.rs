//! A hostile repository (docs/trust-boundary.md): symlinks out of the root, FIFOs and
//! devices, endless files, bad config values, unreadable folders, names that are not UTF-8,
//! terminal escapes; and read-only or full disks. Every test drives the real binary on real
//! files.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::util::{Output, TestRoot, eventually, tmws};

/// A folder outside every root, holding a file a hostile link points at.
fn outside(name: &str, contents: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("tmws-outside-").tempdir().unwrap();
    std::fs::write(dir.path().join(name), contents).unwrap();
    dir
}

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Runs `tmws` in `cwd`, killing it (and failing) when it does not end within the tests'
/// patience: what a FIFO or an endless device would make it do.
fn bounded(cwd: &Path, args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .args(args)
        .current_dir(cwd)
        .env_remove("TMWS_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let (mut stdout, mut stderr) = (child.0.stdout.take().unwrap(), child.0.stderr.take().unwrap());
    // Read both pipes while it runs, so that a long answer never blocks it.
    let stderr = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut text).unwrap();
        text
    });
    let mut out = Vec::new();
    let stdout = std::thread::spawn(move || {
        std::io::Read::read_to_end(&mut stdout, &mut out).unwrap();
        out
    });
    let status = eventually(&format!("the end of tmws {args:?}"), || child.0.try_wait().unwrap());
    Output {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    }
}

/// A child process killed (and reaped) when the test is done with it, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// The findings of `check --json` as (path, message) pairs.
fn findings(out: &Output) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| (d["path"].as_str().unwrap().to_owned(), d["message"].as_str().unwrap().to_owned()))
        .collect()
}

const OUT_OF_ROOT: &str = "a symlink to a place outside the root (not followed)";
const NO_WRITE_THROUGH: &str = "a symlink; tmws never writes through one";

#[test]
fn no_command_appends_through_a_symlinked_log() {
    let rc = outside("bashrc", "# the user's shell rc\n");
    let target = rc.path().join("bashrc");
    let root = TestRoot::new();
    std::fs::create_dir_all(root.path().join(".tmws/memory")).unwrap();
    symlink(&target, root.path().join(".tmws/memory/long-term.jsonl")).unwrap();
    symlink(&target, root.path().join(".tmws/trust.jsonl")).unwrap();

    let add = root.run(&["memory", "add", "-n", "long-term", "$(touch /tmp/x) the deploy day is friday"]);
    assert_eq!(add.code, 2, "{add:?}");
    assert!(add.stderr.contains(NO_WRITE_THROUGH), "{}", add.stderr);
    let record = root.run(&["session", "record"]);
    assert_ne!(record.code, 0, "{record:?}");
    let verify = root.run(&["trust", "verify", "--agent", "a", "--success", "--evidence", "$(touch /tmp/x)"]);
    assert_eq!(verify.code, 2, "{verify:?}");
    assert!(verify.stderr.contains(NO_WRITE_THROUGH), "{}", verify.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "# the user's shell rc\n", "nothing was appended");

    // A link inside the root is not written through either: tmws writes real files only.
    let inner = TestRoot::new().file("notes/log.jsonl", "");
    std::fs::create_dir_all(inner.path().join(".tmws/memory")).unwrap();
    symlink(inner.path().join("notes/log.jsonl"), inner.path().join(".tmws/memory/short-term.jsonl")).unwrap();
    let add = inner.run(&["memory", "add", "a note"]);
    assert_eq!(add.code, 2, "{add:?}");
    assert!(add.stderr.contains(NO_WRITE_THROUGH), "{}", add.stderr);
    assert_eq!(inner.read("notes/log.jsonl"), "");
}

#[test]
fn a_rule_linked_out_of_the_root_is_never_copied_and_is_a_finding() {
    let secret = outside("passwd", "root:x:0:0:SECRET-OUTSIDE\n");
    let root = TestRoot::new().file("agent/rules/common/10-ok.md", "---\nbudget_lines: 10\n---\n# Be kind\n");
    symlink(secret.path().join("passwd"), root.path().join("agent/rules/common/20-x.md")).unwrap();

    let build = root.run(&["build-rules"]);
    assert_eq!(build.code, 2, "{build:?}");
    assert!(build.stderr.contains("20-x.md") && build.stderr.contains(OUT_OF_ROOT), "{}", build.stderr);
    assert!(!root.path().join("AGENTS.md").exists());
    let check = root.run(&["build-rules", "--check"]);
    assert_ne!(check.code, 0, "{check:?}");
    assert!(!check.stdout.contains("SECRET-OUTSIDE") && !check.stderr.contains("SECRET-OUTSIDE"));

    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let found = findings(&out);
    assert!(found.contains(&("agent/rules/common/20-x.md".into(), OUT_OF_ROOT.into())), "{found:?}");
}

#[test]
fn context_never_lists_a_domain_folder_linked_out_of_the_root() {
    let elsewhere = outside("x", "");
    std::fs::create_dir_all(elsewhere.path().join("secret-folder-name/deeper")).unwrap();
    let root = TestRoot::new().file("resources/workspaces/w/OVERVIEW.md", "---\nname: w\ndescription: d\n---\n");
    symlink(elsewhere.path(), root.path().join("resources/workspaces/w/d")).unwrap();

    let out = root.run(&["--json", "context", "-w", "w", "-d", "d"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("unknown domain `d`"), "{}", out.stderr);
    let whole = root.run(&["--json", "context", "-w", "w"]);
    assert!(!whole.stdout.contains("secret-folder-name"), "{}", whole.stdout);
    let found = findings(&root.run(&["check", "--json"]));
    assert!(found.contains(&("resources/workspaces/w/d".into(), OUT_OF_ROOT.into())), "{found:?}");
}

#[test]
fn links_to_endless_devices_are_refused_at_once_by_every_reader() {
    // Each of these grew the process to several GB in seconds.
    for (rel, args) in [
        (".tmws/config.toml", vec!["--json", "search", "x"]),
        (".tmws/registry/index.json", vec!["--json", "registry", "list"]),
        (".mcp.json", vec!["--json", "registry", "build"]),
        ("agent/rules/common/00-zero.md", vec!["build-rules"]),
        (".tmws/memory/short-term.jsonl", vec!["--json", "memory", "search", "x"]),
    ] {
        let root = TestRoot::new();
        std::fs::create_dir_all(root.path().join(rel).parent().unwrap()).unwrap();
        symlink("/dev/zero", root.path().join(rel)).unwrap();
        let out = bounded(root.path(), &args);
        let said = format!("{}{}", out.stdout, out.stderr);
        if rel.ends_with(".jsonl") {
            // A log is read by the index: skipped, reported by check, nothing else fails.
            assert_eq!(out.code, 0, "{rel}: {out:?}");
            let found = findings(&bounded(root.path(), &["check", "--json"]));
            assert!(found.contains(&(rel.to_owned(), OUT_OF_ROOT.into())), "{found:?}");
        } else {
            assert_ne!(out.code, 0, "{rel}: {out:?}");
            assert!(said.contains(OUT_OF_ROOT), "{rel}: {said}");
        }
    }
}

#[test]
fn fifos_are_reported_and_never_waited_on() {
    let root = TestRoot::sample();
    mkfifo(&root.path().join(".tmws/config.toml.fifo"));
    mkfifo(&root.path().join("resources/workspaces/devtools/_plans/260301-fifo.md"));
    let out = bounded(root.path(), &["check", "--json"]);
    let found = findings(&out);
    let fifo = "a FIFO, not a regular file (not read)".to_owned();
    assert!(found.contains(&("resources/workspaces/devtools/_plans/260301-fifo.md".into(), fifo.clone())), "{found:?}");
    assert!(found.contains(&(".tmws/config.toml.fifo".into(), fifo.clone())), "{found:?}");
    // Named on the command line, it is a finding too, at once.
    let one = bounded(root.path(), &["check", "--json", "resources/workspaces/devtools/_plans/260301-fifo.md"]);
    assert_eq!(findings(&one), [("resources/workspaces/devtools/_plans/260301-fifo.md".to_owned(), fifo)]);
    // The index skips it, and a FIFO where the config should be is an error, not a hang.
    assert_eq!(bounded(root.path(), &["--json", "index"]).code, 0);
    std::fs::rename(root.path().join(".tmws/config.toml.fifo"), root.path().join(".tmws/config.toml")).unwrap();
    let out = bounded(root.path(), &["--json", "search", "plan"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("a FIFO, not a regular file"), "{}", out.stderr);
}

#[test]
fn names_that_are_not_utf8_and_symlink_loops_are_findings() {
    use std::os::unix::ffi::OsStrExt;
    let root = TestRoot::new().file("resources/workspaces/w/OVERVIEW.md", "---\nname: w\ndescription: d\n---\n");
    let plans = root.path().join("resources/workspaces/w/_plans");
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::write(plans.join(std::ffi::OsStr::from_bytes(b"caf\xe9.md")), "x").unwrap();
    symlink("b.md", plans.join("a.md")).unwrap();
    symlink("a.md", plans.join("b.md")).unwrap();
    let found = findings(&root.run(&["check", "--json"]));
    let at = |name: &str, why: &str| (format!("resources/workspaces/w/_plans/{name}"), why.to_owned());
    assert!(found.contains(&at("caf\u{fffd}.md", "the name is not valid UTF-8 (not read); rename it")), "{found:?}");
    assert!(found.contains(&at("a.md", "a symlink loop")), "{found:?}");
    assert!(found.contains(&at("b.md", "a symlink loop")), "{found:?}");
    // Named on the command line, a loop says so (it said "no such file").
    let one = root.run(&["check", "--json", "resources/workspaces/w/_plans/a.md"]);
    assert_eq!(one.code, 1, "{one:?}");
    assert_eq!(findings(&one), [at("a.md", "a symlink loop")]);
}

#[test]
fn config_values_past_a_century_are_errors_not_panics() {
    for ttl in ["3000000", "100000000"] {
        let root = TestRoot::new().file(".tmws/config.toml", format!("[namespaces.short-term]\nttl_days = {ttl}\n"));
        let add = root.run(&["memory", "add", "a note"]);
        assert_eq!(add.code, 2, "{add:?}");
        assert_eq!(
            add.stderr.lines().next().unwrap(),
            "tmws: .tmws/config.toml:2:1: `namespaces.short-term.ttl_days` must be between 1 and 36500"
        );
        // The MCP server says the same and exits, instead of a request never answered.
        let mcp = bounded(root.path(), &["mcp"]);
        assert_eq!(mcp.code, 2, "{mcp:?}");
        let why = "`namespaces.short-term.ttl_days` must be between 1 and 36500";
        assert!(mcp.stderr.contains(why), "{}", mcp.stderr);
    }
}

#[test]
fn an_expiry_past_year_9999_in_a_log_keeps_the_entry_alive() {
    let line = r#"{"op":"add","id":"m_aaaaaaaaaaaa","ns":"long-term","at":"2026-11-22T10:00:00Z","expires_at":"+10240-01-01T00:00:00Z","content":"the release train leaves on thursday","summary":"the release train leaves on thursday","hash":"h"}"#;
    let root = TestRoot::new().file(".tmws/memory/long-term.jsonl", format!("{line}\n"));
    let found = json(&root.run(&["--json", "memory", "search", "release train"]));
    assert_eq!(found["results"][0]["id"], "m_aaaaaaaaaaaa", "{found}");
    let cleaned = json(&root.run(&["--json", "memory", "cleanup"]));
    assert_eq!(cleaned["removed_expired"], 0);
    assert_eq!(root.read(".tmws/memory/long-term.jsonl"), format!("{line}\n"));
}

#[test]
fn hand_edited_lines_survive_compaction_and_check_agrees_with_search() {
    let good = |id: &str, what: &str, at: &str| {
        format!(
            r#"{{"op":"add","id":"{id}","ns":"short-term","at":"{at}","expires_at":"2099-01-01T00:00:00Z","content":"{what}","summary":"{what}","hash":"h"}}"#
        )
    };
    let typo = r#"{"op":"add","id":"m_bbbbbbbbbbbb","ns":"short-term","at":"2026-11-22T10:00:00Z" "content":"a typo"}"#;
    let bom = format!("\u{feff}{}", good("m_cccccccccccc", "saved with a byte order mark", "2026-11-22T10:00:00Z"));
    let wrong_type = good("m_dddddddddddd", "dated yesterday by hand", "yesterday");
    let kept = good("m_eeeeeeeeeeee", "the staging database is pg16", "2026-11-22T10:00:00Z");
    let log = [kept.as_str(), typo, &bom, &wrong_type].join("\n") + "\n";
    let root = TestRoot::new().file(".tmws/memory/short-term.jsonl", &log);

    // check and the readers agree: the three bad lines are skipped by both.
    let out = root.run(&["check", "--json"]);
    let skipped: Vec<(u64, String)> = serde_json::from_str::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["message"].as_str().unwrap().ends_with("line skipped"))
        .map(|d| (d["line"].as_u64().unwrap(), d["message"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(skipped.iter().map(|s| s.0).collect::<Vec<_>>(), [2, 3, 4], "{skipped:?}");
    assert_eq!(skipped[2].1, "`at` must be an RFC 3339 time, e.g. 2026-11-22T10:00:00Z; line skipped");
    let found = json(&root.run(&["--json", "memory", "search", "dated yesterday by hand", "--min-score", "0"]));
    assert_eq!(found["results"], serde_json::json!([]), "{found}");

    // 40 add/delete pairs compact the log on their own; then a cleanup by hand. The bad
    // lines stay, byte for byte, in their order.
    for n in 0..40 {
        let added = json(&root.run(&["--json", "memory", "add", &format!("scratch note number {n}")]));
        let id = added["id"].as_str().unwrap().to_owned();
        assert_eq!(root.run(&["--json", "memory", "delete", &id]).code, 0);
    }
    json(&root.run(&["--json", "memory", "cleanup"]));
    let after = root.read(".tmws/memory/short-term.jsonl");
    let (before, tombstones) = after.split_at(log.len().min(after.len()));
    assert_eq!(before, log, "the live line and the three bad lines, as they were");
    // The deletes stay as tombstones, so that a merge cannot bring the scratch notes back.
    let ops: Vec<Value> = tombstones.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(ops.len(), 40);
    assert!(ops.iter().all(|o| o["op"] == "delete"), "{tombstones}");
}

/// Runs `script` with `sh` in a new user and mount namespace (where mounts are allowed to
/// an unprivileged user), or None with the reason when this system does not allow it.
fn in_namespace(script: &str, args: &[&Path]) -> Option<Output> {
    let probe = Command::new("unshare").args(["-rm", "true"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        super::util::missing("this system does not allow user and mount namespaces (unshare -rm)");
        return None;
    }
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-ec", script, "sh"])
        .args(args)
        .env("TMWS", env!("CARGO_BIN_EXE_tmws"))
        .env("NO_COLOR", "1")
        .env_remove("TMWS_LOG")
        .output()
        .unwrap();
    Some(Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[test]
fn a_read_only_root_answers_from_its_index_and_refuses_writes_cleanly() {
    let root = TestRoot::sample();
    json(&root.run(&["--json", "memory", "add", "the deploy day is friday"]));
    json(&root.run(&["--json", "index"]));
    let before = root.snapshot();
    // Every read answers, marked stale; a write fails with a clear message.
    let script = r#"
        mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; cd "$1"
        echo "== search"; "$TMWS" --json search deploy 2>/dev/null
        echo "== memory"; "$TMWS" --json memory search deploy 2>/dev/null
        echo "== context"; "$TMWS" --json context -w devtools 2>/dev/null
        echo "== add"; "$TMWS" memory add "another note" 2>&1 || echo "exit $?"
        echo "== mcp"
        printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
          '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
          '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"deploy"}}}' \
          | "$TMWS" mcp 2>/dev/null
    "#;
    let Some(out) = in_namespace(script, &[root.path()]) else { return };
    let parts: Vec<&str> = out.stdout.split("== ").collect();
    let section = |name: &str| parts.iter().find(|p| p.starts_with(name)).map(|p| &p[name.len()..]).unwrap_or("");
    for name in ["search", "memory", "context"] {
        let v: Value = serde_json::from_str(section(name)).unwrap_or_else(|e| panic!("{name}: {e}: {out:?}"));
        assert_eq!(v["stale"], true, "{name}: {v}");
    }
    let search: Value = serde_json::from_str(section("search")).unwrap();
    let summaries: Vec<&str> =
        search["results"].as_array().unwrap().iter().filter_map(|r| r["summary"].as_str()).collect();
    assert!(summaries.contains(&"the deploy day is friday"), "{search}");
    assert!(section("add").contains("Read-only file system"), "{out:?}");
    assert!(section("add").contains("exit 2"), "{out:?}");
    let reply = section("mcp").lines().find(|l| l.contains("\"id\":2")).unwrap_or_else(|| panic!("{out:?}"));
    let reply: Value = serde_json::from_str(reply).unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("summary: the deploy day is friday") && text.contains("stale: true"), "{text}");
    assert_eq!(root.snapshot(), before, "nothing changed on disk");
}

#[test]
fn a_full_disk_fails_the_append_and_leaves_the_log_as_it_was() {
    let root = TestRoot::new();
    json(&root.run(&["--json", "memory", "add", "the first note stays whole"]));
    let log = root.read(".tmws/memory/short-term.jsonl");
    let big = outside("big.txt", &"a long note that does not fit ".repeat(20_000));
    // The root is copied onto a small tmpfs, which is then filled up but for a little.
    let script = r#"
        mkdir -p "$2/mnt"; mount -t tmpfs -o size=1m tmpfs "$2/mnt"
        cp -a "$1/." "$2/mnt/"; cd "$2/mnt"
        "$TMWS" --json index >/dev/null 2>&1
        dd if=/dev/zero of=filler bs=4k 2>/dev/null || true
        "$TMWS" memory add - < "$2/big.txt" > /dev/null 2>"$2/err.txt" && echo "added" || echo "exit $?"
        cat "$2/err.txt"
        echo "== log"; cat .tmws/memory/short-term.jsonl
        echo "== search"; "$TMWS" --json memory search "first note" 2>/dev/null
    "#;
    let Some(out) = in_namespace(script, &[root.path(), big.path()]) else { return };
    let (head, rest) = out.stdout.split_once("== log\n").unwrap_or_else(|| panic!("{out:?}"));
    let (after, search) = rest.split_once("== search").unwrap();
    assert!(head.starts_with("exit 2"), "{out:?}");
    assert!(head.contains("No space left on device"), "{out:?}");
    assert_eq!(after, log, "no torn partial line was left");
    let found: Value = serde_json::from_str(search).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(found["results"][0]["summary"], "the first note stays whole", "{found}");
}

#[test]
fn an_unreadable_folder_is_a_finding_and_the_rest_answers() {
    let root = TestRoot::sample();
    let locked = root.path().join("resources/workspaces/devtools/tmws/locked");
    std::fs::create_dir_all(locked.join("inner")).unwrap();
    // Root reads every folder: the commands run as nobody, on a tree nobody may write.
    let as_root = running_as_root();
    if as_root && Command::new("setpriv").arg("--version").output().is_err() {
        super::util::missing("running as root without setpriv to drop privileges");
        return;
    }
    Command::new("chmod").args(["-R", "a+rwX"]).arg(root.path()).status().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |args: &[&str]| -> Output {
        let mut cmd = if as_root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_tmws")]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_tmws"))
        };
        let out = cmd.args(args).current_dir(root.path()).env("NO_COLOR", "1").env_remove("TMWS_LOG").output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let context = run(&["--json", "context", "-w", "devtools", "-d", "tmws"]);
    let v = json(&context);
    assert_eq!(v["defaults"]["folder_structure"], "resources/workspaces/devtools/tmws/\n└── locked/\n", "{v}");
    let found = findings(&run(&["check", "--json"]));
    assert!(
        found.contains(&(
            "resources/workspaces/devtools/tmws/locked".into(),
            "cannot read: Permission denied (os error 13)".into()
        )),
        "{found:?}"
    );
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether this process runs as root (which reads folders whatever their mode).
fn running_as_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

#[test]
fn terminal_escapes_in_a_value_are_printed_escaped() {
    let root = TestRoot::new().file(
        "resources/workspaces/w/_plans/260101-x.md",
        "---\nname: x\ndescription: d\nstatus: \"\u{1b}[2J\u{1b}]0;pwned\u{7}\"\ncreated: 2026-01-01\n---\n",
    );
    let out = root.run(&["check"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(!out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'), "{:?}", out.stdout);
    assert!(out.stdout.contains(r"found `\x1b[2J\x1b]0;pwned\x07`"), "{}", out.stdout);
}

#[test]
fn bidi_and_zero_width_characters_in_human_output_are_printed_escaped() {
    // "Trojan Source": a right-to-left override shows what follows it reversed, and a
    // zero-width space makes two names look alike.
    let name = "approve\u{202e}evorppa-ton\u{202c} cl\u{200b}aude";
    let root = TestRoot::new().file(
        "resources/workspaces/w/_plans/260101-x.md",
        format!("---\nname: \"{name}\"\ndescription: d\nstatus: \"done\u{2066}\"\ncreated: 2026-01-01\n---\n"),
    );
    let table = root.run(&["search", "approve", "--format", "table"]);
    assert_eq!(table.code, 0, "{table:?}");
    let check = root.run(&["check"]);
    assert_eq!(check.code, 1, "{check:?}");
    for out in [&table.stdout, &check.stdout] {
        for c in ['\u{202e}', '\u{202c}', '\u{200b}', '\u{2066}'] {
            assert!(!out.contains(c), "{c:?} printed raw: {out:?}");
        }
    }
    assert!(table.stdout.contains(r"approve\u{202e}evorppa-ton\u{202c} cl\u{200b}aude"), "{}", table.stdout);
    assert!(check.stdout.contains(r"found `done\u{2066}`"), "{}", check.stdout);
}

#[test]
fn check_reports_a_symlinked_start_folder_leading_out_of_the_root() {
    let elsewhere = outside("x.md", "---\nname: outside\n---\n");
    let root = TestRoot::new();
    std::fs::create_dir_all(root.path().join("resources")).unwrap();
    symlink(elsewhere.path(), root.path().join("resources/workspaces")).unwrap();
    let found = findings(&root.run(&["check", "--json"]));
    assert!(found.contains(&("resources/workspaces".into(), OUT_OF_ROOT.into())), "{found:?}");
    let searched = json(&root.run(&["--json", "search", "outside"]));
    assert_eq!(searched["results"], serde_json::json!([]), "{searched}");
    // `tmws` named with a path through the link: still not followed.
    let direct = tmws(root.path(), &["check", "--json", "resources/workspaces/x.md"]);
    assert_eq!(findings(&direct), [("resources/workspaces/x.md".to_owned(), format!("cannot read: {OUT_OF_ROOT}"))]);
}

/// Sends `requests` (after `initialize`) to `tmws mcp` over stdin, closes it, and returns
/// the answers by id.
fn mcp_exchange(root: &Path, requests: &[Value]) -> std::collections::BTreeMap<i64, Value> {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .arg("mcp")
        .current_dir(root)
        .env_remove("TMWS_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let mut text = format!("{init}\n{}\n", serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    for r in requests {
        text.push_str(&r.to_string());
        text.push('\n');
    }
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| Some((v["id"].as_i64()?, v)))
        .collect()
}

fn call(id: i64, tool: &str, args: Value) -> Value {
    serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
}

#[test]
fn an_mcp_request_over_the_line_limit_gets_an_error_and_the_session_goes_on() {
    let root = TestRoot::new();
    let huge = call(1, "memory_add", serde_json::json!({"content": "y".repeat(17 << 20)}));
    let next = call(2, "memory_add", serde_json::json!({"content": "a note after the huge one"}));
    let answers = mcp_exchange(root.path(), &[huge, next]);
    assert_eq!(
        answers[&1]["error"],
        serde_json::json!({"code": -32600, "message": "request over the line limit of 16777216 bytes: not read"})
    );
    assert_eq!(answers[&2]["result"]["isError"], false, "{}", answers[&2]);
    assert!(root.read(".tmws/memory/short-term.jsonl").contains("a note after the huge one"));
}

#[test]
fn over_long_inputs_are_refused_without_being_echoed_or_stored() {
    let root = TestRoot::new();
    let big = "q".repeat(10 << 20);
    let answers = mcp_exchange(
        root.path(),
        &[
            call(1, "workspace_search", serde_json::json!({"query": big})),
            call(2, "memory_add", serde_json::json!({"content": "c", "key": "k".repeat(10 << 20)})),
            call(3, "memory_add", serde_json::json!({"content": "c", "tags": vec!["t"; 200_000]})),
            call(4, "memory_add", serde_json::json!({"content": "c", "agent": "a".repeat(5 << 20)})),
            call(5, "memory_search", serde_json::json!({"query": "x", "bogus": 1})),
        ],
    );
    let error = |id: i64| -> String {
        let r = &answers[&id]["result"];
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["category"], "usage", "{r}");
        r["structuredContent"]["error"].as_str().unwrap().to_owned()
    };
    let q = error(1);
    assert!(q.starts_with("the query is 10485760 bytes, over the limit of 4096"), "{q}");
    assert!(q.len() < 300, "the query is not echoed whole: {} bytes", q.len());
    assert!(error(2).len() < 300 && error(4).len() < 300);
    assert_eq!(error(3), "200000 tags, over the limit of 64");
    assert_eq!(
        error(5),
        "unknown parameter `bogus`, expected one of `query`, `namespace`, `tags`, `kind`, `branch`, `limit`, \
`min_score`, `include_content`, `format`, `max_chars`"
    );
    assert!(!root.path().join(".tmws/memory/short-term.jsonl").exists(), "nothing was stored");
}

#[test]
fn a_full_disk_after_a_commit_still_answers_every_read_and_keeps_the_watcher() {
    let root = TestRoot::sample();
    let script = r#"
        mkdir -p "$2/mnt"; mount -t tmpfs -o size=3m tmpfs "$2/mnt"
        cp -a "$1/." "$2/mnt/"; cd "$2/mnt"
        g() { git -c user.name=t -c user.email=t@example.invalid -c init.defaultBranch=main "$@"; }
        g init -q; g add -A; g commit -q -m "first"
        "$TMWS" --json index >/dev/null 2>&1
        echo "a change to commit" > notes.txt; g add notes.txt; g commit -q -m "the numbat commit"
        dd if=/dev/zero of=filler bs=4k 2>/dev/null || true
        for cmd in "search pool" "recall pool" "context -w devtools" "read resources/workspaces/devtools/OVERVIEW.md"; do
          echo "== $cmd"; "$TMWS" --json $cmd 2>/dev/null && echo "exit 0" || echo "exit $?"
        done
        echo "== watch"
        "$TMWS" watch >/dev/null 2>"$2/watch.err" &
        w=$!
        # A second failed sync (the retry) shows that the watcher went on after the first.
        n=0
        while [ "$(grep -c 'sync failed' "$2/watch.err")" -lt 2 ] && kill -0 $w 2>/dev/null && [ $n -lt 2400 ]; do
          sleep 0.05; n=$((n + 1))
        done
        [ "$(grep -c 'sync failed' "$2/watch.err")" -ge 2 ] && kill -0 $w 2>/dev/null && echo "running after a retry"
        kill $w 2>/dev/null; wait $w
    "#;
    let scratch = tempfile::tempdir().unwrap();
    let Some(out) = in_namespace(script, &[root.path(), scratch.path()]) else { return };
    for cmd in ["search pool", "recall pool", "context -w devtools", "read resources/workspaces/devtools/OVERVIEW.md"] {
        let section = out.stdout.split(&format!("== {cmd}\n")).nth(1).unwrap_or_else(|| panic!("{cmd}: {out:?}"));
        let section = section.split("\n== ").next().unwrap();
        let (body, code) = section.trim_end().rsplit_once("exit ").unwrap_or_else(|| panic!("{cmd}: {out:?}"));
        assert_eq!(code, "0", "{cmd}: {out:?}");
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{cmd}: {e}: {out:?}"));
        if cmd != "read resources/workspaces/devtools/OVERVIEW.md" {
            assert_eq!(v["stale"], true, "{cmd}: {v}");
        }
    }
    // The watcher does not exit on the failed sync: it tries again, and is still running.
    assert!(out.stdout.trim_end().ends_with("== watch\nrunning after a retry"), "{out:?}");
}

#[test]
fn check_fails_on_a_broken_config_that_a_symlink_inside_the_root_leads_to() {
    let root = TestRoot::new().file("cfg/real.toml", "[retrieval]\ntop_k = \"x\"\n");
    symlink("../cfg/real.toml", root.path().join(".tmws/config.toml")).unwrap();
    // The engine reads the config through the link, and fails on it.
    let search = root.run(&["search", "x"]);
    assert_eq!(search.code, 2, "{search:?}");
    let check = root.run(&["check", "--format", "json"]);
    assert_eq!(check.code, 1, "{check:?}");
    let found = findings(&check);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, ".tmws/config.toml");
    assert!(found[0].1.contains("invalid type"), "{found:?}");
}

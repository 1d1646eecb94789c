//! The command line as a person and a script meet it: help with examples, completions and
//! the man page, limits that are errors, queries without quotes, JSON errors, colour.

use std::process::{Command, Stdio};

use super::util::{TestRoot, repo, tmws};

/// `tmws` with `args` in `root` and `env` set (NO_COLOR removed unless `env` sets it).
fn run_env(root: &TestRoot, args: &[&str], env: &[(&str, &str)]) -> super::util::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
    cmd.args(args).current_dir(root.path()).env_remove("TMWS_LOG").env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the tmws binary runs");
    super::util::Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn help_ends_with_examples_and_describes_every_flag() {
    let out = tmws(&repo(), &["search", "--help"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.ends_with(
            "Examples:
  tmws search connection pool
  tmws search retry --kind entry,memory --limit 5
  tmws search deploy --scope acme/backend --topic decisions
  tmws search '#123'                 the commits, memories and sessions of issue 123
  tmws search login --issue PROJ-7   words, within one issue's items
  tmws search '\"token refresh\"' --json   a phrase, as JSON
"
        ),
        "{}",
        out.stdout
    );
    let flat = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "--kind <KIND> Only these kinds of item: overview, topic_overview, entry, rule, skill, doc, memory, \
server, tool, commit."
        ),
        "{flat}"
    );
    let prune = tmws(&repo(), &["memory", "prune", "--help"]).stdout;
    assert!(!prune.contains("DESIGN"), "{prune}");
    assert!(prune.contains("tmws memory prune --below 0.1"), "{prune}");
    let verify = tmws(&repo(), &["trust", "verify", "--help"]).stdout;
    let flat = verify.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("--agent <AGENT> The agent whose work was checked"), "{verify}");
    assert!(flat.contains("--verifier <VERIFIER> Who checked it: only `human` (the default)"), "{verify}");
}

#[test]
fn completions_name_the_commands_in_every_shell() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = tmws(&repo(), &["completions", shell]);
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{shell}");
        for word in ["search", "context", "memory", "registry", "completions", "limit", "workspace"] {
            assert!(out.stdout.contains(word), "{shell}: no `{word}`");
        }
    }
    let out = tmws(&repo(), &["completions", "tcsh"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("invalid value 'tcsh'"), "{}", out.stderr);
}

#[test]
fn bash_accepts_the_bash_completion_script() {
    let Ok(bash) = which("bash") else {
        super::util::missing("no bash on PATH to read the completion script");
        return;
    };
    let script = tmws(&repo(), &["completions", "bash"]).stdout;
    let mut child = Command::new(bash).arg("-n").stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A program on PATH, if there is one.
fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()))
        .ok_or(())
}

#[test]
fn the_man_page_is_roff_for_every_command() {
    let out = tmws(&repo(), &["man"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(out.stdout.contains(".TH tmws 1"), "{}", &out.stdout[..200]);
    for heading in
        [".SH NAME", ".SH SYNOPSIS", ".SH COMMANDS", ".SH EXAMPLES", ".SH ENVIRONMENT", ".SH \"EXIT STATUS\""]
    {
        assert!(out.stdout.contains(heading), "no {heading}");
    }
    for command in ["tmws init", "tmws search", "tmws memory add", "tmws registry describe", "tmws man"] {
        assert!(out.stdout.contains(&format!(".SS \"{command}\"")), "no section for {command}");
    }
    // Examples keep their lines.
    assert!(out.stdout.contains(".nf\nExamples:\n  tmws search connection pool\n"), "examples are preformatted");
}

/// Regression: the command line's errors named the tools' parameters (`ref_id`,
/// `expected_hash`) and said ranges as Rust does (`1..=100`). They now name the flag or the
/// positional a person typed and say `1 to 100`; MCP and HTTP keep the parameter names.
#[test]
fn limits_out_of_range_are_usage_errors_on_every_command() {
    let root = TestRoot::sample();
    for (args, error) in [
        (vec!["search", "x", "--limit", "0"], "--limit 0 is outside 1 to 100"),
        (vec!["search", "x", "--limit", "101"], "--limit 101 is outside 1 to 100"),
        (vec!["memory", "search", "x", "--limit", "0"], "--limit 0 is outside 1 to 100"),
        (vec!["memory", "search", "x", "--limit", "101"], "--limit 101 is outside 1 to 100"),
        (vec!["registry", "search", "x", "--limit", "0"], "--limit 0 is outside 1 to 50"),
        (vec!["registry", "search", "x", "--limit", "51"], "--limit 51 is outside 1 to 50"),
        (vec!["search", "x", "--max-chars", "99"], "--max-chars 99 is outside 100 to 100000"),
        (vec!["context", "-w", "devtools", "--max-chars", "100001"], "--max-chars 100001 is outside 100 to 100000"),
        (vec!["search", "x", "--limit", "-1"], "--limit: `-1` is not a whole number of 0 or more"),
        (vec!["search", "x", "--limit", "ten"], "--limit: `ten` is not a whole number of 0 or more"),
        (vec!["memory", "search", "x", "--min-score", "-0.5"], "--min-score -0.5 is outside 0 to 1"),
        (vec!["read", " "], "REF_ID is empty: give the refId a search or the context answered"),
    ] {
        let out = root.run(&args);
        assert_eq!((out.code, out.stdout.as_str()), (2, ""), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr, format!("tmws: {error}\n"), "{args:?}");
    }
    let out = root.run(&["watch", "--idle-exit", "0"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: invalid value '0' for '--idle-exit <SECS>': must be 1 or more\n"),
        "{}",
        out.stderr
    );
}

/// Regression: `retrieval.answer_cap_chars = 50` was taken, and then every tool with an
/// answer cap failed with `max_chars 50 is outside 100..=100000`, a parameter nobody gave.
/// The config's key is checked against the parameter's limit when it loads.
#[test]
fn an_answer_cap_the_tools_refuse_is_refused_when_the_config_loads() {
    let config = "# small answers\n[retrieval]\ntop_k = 5\nanswer_cap_chars = 50\n";
    let root = TestRoot::sample().file(".tmws/config.toml", config);
    let line = "tmws: .tmws/config.toml:4:1: `retrieval.answer_cap_chars` must be between 100 and 100000\n";
    for args in [&["search", "x"][..], &["memory", "search", "x"], &["context", "-w", "devtools"], &["workspaces"]] {
        let out = root.run(args);
        assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (2, "", line), "{args:?}");
    }
    // The bounds themselves load, and every capped command runs with them.
    for cap in ["100", "100000"] {
        root.write(".tmws/config.toml", format!("[retrieval]\nanswer_cap_chars = {cap}\n"));
        for args in [&["search", "x"][..], &["memory", "search", "x"], &["context", "-w", "devtools"]] {
            let out = root.run(args);
            assert_eq!(out.code, 0, "{cap} {args:?}: {}", out.stderr);
        }
    }
}

/// Regression: `retrieval.top_k = 200` (the config took up to 1000) was taken, and then
/// every `memory search` without `--limit` failed with `limit 200 is outside 1..=100`.
/// `top_k` is `memory_search`'s default `limit`, and has its limit.
#[test]
fn a_top_k_memory_search_refuses_is_refused_when_the_config_loads() {
    let root = TestRoot::sample();
    for top_k in ["0", "101", "200"] {
        root.write(".tmws/config.toml", format!("[retrieval]\n\ntop_k = {top_k}\n"));
        for args in [&["memory", "search", "x"][..], &["search", "x"], &["--json", "memory", "search", "x"]] {
            let out = root.run(args);
            let line = if args[0] == "--json" {
                r#"{"error":".tmws/config.toml:3:1: `retrieval.top_k` must be between 1 and 100","category":"environment"}"#
                    .to_owned()
                    + "\n"
            } else {
                "tmws: .tmws/config.toml:3:1: `retrieval.top_k` must be between 1 and 100\n".to_owned()
            };
            assert_eq!(
                (out.code, out.stdout.as_str(), out.stderr.as_str()),
                (2, "", line.as_str()),
                "{top_k} {args:?}"
            );
        }
    }
    root.write(".tmws/config.toml", "[retrieval]\ntop_k = 100\n");
    let out = root.run(&["memory", "search", "x"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn queries_of_several_words_need_no_quotes_on_every_query_command() {
    let root = TestRoot::sample()
        .file(
            "resources/workspaces/devtools/_lessons/261101-router.md",
            "---\nname: Receive router\ndescription: The receive router drops frames under load.\ncreated: 2026-11-01\n---\n",
        );
    let hits = |args: &[&str], field: &str| -> Vec<String> {
        let out = root.run(args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
        assert_eq!(v["query"].as_str(), Some(args[args.len() - 2..].join(" ").as_str()), "{args:?}");
        v["results"].as_array().unwrap().iter().map(|h| h[field].as_str().unwrap_or_default().to_owned()).collect()
    };
    assert_eq!(
        hits(&["--json", "search", "receive", "router"], "refId"),
        ["resources/workspaces/devtools/_lessons/261101-router.md"]
    );
    let added = root.run(&["--json", "memory", "add", "The", "receive", "router", "needs", "a", "bigger", "buffer"]);
    assert_eq!(added.code, 2, "one CONTENT: several words are quoted: {}", added.stderr);
    let added = root.run(&["--json", "memory", "add", "The receive router needs a bigger buffer"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    let id: serde_json::Value = serde_json::from_str(&added.stdout).unwrap();
    assert_eq!(hits(&["--json", "memory", "search", "bigger", "buffer"], "id"), [id["id"].as_str().unwrap()]);
    assert_eq!(hits(&["--json", "registry", "search", "find", "symbol"], "tool")[0], "find_symbol");
}

#[test]
fn with_json_an_error_is_one_json_object_on_stderr_and_the_exit_code_stays() {
    let root = TestRoot::sample();
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["--json", "search", "x", "--limit", "0"],
            2,
            r#"{"error":"--limit 0 is outside 1 to 100","category":"usage"}"#,
        ),
        (
            &["--json", "search", "x", "--bogus"],
            2,
            r#"{"error":"unexpected argument '--bogus' found","category":"usage","hint":"to pass '--bogus' as a value, use '-- --bogus'"}"#,
        ),
        (
            &["memory", "get", "m_000000000000", "--json"],
            1,
            r#"{"error":"no memory `m_000000000000`","category":"not_found"}"#,
        ),
        (
            &["--json", "context", "-w", "nope"],
            1,
            r#"{"error":"unknown workspace `nope`; known: devtools, nihongo","category":"not_found","hint":"to create the workspace `nope`, run `tmws new overview NAME -w nope --description TEXT` (entry_write with topic `overview`), or write resources/workspaces/nope/OVERVIEW.md with `name` and `description` in its front-matter"}"#,
        ),
        (
            &["--json", "search"],
            2,
            r#"{"error":"the following required arguments were not provided: <QUERY>...","category":"usage","hint":"usage: tmws search <QUERY>...; see --help"}"#,
        ),
    ];
    for (args, code, stderr) in cases {
        let out = root.run(args);
        assert_eq!((out.code, out.stdout.as_str()), (code, ""), "{args:?}");
        assert_eq!(out.stderr, format!("{stderr}\n"), "{args:?}");
    }
    // No root: the environment category, and the hint that says what to do.
    let bare = TestRoot::bare();
    let out = bare.run(&["--json", "search", "x"]);
    assert_eq!(out.code, 2);
    let v: serde_json::Value = serde_json::from_str(out.stderr.trim_end()).unwrap();
    assert_eq!(v["category"], "environment");
    assert_eq!(v["hint"], "run `tmws init` in the project folder, or pass --root DIR");
    // Help and version are not errors.
    let out = root.run(&["--json", "--version"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "tmws 0.1.0\n"));
}

#[test]
fn context_without_a_workspace_lists_the_scopes_and_how_to_make_one() {
    let root = TestRoot::sample();
    let out = root.run(&["context"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(
        out.stdout,
        "scopes (tmws context -w WORKSPACE [-d DOMAIN [-r REPOSITORY]]):
  devtools                          DevTools: Developer tooling shared by every team, from the CLI to the tool registry.
  devtools/common                   DevTools Common: Libraries and conventions shared by the DevTools repositories.
  devtools/common/registry-service  registry-service: Builds and serves the sparse registry of MCP servers and their tools.
  devtools/common/tmws-cli          tmws-cli: The tmws command line, from check to serve.
  nihongo                           日本語ワークスペース: 日本語で書かれたモバイルアプリ開発の知識をまとめたワークスペース。
  nihongo/mobile                    モバイル: iOS と Android アプリの共通基盤。
To create a workspace, run `tmws new overview NAME -w NAME --description TEXT`, or write resources/workspaces/NAME/OVERVIEW.md with `name` and `description` in its front-matter.
"
    );
    let out = root.run(&["--json", "context"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        v["scopes"][0],
        serde_json::json!({"scope": "devtools", "name": "DevTools", "description": "Developer tooling shared by every team, from the CLI to the tool registry."})
    );
    assert_eq!(v["scopes"].as_array().map(Vec::len), Some(6));
    // An empty root says so, and how to start.
    let empty = TestRoot::new();
    let out = empty.run(&["context"]);
    assert_eq!(
        out.stdout,
        "no workspaces yet\nTo create a workspace, run `tmws new overview NAME -w NAME --description TEXT`, or write \
resources/workspaces/NAME/OVERVIEW.md with `name` and `description` in its front-matter.\n"
    );
}

#[test]
fn colour_follows_the_flag_and_no_color_and_never_reaches_a_pipe_by_default() {
    let root = TestRoot::bare();
    let invalid = repo().join("testdata/invalid");
    let invalid = invalid.to_str().unwrap();
    let check = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["check", invalid];
        all.extend_from_slice(args);
        let out = run_env(&root, &all, env);
        assert_eq!(out.code, 1, "{}", out.stderr);
        out.stdout
    };
    let plain = check(&[], &[]);
    assert!(!plain.contains('\x1b'), "piped: no colour");
    assert!(plain.contains(": error["), "{plain}");
    let always = check(&["--color", "always"], &[]);
    assert!(always.contains("\x1b[1;31merror["), "{always}");
    assert_eq!(strip_ansi(&always), plain, "colour changes nothing else");
    // --color always wins over NO_COLOR; --color never over a forced terminal.
    assert!(check(&["--color=always"], &[("NO_COLOR", "1")]).contains('\x1b'));
    assert!(!check(&["--color", "never"], &[]).contains('\x1b'));
    // The tables and the human answers are coloured the same way.
    let sample = TestRoot::sample();
    let table = run_env(&sample, &["search", "connection", "pool", "--format", "table", "--color", "always"], &[]);
    assert!(table.stdout.contains("\x1b[36mentry"), "{}", table.stdout);
    let plain = run_env(&sample, &["search", "connection", "pool", "--format", "table"], &[]);
    assert_eq!(strip_ansi(&table.stdout), plain.stdout);
    assert!(!plain.stdout.contains('\x1b'));
    // JSON is never coloured.
    let json = run_env(&sample, &["--json", "search", "pool", "--color", "always"], &[]);
    assert!(!json.stdout.contains('\x1b'), "{}", json.stdout);
}

/// `text` without SGR escapes.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The README's claims about the binary and about what building it needs hold: the Rust
/// version is the manifest's, and the binary needs no shared library but the C library's.
#[cfg(target_os = "linux")]
#[test]
fn the_readme_says_what_building_needs_and_what_the_binary_links() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let version = manifest.lines().find_map(|l| l.strip_prefix("rust-version = ")).unwrap().trim_matches('"');
    assert!(readme.contains(&format!("- Rust {version} or newer")), "the README names Rust {version}");
    assert!(readme.contains("- A C compiler"), "the README names the C compiler");
    assert!(!readme.to_lowercase().contains("static binary"), "the binary is not static");
    assert!(readme.contains("it links dynamically against glibc's libc, libm and libgcc_s only"));
    let Ok(readelf) = which("readelf") else {
        super::util::missing("no readelf to read the binary's dynamic section");
        return;
    };
    let out = Command::new(readelf).args(["-d", env!("CARGO_BIN_EXE_tmws")]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut needed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .filter(|lib| !lib.starts_with("ld-linux"))
        .collect();
    needed.sort_unstable();
    assert_eq!(needed, ["libc.so.6", "libgcc_s.so.1", "libm.so.6"]);
}

/// Regression: `read --max-chars 1000` of a document whose body is many short lines
/// answered `…` for every field, its refId too: the cut took each escaped newline for one
/// character and cut every text to nothing after the body. Now what names the document
/// (refId, kind, scope, name, hash, front-matter) stays whole, only the body is cut, and
/// the answer says `truncated: true`, in both formats.
#[test]
fn read_with_a_small_cap_keeps_what_names_the_document_and_cuts_only_the_body() {
    let path = "resources/workspaces/w/_lessons/260101-long.md";
    let body = "- item\n".repeat(3000);
    let root = TestRoot::new().file(
        path,
        format!("---\nname: Long list\ndescription: A lesson of many lines\ncreated: 2026-01-01\n---\n{body}"),
    );
    let whole: serde_json::Value =
        serde_json::from_str(&tmws(root.path(), &["--json", "read", path, "--max-chars", "100000"]).stdout).unwrap();
    assert_eq!(whole["refId"], path);
    let hash = whole["hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64);
    for json in [true, false] {
        let args: Vec<&str> = [&["--json"][..], &["read", path, "--max-chars", "1000"][..]]
            .concat()
            .into_iter()
            .filter(|a| json || *a != "--json")
            .collect();
        let out = tmws(root.path(), &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.trim_end().chars().count() <= 1000, "{}", out.stdout);
        let v: serde_json::Value = if json {
            serde_json::from_str(&out.stdout).unwrap()
        } else {
            let yaml = super::util::yaml(&out.stdout).unwrap();
            let text = |k: &str| yaml[k].as_str().map(str::to_owned);
            serde_json::json!({"refId": text("refId"), "kind": text("kind"), "scope": text("scope"),
                "name": text("name"), "hash": text("hash"), "body": text("body"),
                "truncated": yaml["truncated"].as_bool(),
                "front_matter": {"description": yaml["front_matter"]["description"].as_str()}})
        };
        assert_eq!(
            (&v["refId"], &v["kind"], &v["scope"], &v["name"], &v["hash"]),
            (&path.into(), &"entry".into(), &"w".into(), &"Long list".into(), &hash.clone().into()),
            "{}",
            out.stdout
        );
        assert_eq!(v["front_matter"]["description"], "A lesson of many lines");
        assert_eq!(v["truncated"], true);
        let cut = v["body"].as_str().unwrap();
        assert!(cut.ends_with('…') && cut.len() > 200, "most of what fits is the body: {cut:?}");
        assert!(body.starts_with(cut.trim_end_matches('…')), "{cut:?}");
    }
}

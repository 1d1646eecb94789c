//! `tmws new` (and through it `entry_write`, docs/tools.md) as a person uses it: the README's
//! worked example run word for word, refusals that write nothing (an invalid entry, an
//! existing file, a stale hash), changes that keep what they do not name, the body from
//! stdin, secrets redacted, and no write out of the root. (MCP: `mcp.rs`; HTTP: `serve.rs`.)

use serde_json::Value;

use super::util::{Output, TestRoot, repo, tmws_with_stdin};

fn today() -> chrono::NaiveDate {
    chrono::Utc::now().date_naive()
}

/// The README's worked example: its commands, split as a shell splits them.
fn worked_example() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme.find("<!-- worked-example").expect("the README marks its worked example");
    let end = readme.find("<!-- /worked-example -->").unwrap();
    let block = &readme[start..end];
    let body = &block[block.find("```sh\n").unwrap() + 6..block.rfind("```").unwrap()];
    body.lines().filter(|l| !l.trim().is_empty()).map(split).collect()
}

/// Splits a command line at spaces outside double quotes (all the example needs).
fn split(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    assert!(!quoted, "unbalanced quotes: {line}");
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The decision as the README shows it.
fn readme_decision() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let after = &readme[readme.find("<!-- /worked-example -->").unwrap()..];
    let start = after.find("```markdown\n").unwrap() + 12;
    after[start..start + after[start..].find("```").unwrap()].to_owned()
}

fn run_with_stdin(root: &TestRoot, args: &[&str], stdin: &str) -> Output {
    tmws_with_stdin(root.path(), args, stdin.as_bytes())
}

#[test]
fn the_readme_worked_example_makes_a_valid_workspace_from_an_empty_folder() {
    let root = TestRoot::bare();
    let commands = worked_example();
    assert_eq!(commands.len(), 7, "{commands:?}");
    for words in &commands {
        assert_eq!(words[0], "tmws", "{words:?}");
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let out = root.run(&args);
        assert_eq!(out.code, 0, "{words:?}: {}{}", out.stdout, out.stderr);
    }
    let date = today().format("%y%m%d").to_string();
    let decision = format!("resources/workspaces/acme/backend/_decisions/{date}-use-postgres-for-the-job-queue.md");
    let written = root.read(&decision);
    // The README shows the file as written on the day it was written.
    assert_eq!(written.replace(&today().format("%Y-%m-%d").to_string(), "2026-11-25"), readme_decision());
    assert_eq!(
        root.read(&format!("resources/workspaces/acme/backend/_plans/{date}-move-billing-to-the-queue.md")),
        format!(
            "---\nname: Move billing to the queue\ndescription: Billing jobs leave cron for the job queue.\nstatus: \
in_progress\ncreated: {}\nauthor:\n  surface: cli\n---\n\n## Goal\n\n## Steps\n\n- [ ] \n",
            today().format("%Y-%m-%d")
        )
    );
    assert_eq!(
        root.read("resources/workspaces/acme/OVERVIEW.md"),
        "---\nname: Acme\ndescription: \"Everything the Acme team's agents should know first.\"\nauthor:\n  surface: cli\n---\n"
    );
    let lesson = root.read(&format!("resources/workspaces/acme/_lessons/{date}-retries-need-jitter.md"));
    assert!(lesson.contains("\ncategory: reliability\n"), "{lesson}");
    // Searchable at once, and the context lists them.
    let out = root.run(&["--json", "search", "postgres", "queue", "--kind", "entry"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["refId"], decision.as_str(), "{v}");
    let out = root.run(&["--json", "workspaces"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let scopes: Vec<&str> = v["scopes"].as_array().unwrap().iter().map(|s| s["scope"].as_str().unwrap()).collect();
    assert_eq!(scopes, ["acme", "acme/backend"]);
}

#[test]
fn refusals_write_nothing_and_say_why() {
    let root = TestRoot::new();
    let ok = root.run(&["new", "overview", "Acme", "-w", "acme", "--description", "The Acme workspace."]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let before = root.snapshot();

    // An invalid field: the finding, exit 2, nothing written.
    let out = root.run(&["new", "plan", "Ship it", "-w", "acme", "--description", "d", "--field", "status=shipped"]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "tmws: the entry is not valid, nothing was written: [invalid-enum] `status` must be one of new, in_progress, \
partial, done, abandoned; found `shipped` (use one of the listed values, or add this one to the topic overview's \
`status_values`)\n  hint: fix these and call again; `tmws check` runs the same rules\n"
    );
    let out =
        root.run(&["--json", "new", "decision", "X", "-w", "acme", "--description", "d", "--field", "created=soon"]);
    assert_eq!(out.code, 2);
    let e: Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(e["category"], "usage");
    assert!(e["error"].as_str().unwrap().contains("[invalid-date] `created` must be a real date"), "{e}");
    // An unknown workspace (a typo is named), an empty name, a bad topic.
    let out = root.run(&["new", "lesson", "L", "-w", "acm", "--description", "d"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.starts_with("tmws: unknown workspace `acm`; known: acme\n  hint: did you mean `acme`?"));
    let out = root.run(&["new", "lesson", " ", "-w", "acme", "--description", "d"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: the name is empty: give the entry a one-line name\n"));
    let out = root.run(&["new", "../x", "L", "-w", "acme", "--description", "d"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let out = root.run(&["new", "lesson", "L", "-w", "acme"]);
    assert_eq!(out.code, 2, "--description is required");
    assert_eq!(root.snapshot(), before, "nothing was written");

    // A second entry of the same name on the same day, or a second overview, is refused.
    let first = root.run(&["new", "lesson", "Cache keys", "-w", "acme", "--description", "First."]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let path = format!("resources/workspaces/acme/_lessons/{}-cache-keys.md", today().format("%y%m%d"));
    let kept = root.read(&path);
    let again = root.run(&["new", "lesson", "Cache keys", "-w", "acme", "--description", "Second."]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        format!(
            "tmws: `{path}` exists: an entry is never replaced by a new one\n  hint: to change it, read it with \
workspace_read and pass its refId as --ref-id and its hash as --expected-hash\n"
        )
    );
    assert_eq!(root.read(&path), kept);
    let out = root.run(&["new", "overview", "Acme 2", "-w", "acme", "--description", "d"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("exists: the overview is never replaced by a new one"), "{}", out.stderr);
}

#[test]
fn a_change_needs_the_hash_of_what_it_changes_and_keeps_what_it_does_not_name() {
    let root = TestRoot::new();
    root.run(&["new", "overview", "Acme", "-w", "acme", "--description", "The Acme workspace."]);
    let out = root.run(&[
        "--json",
        "new",
        "decision",
        "Use Postgres",
        "-w",
        "acme",
        "--description",
        "Why.",
        "--field",
        "tags=[db]",
        "--field",
        "owner=ops",
        "--body",
        "We chose Postgres.\n",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let made: Value = serde_json::from_str(&out.stdout).unwrap();
    let path = made["refId"].as_str().unwrap().to_owned();
    assert_eq!(made["action"], "created");
    assert_eq!(made["hash"].as_str().unwrap(), blake3::hash(root.read(&path).as_bytes()).to_hex().as_str());
    // tmws read gives the same hash.
    let read: Value = serde_json::from_str(&root.run(&["--json", "read", &path]).stdout).unwrap();
    assert_eq!(read["hash"], made["hash"]);

    // Someone edits the file; a change from the old version is refused.
    let edited = root.read(&path).replace("We chose Postgres.", "We chose Postgres, and pgbouncer.");
    root.write(&path, &edited);
    let change = |hash: &str| {
        root.run(&[
            "--json",
            "new",
            "decision",
            "Use Postgres everywhere",
            "-w",
            "acme",
            "--description",
            "Why, again.",
            "--field",
            "owner=null",
            "--ref-id",
            &path,
            "--expected-hash",
            hash,
        ])
    };
    let stale = change(made["hash"].as_str().unwrap());
    assert_eq!(stale.code, 1);
    let e: Value = serde_json::from_str(&stale.stderr).unwrap();
    assert_eq!(e["category"], "conflict");
    assert!(e["error"].as_str().unwrap().starts_with(&format!("`{path}` changed since it was read")), "{e}");
    assert_eq!(root.read(&path), edited, "nothing was written");

    let fresh = blake3::hash(edited.as_bytes()).to_hex().to_string();
    let done = change(&fresh);
    assert_eq!(done.code, 0, "{}", done.stderr);
    let date = today().format("%Y-%m-%d").to_string();
    assert_eq!(
        root.read(&path),
        format!(
            "---\nname: Use Postgres everywhere\ndescription: \"Why, again.\"\ncreated: {date}\ntags:\n  - db\n\
updated: {date}\nauthor:\n  surface: cli\n---\n\nWe chose Postgres, and pgbouncer.\n"
        ),
        "the body and the fields it did not name are kept; owner=null removed owner"
    );
    // A ref_id elsewhere than the other parameters say, or outside the workspaces, is refused.
    let out = root.run(&[
        "new",
        "lesson",
        "X",
        "-w",
        "acme",
        "--description",
        "d",
        "--ref-id",
        &path,
        "--expected-hash",
        &fresh,
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with(&format!("tmws: --ref-id `{path}` is not in topic `lessons` of `acme`")));
    let out = root.run(&[
        "new",
        "decision",
        "X",
        "-w",
        "acme",
        "--description",
        "d",
        "--ref-id",
        ".tmws/config.toml",
        "--expected-hash",
        "0",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("is not an entry or overview of the workspaces"), "{}", out.stderr);
    let out = root.run(&["new", "decision", "X", "-w", "acme", "--description", "d", "--ref-id", &path]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "tmws: --ref-id needs --expected-hash: read the entry with workspace_read, which gives its hash\n")
    );
}

#[test]
fn the_body_comes_from_stdin_and_secrets_never_reach_the_file() {
    let root = TestRoot::new();
    root.run(&["new", "overview", "Acme", "-w", "acme", "--description", "The Acme workspace."]);
    let token = "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";
    let out = run_with_stdin(
        &root,
        &["--json", "new", "lesson", "Rotate tokens", "-w", "acme", "--description", "Rotated.", "--body", "-"],
        &format!("# Rotate\n\nThe old token was {token}.\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["redacted"], 1);
    let text = root.read(v["refId"].as_str().unwrap());
    assert!(text.ends_with("\n# Rotate\n\nThe old token was [REDACTED:github-pat].\n"), "{text}");
    assert!(!text.contains(token));
    let check = root.run(&["check"]);
    assert_eq!((check.code, check.stdout.as_str()), (0, ""), "{}", check.stderr);
}

#[cfg(unix)]
#[test]
fn a_topic_folder_that_links_out_of_the_root_is_not_written_through() {
    let root = TestRoot::new();
    let outside = tempfile::tempdir().unwrap();
    root.run(&["new", "overview", "Acme", "-w", "acme", "--description", "The Acme workspace."]);
    std::os::unix::fs::symlink(outside.path(), root.path().join("resources/workspaces/acme/_lessons")).unwrap();
    let out = root.run(&["new", "lesson", "Out", "-w", "acme", "--description", "d"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("_lessons"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written outside the root");
}

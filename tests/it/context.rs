//! `tmws context` (workspace_get_context) on the sample root: every scope level, topic and
//! filter as a snapshot of the YAML an agent reads, and the contract's rules as exact
//! assertions.

use serde_json::Value;

use super::util::{Output, TestRoot};

fn ok(out: Output) -> String {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    out.stdout
}

fn json(root: &TestRoot, args: &[&str]) -> Value {
    let mut all = vec!["context", "--format", "json"];
    all.extend_from_slice(args);
    let text = ok(root.run(&all));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|e| e["_meta"]["document_path"].as_str().unwrap().to_owned())
        .collect()
}

const DT: &str = "resources/workspaces/devtools";

#[test]
fn snapshots_of_every_scope_level_topic_and_filter() {
    let root = TestRoot::sample();
    let cases: [(&str, &[&str]); 12] = [
        ("defaults_workspace", &["-w", "devtools"]),
        ("defaults_domain", &["-w", "devtools", "-d", "common"]),
        ("defaults_repository", &["-w", "devtools", "-d", "common", "-r", "tmws-cli"]),
        ("all_topics_domain", &["-w", "devtools", "-d", "common", "--topics", "*", "--no-defaults"]),
        (
            "overview_topic",
            &["-w", "devtools", "-d", "common", "-r", "tmws-cli", "--topics", "overview", "--no-defaults"],
        ),
        ("plans_in_progress", &["-w", "devtools", "--topics", "plans", "--status", "in_progress", "--no-defaults"]),
        ("plans_tag_migration", &["-w", "devtools", "--topics", "plans", "--tag", "migration", "--no-defaults"]),
        (
            "decisions_category",
            &["-w", "devtools", "--topics", "decisions", "--category", "architecture", "--no-defaults"],
        ),
        (
            "spikes_repository_inherits_overview",
            &["-w", "devtools", "-d", "common", "-r", "tmws-cli", "--topics", "spikes", "--no-defaults"],
        ),
        (
            "unknown_topic_and_status_notes",
            &["-w", "devtools", "--topics", "plans,nosuch", "--status", "shipped", "--no-defaults"],
        ),
        ("japanese_workspace", &["-w", "nihongo", "--topics", "*"]),
        ("japanese_repository", &["-w", "nihongo", "-d", "mobile", "--topics", "lessons", "--no-defaults"]),
    ];
    for (name, args) in cases {
        let mut all = vec!["context"];
        all.extend_from_slice(args);
        let text = ok(root.run(&all));
        insta::assert_snapshot!(format!("context_{name}"), text);
        // The YAML parses, and says the same as the JSON form.
        let yaml = super::util::yaml(&text).unwrap_or_else(|| panic!("{name}: not YAML:\n{text}"));
        let json = json(&root, args);
        assert_eq!(
            yaml.as_hash().unwrap().keys().map(|k| k.as_str().unwrap().to_owned()).collect::<Vec<_>>(),
            json.as_object().unwrap().keys().cloned().collect::<Vec<_>>(),
            "{name}"
        );
    }
}

#[test]
fn the_scope_ladder_sees_ancestors_never_siblings() {
    let root = TestRoot::sample();
    let v = json(&root, &["-w", "devtools", "-d", "common", "-r", "tmws-cli"]);
    assert_eq!(
        paths(&v["defaults"]["decisions_t0"]),
        [
            format!("{DT}/common/tmws-cli/_decisions/260705-clap-derive.md"),
            format!("{DT}/common/_decisions/260501-tantivy-index.md"),
            format!("{DT}/_decisions/260402-jsonl-logs.md"),
            format!("{DT}/_decisions/260310-single-binary.md"),
        ]
    );
    // Overviews are every OVERVIEW.md within the scope: the repository's own, no sibling's.
    assert_eq!(paths(&v["defaults"]["overviews"]), [format!("{DT}/common/tmws-cli/OVERVIEW.md")]);
    // Topic entries are everything below the scope, newest first.
    let v = json(&root, &["-w", "devtools", "--topics", "plans", "--no-defaults"]);
    let created: Vec<&str> =
        v["plans"]["entries"].as_array().unwrap().iter().map(|e| e["created"].as_str().unwrap()).collect();
    let mut sorted = created.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(created, sorted);
    assert_eq!(created.len(), 7, "five in common, one in each repository: {created:?}");
    assert!(v.get("defaults").is_none());
}

#[test]
fn unknown_scopes_list_what_exists_and_bad_names_are_refused() {
    let root = TestRoot::sample();
    let out = root.run(&["context", "-w", "nope"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(
        out.stderr,
        "tmws: unknown workspace `nope`; known: devtools, nihongo
  hint: to create the workspace `nope`, run `tmws new overview NAME -w nope --description TEXT` (entry_write with \
topic `overview`), or write resources/workspaces/nope/OVERVIEW.md with `name` and `description` in its front-matter
"
    );
    let out = root.run(&["context", "-w", "devtools", "-d", "common", "-r", "nope"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "tmws: unknown repository `nope` in `devtools/common`; known: registry-service, tmws-cli
  hint: to create the repository `nope`, run `tmws new overview NAME -w devtools -d common -r nope --description \
TEXT` (entry_write with topic `overview`), or write resources/workspaces/devtools/common/nope/OVERVIEW.md with `name` \
and `description` in its front-matter
"
    );
    // A typo of a known name is named: two edits away at most.
    let out = root.run(&["context", "-w", "devtols"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr.lines().nth(1),
        Some(
            "  hint: did you mean `devtools`? Or, to create the workspace `devtols`, run `tmws new overview NAME -w \
devtols --description TEXT` (entry_write with topic `overview`), or write resources/workspaces/devtols/OVERVIEW.md \
with `name` and `description` in its front-matter"
        )
    );
    let out = root.run(&["context", "-w", "devtools", "-d", "comon"]);
    assert!(out.stderr.contains("hint: did you mean `common`? Or, to create the domain `comon`"), "{}", out.stderr);
    let out = root.run(&["context", "-w", "payments"]);
    assert!(!out.stderr.contains("did you mean"), "nothing is near `payments`: {}", out.stderr);
    for bad in ["..", "../devtools", "/etc", "a b", "dev\\tools", "."] {
        let out = root.run(&["context", "-w", bad]);
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(out.stderr.starts_with("tmws: "), "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("scope name"), "{bad}: {}", out.stderr);
    }
    let out = root.run(&["context", "-w", "devtools", "-r", "tmws-cli"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: a `--repository` needs its `--domain`\n"));
}

#[test]
fn a_long_answer_is_cut_with_a_hint_and_fits_the_cap() {
    let root = TestRoot::sample();
    let whole = json(&root, &["-w", "devtools", "--topics", "*"]);
    assert!(whole.get("truncated").is_none() && whole.get("hint").is_none());
    for i in 0..200 {
        root.write(
            &format!("{DT}/common/_lessons/2601{:02}-l{i}.md", 1 + i % 28),
            format!(
                "---\nname: Lesson {i}\ndescription: Lesson number {i}.\ncreated: 2026-01-{:02}\n---\n{}\n",
                1 + i % 28,
                "body text ".repeat(40)
            ),
        );
    }
    let text = ok(root.run(&["context", "-w", "devtools", "--topics", "lessons", "--max-chars", "6000"]));
    assert!(text.chars().count() <= 6000, "{}", text.chars().count());
    let v = super::util::yaml(&text).unwrap();
    assert_eq!(v["truncated"].as_bool(), Some(true));
    let hint = v["hint"].as_str().unwrap();
    assert!(hint.starts_with("answer cut to fit max_chars: "), "{hint}");
    assert!(hint.contains("body_t1"), "{hint}");
    let kept_small = v["lessons"]["entries"].as_vec().map_or(0, Vec::len);
    // A larger cap keeps more, within the cap (bodies go first, then entries).
    let text = ok(root.run(&["context", "-w", "devtools", "--topics", "lessons", "--max-chars", "60000"]));
    assert!(text.chars().count() <= 60000);
    let v = super::util::yaml(&text).unwrap();
    let kept = v["lessons"]["entries"].as_vec().unwrap();
    assert!(kept.len() > kept_small, "{} vs {kept_small}", kept.len());
    // Bodies go before entries, from the end of the list: what keeps its body is a prefix.
    let with_body: Vec<bool> = kept.iter().map(|e| !e["body_t1"].is_badvalue()).collect();
    assert_eq!(kept.len(), 203, "cutting bodies was enough");
    assert!(with_body.windows(2).all(|w| w[0] || !w[1]), "{with_body:?}");
    assert!(with_body[0] && !with_body[202]);
}

#[test]
fn a_huge_scope_keeps_a_shallow_tree_and_a_prefix_of_its_overviews() {
    let root = TestRoot::new();
    for d in 0..6 {
        for r in 0..40 {
            let dir = format!("resources/workspaces/big/d{d}/r{r:02}");
            root.write(
                &format!("{dir}/OVERVIEW.md"),
                format!("---\nname: Repo {d}-{r}\ndescription: {}\n---\n", "words ".repeat(12)),
            );
            for t in ["_plans", "_lessons"] {
                std::fs::create_dir_all(root.path().join(&dir).join(t)).unwrap();
            }
        }
    }
    root.write(
        "resources/workspaces/big/_decisions/260101-a.md",
        "---\nname: A\ndescription: D.\ncreated: 2026-01-01\n---\n",
    );
    let text = ok(root.run(&["context", "-w", "big", "--max-chars", "16000"]));
    assert!(text.chars().count() <= 16000, "{}", text.chars().count());
    let v: Value =
        serde_json::from_str(&ok(root.run(&["context", "-w", "big", "--max-chars", "16000", "--format", "json"])))
            .unwrap();
    // The tree: domains and repositories (within a quarter of the cap), not the 480 topic folders.
    let tree = v["defaults"]["folder_structure"].as_str().unwrap();
    assert!(tree.starts_with("resources/workspaces/big/\n├── _decisions/\n├── d0/\n│   ├── r00/\n"), "{tree}");
    assert!(tree.ends_with("… folders deeper than 2 levels left out (ask for a narrower scope)\n"), "{tree}");
    assert!(!tree.contains("_plans"));
    // The overviews: the first ones in path order, and the hint counts the rest.
    let kept = paths(&v["defaults"]["overviews"]);
    assert!(!kept.is_empty() && kept.len() < 240, "{}", kept.len());
    let expected: Vec<String> =
        (0..kept.len()).map(|i| format!("resources/workspaces/big/d{}/r{:02}/OVERVIEW.md", i / 40, i % 40)).collect();
    assert_eq!(kept, expected);
    // Overviews are cut last: the decision went before them.
    assert_eq!(v["defaults"]["decisions_t0"], serde_json::json!([]));
    assert_eq!(v["truncated"], true);
    let left_out = 240 - kept.len() + 1;
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .starts_with(&format!("answer cut to fit max_chars: {left_out} default items left out;")),
        "{}",
        v["hint"]
    );
    // A narrower scope shows its whole tree.
    let v = json(&root, &["-w", "big", "-d", "d0", "-r", "r00"]);
    assert_eq!(v["defaults"]["folder_structure"], "resources/workspaces/big/d0/r00/\n├── _lessons/\n└── _plans/\n");
}

#[test]
fn a_new_file_is_in_the_next_answer() {
    let root = TestRoot::sample();
    let before = json(&root, &["-w", "nihongo", "--topics", "lessons", "--no-defaults"]);
    assert_eq!(before["lessons"]["entries"].as_array().unwrap().len(), 1);
    root.write(
        "resources/workspaces/nihongo/_lessons/261122-new.md",
        "---\nname: 新しい教訓\ndescription: 追加した。\ncreated: 2026-11-22\n---\n本文\n",
    );
    let after = json(&root, &["-w", "nihongo", "--topics", "lessons", "--no-defaults"]);
    assert_eq!(
        paths(&after["lessons"]["entries"]),
        [
            "resources/workspaces/nihongo/_lessons/261122-new.md",
            "resources/workspaces/nihongo/mobile/_lessons/260915-connection-pool.md"
        ]
    );
    assert_eq!(after["lessons"]["entries"][0]["body_t1"], "本文");
}

#[test]
fn beside_a_writer_that_is_applying_changes_answers_say_stale() {
    let root = TestRoot::sample();
    // This test holds the writer role, as a watcher or server in another process would.
    let engine = tmws::query::Engine::open(root.path()).unwrap();
    let sync = || engine.sync(&tmws::query::SyncOptions::default()).unwrap();
    assert!(!sync().reader_only, "this test holds the writer role");
    let marker = root.path().join(format!("{}/syncing", tmws::INDEX_HOME));
    assert!(!marker.exists());
    let fresh = json(&root, &["-w", "nihongo", "--no-defaults", "--topics", "lessons"]);
    assert_eq!(fresh.get("stale"), None);
    let search = ok(root.run(&["search", "接続", "--format", "json"]));
    assert!(!search.contains("stale"), "{search}");

    // The writer found changes and has not committed yet: readers wait briefly, then say so.
    root.write(&format!("{}/syncing", tmws::INDEX_HOME), "4242");
    let started = std::time::Instant::now();
    let v = json(&root, &["-w", "nihongo", "--no-defaults", "--topics", "lessons"]);
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    assert_eq!(v["stale"], true);
    assert_eq!(paths(&v["lessons"]["entries"]), paths(&fresh["lessons"]["entries"]));
    let search: Value = serde_json::from_str(&ok(root.run(&["search", "接続", "--format", "json"]))).unwrap();
    assert_eq!(search["stale"], true);

    // A marker left by a writer killed mid-sync goes with the next sync, even one with
    // nothing to do.
    sync();
    assert!(!marker.exists());
    root.write(&format!("{}/syncing", tmws::INDEX_HOME), "4242");

    // Once the writer's sync is done, the marker is gone and so is `stale`.
    root.write(
        "resources/workspaces/nihongo/_lessons/261122-new.md",
        "---\nname: 新しい\ndescription: 追加。\ncreated: 2026-11-22\n---\n",
    );
    sync();
    assert!(!marker.exists());
    let v = json(&root, &["-w", "nihongo", "--no-defaults", "--topics", "lessons"]);
    assert_eq!(v.get("stale"), None);
    assert_eq!(v["lessons"]["entries"][0]["name"], "新しい");
}

/// Regression: `context --topics decision` answered no topic at all while `new decision`
/// wrote into `_decisions/`. A topic is named in the singular or the plural, with or
/// without its folder's `_`, alike on every surface and in `.tmws/schemas/`.
#[test]
fn a_topic_named_in_the_singular_answers_as_in_the_plural() {
    let root = TestRoot::sample();
    let plural = json(&root, &["-w", "devtools", "--topics", "decisions", "--no-defaults"]);
    let decisions = paths(&plural["decisions"]["entries"]);
    assert!(decisions.len() >= 2, "{plural}");
    for name in ["decision", "_decisions", " decision "] {
        let answer = json(&root, &["-w", "devtools", "--topics", name, "--no-defaults"]);
        assert_eq!(answer, plural, "--topics {name}");
    }
    let search = |topic: &str| {
        let out = root.run(&["--json", "search", "binary", "--topic", topic]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str::<Value>(&out.stdout).unwrap()["results"].clone()
    };
    let found = search("decisions");
    assert!(!found.as_array().unwrap().is_empty(), "{found}");
    assert_eq!(search("decision"), found);
    // A schema override named in the singular is the topic's.
    let strict = r#"{"type": "object", "required": ["owner"]}"#;
    root.write(".tmws/schemas/decision.schema.json", strict);
    let out = root.run(&["check", &format!("{DT}/_decisions/260310-single-binary.md")]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("owner"), "{}", out.stdout);
}

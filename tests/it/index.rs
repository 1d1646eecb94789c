//! `tmws index` and `tmws search`: sync, analysis, filters, docs, determinism.

use super::util::{TestRoot, copy_tree, corpora};

fn hits(out: &super::util::Output) -> Vec<String> {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v["results"].as_array().unwrap().iter().map(|h| h["refId"].as_str().unwrap().to_owned()).collect()
}

fn entry(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\nstatus: new\ncreated: 2026-01-01\n---\n{body}\n")
}

#[test]
fn sync_counts_new_changed_removed_and_a_second_sync_does_nothing() {
    let root = TestRoot::new()
        .file("resources/workspaces/w/OVERVIEW.md", "---\nname: W\ndescription: The workspace.\n---\n")
        .file("resources/workspaces/w/_plans/260101-a.md", entry("Alpha", "First plan.", "alpha body"))
        .file("resources/workspaces/w/_plans/260102-b.md", entry("Beta", "Second plan.", "beta body"));
    let out = root.run(&["index"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("indexed 3 new, 0 changed, 0 removed in "), "{}", out.stdout);
    assert!(!out.stdout.contains("rebuilt"), "{}", out.stdout);
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed in "), "{}", out.stdout);

    root.write("resources/workspaces/w/_plans/260101-a.md", entry("Alpha", "First plan, renamed gamma.", "alpha body"));
    std::fs::remove_file(root.path().join("resources/workspaces/w/_plans/260102-b.md")).unwrap();
    root.write("resources/workspaces/w/_plans/260103-c.md", entry("Gamma", "Third plan.", "gamma body"));
    let out = root.run(&["--json", "index"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (v["new"].as_u64(), v["changed"].as_u64(), v["removed"].as_u64(), v["items"].as_u64()),
        (Some(1), Some(1), Some(1), Some(3))
    );
    assert_eq!(
        hits(&root.run(&["--json", "search", "gamma"])),
        vec!["resources/workspaces/w/_plans/260103-c.md", "resources/workspaces/w/_plans/260101-a.md"]
    );
    assert!(hits(&root.run(&["--json", "search", "beta"])).is_empty());
}

#[test]
fn small_syncs_journal_the_manifest_and_the_next_process_replays_the_journal() {
    let plan = |n: u32| format!("resources/workspaces/w/_plans/26010{n}-p.md");
    let root = TestRoot::new()
        .file(&plan(1), entry("Alpha", "First plan.", "alpha body"))
        .file(&plan(2), entry("Beta", "Second plan.", "beta body"));
    assert!(root.run(&["index"]).stdout.starts_with("indexed 2 new, 0 changed, 0 removed"));
    let manifest_path = root.path().join(format!("{}/manifest.bin", tmws::INDEX_HOME));
    let journal = root.path().join(format!("{}/manifest.log", tmws::INDEX_HOME));
    let manifest = std::fs::read(&manifest_path).unwrap();
    assert!(!journal.exists());

    root.write(&plan(1), entry("Alpha", "First plan, now gamma.", "alpha body"));
    std::fs::remove_file(root.path().join(plan(2))).unwrap();
    root.write(&plan(3), entry("Gamma", "Third plan.", "gamma body"));
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 1 new, 1 changed, 1 removed"), "{}", out.stdout);
    // The manifest is as the full build wrote it; the three changes went to the journal.
    assert_eq!(std::fs::read(&manifest_path).unwrap(), manifest);
    let one_record = std::fs::metadata(&journal).unwrap().len();
    assert!(one_record > 0);
    // A new process replays it and has nothing to do. Without the journal its manifest
    // would be a commit behind the index, and it would rebuild everything.
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed"), "{}", out.stdout);
    assert!(!out.stdout.contains("rebuilt"), "{}", out.stdout);

    // A torn record (a crash in the middle of an append) is ignored, and the next append
    // writes over it.
    let mut torn = std::fs::read(&journal).unwrap();
    torn.extend_from_slice(b"TMWSMJ01\x40\x00\x00\x00half a rec");
    std::fs::write(&journal, &torn).unwrap();
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed"), "{}", out.stdout);
    root.write(&plan(3), entry("Gamma", "Third plan, changed.", "gamma body"));
    assert!(root.run(&["index"]).stdout.starts_with("indexed 0 new, 1 changed, 0 removed"));
    let journal_bytes = std::fs::read(&journal).unwrap();
    assert!(!journal_bytes.windows(10).any(|w| w == b"half a rec"));
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed"), "{}", out.stdout);
    assert!(!out.stdout.contains("rebuilt"), "{}", out.stdout);
    assert_eq!(hits(&root.run(&["--json", "search", "gamma"])), vec![plan(3), plan(1)]);

    // A rebuild writes the manifest whole and drops the journal.
    assert!(root.run(&["index", "--rebuild"]).stdout.starts_with("indexed 2 new, 0 changed, 0 removed"));
    assert!(!journal.exists());
    assert_ne!(std::fs::read(&manifest_path).unwrap(), manifest);
    assert!(root.run(&["index"]).stdout.starts_with("indexed 0 new, 0 changed, 0 removed"));
}

#[test]
fn analysis_finds_stems_identifier_parts_and_cjk_words() {
    let root = TestRoot::new()
        .file(
            "resources/workspaces/w/_lessons/260101-one.md",
            entry("Architecture decision", "Why we chose it.", "plain"),
        )
        .file("resources/workspaces/w/_lessons/260102-two.md", entry("Tools", "Call get_symbols_overview first.", "x"))
        .file("resources/workspaces/w/_lessons/260103-three.md", entry("Docs", "Use getLibraryDocs for APIs.", "x"))
        .file(
            "resources/workspaces/w/_lessons/260104-ja.md",
            entry("メモ", "データベース接続プールの設定を変更した", "x"),
        )
        .file("resources/workspaces/w/_lessons/260105-zh.md", entry("备注", "我们修改了数据库连接池的配置", "x"))
        .file("resources/workspaces/w/_lessons/260106-ko.md", entry("메모", "데이터베이스연결풀 설정을 변경했다", "x"));
    let find = |q: &str| hits(&root.run(&["--json", "search", q]));
    let lesson = |n: &str| format!("resources/workspaces/w/_lessons/{n}.md");
    assert_eq!(find("decisions"), vec![lesson("260101-one")]);
    assert_eq!(find("symbols"), vec![lesson("260102-two")]);
    assert_eq!(find("LibraryDocs"), vec![lesson("260103-three")]);
    assert_eq!(find("接続"), vec![lesson("260104-ja")]);
    assert_eq!(find("连接池"), vec![lesson("260105-zh")]);
    assert_eq!(find("연결"), vec![lesson("260106-ko")]);
}

#[test]
fn html_tags_in_a_body_are_not_searched_and_the_text_around_them_is() {
    let body = "<span id=\"quokkaanchor\"></span>\n<table class=\"wombatstyle\"><tr><td>Pelican value</td></tr></table>\n\
                See [the page](echidna-page.md) and std::vector<numbat> items.<!-- platypus note -->";
    let root =
        TestRoot::new().file("resources/workspaces/w/_lessons/260101-html.md", entry("Marsupials", "Notes.", body));
    let find = |q: &str| hits(&root.run(&["--json", "search", q]));
    let lesson = vec!["resources/workspaces/w/_lessons/260101-html.md".to_owned()];
    // What a reader sees, link targets and what only looks like a tag are found.
    assert_eq!(find("pelican"), lesson);
    assert_eq!(find("echidna"), lesson);
    assert_eq!(find("numbat"), lesson);
    // Tags' attributes and comments are not.
    for hidden in ["quokkaanchor", "wombatstyle", "platypus"] {
        assert_eq!(find(hidden), Vec::<String>::new(), "{hidden}");
    }
    // The whole body is read back as the file has it.
    let out = root.run(&["--json", "read", "resources/workspaces/w/_lessons/260101-html.md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["body"].as_str().map(str::trim_end), Some(body), "{}", out.stdout);
}

#[test]
fn filters_narrow_by_scope_topic_kind_status_and_tag() {
    let root = TestRoot::new()
        .file("resources/workspaces/w/OVERVIEW.md", "---\nname: W cache\ndescription: About the cache.\n---\n")
        .file(
            "resources/workspaces/w/d/_plans/260101-a.md",
            "---\nname: Cache plan\ndescription: d\nstatus: done\ncreated: 2026-01-01\ntags: [perf]\n---\n",
        )
        .file(
            "resources/workspaces/w/d/r/_plans/260102-b.md",
            "---\nname: Cache plan two\ndescription: d\nstatus: new\ncreated: 2026-01-02\n---\n",
        )
        .file(
            "resources/workspaces/w2/_lessons/260103-c.md",
            "---\nname: Cache lesson\ndescription: d\ncreated: 2026-01-03\n---\n",
        );
    let find = |args: &[&str]| {
        let mut a = vec!["--json", "search", "cache"];
        a.extend_from_slice(args);
        let mut h = hits(&root.run(&a));
        h.sort();
        h
    };
    assert_eq!(find(&[]).len(), 4);
    assert_eq!(
        find(&["--scope", "w/d"]),
        vec!["resources/workspaces/w/d/_plans/260101-a.md", "resources/workspaces/w/d/r/_plans/260102-b.md"]
    );
    assert_eq!(find(&["--topic", "lessons"]), vec!["resources/workspaces/w2/_lessons/260103-c.md"]);
    assert_eq!(find(&["--kind", "overview"]), vec!["resources/workspaces/w/OVERVIEW.md"]);
    assert_eq!(find(&["--status", "new"]), vec!["resources/workspaces/w/d/r/_plans/260102-b.md"]);
    assert_eq!(find(&["--tag", "perf"]), vec!["resources/workspaces/w/d/_plans/260101-a.md"]);
    let out = root.run(&["search", "cache", "--scope", "../etc"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "tmws: `..` is not a valid scope name: `.` and `..` are not allowed\n")
    );
    let out = root.run(&["search", "cache", "--kind", "nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("tmws: unknown kind `nope`; known kinds: overview, topic_overview, entry"),
        "{}",
        out.stderr
    );
}

#[test]
fn empty_and_punctuation_only_queries_are_clear_errors_and_syntax_is_not_interpreted() {
    let root = TestRoot::new()
        .file("resources/workspaces/w/OVERVIEW.md", "---\nname: W\ndescription: AND OR NOT title:x\n---\n");
    let out = root.run(&["search", "  "]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: empty query: give some words to search for\n"));
    let out = root.run(&["search", "+-:()"]);
    assert_eq!((out.code, out.stderr.as_str()), (2, "tmws: nothing to search for in `+-:()`: it has no words\n"));
    assert_eq!(hits(&root.run(&["--json", "search", "title:x AND ("])), vec!["resources/workspaces/w/OVERVIEW.md"]);
    let out = root.run(&["search", "nothing-matches-this", "--format", "table"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "no results for `nothing-matches-this`\n"));
    let out = root.run(&["search", "nothing-matches-this"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "query: nothing-matches-this\nresults: []\n"));
}

#[test]
fn search_answers_yaml_when_piped_and_aligned_columns_on_request() {
    let root = TestRoot::sample();
    let out = root.run(&["search", "connection pool", "--limit", "2"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "query: connection pool
results:
  - refId: resources/workspaces/devtools/common/_features/260601-lazy-pool.md
    kind: entry
    scope: devtools/common
    topic: features
    name: Lazy connection pool
    summary: Downstream MCP servers start on first call and close after a TTL; at most ten live.
    tags:
      - mcp
      - pool
    status: building
    score: 100
    matched:
      - connection
      - pool
  - refId: resources/workspaces/devtools/common/registry-service/_plans/260801-introspection.md
    kind: entry
    scope: devtools/common/registry-service
    topic: plans
    name: Introspect servers once
    summary: \"Connect to each server once at build time, record its tools, then disconnect.\"
    tags:
      - registry
    status: done
    score: 5
    matched:
      - connection
"
    );
    let out = root.run(&["search", "connection pool", "--limit", "2", "--format", "table"]);
    assert_eq!(
        out.stdout,
        " 100%  entry  devtools/common                   resources/workspaces/devtools/common/_features/260601-lazy-pool.md                    \
Lazy connection pool: Downstream MCP servers start on first call and close after a TTL; at most ten…
   5%  entry  devtools/common/registry-service  resources/workspaces/devtools/common/registry-service/_plans/260801-introspection.md  \
Introspect servers once: Connect to each server once at build time, record its tools, then disconnect.
"
    );
    // --json and --format json are the same answer.
    let a = root.run(&["--json", "search", "connection pool"]).stdout;
    let b = root.run(&["search", "connection pool", "--format", "json"]).stdout;
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["results"][1]["score"], 5);
}

#[test]
fn broken_front_matter_is_indexed_by_body_and_file_name() {
    let root = TestRoot::new()
        .file("resources/workspaces/w/_plans/260101-token-refresh.md", "---\nname: [oops\n---\nRetry once on 401.\n");
    let out = root.run(&["--json", "search", "token"]);
    assert_eq!(hits(&out), vec!["resources/workspaces/w/_plans/260101-token-refresh.md"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["name"], "260101 token refresh");
    assert_eq!(v["results"][0]["summary"], "Retry once on 401.");
}

#[test]
fn included_docs_are_searchable_in_place_by_their_title() {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[index]\ninclude = [\"docs/adr\"]\n")
        .file(
            "docs/adr/0001-use-tantivy.md",
            "---\ntitle: Use tantivy for search\nstatus: accepted\n---\nWe index Markdown.\n",
        )
        .file("notes/n.md", "---\ntitle: Tantivy notes\n---\n")
        .file("guide/g.md", "---\ntitle: Tantivy guide\n---\n");
    assert_eq!(hits(&root.run(&["--json", "search", "tantivy"])), vec!["docs/adr/0001-use-tantivy.md"]);
    // `index.include` is the one way: the flag that added a folder for one run (which the
    // next sync dropped) says where to put it instead.
    let out = root.run(&["index", "--include", "notes", "--include", "guide/*.md"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            2,
            "tmws: --include notes: the flag is gone (the next sync dropped what it added)\n  hint: add the folders to \
.tmws/config.toml for good: [index] include = [\"notes\", \"guide/*.md\"]\n"
        )
    );
    root.write(".tmws/config.toml", "[index]\ninclude = [\"docs/adr\", \"notes\", \"guide/*.md\"]\n");
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 2 new, 0 changed, 0 removed"), "{}", out.stdout);
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed"), "{}", out.stdout);
    let mut found = hits(&root.run(&["--json", "search", "tantivy"]));
    found.sort();
    assert_eq!(found, vec!["docs/adr/0001-use-tantivy.md", "guide/g.md", "notes/n.md"]);
}

#[test]
fn deleting_the_cache_gives_the_same_answers() {
    let root = TestRoot::sample();
    let queries = ["decisions", "watcher", "接続", "plan", "tmws", "\"static binary\""];
    let run = || queries.iter().map(|q| root.run(&["--json", "search", q]).stdout).collect::<Vec<_>>();
    let first = run();
    assert!(first.iter().all(|o| o.contains("refId")), "{first:?}");
    std::fs::remove_dir_all(root.path().join(".tmws/cache")).unwrap();
    assert_eq!(run(), first);
    let out = root.run(&["index", "--rebuild"]);
    assert!(out.stdout.contains("(rebuilt)"), "{}", out.stdout);
    assert_eq!(run(), first);
}

#[test]
fn equal_scores_are_ordered_by_the_refid_rank_in_every_build() {
    let root = TestRoot::new();
    let path = |i: usize| format!("resources/workspaces/w/_lessons/2601{:02}-same.md", i + 1);
    let same = entry("Twin", "Identical twin lesson.", "twin body");
    // Two batches, so the items sit in different segments.
    for i in 0..6 {
        root.write(&path(i), &same);
    }
    assert_eq!(root.run(&["index"]).code, 0);
    for i in 6..12 {
        root.write(&path(i), &same);
    }
    let mut all: Vec<String> = (0..12).map(path).collect();
    // The rank: the first 8 bytes of the refId's blake3, big-endian.
    all.sort_by_key(|p| u64::from_be_bytes(blake3::hash(p.as_bytes()).as_bytes()[..8].try_into().unwrap()));
    // Ties straddling the cut, and ties wholly inside the answer.
    assert_eq!(hits(&root.run(&["--json", "search", "--limit", "5", "twin"])), all[..5]);
    assert_eq!(hits(&root.run(&["--json", "search", "--limit", "20", "twin"])), all);
    assert_eq!(root.run(&["index", "--rebuild"]).code, 0);
    assert_eq!(hits(&root.run(&["--json", "search", "--limit", "5", "twin"])), all[..5]);
}

#[test]
fn a_corrupt_or_foreign_index_is_rebuilt_with_one_line() {
    let root =
        TestRoot::new().file("resources/workspaces/w/OVERVIEW.md", "---\nname: W\ndescription: hello world\n---\n");
    assert_eq!(hits(&root.run(&["--json", "search", "hello"])), vec!["resources/workspaces/w/OVERVIEW.md"]);
    root.write(&format!("{}/segments/meta.json", tmws::INDEX_HOME), "{ not json");
    let out = root.run(&["index"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.starts_with("tmws: rebuilt the index from the files: it could not be opened"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().filter(|l| l.starts_with("tmws:")).count(), 1, "{}", out.stderr);
    assert_eq!(hits(&root.run(&["--json", "search", "hello"])), vec!["resources/workspaces/w/OVERVIEW.md"]);
}

#[test]
fn a_no_op_sync_compares_size_and_mtime_and_reads_nothing() {
    let rel = "resources/workspaces/w/_plans/260101-a.md";
    let root = TestRoot::new().file(rel, entry("Alpha", "First plan.", "original words"));
    assert!(root.run(&["index"]).stdout.starts_with("indexed 1 new"));
    // Same size, same mtime, other bytes: a sync that read the file would see the change.
    let path = root.path().join(rel);
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = root.read(rel).replace("original words", "replaced words");
    std::fs::write(&path, &text).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let out = root.run(&["index"]);
    assert!(out.stdout.starts_with("indexed 0 new, 0 changed, 0 removed"), "{}", out.stdout);
    assert_eq!(hits(&root.run(&["--json", "search", "original"])), vec![rel.to_owned()]);
    // Touching the file (a new mtime) makes the next sync read and re-index it.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime + std::time::Duration::from_secs(5))
        .unwrap();
    assert!(root.run(&["index"]).stdout.starts_with("indexed 0 new, 1 changed"));
    assert_eq!(hits(&root.run(&["--json", "search", "replaced"])), vec![rel.to_owned()]);
}

fn memory(id: &str, ns: &str, content: &str) -> String {
    format!(
        "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"{ns}\",\"at\":\"2026-11-22T10:00:00Z\",\"expires_at\":\"2036-11-20T10:00:00Z\",\"kind\":\"note\",\"content\":\"{content}\",\"tags\":[\"t\"],\"importance\":0.5}}\n"
    )
}

fn append(root: &TestRoot, rel: &str, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(root.path().join(rel)).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

const LOG: &str = ".tmws/memory/long-term.jsonl";

#[test]
fn memory_logs_are_indexed_from_their_checkpoint_and_converge_like_a_rebuild() {
    let root = TestRoot::new().file(LOG, memory("m_000000000001", "long-term", "the deploy window is Tuesday"));
    assert_eq!(hits(&root.run(&["--json", "search", "--kind", "memory", "deploy"])), ["m_000000000001"]);

    // Appended lines: an add, a delete of the first entry, a bad line, a torn last line.
    append(
        &root,
        LOG,
        &format!(
            "{}{{\"op\":\"delete\",\"id\":\"m_000000000001\",\"at\":\"2026-11-22T11:00:00Z\"}}\nnot json\n{{\"op\":\"add\",\"id\":\"m_0000000",
            memory("m_000000000002", "long-term", "token refresh retries once")
        ),
    );
    let out = root.run(&["--json", "index"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!((v["changed"].as_u64(), v["items"].as_u64()), (Some(1), Some(1)), "{}", out.stdout);
    assert_eq!(hits(&root.run(&["--json", "search", "token refresh"])), ["m_000000000002"]);
    assert!(hits(&root.run(&["--json", "search", "deploy"])).is_empty());

    // The writer repairs the torn line by starting a new one; the fragment stays a bad line.
    append(&root, LOG, &format!("\n{}", memory("m_000000000003", "long-term", "compaction runs at night")));
    assert_eq!(hits(&root.run(&["--json", "search", "compaction"])), ["m_000000000003"]);

    // An update is folded by reading the log again whole.
    append(
        &root,
        LOG,
        "{\"op\":\"update\",\"id\":\"m_000000000002\",\"at\":\"2026-11-22T12:00:00Z\",\"set\":{\"summary\":\"Retry on 401 once\"}}\n",
    );
    let out = root.run(&["--json", "search", "401"]);
    assert_eq!(hits(&out), ["m_000000000002"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["summary"], "Retry on 401 once");

    // Compaction rewrites the log: the prefix changed, so it is read whole.
    root.write(LOG, memory("m_000000000003", "long-term", "compaction runs at night"));
    assert!(hits(&root.run(&["--json", "search", "token"])).is_empty());
    assert_eq!(hits(&root.run(&["--json", "search", "compaction"])), ["m_000000000003"]);

    // What the checkpoints built equals a rebuild from the files.
    append(&root, LOG, &memory("m_000000000004", "long-term", "night builds share the cache"));
    let before: Vec<Vec<String>> =
        ["night", "compaction", "cache"].iter().map(|q| hits(&root.run(&["--json", "search", q]))).collect();
    let out = root.run(&["index", "--rebuild"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after: Vec<Vec<String>> =
        ["night", "compaction", "cache"].iter().map(|q| hits(&root.run(&["--json", "search", q]))).collect();
    assert_eq!(before, after);
    assert_eq!(after[0], ["m_000000000003", "m_000000000004"]);
}

#[test]
fn the_sample_memories_are_searchable_and_deleted_ones_are_not() {
    let root = TestRoot::sample();
    let find = |q: &str| hits(&root.run(&["--json", "search", "--kind", "memory", q]));
    assert_eq!(find("接続"), ["m_18e10fcaaa85"]);
    assert_eq!(find("Tuesdays"), ["m_0f3649b391f9"]);
    assert!(find("CI cores").is_empty(), "deleted in short-term.jsonl");
}

#[test]
fn a_doc_without_a_title_is_named_by_its_first_heading_with_a_plain_summary() {
    let root = TestRoot::new().file(".tmws/config.toml", "[index]\ninclude = [\"docs\"]\n");
    for (rel, bytes) in copy_tree(&corpora().join("thanos-docs/docs/proposals-done")) {
        root.write(&format!("docs/proposals-done/{rel}"), bytes);
    }
    let out = root.run(&["--json", "search", "grpc", "query", "api"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let first = &v["results"][0];
    assert_eq!(
        (&first["refId"], &first["name"], &first["summary"]),
        (
            &serde_json::json!("docs/proposals-done/202203-grpc-query-api.md"),
            &serde_json::json!("Introduce a Query gRPC API"),
            &serde_json::json!("Owners: @fpetkovski @mzardab")
        ),
        "{}",
        out.stdout
    );
    // A `title` still wins over the heading (`# 2021-06: Proposal Process`), and inline
    // Markdown of the first paragraph is gone from the summary.
    let out = root.run(&["--json", "search", "proposal", "process"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let first = &v["results"][0];
    assert_eq!(
        (&first["refId"], &first["name"], &first["summary"]),
        (
            &serde_json::json!("docs/proposals-done/202106-proposals-process.md"),
            &serde_json::json!("Proposal Process"),
            &serde_json::json!("Owners:: @bwplotka")
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn several_words_rank_whole_names_then_phrases_then_every_word() {
    let doc = |name: &str, description: &str, body: &str| {
        format!("---\ntitle: {name}\ndescription: {description}\n---\n{body}\n")
    };
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[index]\ninclude = [\"docs\"]\n")
        // Many pages hold both words, and a list page holds them more often than the page
        // whose whole title they are.
        .file(
            "docs/storage-class.md",
            doc("Storage class", "A storage class sets the lifetime.", "Static or automatic."),
        )
        .file(
            "docs/specifiers.md",
            doc("Storage class specifiers", "Every storage class.", &"storage class keyword; ".repeat(20)),
        )
        .file("docs/classes.md", doc("Class storage", "Storage of a class object.", "class storage class storage"))
        // A phrase copied from a body, against a page holding its words apart and often.
        .file("docs/fees.md", doc("Fees", "Costs.", "The fee is burned after every block by the protocol."))
        .file(
            "docs/blocks.md",
            doc("Block protocol", "Block fee protocol.", &"block fee burned protocol every ".repeat(10)),
        )
        // A piece of an identifier between hyphens.
        .file(
            "docs/dfsr.md",
            doc(
                "DFSR attributes",
                "Replication.",
                "The ms-DFSR-DefaultCompressionExclusionFilter attribute lists files.",
            ),
        )
        .file("docs/letters.md", doc("Letters", "A a a.", "a a a a a a a a"));
    let first = |q: &str| {
        let out = root.run(&["--json", "search", q]);
        hits(&out).first().cloned().unwrap_or_default()
    };
    assert_eq!(first("storage class"), "docs/storage-class.md");
    assert_eq!(first("Storage class specifiers"), "docs/specifiers.md");
    assert_eq!(first("the fee is burned after every block"), "docs/fees.md");
    assert_eq!(first("ms dfsr defaultcompressionexclusionfilter attribute"), "docs/dfsr.md");
    // A one-letter word is left out when there are others, and searched when alone.
    assert_eq!(hits(&root.run(&["--json", "search", "a", "replication"])), vec!["docs/dfsr.md"]);
    assert_eq!(first("a"), "docs/letters.md");
}

/// A word that matches nothing, beside words that do, is searched as the nearest word;
/// alone, it is only named.
#[test]
fn a_word_that_matches_nothing_is_searched_as_the_nearest_word_and_said_so() {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[index]\ninclude = [\"docs\"]\n")
        .file("docs/c.md", "---\ntitle: Configuration files\n---\nThe configuration of the server.\n")
        .file("docs/s.md", "---\ntitle: Server\n---\nStarts the server.\n");
    let out = root.run(&["--json", "search", "server", "configuraton"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["corrected"], serde_json::json!({"configuraton": "configuration"}));
    assert_eq!(hits(&out), vec!["docs/c.md", "docs/s.md"]);
    // Alone, a word that matches nothing answers nothing: the nearest word is named.
    let out = root.run(&["search", "configuraton", "--format", "table"]);
    assert_eq!(
        out.stdout,
        "`configuraton` matches nothing: did you mean `configuration`?\nno results for `configuraton`\n"
    );
    let v: serde_json::Value = serde_json::from_str(&root.run(&["--json", "search", "configuraton"]).stdout).unwrap();
    assert_eq!(v["did_you_mean"], serde_json::json!({"configuraton": "configuration"}));
    assert_eq!(v["results"], serde_json::json!([]));
    // A word that is found is never corrected, and nothing near is nothing found.
    let out = root.run(&["--json", "search", "configuration"]);
    assert!(!out.stdout.contains("corrected"), "{}", out.stdout);
    assert_eq!(hits(&root.run(&["--json", "search", "zzzzqqq"])), Vec::<String>::new());
}

/// A sync about to read 5,000 files or more turns transparent huge pages off for the
/// process (and has freed memory given back at once), which took a full build's peak down
/// by a quarter; a small sync leaves the process as it was. Seen in what the process hands
/// down to the `git` it starts to index commits: a `git` first on PATH that notes the flag,
/// then runs the real one.
#[cfg(target_os = "linux")]
#[test]
fn a_large_sync_turns_huge_pages_off_and_a_small_one_does_not() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    let thp = |status: &str| status.lines().find(|l| l.starts_with("THP_enabled:")).map(str::to_owned);
    let own = thp(&std::fs::read_to_string("/proc/self/status").unwrap())
        .expect("/proc/self/status has THP_enabled (Linux 5.0 and later)");
    let real = Command::new("sh").args(["-c", "command -v git"]).output().unwrap();
    let real = String::from_utf8(real.stdout).unwrap().trim().to_owned();
    assert!(!real.is_empty(), "git is on PATH");
    let bin = tempfile::tempdir().unwrap();
    let wrapper = bin.path().join("git");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\ngrep THP_enabled /proc/self/status >> \"$THP_NOTE\"\nexec {real} \"$@\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());

    for (files, expected) in [(10, own.as_str()), (5_000, "THP_enabled:\t0")] {
        let root = TestRoot::new().file("README.md", "a repository\n");
        super::memory_git::git(root.path(), &["init", "-q"]);
        super::memory_git::git(root.path(), &["add", "README.md"]);
        super::memory_git::git(root.path(), &["commit", "-q", "-m", "first"]);
        for n in 0..files {
            root.write(
                &format!("resources/workspaces/w/_lessons/l{n}.md"),
                format!("---\nname: lesson {n}\n---\nbody\n"),
            );
        }
        let note = root.path().join(".tmws/thp-note");
        let out = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .args(["index"])
            .current_dir(root.path())
            .env("TMWS_CONFIG_HOME", super::util::user_config())
            .env_remove("TMWS_LOG")
            .env("PATH", &path)
            .env("THP_NOTE", &note)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with(&format!("indexed {files} new")),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let noted = std::fs::read_to_string(&note).unwrap_or_else(|e| panic!("{files} files: git was not run: {e}"));
        assert!(
            !noted.is_empty() && noted.lines().all(|l| l == expected),
            "{files} files: {noted:?}, not {expected:?}"
        );
    }
}

/// Regression: up to version 10 every tmws kept its index straight in
/// `.tmws/cache/index/`, and a new version that found an older one's index there deleted
/// and rebuilt it, under the writer of a process started before the upgrade (a watcher,
/// an editor's MCP server), which then wrote its own version back: each rebuilt the index
/// on every query of the other. Now each version keeps its own folder: an older version's
/// index is left alone, byte for byte, while its writer holds it, and removed once it is
/// released; so is the folder of another version's.
#[test]
fn another_versions_index_is_left_alone_while_written_and_removed_once_released() {
    let root = TestRoot::sample();
    let old_files = [
        ".tmws/cache/index/meta.json",
        ".tmws/cache/index/0a1b2c3d.store",
        ".tmws/cache/index/.tantivy-writer.lock",
        ".tmws/cache/index-open.lock",
        ".tmws/cache/manifest.bin",
        ".tmws/cache/queried",
    ];
    for (i, rel) in old_files.iter().enumerate() {
        root.write(rel, format!("written by version 10 ({i})"));
    }
    let other = ".tmws/cache/index/v99/segments/meta.json";
    root.write(other, "written by version 99");
    root.write(".tmws/cache/index/v99/segments/.tantivy-writer.lock", "");
    // The two older processes' writers, as tantivy holds them: an advisory lock.
    let hold = |rel: &str| {
        let f = std::fs::OpenOptions::new().write(true).open(root.path().join(rel)).unwrap();
        f.lock().unwrap();
        f
    };
    let old_writer = hold(".tmws/cache/index/.tantivy-writer.lock");
    let other_writer = hold(".tmws/cache/index/v99/segments/.tantivy-writer.lock");
    let found = |root: &TestRoot| {
        let out = root.run(&["--json", "search", "connection pool"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let first = found(&root);
    assert!(
        first.contains(&"resources/workspaces/devtools/common/_features/260601-lazy-pool.md".to_owned()),
        "{first:?}"
    );
    for (i, rel) in old_files.iter().enumerate() {
        assert_eq!(root.read(rel), format!("written by version 10 ({i})"), "{rel}");
    }
    assert_eq!(root.read(other), "written by version 99");
    assert!(root.path().join(tmws::INDEX_HOME).join("segments/meta.json").is_file());

    drop(old_writer);
    assert_eq!(found(&root), first);
    for rel in old_files {
        assert!(!root.path().join(rel).exists(), "{rel} is removed once no process writes it");
    }
    assert_eq!(root.read(other), "written by version 99", "still written");

    drop(other_writer);
    assert_eq!(found(&root), first);
    assert!(!root.path().join(".tmws/cache/index/v99").exists());
    let left: Vec<String> = std::fs::read_dir(root.path().join(".tmws/cache/index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![tmws::INDEX_HOME.rsplit('/').next().unwrap().to_owned()]);
}

/// The words each result of `key` in the answer `out` says it matched.
fn matched(out: &super::util::Output, key: &str) -> Vec<Vec<String>> {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["matched"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect())
        .collect()
}

/// Regression: a search result did not say which of the query's words it held, so a
/// result found by one common word of several looked as good as one that held them all.
/// Now every result of `search`, `memory search` and `recall` says the words it matched
/// (`matched`), none is returned that matched none, and a query whose words match nothing
/// answers nothing.
#[test]
fn every_search_result_says_which_words_it_matched_and_no_word_matched_is_no_answer() {
    let root = TestRoot::sample();
    let out = root.run(&["--json", "memory", "add", "Deploys happen on Tuesday after the standup"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // `lint` matches nothing, and was searched as `line`: unrelated pages at 100.
    let out = root.run(&["--json", "search", "lint"]);
    assert_eq!(matched(&out, "results"), Vec::<Vec<String>>::new());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["did_you_mean"], serde_json::json!({"lint": "line"}));
    let found = matched(&root.run(&["--json", "search", "pool", "zanzibarqq"]), "results");
    assert!(!found.is_empty());
    assert!(found.iter().all(|m| *m == ["pool"]), "{found:?}");
    let found = matched(&root.run(&["--json", "search", "connection", "pool"]), "results");
    assert_eq!(found[0], ["connection", "pool"], "{found:?}");
    assert!(found.iter().all(|m| !m.is_empty()), "{found:?}");
    for args in [
        &["search", "zanzibarqq"][..],
        &["search", "zanzibarqq", "qqxyzzy"],
        &["memory", "search", "zanzibarqq"],
        &["recall", "zanzibarqq"],
    ] {
        let out = root.run(&[&["--json"][..], args].concat());
        assert_eq!(matched(&out, "results"), Vec::<Vec<String>>::new(), "{args:?}");
    }
    let found = matched(&root.run(&["--json", "memory", "search", "deploy", "zanzibarqq"]), "results");
    assert!(!found.is_empty() && found.iter().all(|m| *m == ["deploy"]), "{found:?}");
    let found = matched(&root.run(&["--json", "recall", "how", "to", "deploy", "zanzibarqq"]), "results");
    assert!(!found.is_empty() && found.iter().all(|m| *m == ["deploy"]), "{found:?}");
}

/// Regression: a commit that touched 1,256 paths (an import) held every word of those
/// paths and matched almost any query. Now a commit of more than a hundred paths is found
/// by its subject, body, author and the folders it touched, not by each path; a commit of
/// a few paths is still found by them.
#[test]
fn an_import_commit_is_not_matched_by_its_path_list_alone() {
    use super::memory_git::git;
    let root = TestRoot::new().file("src/pool_reaper.rs", "fn main() {}\n");
    git(root.path(), &["init", "-q"]);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "Close idle connections"]);
    for i in 0..1256 {
        root.write(&format!("vendor/lib{}/src/module_{i}/retry_backoff_jitter_{i}.rs", i % 3), "\n");
    }
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "Import the vendored tree"]);
    let head = git(root.path(), &["rev-parse", "HEAD"]).trim().to_owned();
    let commits = |q: &[&str]| hits(&root.run(&[&["--json", "search", "--kind", "commit"][..], q].concat()));
    assert_eq!(commits(&["retry", "backoff", "jitter"]), Vec::<String>::new());
    assert_eq!(commits(&["reaper"]).len(), 1, "a path of a small commit still finds it");
    assert_eq!(commits(&["vendored", "tree"]), [format!("commit:{head}")]);
    assert_eq!(commits(&["vendor", "lib2"]), [format!("commit:{head}")], "its folders find it");
}

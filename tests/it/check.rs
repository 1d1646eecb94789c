//! `tmws check`: exact diagnostics, formats, exit codes, roots and walking rules.

use super::util::{Output, TestRoot, copy_tree, corpora, diagnostics, repo, tmws};

type Expect<'a> = (&'a str, u64, u64, &'a str, &'a str, &'a str);

fn assert_diags(out: &Output, expect: &[Expect<'_>]) {
    let got = diagnostics(out);
    let got: Vec<Expect<'_>> =
        got.iter().map(|(p, l, c, s, r, m)| (p.as_str(), *l, *c, s.as_str(), r.as_str(), m.as_str())).collect();
    if got != expect {
        let mut msg = String::from("diagnostics differ; got:\n");
        for g in &got {
            msg.push_str(&format!("  {g:?}\n"));
        }
        panic!("{msg}");
    }
}

/// One planted file per error class; each is reported at its line and column.
const INVALID: &[Expect<'static>] = &[
    (".tmws/memory/short-term.jsonl", 2, 2, "error", "jsonl-line", "invalid JSON: expected ident; line skipped"),
    // The fold reads an add without content; check says so, but does not call it skipped.
    (".tmws/memory/short-term.jsonl", 3, 1, "warning", "jsonl-line", "an op without `content`"),
    (
        ".tmws/memory/short-term.jsonl",
        4,
        66,
        "warning",
        "jsonl-line",
        "op says namespace `long-term` but it is in the `short-term` log",
    ),
    (
        ".tmws/memory/short-term.jsonl",
        5,
        24,
        "error",
        "jsonl-line",
        "torn final line (no newline at the end, and EOF while parsing a string); line skipped",
    ),
    (".tmws/registry/index.json", 5, 7, "error", "registry", "missing required field `servers.code.connection.type`"),
    (
        ".tmws/registry/usage.jsonl",
        1,
        1,
        "warning",
        "moved",
        "tool-call usage is now kept in .tmws/cache/usage.jsonl (this machine's, not shared)",
    ),
    (".tmws/skills.yaml", 1, 3, "error", "skills", "missing required field `[0].skill_path`"),
    (".tmws/trust.jsonl", 2, 1, "error", "jsonl-line", "line is not a JSON object; line skipped"),
    (
        ".tmws/trust.jsonl",
        3,
        18,
        "error",
        "trust-self",
        "`Ｃｏｄｅｘ` verifies itself (the names compare as `codex`); line skipped",
    ),
    (
        ".tmws/trust.jsonl",
        4,
        18,
        "error",
        "trust-verifier",
        "a verification by no one: the verifier is missing or empty; line skipped",
    ),
    (
        "agent/rules/common/00-over-budget.md",
        1,
        1,
        "error",
        "rule-budget",
        "rule file has 7 lines, over its budget of 5",
    ),
    ("agent/rules/common/10-no-budget.md", 1, 1, "error", "missing-budget", "rule file declares no budget"),
    (
        "agent/rules/common/20-long.md",
        1,
        1,
        "error",
        "rule-budget",
        "rule files total 32 lines, over the total budget of 30 (this file crosses it)",
    ),
    (
        "resources/workspaces/bad name/OVERVIEW.md",
        1,
        1,
        "error",
        "scope-name",
        "folder `bad name`: `bad name` is not a valid scope name: use only letters, digits, `.`, `_` and `-`",
    ),
    (
        "resources/workspaces/broken/_decisions/260115-title-as-name.md",
        2,
        1,
        "warning",
        "title-as-name",
        "no `name`: `title` is read as the name",
    ),
    (
        "resources/workspaces/broken/_features/260118-needs-owner.md",
        1,
        1,
        "error",
        "missing-field",
        "missing required field `owner`",
    ),
    (
        "resources/workspaces/broken/_features/OVERVIEW.md",
        1,
        1,
        "error",
        "missing-field",
        "missing required field `folder_structure`",
    ),
    (
        "resources/workspaces/broken/_lessons/260117-bad-category.md",
        4,
        11,
        "error",
        "invalid-enum",
        "`category` must be one of debugging, performance; found `tooling`",
    ),
    (
        "resources/workspaces/broken/_plans/260101-yaml-syntax.md",
        3,
        18,
        "error",
        "yaml-syntax",
        "invalid YAML: mapping values are not allowed in this context",
    ),
    (
        "resources/workspaces/broken/_plans/260102-no-front-matter.md",
        1,
        1,
        "error",
        "missing-front-matter",
        "an entry needs front-matter, and this file has none",
    ),
    (
        "resources/workspaces/broken/_plans/260103-blank-line-first.md",
        2,
        1,
        "error",
        "missing-front-matter",
        "front-matter must start on line 1, but blank lines come before its `---` on line 2",
    ),
    (
        "resources/workspaces/broken/_plans/260104-missing-status.md",
        1,
        1,
        "error",
        "missing-field",
        "missing required field `status`",
    ),
    (
        "resources/workspaces/broken/_plans/260105-tags-not-a-list.md",
        6,
        7,
        "error",
        "invalid-type",
        "`tags` must be a list, found a string `index`",
    ),
    (
        "resources/workspaces/broken/_plans/260106-bad-date.md",
        5,
        10,
        "error",
        "invalid-date",
        "`created` must be a real date written YYYY-MM-DD; found `06/01/2026`",
    ),
    (
        "resources/workspaces/broken/_plans/260107-bad-status.md",
        4,
        9,
        "error",
        "invalid-enum",
        "`status` must be one of new, in_progress, partial, done, abandoned; found `doing`",
    ),
    (
        "resources/workspaces/broken/_plans/260108-duplicate-key.md",
        6,
        1,
        "error",
        "duplicate-key",
        "duplicate key `name` (first defined on line 2)",
    ),
    (
        "resources/workspaces/broken/_plans/260109-not-utf8.md",
        2,
        10,
        "error",
        "encoding",
        "byte 0xE9 is not valid UTF-8",
    ),
    (
        "resources/workspaces/broken/_plans/260110-key-case.md",
        6,
        1,
        "warning",
        "key-case",
        "key `Tags` differs from `tags` only by case",
    ),
    (
        "resources/workspaces/broken/_plans/260111-unclosed.md",
        1,
        1,
        "error",
        "unclosed-front-matter",
        "front-matter opened with `---` is never closed",
    ),
    (
        "resources/workspaces/broken/_plans/260112-list-front-matter.md",
        2,
        1,
        "error",
        "not-a-mapping",
        "front-matter is not a mapping of keys to values",
    ),
    (
        "resources/workspaces/broken/_plans/260113-impossible-date.md",
        5,
        10,
        "error",
        "invalid-date",
        "`created` must be a real date written YYYY-MM-DD; found `2026-02-30`",
    ),
    (
        "resources/workspaces/broken/_plans/NotKebab.md",
        1,
        1,
        "warning",
        "file-name",
        "entry file name `NotKebab.md` does not match YYMMDD-kebab-case.md",
    ),
    (
        "resources/workspaces/broken/_spikes/260116-custom-status.md",
        4,
        9,
        "error",
        "invalid-enum",
        "`status` must be one of open, concluded; found `done`",
    ),
    (
        "resources/workspaces/broken/api/OVERVIEW.md",
        1,
        1,
        "error",
        "missing-field",
        "missing required field `description`",
    ),
];

#[test]
fn invalid_sample_reports_every_planted_error_at_its_line() {
    let out = tmws(&repo(), &["check", "testdata/invalid", "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert_diags(&out, INVALID);
}

#[test]
fn valid_sample_prints_nothing_and_exits_0() {
    let out = tmws(&repo(), &["check", "testdata/sample"]);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""));
    let out = tmws(&repo().join("testdata/sample"), &["check"]);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""));
    let out = tmws(&repo(), &["--json", "check", "testdata/sample"]);
    assert_eq!((out.code, out.stdout.trim()), (0, "[]"));
}

#[test]
fn human_format_reads_like_a_compiler() {
    let out = tmws(&repo(), &["check", "testdata/invalid"]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!("check_invalid_human", out.stdout);
}

#[test]
fn github_format_prints_one_annotation_per_finding() {
    let out = tmws(&repo(), &["check", "testdata/invalid/resources/workspaces/broken/_plans", "--format", "github"]);
    assert_eq!(out.code, 1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 14, "{}", out.stdout);
    assert_eq!(
        lines[0],
        "::error file=resources/workspaces/broken/_plans/260101-yaml-syntax.md,line=3,col=18::[yaml-syntax] invalid YAML: mapping values are not allowed in this context"
    );
    assert!(lines.contains(
        &"::warning file=resources/workspaces/broken/_plans/NotKebab.md,line=1,col=1::[file-name] entry file name `NotKebab.md` does not match YYMMDD-kebab-case.md"
    ));
}

#[test]
fn github_format_escapes_what_github_requires() {
    let root = TestRoot::new().file("resources/workspaces/w,x/OVERVIEW.md", "---\nname: a\ndescription: b\n---\n");
    let out = root.run(&["check", "--format", "github"]);
    assert_eq!(
        out.stdout,
        "::error file=resources/workspaces/w%2Cx/OVERVIEW.md,line=1,col=1::[scope-name] folder `w,x`: `w,x` is not a valid scope name: use only letters, digits, `.`, `_` and `-`\n"
    );
}

#[test]
fn a_path_inside_a_root_is_shown_relative_to_that_root() {
    let out =
        tmws(&repo(), &["check", "testdata/invalid/resources/workspaces/broken/_plans/260107-bad-status.md", "--json"]);
    assert_eq!(out.code, 1);
    assert_diags(
        &out,
        &[(
            "resources/workspaces/broken/_plans/260107-bad-status.md",
            4,
            9,
            "error",
            "invalid-enum",
            "`status` must be one of new, in_progress, partial, done, abandoned; found `doing`",
        )],
    );
}

#[test]
fn warnings_fail_only_with_strict() {
    let root = TestRoot::new().file(
        "resources/workspaces/w/_decisions/notes.md",
        "---\ntitle: T\ndescription: d\ncreated: 2026-01-01\n---\n",
    );
    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 0);
    assert_diags(
        &out,
        &[
            (
                "resources/workspaces/w/_decisions/notes.md",
                1,
                1,
                "warning",
                "file-name",
                "entry file name `notes.md` does not match YYMMDD-kebab-case.md",
            ),
            (
                "resources/workspaces/w/_decisions/notes.md",
                2,
                1,
                "warning",
                "title-as-name",
                "no `name`: `title` is read as the name",
            ),
        ],
    );
    assert_eq!(root.run(&["check", "--strict"]).code, 1);
}

#[test]
fn usage_and_environment_errors_exit_2_with_one_line() {
    let root = TestRoot::new();
    let out = root.run(&["check", "no/such/file.md"]);
    assert_eq!((out.code, out.stdout.as_str()), (2, ""));
    assert_eq!(out.stderr, "tmws: no/such/file.md: no such file or folder\n");

    let out = root.run(&["check", "--format", "xml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value 'xml' for '--format <FORMAT>'"), "{}", out.stderr);

    let bare = TestRoot::bare();
    let out = bare.run(&["check"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("tmws: no tmws root at or above "), "{}", out.stderr);
    assert!(
        out.stderr.ends_with("  hint: run `tmws init` in the project folder, or pass --root DIR\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn config_errors_name_the_key_and_line() {
    let root = TestRoot::new().file(".tmws/config.toml", "[pool]\nmax_size = 4\nmax_sise = 5\n");
    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 1);
    let d = diagnostics(&out);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].0.as_str(), d[0].1, d[0].2, d[0].4.as_str()), (".tmws/config.toml", 3, 1, "config"));
    assert!(d[0].5.starts_with("unknown field `max_sise`, expected one of"), "{}", d[0].5);
}

#[test]
fn schema_override_must_compile() {
    let root = TestRoot::new().file(".tmws/schemas/plans.schema.json", "{\"type\": \"objekt\"}\n");
    let out = root.run(&["check", "--json"]);
    let d = diagnostics(&out);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].0.as_str(), d[0].4.as_str()), (".tmws/schemas/plans.schema.json", "schema-file"));
}

#[test]
fn ignored_files_and_nested_roots_are_skipped() {
    let broken = "---\nname: [unclosed\n---\n";
    let root = TestRoot::new()
        .file(".gitignore", "ignored/\n")
        .file(".tmwsignore", "private.md\n")
        .file("resources/workspaces/w/ignored/a.md", broken)
        .file("resources/workspaces/w/private.md", broken)
        .file("agent/rules/private.md", broken)
        .file("resources/workspaces/w/nested/.tmws/config.toml", "")
        .file("resources/workspaces/w/nested/b.md", broken)
        .file(".tmws/cache/c.md", broken)
        .file("resources/workspaces/w/d.md", broken)
        .file("docs/d.md", broken);
    let out = root.run(&["check", "--json"]);
    let paths: Vec<String> = diagnostics(&out).into_iter().map(|d| d.0).collect();
    assert_eq!(paths, vec!["resources/workspaces/w/d.md"]);
    // Markdown that is not tmws' is checked when named, and a named file whatever the
    // ignore files say.
    let out = root.run(&["check", "docs", "resources/workspaces/w/private.md", "--json"]);
    let paths: Vec<String> = diagnostics(&out).into_iter().map(|d| d.0).collect();
    assert_eq!(paths, vec!["docs/d.md", "resources/workspaces/w/private.md"]);
    let root = TestRoot::new().file("nested/.tmws/config.toml", "").file("nested/b.md", broken);
    // A nested root is checked when asked for, as its own root.
    let out = root.run(&["check", "nested", "--json"]);
    let paths: Vec<String> = diagnostics(&out).into_iter().map(|d| d.0).collect();
    assert_eq!(paths, vec!["b.md"]);
}

#[test]
fn markdown_outside_the_canonical_trees_gets_syntax_checks_only() {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[index]\ninclude = [\"docs/adr\", \"guide/**/*.md\"]\n")
        .file("README.md", "---\ntitle: a\ntitle: b\n---\nNot tmws' to judge unless named.\n")
        .file("docs/adr/0001.md", "---\ntitle: Use ADRs\nstatus: accepted\n---\n")
        .file("docs/adr/0002.md", "---\ntitle: a\ntitle: b\n---\n")
        .file("docs/adr/0003.md", "# No front-matter is fine here\n")
        .file("guide/deep/g.md", "---\ntags: [unclosed\n---\n")
        .file("guide/deep/g.txt", "---\ntags: [unclosed\n---\n");
    // With no PATH: what tmws owns and the `index.include` docs, these with the syntax
    // checks only.
    let out = root.run(&["check", "--json"]);
    assert_diags(
        &out,
        &[
            ("docs/adr/0002.md", 3, 1, "error", "duplicate-key", "duplicate key `title` (first defined on line 2)"),
            (
                "guide/deep/g.md",
                3,
                1,
                "error",
                "yaml-syntax",
                "invalid YAML: while parsing a flow sequence, expected ',' or ']'",
            ),
        ],
    );
    let out = root.run(&["check", "README.md", "--json"]);
    assert_diags(
        &out,
        &[("README.md", 3, 1, "error", "duplicate-key", "duplicate key `title` (first defined on line 2)")],
    );
}

/// A copy of a real documentation repository (thanos' docs) with a Hugo archetype, whose
/// front-matter is a template and no YAML.
fn docs_repository_with_templates() -> TestRoot {
    let root = TestRoot::bare();
    let docs = corpora().join("thanos-docs");
    for (rel, bytes) in copy_tree(&docs) {
        root.write(&rel, bytes);
    }
    root.write(
        "website/archetypes/docs.md",
        "---\ntitle: \"{{ replace .Name \"-\" \" \" | title }}\"\ndate: {{ .Date }}\ndraft: true\n---\n",
    );
    root
}

#[test]
fn check_passes_right_after_init_in_a_docs_repository_with_templates() {
    let root = docs_repository_with_templates();
    assert_eq!(root.run(&["init"]).code, 0);
    let out = root.run(&["check"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    let out = root.run(&["check", "--format", "github"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    // The template is checked when named, and is no YAML.
    let out = root.run(&["check", "website/archetypes/docs.md", "--json"]);
    let rules: Vec<(String, u64, String)> = diagnostics(&out).into_iter().map(|d| (d.0, d.1, d.4)).collect();
    assert_eq!((out.code, rules), (1, vec![("website/archetypes/docs.md".to_owned(), 2, "yaml-syntax".to_owned())]));
    // The docs brought into the index are checked too: the real ones pass, a broken one
    // is found.
    let config = root.read(".tmws/config.toml");
    root.write(".tmws/config.toml", format!("{config}\n[index]\ninclude = [\"docs\"]\n"));
    let out = root.run(&["check"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    root.write("docs/broken.md", "---\ntitle: a\ntitle: b\n---\n");
    let out = root.run(&["check", "--format", "github"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            1,
            "::error file=docs/broken.md,line=3,col=1::[duplicate-key] duplicate key `title` (first defined on line 2)\n"
        )
    );
}

#[test]
fn huge_and_hostile_inputs_are_reported_not_fatal() {
    let big = format!("---\nname: big\ndescription: {}\n---\n", "x".repeat(2 << 20));
    let deep = format!("---\nname: {}\n---\n", "[".repeat(100_000));
    let root = TestRoot::new()
        .file("resources/workspaces/w/OVERVIEW.md", big)
        .file("resources/workspaces/w/_plans/260101-deep.md", deep)
        .file(
            ".tmws/memory/short-term.jsonl",
            b"{\"op\":\"delete\",\"id\":\"m_3fa9c1d2e4b5\",\"at\":\"2026-11-22T10:00:00Z\"}\n{\"op\":\xff}\n",
        );
    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let got: Vec<(String, u64, String)> = diagnostics(&out).into_iter().map(|d| (d.0, d.1, d.5)).collect();
    assert_eq!(
        got,
        vec![
            (".tmws/memory/short-term.jsonl".into(), 2, "byte 0xFF is not valid UTF-8; line skipped".into()),
            (
                "resources/workspaces/w/OVERVIEW.md".into(),
                1,
                "front-matter is 2097176 bytes, over the limit of 1048576".into()
            ),
            ("resources/workspaces/w/_plans/260101-deep.md".into(), 2, "invalid YAML: recursion limit exceeded".into()),
        ]
    );
}

#[test]
fn a_field_under_another_name_or_misspelt_gets_a_did_you_mean() {
    let root = TestRoot::new()
        .file(
            "resources/workspaces/w/_decisions/261122-postgres.md",
            "---\nname: Use Postgres\ndescription: One database.\ndate: 2026-11-22\ntag: [db]\n---\n",
        )
        .file(
            "resources/workspaces/w/_lessons/261122-retry.md",
            "---\nname: Retry\ndescripton: Back off.\ncreated: 2026-11-22\ncategroy: ops\nowner: me\n---\n",
        )
        .file(
            "resources/workspaces/w/_lessons/261123-both.md",
            "---\nname: Both\ndescription: d\ncreated: 2026-11-22\ndate: 2026-11-23\ntags: [a]\ntag: b\n---\n",
        );
    let out = root.run(&["check", "--json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_diags(
        &out,
        &[
            (
                "resources/workspaces/w/_decisions/261122-postgres.md",
                1,
                1,
                "error",
                "missing-field",
                "missing required field `created`",
            ),
            (
                "resources/workspaces/w/_decisions/261122-postgres.md",
                5,
                1,
                "warning",
                "unknown-key",
                "unknown key `tag`: did you mean `tags`?",
            ),
            (
                "resources/workspaces/w/_lessons/261122-retry.md",
                1,
                1,
                "error",
                "missing-field",
                "missing required field `description`",
            ),
            (
                "resources/workspaces/w/_lessons/261122-retry.md",
                5,
                1,
                "warning",
                "unknown-key",
                "unknown key `categroy`: did you mean `category`?",
            ),
        ],
    );
    // The hint names the key that was meant, and where the one written is.
    let human = root.run(&["check", "resources/workspaces/w/_decisions/261122-postgres.md"]).stdout;
    assert!(
        human.contains(
            "  = hint: did you mean `created`? `date` on line 4 is not a field tmws reads: rename it to `created`\n"
        ),
        "{human}"
    );
    let human = root.run(&["check", "resources/workspaces/w/_lessons/261122-retry.md"]).stdout;
    assert!(human.contains("  = hint: did you mean `description`? `descripton` on line 3"), "{human}");
}

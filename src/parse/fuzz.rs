//! Property tests of the parsers that read what a repository holds: front-matter and its
//! YAML (any bytes, near-valid documents, deep nesting, alias bombs, huge scalars) and the
//! fold of memory logs (its meaning under torn and garbage lines, deletes and duplicates).
//!
//! Every property runs a fixed number of cases from a fixed seed, whatever the `PROPTEST_*`
//! variables say, so a run is repeatable and its cost known; a failure prints the shrunk
//! input, which then becomes a plain regression test next to the parser it broke.
//! `TMWS_FUZZ_ROUNDS=N` runs N times the cases from other seeds, for a longer search.

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use super::markdown::{self, FrontMatterState, MAX_FRONT_MATTER_BYTES};
use super::yaml;
use crate::memory::{Entry, Fold};
use crate::model::{Rule, Severity};

/// Runs `test` on `cases` values of `strategy`, from a seed of its own (the name's).
///
/// # Panics
/// With the shrunk failing input, when the property does not hold.
pub(crate) fn check<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        max_shrink_time: 0,
        max_local_rejects: 65_536,
        max_global_rejects: 1024,
        verbose: 0,
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let rounds = std::env::var("TMWS_FUZZ_ROUNDS").unwrap_or_default();
    let config = Config { cases: cases.saturating_mul(rounds.parse::<u32>().unwrap_or(1).max(1)), ..config };
    let seed = *blake3::hash(format!("{name}{rounds}").as_bytes()).as_bytes();
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{name}: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Front-matter and YAML
// ---------------------------------------------------------------------------------------

/// What every parse of a Markdown file must give, whatever its bytes: no panic, every
/// finding on a line of the file, and a front-matter that is either parsed or refused
/// with an error naming a line.
fn markdown_holds(bytes: &[u8]) -> Result<(), TestCaseError> {
    let doc = markdown::parse(bytes);
    let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    for d in &doc.diagnostics {
        prop_assert!(d.line >= 1 && d.line <= lines, "line {} of a {lines}-line file: {d:?}", d.line);
        prop_assert!(d.column >= 1, "{d:?}");
    }
    let error =
        |rules: &[Rule]| doc.diagnostics.iter().any(|d| d.severity == Severity::Error && rules.contains(&d.rule));
    match doc.state {
        FrontMatterState::Invalid => prop_assert!(error(&[Rule::YamlSyntax]), "{:?}", doc.diagnostics),
        FrontMatterState::Unclosed => prop_assert!(error(&[Rule::UnclosedFrontMatter]), "{:?}", doc.diagnostics),
        FrontMatterState::LeadingBlank => prop_assert!(error(&[Rule::MissingFrontMatter]), "{:?}", doc.diagnostics),
        FrontMatterState::Parsed => prop_assert!(!error(&[Rule::YamlSyntax]), "{:?}", doc.diagnostics),
        FrontMatterState::Absent => {
            prop_assert!(doc.diagnostics.iter().all(|d| d.rule == Rule::Encoding), "{:?}", doc.diagnostics)
        }
    }
    prop_assert_eq!(std::str::from_utf8(bytes).is_err(), error(&[Rule::Encoding]));
    // The typed view of what parsed never fails either.
    let _ = doc.front_matter();
    if let Some(front) = &doc.front {
        let _ = front.to_json();
    }
    Ok(())
}

fn fenced(yaml: &str) -> Vec<u8> {
    format!("---\n{yaml}\n---\n# Body\n").into_bytes()
}

/// Pieces YAML gives a meaning to, and a few it does not.
const YAML_TOKENS: &[&str] = &[
    "-",
    "- ",
    " ",
    "  ",
    ":",
    ": ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "!!str ",
    "!!map ",
    "!x ",
    "!<tag:x> ",
    "|",
    "|-",
    "|+2",
    ">",
    "'",
    "''",
    "\"",
    "\\\"",
    "#",
    "? ",
    "%YAML 1.2\n",
    "%TAG ! x\n",
    "---\n",
    "...\n",
    "\u{feff}",
    "\0",
    "\u{85}",
    "\u{2028}",
    "key",
    "name",
    "x",
    "é",
    "データ",
    "\\",
    "\\u00",
    "\\x4",
    "@",
    "`",
    "0x1F",
    "0o9",
    "1e3",
    "-.inf",
    "~",
    "null",
    "true",
    "2026-11-22",
    "<<: *a\n",
    "<<",
    "=",
    "%",
    "!",
    "&",
    "*",
    "{a: [b, {c: d}]}",
];

fn yaml_soup() -> impl Strategy<Value = String> {
    vec(select(YAML_TOKENS), 0..160).prop_map(|t| t.concat())
}

/// One line (or block) of ordinary front-matter.
const GOOD_LINES: &[&str] = &[
    "name: Token refresh",
    "description: \"Refresh tokens: when and how\"",
    "description: 'it''s quoted'",
    "status: in_progress",
    "created: 2026-11-22",
    "updated: 2026-11-23",
    "tags: [auth, tokens, データ]",
    "tags:\n  - auth\n  - tokens",
    "category: backend",
    "importance: 0.8",
    "count: 12",
    "done: true",
    "none: ~",
    "# a comment",
    "nested:\n  key: value\n  deeper:\n    x: 1\n    list: [a, b]",
    "body: |\n  line one\n  line two",
    "folded: >-\n  folded\n  text",
    "anchor: &a {x: 1, y: [2, 3]}",
    "alias: *a",
    "merge:\n  <<: *a\n  z: 4",
    "empty:",
    "url: http://example.com/a:b",
    "? complex\n: key",
    "list:\n- a\n- b",
    "tabbed:\tvalue",
    "keys: [\"a [C++]\", \"b\",\n\"c\"]",
];

/// An edit at a relative position of a document.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(&'static [u8]),
    Delete(usize),
    DuplicateLine,
    DropLine,
    Indent(usize),
}

const INSERTS: &[&[u8]] = &[
    b"\t",
    b"\r",
    b"\0",
    "\u{feff}".as_bytes(),
    b":",
    b": ",
    b" ",
    b"\n",
    b"- ",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b"'",
    b"&a ",
    b"*a",
    b"*z",
    b"!",
    b"|",
    b"#",
    b"---\n",
    b"...\n",
    b"\xff",
    b"\xc3",
    b"\xe3\x81",
    b"\\",
    b"%",
    b"? ",
    b",",
];

fn mutation() -> impl Strategy<Value = (f64, Mutation)> {
    let m = prop_oneof![
        4 => select(INSERTS).prop_map(Mutation::Insert),
        2 => (1usize..6).prop_map(Mutation::Delete),
        1 => Just(Mutation::DuplicateLine),
        1 => Just(Mutation::DropLine),
        1 => (1usize..5).prop_map(Mutation::Indent),
    ];
    (0.0..1.0f64, m)
}

fn mutate(mut doc: Vec<u8>, edits: &[(f64, Mutation)]) -> Vec<u8> {
    for (at, m) in edits {
        // Truncation is intended: a position inside the document.
        let i = ((doc.len() as f64) * at) as usize;
        let i = i.min(doc.len());
        let line_start = doc[..i].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let line_end = doc[i..].iter().position(|b| *b == b'\n').map_or(doc.len(), |p| i + p + 1);
        match m {
            Mutation::Insert(bytes) => {
                doc.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete(n) => {
                doc.drain(i..(i + n).min(doc.len()));
            }
            Mutation::DuplicateLine => {
                let line = doc[line_start..line_end].to_vec();
                doc.splice(line_end..line_end, line);
            }
            Mutation::DropLine => {
                doc.drain(line_start..line_end);
            }
            Mutation::Indent(n) => {
                doc.splice(line_start..line_start, std::iter::repeat_n(b' ', *n));
            }
        }
    }
    doc
}

/// Valid front-matter with a body, then edited: the inputs closest to what people write.
fn near_valid() -> impl Strategy<Value = Vec<u8>> {
    (vec(select(GOOD_LINES), 0..12), vec(mutation(), 0..4), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(lines, edits, crlf, bom, blank)| {
            let mut text = format!("---\n{}\n---\n# Title\n\nBody text.\n", lines.join("\n"));
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            if blank {
                text.insert(0, '\n');
            }
            if bom {
                text.insert(0, '\u{feff}');
            }
            mutate(text.into_bytes(), &edits)
        },
    )
}

/// How a document can nest: an opening piece repeated, then what closes it.
#[derive(Debug, Clone, Copy)]
enum Nest {
    FlowSeq,
    FlowMap,
    Dashes,
    DashTabs,
    Keys,
    KeyTabs,
    BlockSeq,
    BlockMap,
    Complex,
    Mixed,
}

fn nested(kind: Nest, depth: usize) -> String {
    match kind {
        Nest::FlowSeq => format!("a: {}x{}", "[".repeat(depth), "]".repeat(depth)),
        Nest::FlowMap => format!("a: {}x{}", "{k: ".repeat(depth), "}".repeat(depth)),
        Nest::Dashes => format!("a:\n  {}x", "- ".repeat(depth)),
        Nest::DashTabs => format!("a:\n  {}x", "-\t".repeat(depth)),
        Nest::Keys => format!("a: {}x", "k: ".repeat(depth)),
        Nest::KeyTabs => format!("a:\t{}x", "k:\t".repeat(depth)),
        Nest::BlockSeq => (0..depth).map(|d| format!("{}-\n", " ".repeat(d))).collect(),
        Nest::BlockMap => (0..depth).map(|d| format!("{}k{d}:\n", " ".repeat(d))).collect(),
        Nest::Complex => format!("{}x", "? ".repeat(depth)),
        Nest::Mixed => format!("a: {}x{}", "[{k: ".repeat(depth), "}]".repeat(depth)),
    }
}

fn nest_kind() -> impl Strategy<Value = Nest> {
    select(vec![
        Nest::FlowSeq,
        Nest::FlowMap,
        Nest::Dashes,
        Nest::DashTabs,
        Nest::Keys,
        Nest::KeyTabs,
        Nest::BlockSeq,
        Nest::BlockMap,
        Nest::Complex,
        Nest::Mixed,
    ])
}

/// Aliases that expand far beyond the text: "billion laughs", and one wide anchor named
/// many times.
fn alias_bomb() -> impl Strategy<Value = String> {
    let laughs = (2usize..12, 1usize..12).prop_map(|(fan, levels)| {
        let mut text = format!("a0: &a0 [{}]\n", vec!["lol"; fan].join(", "));
        for l in 1..=levels {
            let refs = vec![format!("*a{}", l - 1); fan].join(", ");
            text.push_str(&format!("a{l}: &a{l} [{refs}]\n"));
        }
        text
    });
    let wide = (1usize..20_000, 1usize..20_000).prop_map(|(items, aliases)| {
        format!("a: &a [{}]\nb: [{}]\n", vec!["x"; items].join(","), vec!["*a"; aliases].join(","))
    });
    prop_oneof![laughs, wide]
}

#[test]
fn markdown_parse_holds_on_arbitrary_bytes() {
    check("markdown-bytes", 2048, vec(any::<u8>(), 0..400), |b| markdown_holds(&b));
    check("markdown-fenced-bytes", 2048, vec(any::<u8>(), 0..400), |b| {
        let mut doc = b"---\n".to_vec();
        doc.extend(&b);
        doc.extend(b"\n---\n");
        markdown_holds(&doc)
    });
}

#[test]
fn markdown_parse_holds_on_yaml_soup() {
    check("markdown-yaml-soup", 2048, yaml_soup(), |y| markdown_holds(&fenced(&y)));
}

#[test]
fn markdown_parse_holds_on_near_valid_documents() {
    check("markdown-near-valid", 2048, near_valid(), |doc| markdown_holds(&doc));
}

#[test]
fn deep_nesting_is_refused_or_parsed_without_overflowing_the_stack() {
    check("yaml-deep-nesting", 48, (nest_kind(), 1usize..6000), |(kind, depth)| {
        markdown_holds(&fenced(&nested(kind, depth)))
    });
}

#[test]
fn alias_bombs_are_cut_short() {
    check("yaml-alias-bombs", 32, alias_bomb(), |text| {
        let (node, _) = yaml::parse(&text, 2);
        if let Some(node) = node {
            // At most the limit of expanded nodes, besides those written out.
            prop_assert!(count(&node) <= 10_000 + text.len(), "{} nodes", count(&node));
        }
        markdown_holds(&fenced(&text))
    });
}

fn count(node: &yaml::Node) -> usize {
    match &node.value {
        yaml::Value::Seq(items) => 1 + items.iter().map(count).sum::<usize>(),
        yaml::Value::Map(entries) => 1 + entries.iter().map(|e| count(&e.key) + count(&e.value)).sum::<usize>(),
        _ => 1,
    }
}

#[test]
fn huge_scalars_at_the_size_limit() {
    let shapes = select(vec!["plain", "quoted", "literal", "key"]);
    check("yaml-huge-scalars", 8, (shapes, 0usize..128), |(shape, extra)| {
        let n = MAX_FRONT_MATTER_BYTES - 64 + extra;
        let big = "x".repeat(n);
        let yaml = match shape {
            "plain" => format!("a: {big}"),
            "quoted" => format!("a: \"{big}\""),
            "literal" => format!("a: |\n  {big}"),
            _ => format!("{big}: 1"),
        };
        let doc = fenced(&yaml);
        markdown_holds(&doc)?;
        let parsed = markdown::parse(&doc);
        // One byte over the limit is refused; under it, the scalar is read whole.
        prop_assert_eq!(parsed.state == FrontMatterState::Invalid, yaml.len() + 1 > MAX_FRONT_MATTER_BYTES);
        Ok(())
    });
}

#[test]
fn the_fast_path_agrees_with_the_full_parser() {
    // Lines the fast path may take, mixed with ones it must leave to the full parser.
    let line = prop_oneof![
        (
            select(vec!["name", "a_b", "k-1", "x"]),
            select(vec![
                "v",
                "1",
                "0x1F",
                "1e3",
                "true",
                "Null",
                "~",
                ".inf",
                "a:b",
                "データ",
                "-1",
                "+2",
                "[a, 1]",
                "[]",
                "x, y",
                "a #b",
                "é é",
                "v\u{2028}",
                "\u{a0}v",
                "v\u{85}",
                "\u{feff}v",
                "[a\u{3000}, b]",
                "a  b  "
            ])
        )
            .prop_map(|(k, v)| format!("{k}: {v}")),
        select(YAML_TOKENS).prop_map(str::to_owned),
        Just(String::new()),
    ];
    check("yaml-fast-path", 2048, vec(line, 0..8), |lines| {
        let text = lines.join("\n");
        if let Some(fast) = yaml::parse_simple(&text, 2) {
            let (full, diags) = yaml::parse_full(&text, 2);
            prop_assert_eq!(diags, vec![]);
            prop_assert_eq!(Some(fast), full);
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------
// Memory-log folds
// ---------------------------------------------------------------------------------------

/// The time the folds are looked at.
pub(crate) const NOW: &str = "2026-06-01T00:00:00Z";

const IDS: usize = 6;
const KEYS: usize = 3;

/// One line of a memory log, as generated.
#[derive(Debug, Clone)]
pub(crate) enum Line {
    Add {
        id: usize,
        key: Option<usize>,
        expires: Option<usize>,
        importance: Option<u8>,
        crlf: bool,
    },
    Delete {
        id: usize,
    },
    Update {
        id: usize,
        key: Option<usize>,
        expires: Option<usize>,
        importance: Option<u8>,
    },
    Link {
        id: usize,
        commit: u8,
    },
    /// A line that is a JSON object but an odd op (unknown op, no id, wrong types…).
    Odd {
        id: usize,
        shape: usize,
    },
    Blank,
    Garbage(Vec<u8>),
}

fn id(n: usize) -> String {
    format!("m_{n:012}")
}

const EXPIRIES: &[&str] = &["2026-03-01T00:00:00Z", "2027-01-01T00:00:00+01:00", "2026-06-01T00:00:00Z"];

const ODD: &[&str] = &[
    r#"{"op":"merge","id":"ID"}"#,
    r#"{"op":1,"id":"ID"}"#,
    r#"{"op":"add"}"#,
    r#"{"op":"delete"}"#,
    r#"{"op":"delete","id":5}"#,
    r#"{"op":"update","id":"ID","set":"not an object"}"#,
    r#"{"op":"update","id":"ID","set":{"importance":"high","key":7}}"#,
    r#"{"op":"add","id":"ID","at":"2026-01-01T00:00:00Z","importance":"high","expires_at":17,"content":"odd"}"#,
    r#"{"op":"add","id":"ID","at":"2026-01-01T00:00:00Z","content":"escaped \u0041\n"}"#,
    r#"{"op":"link","id":"ID"}"#,
    r#"{"op":"add","id":"   ","content":"blank id"}"#,
    r#"{"op":"add","id":"ID","id":"m_000000000099","content":"two ids"}"#,
    r#"{"op" : "delete" , "id" : "ID" }"#,
];

impl Line {
    pub(crate) fn render(&self) -> Vec<u8> {
        use serde_json::json;
        let mut text = match self {
            Line::Add { id: n, key, expires, importance, crlf } => {
                let mut v = json!({"op":"add","id":id(*n),"ns":"long-term","at":format!("2026-01-0{}T00:00:00Z", n % 9 + 1),
                    "content":format!("content {n}"),"summary":format!("summary {n}"),"tags":["t"],"kind":"note",
                    "git":{"branch":"main","commit":"abc1234"}});
                if let Some(k) = key {
                    v["key"] = json!(format!("k{k}"));
                }
                if let Some(e) = expires {
                    v["expires_at"] = json!(EXPIRIES[*e]);
                }
                if let Some(i) = importance {
                    v["importance"] = json!(f64::from(*i) / 10.0);
                }
                let mut line = v.to_string();
                if *crlf {
                    line.push('\r');
                }
                line
            }
            Line::Delete { id: n } => json!({"op":"delete","id":id(*n),"at":"2026-02-01T00:00:00Z"}).to_string(),
            Line::Update { id: n, key, expires, importance } => {
                let mut set = json!({"tags":["u"]});
                if let Some(k) = key {
                    set["key"] = json!(format!("k{k}"));
                }
                if let Some(e) = expires {
                    set["expires_at"] = json!(EXPIRIES[*e]);
                }
                if let Some(i) = importance {
                    set["importance"] = json!(f64::from(*i) / 10.0);
                }
                json!({"op":"update","id":id(*n),"at":"2026-02-02T00:00:00Z","set":set}).to_string()
            }
            Line::Link { id: n, commit } => {
                json!({"op":"link","id":id(*n),"commit":format!("c{commit}"),"files_changed":["a.rs"]}).to_string()
            }
            Line::Odd { id: n, shape } => ODD[*shape].replace("ID", &id(*n)),
            Line::Blank => String::new(),
            Line::Garbage(bytes) => {
                let mut b = bytes.clone();
                b.push(b'\n');
                return b;
            }
        };
        text.push('\n');
        text.into_bytes()
    }
}

fn op_line() -> impl Strategy<Value = Line> {
    let key = proptest::option::of(0..KEYS);
    let expires = proptest::option::weighted(0.3, 0..EXPIRIES.len());
    let importance = proptest::option::of(0u8..=10);
    prop_oneof![
        5 => (0..IDS, key.clone(), expires.clone(), importance.clone(), proptest::bool::weighted(0.1))
            .prop_map(|(id, key, expires, importance, crlf)| Line::Add { id, key, expires, importance, crlf }),
        3 => (0..IDS).prop_map(|id| Line::Delete { id }),
        2 => (0..IDS, key, expires, importance).prop_map(|(id, key, expires, importance)| Line::Update { id, key, expires, importance }),
        1 => (0..IDS, any::<u8>()).prop_map(|(id, commit)| Line::Link { id, commit }),
        1 => (0..IDS, 0..ODD.len()).prop_map(|(id, shape)| Line::Odd { id, shape }),
        1 => Just(Line::Blank),
    ]
}

/// A line no reader can take for an op: a torn op, random bytes, JSON that is not an
/// object, a BOM or a bad byte in front of or inside an op.
pub(crate) fn garbage() -> impl Strategy<Value = Vec<u8>> {
    let torn = (op_line(), 0.0..1.0f64).prop_filter_map("an op line", |(line, at)| {
        let mut bytes = line.render();
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        (bytes.len() > 2).then(|| {
            // Cut somewhere before the closing brace.
            let cut = 1 + ((bytes.len() - 2) as f64 * at) as usize;
            bytes.truncate(cut);
            bytes
        })
    });
    let random = vec(any::<u8>(), 1..48).prop_map(|mut b| {
        b.retain(|c| *c != b'\n');
        b
    });
    let fixed = select(vec![
        b"[1]".to_vec(),
        b"null".to_vec(),
        b"\"text\"".to_vec(),
        b"{".to_vec(),
        b"}".to_vec(),
        b"not json".to_vec(),
        "\u{feff}{\"op\":\"delete\",\"id\":\"m_000000000001\"}".as_bytes().to_vec(),
        b"{\"op\":\"delete\",\"id\":\"m_000000000001\",\"x\":\"\xff\"}".to_vec(),
        b"{\"op\":\"delete\",\"id\":\"m_000000000002\"}}".to_vec(),
        b"{\"op\":\"delete\",\"id\":\"m_000000000003\"\0}".to_vec(),
    ]);
    prop_oneof![3 => torn, 2 => random, 2 => fixed].prop_filter("garbage", |b| is_garbage(b))
}

/// Whether no reader takes this line for an op.
fn is_garbage(line: &[u8]) -> bool {
    let content = line.strip_suffix(b"\r").unwrap_or(line);
    !content.iter().all(u8::is_ascii_whitespace)
        && std::str::from_utf8(content)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .is_none_or(|v| !v.is_object())
}

pub(crate) fn log_lines() -> impl Strategy<Value = Vec<Line>> {
    vec(prop_oneof![8 => op_line(), 1 => garbage().prop_map(Line::Garbage)], 0..40)
}

pub(crate) fn render(lines: &[Line]) -> Vec<u8> {
    lines.iter().flat_map(Line::render).collect()
}

/// What a fold says about the log, for comparing two folds.
fn view(fold: &Fold) -> (BTreeMap<String, Entry>, Vec<Option<String>>, usize) {
    let by_key = (0..KEYS).map(|k| fold.by_key(&format!("k{k}"), NOW).map(|(id, _)| id.clone())).collect();
    (fold.live.clone(), by_key, fold.dead_lines(NOW))
}

/// The fold's entries with their line numbers put through `map`.
fn renumbered(fold: &Fold, map: impl Fn(usize) -> usize) -> BTreeMap<String, Entry> {
    fold.live
        .iter()
        .map(|(id, e)| {
            let mut e = e.clone();
            e.line = map(e.line);
            e.key_line = map(e.key_line);
            e.later = e.later.iter().map(|l| map(*l)).collect();
            (id.clone(), e)
        })
        .collect()
}

#[test]
fn a_fold_is_the_same_however_the_log_is_read() {
    let torn_tail = proptest::option::of(garbage());
    check("fold-resumable", 384, (log_lines(), vec(0.0..1.0f64, 0..5), torn_tail), |(lines, cuts, tail)| {
        let mut log = render(&lines);
        if let Some(tail) = tail {
            log.extend(tail);
        }
        let whole = Fold::of(&log, true);
        let again = Fold::of(&log, true);
        prop_assert_eq!(view(&whole), view(&again));
        // Fed in pieces, as a process that keeps its fold and reads what was appended.
        let mut cuts: Vec<usize> = cuts.iter().map(|c| (log.len() as f64 * c) as usize).collect();
        cuts.sort_unstable();
        cuts.push(log.len());
        let mut parts = Fold::new(true);
        let mut start = 0;
        for cut in cuts {
            start += parts.read(&log[start..cut.max(start)]);
        }
        prop_assert_eq!(view(&parts), view(&whole));
        prop_assert_eq!(&parts.keys, &whole.keys);
        prop_assert_eq!((parts.lines, parts.offset), (whole.lines, whole.offset));
        let lines_of = |f: &Fold| f.problems.iter().map(|d| (d.line, d.message.clone())).collect::<Vec<_>>();
        prop_assert_eq!(lines_of(&parts), lines_of(&whole));
        // Only complete lines are read.
        let complete = log.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        prop_assert_eq!(whole.offset, complete as u64);
        Ok(())
    });
}

#[test]
fn garbage_lines_change_nothing_else() {
    let ops = vec(op_line(), 0..30);
    let junk = vec((0.0..1.0f64, garbage()), 1..6);
    check("fold-garbage", 384, (ops, junk, proptest::option::of(garbage())), |(ops, junk, tail)| {
        let clean = render(&ops);
        let mut lines: Vec<Option<Line>> = ops.into_iter().map(Some).collect();
        for (at, g) in junk {
            let i = ((lines.len() + 1) as f64 * at) as usize;
            lines.insert(i.min(lines.len()), Some(Line::Garbage(g)));
        }
        // Line n of the dirty log is line map[n] of the clean one (0: a garbage line).
        let mut map = vec![0];
        let mut clean_no = 0;
        let mut junk_lines = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if matches!(l, Some(Line::Garbage(_))) {
                map.push(0);
                junk_lines.push(i + 1);
            } else {
                clean_no += 1;
                map.push(clean_no);
            }
        }
        let mut dirty: Vec<u8> = lines.iter().flatten().flat_map(Line::render).collect();
        if let Some(tail) = tail {
            dirty.extend(tail);
        }
        let (clean, dirty) = (Fold::of(&clean, true), Fold::of(&dirty, true));
        prop_assert_eq!(renumbered(&dirty, |n| map[n]), clean.live.clone());
        let (_, clean_keys, clean_dead) = view(&clean);
        let (_, dirty_keys, dirty_dead) = view(&dirty);
        prop_assert_eq!(dirty_keys, clean_keys);
        // Garbage lines are not dead: compaction keeps them for the person to fix.
        prop_assert_eq!(dirty_dead, clean_dead);
        prop_assert!(junk_lines.iter().all(|n| dirty.bad.contains(n)));
        // Each garbage line is reported once, with its own line number; the other problems
        // (odd lines that are objects but not ops) are those of the clean log.
        let (junk, other): (Vec<usize>, Vec<usize>) = dirty.problems.iter().map(|d| d.line).partition(|n| map[*n] == 0);
        prop_assert_eq!(junk, junk_lines);
        prop_assert_eq!(
            other.iter().map(|n| map[*n]).collect::<Vec<_>>(),
            clean.problems.iter().map(|d| d.line).collect::<Vec<_>>()
        );
        Ok(())
    });
}

#[test]
fn an_add_then_its_delete_leaves_no_live_entry() {
    let add = (0..IDS, proptest::option::of(0..KEYS), proptest::option::of(0u8..=10));
    check("fold-add-delete", 384, (log_lines(), add), |(lines, (n, key, importance))| {
        let before = render(&lines);
        let mut after = before.clone();
        after.extend(Line::Add { id: n, key, expires: None, importance, crlf: false }.render());
        after.extend(Line::Delete { id: n }.render());
        let (before, after) = (Fold::of(&before, true), Fold::of(&after, true));
        prop_assert!(!after.live.contains_key(&id(n)));
        let mut want = before.live.clone();
        want.remove(&id(n));
        prop_assert_eq!(&after.live, &want);
        // Each upsert key leads to the live entry that took it last, before and after.
        for k in 0..KEYS {
            let key = format!("k{k}");
            let by_key = |f: &Fold| f.by_key(&key, NOW).map(|(i, _)| i.clone());
            prop_assert_eq!(by_key(&before), latest_holder(&before.live, &key), "key {}", key);
            prop_assert_eq!(by_key(&after), latest_holder(&want, &key), "key {}", key);
        }
        Ok(())
    });
}

/// The live entry (not expired at `NOW`) that took `key` last, by line.
fn latest_holder(live: &BTreeMap<String, Entry>, key: &str) -> Option<String> {
    live.iter()
        .filter(|(_, e)| e.key.as_deref() == Some(key) && !e.expired(NOW))
        .max_by_key(|(_, e)| e.key_line)
        .map(|(id, _)| id.clone())
}

#[test]
fn a_duplicate_add_changes_nothing() {
    check("fold-duplicate-add", 384, (log_lines(), 0.0..1.0f64), |(lines, at)| {
        let adds: Vec<usize> =
            lines.iter().enumerate().filter(|(_, l)| matches!(l, Line::Add { .. })).map(|(i, _)| i).collect();
        let Some(&i) = adds.get((adds.len() as f64 * at) as usize) else { return Ok(()) };
        let mut twice = lines.clone();
        twice.insert(i + 1, lines[i].clone());
        let (once, twice) = (Fold::of(&render(&lines), true), Fold::of(&render(&twice), true));
        // Line i + 2 is the copy of line i + 1 (the entry now comes from it); the lines
        // after it move down by one.
        let dup = i + 2;
        let map = |n: usize| if n < dup { n } else { n - 1 };
        prop_assert_eq!(renumbered(&twice, map), once.live.clone());
        let (_, once_keys, once_dead) = view(&once);
        let (_, twice_keys, twice_dead) = view(&twice);
        prop_assert_eq!(twice_keys, once_keys);
        prop_assert_eq!(twice_dead, once_dead + 1);
        Ok(())
    });
}

#[test]
fn a_compaction_plan_is_the_fold_of_the_lines_it_keeps() {
    check("fold-compaction", 384, log_lines(), |lines| {
        let log = render(&lines);
        let (keep, planned) = Fold::of(&log, true).compacted(NOW);
        let kept: Vec<u8> = log
            .split_inclusive(|b| *b == b'\n')
            .enumerate()
            .filter(|(n, _)| keep.binary_search(&(n + 1)).is_ok())
            .flat_map(|(_, l)| l.iter().copied())
            .collect();
        let read = Fold::of(&kept, true);
        prop_assert_eq!(&planned.live, &read.live);
        prop_assert_eq!(&planned.keys, &read.keys);
        prop_assert_eq!(view(&planned), view(&read));
        prop_assert_eq!(planned.lines, read.lines);
        Ok(())
    });
}

/// An add or a delete of one of a few ids, at a time of its own (the minute).
#[derive(Debug, Clone)]
struct Timed {
    add: bool,
    id: usize,
    minute: u32,
}

impl Timed {
    fn render(&self) -> String {
        let at = format!("2026-01-01T{:02}:{:02}:00Z", self.minute / 60, self.minute % 60);
        if self.add {
            format!("{{\"op\":\"add\",\"id\":\"{}\",\"at\":\"{at}\",\"content\":\"c\"}}\n", id(self.id))
        } else {
            format!("{{\"op\":\"delete\",\"id\":\"{}\",\"at\":\"{at}\"}}\n", id(self.id))
        }
    }
}

/// Adds and deletes at distinct times: the live entries are what the times say, in any
/// order of the lines (a union merge interleaves two branches' lines any way it likes),
/// and a compaction, which keeps tombstones, changes none of it however its lines are
/// merged again with lines that were already there.
#[test]
fn timed_adds_and_deletes_mean_the_same_in_any_order() {
    let ops = vec((any::<bool>(), 0..IDS), 1..24).prop_map(|v| {
        v.into_iter().enumerate().map(|(i, (add, id))| Timed { add, id, minute: i as u32 * 7 % 1440 }).collect()
    });
    let shuffle = vec(any::<u32>(), 24);
    check("fold-timed-any-order", 384, (ops, shuffle, 0.0..1.0f64), |(ops, keys, cut): (Vec<Timed>, Vec<u32>, f64)| {
        // What the times say: an id is live when its latest op is an add.
        let mut latest: BTreeMap<usize, &Timed> = BTreeMap::new();
        for op in &ops {
            if latest.get(&op.id).is_none_or(|l| l.minute < op.minute) {
                latest.insert(op.id, op);
            }
        }
        let want: Vec<String> = latest.values().filter(|o| o.add).map(|o| id(o.id)).collect();
        let live = |log: &str| Fold::of(log.as_bytes(), false).live.keys().cloned().collect::<Vec<_>>();
        let in_order: String = ops.iter().map(Timed::render).collect();
        prop_assert_eq!(live(&in_order), want.clone());
        let mut shuffled: Vec<(u32, &Timed)> = keys.iter().copied().zip(ops.iter()).collect();
        shuffled.sort_by_key(|(k, _)| *k);
        let shuffled: String = shuffled.iter().map(|(_, o)| o.render()).collect();
        prop_assert_eq!(live(&shuffled), want.clone());
        // Compact a prefix (one branch), then merge the whole log's lines back after it.
        let split = (ops.len() as f64 * cut) as usize;
        let prefix: String = ops[..split].iter().map(Timed::render).collect();
        let (keep, _) = Fold::of(prefix.as_bytes(), false).compacted(NOW);
        let compacted: String =
            prefix.split_inclusive('\n').enumerate().filter(|(n, _)| keep.contains(&(n + 1))).map(|(_, l)| l).collect();
        prop_assert_eq!(live(&format!("{compacted}{in_order}")), want.clone());
        prop_assert_eq!(live(&format!("{in_order}{compacted}")), want);
        Ok(())
    });
}

//! `tmws check` over real-world Markdown that nobody here wrote (../shared/corpora).

use std::collections::{BTreeMap, BTreeSet};

use super::util::{corpora, diagnostics, tmws};

/// Rules found per file, for a check of `what` under the corpora folder as root.
fn rules_by_file(what: &str) -> (i32, BTreeMap<String, BTreeSet<String>>) {
    let out = tmws(&corpora(), &["--root", ".", "check", what, "--format", "json"]);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for d in diagnostics(&out) {
        assert!(d.1 >= 1 && d.2 >= 1, "{d:?}");
        map.entry(d.0).or_default().insert(d.4);
    }
    (out.code, map)
}

#[test]
fn malformed_corpus_every_anomaly_is_reported_as_the_contract_says() {
    let (code, found) = rules_by_file("malformed");
    assert_eq!(code, 1);
    let mut yaml_errors = 0;
    let mut checked = 0;
    for manifest in ["malformed/MANIFEST.jsonl", "malformed/curated/MANIFEST.jsonl"] {
        let text = std::fs::read_to_string(corpora().join(manifest)).unwrap();
        for line in text.lines() {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let file = format!("malformed/{}", entry["file"].as_str().unwrap());
            let anomalies: BTreeSet<&str> =
                entry["anomalies"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            let yaml_error = !entry["yaml_error"].as_str().unwrap().is_empty();
            let rules = found.get(&file).cloned().unwrap_or_default();
            let has = |r: &str| rules.contains(r);
            checked += 1;
            if yaml_error {
                if !manifest.contains("curated") {
                    yaml_errors += 1;
                }
                assert!(
                    has("yaml-syntax") || has("unclosed-front-matter"),
                    "{file}: YAML error not reported: {rules:?}"
                );
            }
            if anomalies.contains("not_utf8") {
                assert!(has("encoding"), "{file}: {rules:?}");
            }
            if anomalies.contains("fm_after_leading_whitespace") {
                assert!(has("missing-front-matter"), "{file}: {rules:?}");
            }
            if anomalies.contains("duplicate_key") && !yaml_error {
                assert!(has("duplicate-key"), "{file}: {rules:?}");
            }
            // A BOM, CRLF, a trailing space after `---` and an empty block are all accepted.
            if !yaml_error && anomalies.iter().all(|a| ["bom", "open_delim_trailing_ws", "empty_fm"].contains(a)) {
                assert!(rules.is_empty(), "{file}: expected no findings, got {rules:?}");
            }
        }
    }
    assert_eq!(yaml_errors, 159);
    assert_eq!(checked, 1807 + 41);
}

#[test]
fn well_formed_corpora_check_clean() {
    for corpus in ["eips", "madr", "thanos-docs", "cpp-docs"] {
        let (code, found) = rules_by_file(corpus);
        assert_eq!((corpus, code, found), (corpus, 0, BTreeMap::new()));
    }
}

/// Markdown files below `dir`, recursively.
fn markdown_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

#[test]
fn the_yaml_fast_path_gives_exactly_what_the_full_parser_gives() {
    use tmws::parse::frontmatter::{Split, split};
    use tmws::parse::yaml::{parse_full, parse_simple};
    let mut files = Vec::new();
    markdown_files(&corpora(), &mut files);
    markdown_files(&super::util::repo().join("testdata"), &mut files);
    files.sort();
    let (mut with_front_matter, mut fast) = (0, 0);
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        let Split::Found(block) = split(&text) else { continue };
        with_front_matter += 1;
        let Some(simple) = parse_simple(block.yaml, block.yaml_line) else { continue };
        fast += 1;
        let (full, diags) = parse_full(block.yaml, block.yaml_line);
        assert_eq!(diags, [], "{}: the fast path took a text with problems", f.display());
        assert_eq!(Some(simple), full, "{}", f.display());
    }
    assert!(with_front_matter > 1000, "{with_front_matter}");
    // Real-world front-matter is often richer (quotes, block lists, comments) and takes the
    // full parser; the fast path must still see plenty of it here to be tested.
    assert!(fast > 900, "the fast path took only {fast} of {with_front_matter} front-matters");
}

#[test]
fn the_one_pass_normalizer_gives_exactly_what_tantivys_filters_give() {
    use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, TokenStream};
    use tmws::index::analyzer::{CodeTokenizer, analyzer};
    let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
    let mut reference = TextAnalyzer::builder(CodeTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build();
    let mut ours = analyzer();
    let mut texts = vec![
        "Café ÜBER naïve Straße İstanbul ΣΊΣΥΦΟΣ σοφός Ωmega ﬁnancial ＡＢＣ half-width ｶﾀｶﾅ".to_owned(),
        "happiness HAPPINESS generalizations getLibraryDocs XMLHttpRequest __init__ v2.3.1 a_b-c.d".to_owned(),
        "データベース接続プールの設定を変更した 数据库连接池 데이터베이스 연결 🙂 émoji✓ x".to_owned(),
        format!("{} {} {}", "internationalization".repeat(2), "a".repeat(70), "Ünïcödé".repeat(12)),
    ];
    let mut files = Vec::new();
    markdown_files(&corpora(), &mut files);
    files.sort();
    // Every fifth file keeps the test quick in a debug build; all languages of the corpora
    // are among them.
    texts.extend(files.iter().step_by(5).filter_map(|f| std::fs::read_to_string(f).ok()));
    let mut tokens = 0;
    for text in &texts {
        let mut want = reference.token_stream(text);
        let mut got = ours.token_stream(text);
        loop {
            let (w, g) = (want.advance(), got.advance());
            assert_eq!(w, g, "a stream ended early in {:?}", &text[..text.len().min(80)]);
            if !w {
                break;
            }
            tokens += 1;
            let (w, g) = (want.token(), got.token());
            let mut expected = w.text.clone();
            if expected.len() >= 3 && expected.bytes().all(|b| b.is_ascii_lowercase()) {
                expected = stemmer.stem(&expected).into_owned();
            }
            assert_eq!(
                (&g.text, g.position, g.offset_from, g.offset_to),
                (&expected, w.position, w.offset_from, w.offset_to),
                "token {:?} of {:?}",
                w.text,
                &text[..text.len().min(80)]
            );
        }
    }
    assert!(tokens > 1_000_000, "{tokens}");
}

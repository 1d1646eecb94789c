//! `tmws check` over real-world Markdown that nobody here wrote: the full corpora when
//! `TMWS_CORPORA` names them, else the samples of them in `testdata/corpora`.

use std::collections::{BTreeMap, BTreeSet};

use super::util::{corpora, diagnostics, full_corpora, tmws};

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
        let Ok(text) = std::fs::read_to_string(corpora().join(manifest)) else { continue };
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
    // Every line of the manifests was read: the whole set, or the sample's curated files.
    if full_corpora() {
        assert_eq!((yaml_errors, checked), (159, 1807 + 41));
    } else {
        assert_eq!((yaml_errors, checked), (0, 20));
    }
}

#[test]
fn well_formed_corpora_check_clean() {
    let mut checked = Vec::new();
    for corpus in ["eips", "madr", "thanos-docs", "cpp-docs"] {
        if !corpora().join(corpus).is_dir() {
            continue;
        }
        let (code, found) = rules_by_file(corpus);
        assert_eq!((corpus, code, found), (corpus, 0, BTreeMap::new()));
        checked.push(corpus);
    }
    assert_eq!(checked, ["eips", "madr", "thanos-docs", "cpp-docs"]);
}

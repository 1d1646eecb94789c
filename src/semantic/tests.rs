//! Tests of the model reader: the reference's probes (`tools/model/golden.json`), texts
//! whose ids the reference gave, refused files, quantisation, and properties over any text.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};

use super::*;
use crate::parse::fuzz::check;

const GOLDEN: &str = include_str!("../../tools/model/golden.json");

fn golden() -> Vec<(String, Vec<u32>, Vec<f32>)> {
    let v: Value = serde_json::from_str(GOLDEN).unwrap();
    let probes = v["probes"].as_array().unwrap();
    probes
        .iter()
        .map(|p| {
            let ids =
                p["ids"].as_array().unwrap().iter().map(|i| u32::try_from(i.as_u64().unwrap()).unwrap()).collect();
            let vector = p["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (p["text"].as_str().unwrap().to_owned(), ids, vector)
        })
        .collect()
}

#[test]
fn the_builtin_model_is_the_recorded_one() {
    let m = Model::builtin();
    assert_eq!(m.dim(), 256);
    assert_eq!(m.vocab_size(), 29_525);
    assert_eq!(m.max_tokens(), 512);
    let v: Value = serde_json::from_str(GOLDEN).unwrap();
    let sha = v["model_sha256"].as_str().unwrap();
    assert_eq!(m.fingerprint(), &sha[..16]);
    // The table is not dumped.
    assert_eq!(
        format!("{m:?}"),
        "Model { fingerprint: \"e6a36603095e8bf4\", dim: 256, vocab_size: 29525, max_tokens: 512, .. }"
    );
}

#[test]
fn token_ids_of_every_golden_probe_are_the_references() {
    let m = Model::builtin();
    let probes = golden();
    assert_eq!(probes.len(), 15);
    for (text, ids, _) in &probes {
        assert_eq!(&m.tokens(text), ids, "{text:?}");
    }
}

#[test]
fn vectors_of_every_golden_probe_are_the_references() {
    let m = Model::builtin();
    for (text, ids, want) in golden() {
        let got = m.embed(&text);
        if ids.is_empty() {
            // The reference gives zeros; this reader says there is no vector.
            assert!(want.iter().all(|x| *x == 0.0), "{text:?}");
            assert_eq!(got, None, "{text:?}");
            continue;
        }
        let got = got.unwrap_or_else(|| panic!("no vector for {text:?}"));
        assert_eq!(got.0.len(), 256);
        for (i, (g, w)) in got.0.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5, "{text:?}: value {i} is {g}, the reference's {w}");
        }
        assert!(got.cosine(&Embedding(want)) >= 0.99999, "{text:?}");
    }
}

/// Texts beyond the probes, with the ids `tools/model/tmws_static.py` gave for them: the
/// final sigma, the separators Python splits at but does not clean, marks after ASCII
/// letters, a control inside a word, compatibility ideographs, chunks mixing ASCII and not.
#[test]
fn awkward_texts_give_the_references_ids() {
    let m = Model::builtin();
    let cases: &[(&str, &[u32])] = &[
        (
            "\u{39f}\u{394}\u{39f}\u{3a3} \u{391}\u{3a3}. \u{3c3}\u{3bf}\u{3c6}\u{3bf}\u{3c3} \u{3a3}\u{391}\u{3a3}",
            &[172, 28725, 14300, 158, 18582, 15, 176, 28733, 28739, 28733, 28736, 176, 13611, 18582],
        ),
        ("line\u{2028}sep\u{2029}para", &[1243, 18805, 10501]),
        ("cafe\u{301} nai\u{308}ve", &[6671, 14746]),
        ("ab\u{1}cd", &[4928, 1097]),
        ("\u{f900}\u{f901}x", &[63]),
        ("\u{dc}n\u{ef}c\u{f6}d\u{e9}-mixed_ASCII!", &[26263, 14, 2819, 38, 1007, 5898, 1075, 2]),
        ("x\u{300}\u{301}\u{302}", &[63]),
        ("\u{2bc}n \u{1c5}ungla", &[149, 1081]),
        ("a\u{a0}b\u{3000}c", &[40, 41, 42]),
        ("\u{2026}dots\u{2026} \u{ab}quotes\u{bb}", &[532, 13984, 532, 80, 15617, 93]),
        ("hello\u{200b}world", &[6595, 10111]),
        ("\u{3a3}", &[176]),
        ("\u{391}\u{3a3}\u{301}\u{392}", &[158, 28736, 28723]),
        ("\u{391}\u{3a3}'", &[158, 18582, 8]),
    ];
    for (text, ids) in cases {
        assert_eq!(&m.tokens(text), ids, "{text:?}");
    }
}

#[test]
fn a_long_body_stops_at_max_tokens_and_keeps_the_first() {
    let m = Model::builtin();
    let sentence = "The staging database password rotates every Monday. ";
    let body = sentence.repeat(100 * 1024 / sentence.len());
    let ids = m.tokens(&body);
    assert_eq!(ids.len(), 512);
    let short = sentence.repeat(70);
    assert_eq!(ids, m.tokens(&short)[..512]);
    // The same cut whether the words are ASCII or not.
    let accented = "Caf\u{e9} r\u{e9}sum\u{e9} na\u{ef}ve. ".repeat(5000);
    assert_eq!(m.tokens(&accented).len(), 512);
    assert!(m.embed(&body).is_some());
}

#[test]
fn a_model_read_from_bytes_is_the_builtin_one() {
    let m = Model::parse(BUILTIN_BYTES.to_vec()).unwrap();
    let b = Model::builtin();
    assert_eq!(m.fingerprint(), b.fingerprint());
    assert_eq!(m.dim(), b.dim());
    let text = "when do credentials for the test db change";
    assert_eq!(m.tokens(text), b.tokens(text));
    assert_eq!(m.embed(text), b.embed(text));
}

#[test]
fn close_meanings_are_closer_than_unrelated_ones() {
    let m = Model::builtin();
    let e = |t: &str| m.embed(t).unwrap();
    let note = e("The staging database password rotates every Monday");
    let question = e("when do credentials for the test db change");
    let unrelated = e("a recipe for lemon cake with fresh berries");
    assert!(note.cosine(&question) > note.cosine(&unrelated));
    assert!((note.cosine(&note) - 1.0).abs() < 1e-5);
}

// ---------------------------------------------------------------------------------------
// Quantisation and the int8 dot product
// ---------------------------------------------------------------------------------------

#[test]
fn quantized_vectors_round_trip_through_bytes_and_keep_the_cosine() {
    let m = Model::builtin();
    let a = m.embed("The staging database password rotates every Monday").unwrap();
    let b = m.embed("when do credentials for the test db change").unwrap();
    let (qa, qb) = (a.quantize(), b.quantize());
    assert_eq!(qa.values.len(), 256);
    assert_eq!(qa.values.iter().map(|v| v.unsigned_abs()).max(), Some(127));
    let bytes = qa.to_bytes();
    assert_eq!(bytes.len(), 260);
    assert_eq!(Quantized::from_bytes(&bytes, 256), Some(qa.clone()));
    assert_eq!(Quantized::from_bytes(&bytes, 255), None);
    assert_eq!(Quantized::from_bytes(&bytes[..259], 256), None);
    assert_eq!(Quantized::from_bytes(&[], usize::MAX), None);
    assert!((qa.cosine(&qb) - a.cosine(&b)).abs() < 0.01, "{} against {}", qa.cosine(&qb), a.cosine(&b));
    for (x, q) in a.0.iter().zip(&qa.values) {
        assert!((x - f32::from(*q) * qa.scale).abs() <= qa.scale / 2.0 + 1e-7);
    }
}

#[test]
fn a_zero_vector_quantizes_to_zeros() {
    let q = Embedding(vec![0.0; 8]).quantize();
    assert_eq!(q, Quantized { values: vec![0; 8], scale: 0.0 });
    assert_eq!(Embedding(vec![0.0; 8]).cosine(&Embedding(vec![1.0; 8])), 0.0);
}

#[test]
fn dot_i8_is_the_plain_dot_product() {
    check("dot-i8", 256, (0usize..300).prop_flat_map(|n| (vec(n), vec(n))), |(a, b)| {
        let want: i32 = a.iter().zip(&b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        prop_assert_eq!(dot_i8(&a, &b), want);
        Ok(())
    });
    let max = vec![-128i8; 1024];
    assert_eq!(dot_i8(&max, &max), 1024 * 128 * 128);
    assert_eq!(dot_i8(&[1, 2, 3], &[4, 5]), 14);
}

fn vec(n: usize) -> impl Strategy<Value = Vec<i8>> {
    proptest::collection::vec(any::<i8>(), n)
}

// ---------------------------------------------------------------------------------------
// Properties over any text
// ---------------------------------------------------------------------------------------

fn holds(text: &str) -> Result<(), TestCaseError> {
    let m = Model::builtin();
    let ids = m.tokens(text);
    prop_assert!(ids.len() <= m.max_tokens());
    for &id in &ids {
        prop_assert!((id as usize) < m.vocab_size() && id != m.unk, "{id}");
    }
    match m.embed(text) {
        None => prop_assert!(ids.is_empty()),
        Some(e) => {
            prop_assert!(!ids.is_empty());
            prop_assert_eq!(e.0.len(), m.dim());
            let norm = e.0.iter().map(|x| x * x).sum::<f32>().sqrt();
            prop_assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        }
    }
    Ok(())
}

#[test]
fn any_text_gives_known_ids_and_a_unit_vector_or_none() {
    check("semantic-any-string", 512, any::<String>(), |t| holds(&t));
    // Text near what the tokeniser branches on: ASCII, punctuation, marks, Greek capitals,
    // CJK, separators, controls.
    let pieces = proptest::sample::select(vec![
        "a",
        "Z",
        " ",
        "\t",
        "\n",
        "\u{0}",
        "\u{1}",
        ".",
        "#",
        "##",
        "[UNK]",
        "\u{301}",
        "\u{3a3}",
        "\u{3c3}",
        "\u{4e2d}",
        "\u{f900}",
        "\u{3000}",
        "\u{2028}",
        "\u{200b}",
        "\u{fffd}",
        "\u{ad}",
        "\u{130}",
        "\u{1c5}",
        "\u{ff21}",
        "\u{ac00}",
        "\u{1f389}",
        "\u{e000}",
        "running",
        "xxxxxxxxxx",
    ]);
    let texts = proptest::collection::vec(pieces, 0..200).prop_map(|p| p.concat());
    check("semantic-near-branches", 512, texts, |t| holds(&t));
}

// ---------------------------------------------------------------------------------------
// Refused files
// ---------------------------------------------------------------------------------------

/// A small valid model of dim 2: its header as JSON, and its data.
fn tiny() -> (Value, Vec<u8>) {
    let vocab = "[PAD]\n[UNK]\nhello\nworld\n##s";
    let rows = 5usize;
    let table: Vec<u8> = [0i8, 0, 0, 0, 127, 0, 0, 127, 127, 127].iter().map(|&v| v as u8).collect();
    let scales: Vec<u8> = [1.0f32, 1.0, 0.5, 0.5, 0.1].iter().flat_map(|s| s.to_le_bytes()).collect();
    let mut data = table.clone();
    data.extend(&scales);
    data.extend(vocab.as_bytes());
    let (t, s) = (table.len(), table.len() + scales.len());
    let header = json!({
        "__metadata__": {
            "format": FORMAT, "dim": "2", "vocab_size": rows.to_string(), "unk_token": "[UNK]",
            "continuing_subword_prefix": "##", "max_input_chars_per_word": "100", "max_tokens": "512",
        },
        "embeddings": {"dtype": "I8", "shape": [rows, 2], "data_offsets": [0, t]},
        "scales": {"dtype": "F32", "shape": [rows], "data_offsets": [t, s]},
        "vocab": {"dtype": "U8", "shape": [vocab.len()], "data_offsets": [s, data.len()]},
    });
    (header, data)
}

fn file(header: &Value, data: &[u8]) -> Vec<u8> {
    let h = serde_json::to_vec(header).unwrap();
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    out
}

/// The error of the tiny model changed by `change`.
fn refused(change: impl FnOnce(&mut Value, &mut Vec<u8>)) -> String {
    let (mut header, mut data) = tiny();
    change(&mut header, &mut data);
    match Model::parse(file(&header, &data)) {
        Ok(m) => panic!("accepted: {m:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_tiny_model_tokenises_and_pools() {
    let (header, data) = tiny();
    let m = Model::parse(file(&header, &data)).unwrap();
    assert_eq!((m.dim(), m.vocab_size(), m.fingerprint().len()), (2, 5, 16));
    assert_eq!(m.tokens("Hello, worlds [UNK] planet"), vec![2, 3, 4]);
    // hello (0, 63.5), world (63.5, 0), ##s (12.7, 12.7): sum (76.2, 76.2).
    let e = m.embed("hello worlds").unwrap();
    let h = std::f32::consts::FRAC_1_SQRT_2;
    assert!((e.0[0] - h).abs() < 1e-6 && (e.0[1] - h).abs() < 1e-6, "{e:?}");
    assert_eq!(m.embed("planet"), None);
    // A word that cannot be split wholly is unknown, its known prefix too.
    assert_eq!(m.tokens("hellox"), Vec::<u32>::new());
}

#[test]
fn extreme_word_and_token_limits_in_a_model_do_not_overflow() {
    let (mut header, data) = tiny();
    let most = usize::MAX.to_string();
    header["__metadata__"]["max_input_chars_per_word"] = json!(most);
    header["__metadata__"]["max_tokens"] = json!(most);
    let m = Model::parse(file(&header, &data)).unwrap();
    assert_eq!(m.tokens("h\u{e9}llo worlds"), vec![2, 3, 4]);
    header["__metadata__"]["max_input_chars_per_word"] = json!("5");
    header["__metadata__"]["max_tokens"] = json!("2");
    let m = Model::parse(file(&header, &data)).unwrap();
    // Six letters are one too many, whether the word is ASCII or not (the accent is a mark
    // of its own after NFD, and dropped).
    assert_eq!(m.tokens("h\u{e9}llos worlds world"), vec![3]);
    assert_eq!(m.tokens("hello worlds world hello"), vec![2, 3]);
    assert_eq!(m.tokens("h\u{e9}llo hello hello"), vec![2, 2]);
}

#[test]
fn bytes_that_are_not_safetensors_are_refused() {
    let e = Model::parse(b"abc".to_vec()).unwrap_err().to_string();
    assert_eq!(e, "not a safetensors model file: 3 bytes, shorter than a header");
    let mut junk = 4u64.to_le_bytes().to_vec();
    junk.extend(b"nope");
    let e = Model::parse(junk).unwrap_err().to_string();
    assert!(e.starts_with("not a safetensors model file: the header is not a JSON object"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_header_too_large_or_truncated_is_refused() {
    let mut big = (1u64 << 40).to_le_bytes().to_vec();
    big.extend(b"{}");
    let e = Model::parse(big).unwrap_err().to_string();
    assert_eq!(e, "the model file's header claims 1099511627776 bytes, more than the 1048576 a model header may have");
    let mut cut = 1000u64.to_le_bytes().to_vec();
    cut.extend(b"{\"a\": 1}");
    let e = Model::parse(cut).unwrap_err().to_string();
    assert_eq!(e, "the model file is truncated: its header claims 1000 bytes but 8 follow");
    // The data cut short: the tensors' offsets run past it.
    let e = refused(|_, data| data.truncate(20));
    assert!(e.starts_with("the model file's tensor `scales`: bytes 10..30 outside the 20 bytes of data"), "{e}");
}

#[test]
fn another_format_is_refused() {
    let e = refused(|h, _| h["__metadata__"]["format"] = json!("model2vec/1"));
    assert_eq!(e, "the model file's format is \"model2vec/1\", not tmws-static-embedding/1");
    let e = refused(|h, _| {
        h.as_object_mut().unwrap().remove("__metadata__");
    });
    assert_eq!(e, "the model file's format is not given, not tmws-static-embedding/1");
    let e = refused(|h, _| h["__metadata__"]["dim"] = json!("two"));
    assert_eq!(e, "the model file's metadata `dim` is \"two\", not a positive whole number");
    let e = refused(|h, _| {
        h["__metadata__"].as_object_mut().unwrap().remove("unk_token");
    });
    assert_eq!(e, "the model file's metadata `unk_token` is missing");
}

#[test]
fn a_missing_tensor_is_refused() {
    for name in ["embeddings", "scales", "vocab"] {
        let e = refused(|h, _| {
            h.as_object_mut().unwrap().remove(name);
        });
        assert_eq!(e, format!("the model file has no tensor `{name}`"));
    }
    let e = refused(|h, _| h["scales"]["dtype"] = json!("F16"));
    assert_eq!(e, "the model file's tensor `scales`: dtype \"F16\", not F32");
}

#[test]
fn shapes_that_disagree_are_refused() {
    // Rows × dim is not the table's bytes.
    let e = refused(|h, _| h["embeddings"]["shape"] = json!([5, 3]));
    assert_eq!(e, "the model file's shapes disagree: embeddings of shape [5, 3] in 10 bytes");
    // The rows are not the metadata's dim.
    let e = refused(|h, _| {
        h["embeddings"]["shape"] = json!([10, 1]);
    });
    assert_eq!(e, "the model file's shapes disagree: rows of 1 values, but metadata dim is 2");
    // One scale short.
    let e = refused(|h, _| {
        h["scales"]["shape"] = json!([4]);
        h["scales"]["data_offsets"] = json!([10, 26]);
    });
    assert_eq!(e, "the model file's shapes disagree: scales of shape [4] for 5 rows");
    // A vocabulary of six tokens for five rows.
    let e = refused(|h, data| {
        data.extend(b"\nx");
        let n = data.len();
        h["vocab"]["shape"] = json!([n - 30]);
        h["vocab"]["data_offsets"] = json!([30, n]);
    });
    assert_eq!(e, "the model file's shapes disagree: 6 tokens in the vocabulary for 5 rows");
    let e = refused(|h, _| h["__metadata__"]["vocab_size"] = json!("6"));
    assert_eq!(e, "the model file's shapes disagree: 5 rows, but metadata vocab_size is 6");
}

#[test]
fn a_vocabulary_that_is_not_utf8_is_refused() {
    let e = refused(|_, data| {
        let n = data.len();
        data[n - 1] = 0xFF;
    });
    assert_eq!(e, "the model file's vocabulary is not UTF-8 (at byte 26 of it)");
    let e = refused(|h, _| h["__metadata__"]["unk_token"] = json!("<unk>"));
    assert_eq!(e, "the model file's unknown token \"<unk>\" is not in its vocabulary");
}

#[test]
fn garbage_bytes_never_panic() {
    let (header, data) = tiny();
    let good = file(&header, &data);
    check(
        "semantic-parse-bytes",
        256,
        (proptest::collection::vec(any::<(u16, u8)>(), 0..8), 0..300usize),
        |(flips, cut)| {
            let mut bytes = good.clone();
            for (at, b) in flips {
                let n = bytes.len();
                bytes[at as usize % n] = b;
            }
            bytes.truncate(cut.max(1) * 4);
            if let Ok(m) = Model::parse(bytes) {
                let _ = m.embed("hello worlds");
            }
            Ok(())
        },
    );
}

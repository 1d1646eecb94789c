//! Ranking of memories: every hand-written memory set of `tools/model/eval/`
//! (`memory_sets`), asked through `memory_search` and `recall` with the lexical ranking
//! alone, reaches at least the figures it reached when they were pinned, and so does
//! `recall` over every kind at once (the `everything` set), so that a change that loses
//! answers fails. `examples/ranking.rs --memories` prints the same figures with the fused
//! runs and latency.

use super::memory_sets::{self, Tool};
use super::util::TestRoot;

/// MRR@10 and R@5 each set reached, lexical only, by tool (rounded down to 0.01). The
/// memories are added one after another, and one added in a later second has decayed a
/// hair less: of two with the same words, which comes first depends on whether a second
/// passed between their adds, so a figure is the lower of the two outcomes (the
/// conversations through `recall`: R@5 0.658 or 0.671).
const REACHED: [(&str, Tool, f64, f64); 9] = [
    ("en", Tool::MemorySearch, 0.08, 0.15),
    ("en-overlap", Tool::MemorySearch, 1.00, 1.00),
    ("ja", Tool::MemorySearch, 0.33, 0.41),
    ("conversations", Tool::MemorySearch, 0.38, 0.53),
    ("en", Tool::Recall, 0.06, 0.08),
    ("en-overlap", Tool::Recall, 1.00, 1.00),
    ("ja", Tool::Recall, 0.33, 0.41),
    ("conversations", Tool::Recall, 0.44, 0.65),
    ("everything", Tool::Recall, 0.48, 0.68),
];

#[test]
fn every_memory_set_reaches_its_pinned_figures_through_memory_search_and_recall() {
    let mut report = Vec::new();
    let mut failed = false;
    let mut corpora = memory_sets::corpora();
    corpora.push(memory_sets::everything());
    for mut corpus in corpora {
        let root = TestRoot::new();
        let mut config = memory_sets::lexical_config().to_owned();
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
                let Some((_, _, mrr_floor, r5_floor)) = REACHED.iter().find(|(s, t, _, _)| *s == set && *t == tool)
                else {
                    continue;
                };
                let these: Vec<&memory_sets::Asked> = of.iter().map(|&i| &asked[i]).collect();
                let (mrr, r5, _, n) = memory_sets::score(&these);
                let low = mrr < *mrr_floor || r5 < *r5_floor;
                failed |= low;
                report.push(format!(
                    "{set} {}: {n} questions, MRR@10 {mrr:.3} (at least {mrr_floor}), R@5 {r5:.3} (at least {r5_floor}){}",
                    tool.name(),
                    if low { "  <- below" } else { "" }
                ));
            }
        }
    }
    assert_eq!(report.len(), REACHED.len(), "{report:#?}");
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

//! Hot-memory budgets (docs/hot-rules.md): each rule file within the budget it declares, and all
//! rule files within `rules.total_budget_lines`.

use std::path::Path;

use super::{Checker, lock};
use crate::layout;
use crate::model::{Diagnostic, Rule};
use crate::parse::{self, markdown, rules as rule_files};

impl Checker {
    pub(super) fn rule_file(&self, path: &str, bytes: &[u8]) -> Vec<Diagnostic> {
        let doc = markdown::parse(bytes);
        let mut diags = doc.diagnostics;
        let (text, _) = parse::decode(bytes);
        let lines = rule_files::line_count(&text);
        lock(&self.rule_lines).push((path.to_owned(), lines));
        match rule_files::budget(&text) {
            None => diags.push(
                Diagnostic::error(Rule::MissingBudget, 1, 1, "rule file declares no budget")
                    .with_hint("add `<!-- budget: N lines -->` on its first line"),
            ),
            Some(b) if lines > b.lines => diags.push(
                Diagnostic::error(
                    Rule::RuleBudget,
                    b.line,
                    b.column,
                    format!("rule file has {lines} lines, over its budget of {}", b.lines),
                )
                .with_len(4)
                .with_hint("shorten it (hot memory is read on every turn), or raise its budget"),
            ),
            Some(_) => {}
        }
        diags
    }

    /// The total budget over all rule files, when the check covered their folder.
    pub(super) fn rule_totals(&self, starts: &[&Path]) {
        let Some(root) = &self.root else { return };
        let rules_dir = root.join(layout::RULES_DIR);
        if !starts.iter().any(|s| rules_dir.starts_with(s)) {
            return;
        }
        let mut files = lock(&self.rule_lines).clone();
        files.sort();
        let budget = self.config.rules.total_budget_lines;
        let total: usize = files.iter().map(|(_, n)| n).sum();
        let mut sum = 0;
        for (path, n) in &files {
            sum += n;
            if sum > budget {
                let d = Diagnostic::error(
                    Rule::RuleBudget,
                    1,
                    1,
                    format!("rule files total {total} lines, over the total budget of {budget} (this file crosses it)"),
                )
                .with_path(path.clone())
                .with_hint("shorten the rules, or raise `rules.total_budget_lines` in .tmws/config.toml");
                lock(&self.diags).push(d);
                break;
            }
        }
    }
}

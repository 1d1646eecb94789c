//! Hot-memory rule files (`agent/rules/common/*.md`) and their line budgets (docs/hot-rules.md).

/// A rule file's declared budget: `<!-- budget: N lines -->` on one of its first lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub lines: usize,
    /// 1-based line and column of the comment.
    pub line: usize,
    pub column: usize,
}

/// How many of the first lines may hold the budget comment (front-matter may come first).
const BUDGET_SEARCH_LINES: usize = 12;

/// Finds the budget declaration near the top of a rule file.
pub fn budget(text: &str) -> Option<Budget> {
    for (i, line) in text.lines().take(BUDGET_SEARCH_LINES).enumerate() {
        let Some(start) = line.find("<!--") else { continue };
        let rest = line[start + 4..].trim_start();
        let Some(rest) = rest.strip_prefix("budget:") else { continue };
        let rest = rest.trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let after = rest[digits.len()..].trim_start();
        if digits.is_empty() || !(after.starts_with("lines") || after.starts_with("line")) {
            continue;
        }
        if let Ok(lines) = digits.parse() {
            let column = line[..start].chars().count() + 1;
            return Some(Budget { lines, line: i + 1, column });
        }
    }
    None
}

/// The number of lines a rule file counts against its budget.
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_budget_comment() {
        assert_eq!(budget("<!-- budget: 40 lines -->\n# Rules\n"), Some(Budget { lines: 40, line: 1, column: 1 }));
        assert_eq!(budget("# Rules\n  <!--budget:  1 line-->\n"), Some(Budget { lines: 1, line: 2, column: 3 }));
        assert_eq!(budget("# Rules\n<!-- budget: many lines -->\n"), None);
        assert_eq!(budget("# Rules\n"), None);
        assert_eq!(line_count("a\nb\n"), 2);
    }
}

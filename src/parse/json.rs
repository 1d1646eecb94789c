//! Whole JSON documents (the registry, client configs, schema overrides), with the lines
//! that diagnostics need.

use serde_json::Value;

use crate::model::{Diagnostic, Rule};

/// Parses a JSON document; a syntax error names its line and column.
#[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
pub fn parse(text: &str, rule: Rule) -> Result<Value, Diagnostic> {
    serde_json::from_str(text).map_err(|e| {
        Diagnostic::error(rule, e.line(), e.column(), format!("invalid JSON: {}", super::json_error_message(&e)))
    })
}

/// The line and column where the value at `pointer` (`/servers/x/tools`) is written,
/// found by following the keys in order through the text. Falls back to line 1.
pub fn pointer_position(text: &str, pointer: &str) -> (usize, usize) {
    let mut pos = 0;
    for raw in pointer.split('/').skip(1) {
        if raw.parse::<usize>().is_ok() && !text[pos..].contains(&format!("\"{raw}\"")) {
            continue;
        }
        let key = raw.replace("~1", "/").replace("~0", "~");
        let needle = serde_json::to_string(&key).unwrap_or_default();
        match text[pos..].find(&needle) {
            Some(i) => pos += i,
            None => break,
        }
    }
    super::line_col(text, pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_and_pointer_positions() {
        let d = parse("{\n  \"a\": 1,\n}", Rule::Registry).unwrap_err();
        assert_eq!((d.line, d.column), (3, 1));
        let text = "{\n  \"servers\": {\n    \"x\": {\n      \"tools\": 3\n    }\n  }\n}";
        assert_eq!(pointer_position(text, "/servers/x/tools"), (4, 7));
        assert_eq!(pointer_position(text, ""), (1, 1));
    }
}

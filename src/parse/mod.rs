//! Pure parsing: text in, values and diagnostics out.
//!
//! Nothing here touches the disk or fails: every parser returns what it could make of its
//! input together with the diagnostics it found, so that one bad file or line never stops
//! the rest.

pub mod agent_hooks;
pub mod clients;
pub mod frontmatter;
#[cfg(test)]
pub(crate) mod fuzz;
pub mod issue_ref;
pub mod json;
pub mod jsonl;
pub mod lenient;
pub mod markdown;
pub mod payload;
pub mod registry;
pub mod rules;
pub mod text;
pub mod time;
pub mod trust;
pub mod yaml;

use std::borrow::Cow;

use crate::model::{Diagnostic, Rule};

/// Decodes bytes as UTF-8. Invalid bytes become U+FFFD and an `encoding` diagnostic names
/// the line and column of the first one.
pub fn decode(bytes: &[u8]) -> (Cow<'_, str>, Option<Diagnostic>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Cow::Borrowed(text), None),
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            // The valid prefix is UTF-8 by definition.
            let prefix = std::str::from_utf8(good).unwrap_or_default();
            let line = prefix.matches('\n').count() + 1;
            let column = prefix.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            let bad = bytes[e.valid_up_to()];
            let d = Diagnostic::error(Rule::Encoding, line, column, format!("byte 0x{bad:02X} is not valid UTF-8"))
                .with_hint("save the file as UTF-8; the file is still read, with U+FFFD in place of the bad bytes");
            (String::from_utf8_lossy(bytes), Some(d))
        }
    }
}

/// A serde_json error's message without its " at line L column C" suffix, for callers
/// that report the position themselves.
pub fn json_error_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The 1-based line and character column of a byte offset in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut start = offset;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_reports_the_first_bad_byte() {
        let (text, d) = decode(b"---\nname: caf\xe9\n---\n");
        let d = d.unwrap();
        assert_eq!((d.rule, d.line, d.column), (Rule::Encoding, 2, 10));
        assert_eq!(d.message, "byte 0xE9 is not valid UTF-8");
        assert_eq!(text, "---\nname: caf\u{fffd}\n---\n");
        assert!(decode("ok ✓".as_bytes()).1.is_none());
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\nçd", 5), (2, 2));
        assert_eq!(line_col("ab", 0), (1, 1));
        assert_eq!(line_col("ab", 99), (1, 3));
    }
}

//! Append-only JSONL logs, read line by line (docs/memory-log.md).
//!
//! One JSON object per line. A line that is not valid UTF-8, not valid JSON or not an
//! object is reported with its line number and skipped; it never stops the reading of the
//! lines after it. A final line without its `\n` that does not parse is a torn write.

use serde_json::Value;

use crate::model::{Diagnostic, Rule};

/// The longest line read (docs/trust-boundary.md); a longer one is reported and skipped unparsed.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One good line of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: usize,
    pub value: Value,
}

/// The complete lines of `bytes`: up to and including the last `\n`.
pub fn complete(bytes: &[u8]) -> &[u8] {
    bytes.iter().rposition(|b| *b == b'\n').map_or(&[], |i| &bytes[..=i])
}

/// Parses a whole log. Blank lines are allowed and ignored.
pub fn parse(bytes: &[u8]) -> (Vec<Line>, Vec<Diagnostic>) {
    let (lines, diags) =
        parse_as(bytes, |text| serde_json::from_str::<Value>(text).map(|v| v.is_object().then_some(v)));
    (lines.into_iter().map(|(line, offset, value)| Line { line, offset, value }).collect(), diags)
}

/// Parses a whole log with any reading of a line's text: `Ok(None)` means the line is not
/// a JSON object. Returns (line number, byte offset, value) of the good lines.
pub fn parse_as<'a, T>(
    bytes: &'a [u8],
    read: impl FnMut(&'a str) -> serde_json::Result<Option<T>>,
) -> (Vec<(usize, usize, T)>, Vec<Diagnostic>) {
    let mut lines = Vec::new();
    let diags = each_line(bytes, read, |line, offset, value| lines.push((line, offset, value)));
    (lines, diags)
}

/// [`parse_as`] without collecting: `take` gets (line number, byte offset, value) of each
/// good line as it is read, so a large log's lines are never all held at once.
pub fn each_line<'a, T>(
    bytes: &'a [u8],
    mut read: impl FnMut(&'a str) -> serde_json::Result<Option<T>>,
    mut take: impl FnMut(usize, usize, T),
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut offset = 0;
    let mut line_no = 0;
    for raw in bytes.split_inclusive(|b| *b == b'\n') {
        line_no += 1;
        let start = offset;
        offset += raw.len();
        let terminated = raw.last() == Some(&b'\n');
        let content = raw.strip_suffix(b"\n").unwrap_or(raw);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content.len() > MAX_LINE_BYTES {
            diags.push(
                Diagnostic::error(
                    Rule::JsonlLine,
                    line_no,
                    1,
                    format!("line is {} bytes, over the limit of {MAX_LINE_BYTES}; line skipped", content.len()),
                )
                .with_hint("a memory's content is capped far below this: the line was not written by tmws"),
            );
            continue;
        }
        if content.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(content) {
            Ok(t) => t,
            Err(e) => {
                let col = String::from_utf8_lossy(&content[..e.valid_up_to()]).chars().count() + 1;
                diags.push(
                    Diagnostic::error(
                        Rule::Encoding,
                        line_no,
                        col,
                        format!("byte 0x{:02X} is not valid UTF-8; line skipped", content[e.valid_up_to()]),
                    )
                    .with_hint("fix or delete the line"),
                );
                continue;
            }
        };
        match read(text) {
            Ok(Some(value)) => take(line_no, start, value),
            Ok(None) => diags.push(
                Diagnostic::error(Rule::JsonlLine, line_no, 1, "line is not a JSON object; line skipped")
                    .with_hint("each line must be one JSON object, e.g. {\"op\":\"add\",…}"),
            ),
            // A typed reading (the memory fold) fails on anything but an object this way.
            Err(e) if e.is_data() => diags.push(
                Diagnostic::error(Rule::JsonlLine, line_no, 1, "line is not a JSON object; line skipped")
                    .with_hint("each line must be one JSON object, e.g. {\"op\":\"add\",…}"),
            ),
            Err(e) if !terminated => diags.push(
                Diagnostic::error(
                    Rule::JsonlLine,
                    line_no,
                    e.column().max(1),
                    format!(
                        "torn final line (no newline at the end, and {}); line skipped",
                        super::json_error_message(&e)
                    ),
                )
                .with_hint("an interrupted write: the next compaction (`tmws memory cleanup`) repairs it"),
            ),
            Err(e) => diags.push(
                Diagnostic::error(
                    Rule::JsonlLine,
                    line_no,
                    e.column().max(1),
                    format!("invalid JSON: {}; line skipped", super::json_error_message(&e)),
                )
                .with_hint("fix or delete the line; each line must be one JSON object"),
            ),
        }
    }
    diags
}

/// The string values of a JSON field named by `name` (a quoted name: `"id"`) in `line`,
/// as written between their quotes: what follows each `"id":` that is a string.
pub fn string_values<'a>(line: &'a [u8], name: &'a memchr::memmem::Finder<'_>) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let mut i = from + name.find(line.get(from..)?)? + name.needle().len();
            from = i;
            let skip = |i: &mut usize| {
                while line.get(*i).is_some_and(u8::is_ascii_whitespace) {
                    *i += 1;
                }
            };
            skip(&mut i);
            if line.get(i) != Some(&b':') {
                continue;
            }
            i += 1;
            skip(&mut i);
            if line.get(i) != Some(&b'"') {
                continue;
            }
            let start = i + 1;
            // The value ends at the first quote no backslash escapes.
            let mut end = start;
            loop {
                end += memchr::memchr(b'"', line.get(end..)?)?;
                if line[start..end].iter().rev().take_while(|b| **b == b'\\').count() % 2 == 0 {
                    break;
                }
                end += 1;
            }
            from = end + 1;
            return Some(&line[start..end]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_bad_and_torn_lines() {
        let log = b"{\"op\":\"add\"}\n\nnot json\n[1]\n{\"a\":\xff}\n{\"op\":\"del";
        let (lines, diags) = parse(log);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].line, lines[0].offset), (1, 0));
        let got: Vec<_> = diags.iter().map(|d| (d.rule, d.line, d.column)).collect();
        assert_eq!(
            got,
            vec![(Rule::JsonlLine, 3, 2), (Rule::JsonlLine, 4, 1), (Rule::Encoding, 5, 6), (Rule::JsonlLine, 6, 10)]
        );
        assert!(diags[3].message.starts_with("torn final line"), "{}", diags[3].message);
    }

    #[test]
    fn a_final_line_without_newline_that_parses_is_kept() {
        let (lines, diags) = parse(b"{\"a\":1}\r\n{\"b\":2}");
        assert_eq!(lines.len(), 2);
        assert!(diags.is_empty());
    }
}

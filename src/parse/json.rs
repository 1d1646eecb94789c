//! Whole JSON documents (the registry, client configs, schema overrides), with the lines
//! that diagnostics need.

use std::collections::HashMap;

use serde_json::Value;

use crate::model::{Diagnostic, Rule};

/// Parses a JSON document; a syntax error names its line and column.
#[allow(clippy::result_large_err, reason = "one diagnostic per file at most; boxing it buys nothing")]
pub fn parse(text: &str, rule: Rule) -> Result<Value, Diagnostic> {
    serde_json::from_str(text).map_err(|e| {
        Diagnostic::error(rule, e.line(), e.column(), format!("invalid JSON: {}", super::json_error_message(&e)))
    })
}

/// Where the values of a JSON document are written: the byte offset of the value at a JSON
/// pointer (`/servers/x/tools`, at its key), found by reading only the objects and arrays
/// on the pointer's way, each at most once however many pointers pass through it; and the
/// lines and columns of many offsets in one pass over the text. A minified file of 60,000
/// servers with a finding each is placed in linear time.
#[derive(Debug)]
pub struct Positions<'a> {
    text: &'a str,
    /// The members of each object or array read so far, by the offset of its bracket: by
    /// key (an array element's index), the offset of the key and that of the value.
    members: HashMap<usize, HashMap<String, (usize, usize)>>,
}

impl<'a> Positions<'a> {
    pub fn new(text: &'a str) -> Positions<'a> {
        Positions { text, members: HashMap::new() }
    }

    /// The offset of the value at `pointer`, at its key; as far as the text could be
    /// followed (0: the document).
    pub fn offset(&mut self, pointer: &str) -> usize {
        let Some(mut at) = self.value_start(0) else { return 0 };
        let mut shown = 0;
        for raw in pointer.split('/').skip(1) {
            let key = raw.replace("~1", "/").replace("~0", "~");
            let Some(&(key_at, value_at)) = self.members_of(at).get(&key) else { break };
            (shown, at) = (key_at, value_at);
        }
        shown
    }

    /// The first byte of the value that starts at or after `at`, past whitespace.
    fn value_start(&self, at: usize) -> Option<usize> {
        let b = self.text.as_bytes();
        (at..b.len()).find(|&i| !b[i].is_ascii_whitespace())
    }

    /// The members of the object or array whose bracket is at `at` (none when it is neither).
    fn members_of(&mut self, at: usize) -> &HashMap<String, (usize, usize)> {
        if !self.members.contains_key(&at) {
            let found = self.read_members(at);
            self.members.insert(at, found);
        }
        &self.members[&at]
    }

    /// The members of an object (the first of a repeated key) or an array.
    fn read_members(&self, at: usize) -> HashMap<String, (usize, usize)> {
        let b = self.text.as_bytes();
        let object = match b.get(at) {
            Some(b'{') => true,
            Some(b'[') => false,
            _ => return HashMap::new(),
        };
        let mut out = HashMap::new();
        let mut i = at + 1;
        loop {
            let Some(start) = self.value_start(i) else { return out };
            if matches!(b[start], b'}' | b']') {
                return out;
            }
            let (key, key_at, value_at) = if object {
                let Some(end) = string_end(b, start) else { return out };
                let key = serde_json::from_str::<String>(&self.text[start..end]).unwrap_or_default();
                let Some(colon) = self.value_start(end).filter(|&c| b[c] == b':') else { return out };
                let Some(value) = self.value_start(colon + 1) else { return out };
                (key, start, value)
            } else {
                (out.len().to_string(), start, start)
            };
            let Some(after) = value_end(b, value_at) else { return out };
            out.entry(key).or_insert((key_at, value_at));
            let Some(next) = self.value_start(after) else { return out };
            if b[next] != b',' {
                return out;
            }
            i = next + 1;
        }
    }

    /// The (line, column) of each offset, in one pass over the text (columns in characters,
    /// from 1).
    pub fn line_cols(&self, offsets: &[usize]) -> Vec<(usize, usize)> {
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_by_key(|&i| offsets[i]);
        let mut out = vec![(1, 1); offsets.len()];
        let (mut line, mut col) = (1, 1);
        let mut chars = self.text.char_indices().peekable();
        for i in order {
            let target = offsets[i].min(self.text.len());
            while let Some(&(at, c)) = chars.peek() {
                if at >= target {
                    break;
                }
                if c == '\n' {
                    (line, col) = (line + 1, 1);
                } else {
                    col += 1;
                }
                chars.next();
            }
            out[i] = (line, col);
        }
        out
    }
}

/// The offset just past the string that starts (with its quote) at `at`.
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < b.len() {
        match memchr::memchr2(b'"', b'\\', &b[i..]) {
            Some(j) if b[i + j] == b'\\' => i += j + 2,
            Some(j) => return Some(i + j + 1),
            None => return None,
        }
    }
    None
}

/// The offset just past the value that starts at `at`.
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => Some(
            at + b[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace())
                .unwrap_or(b.len() - at),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line and column where the value at `pointer` (`/servers/x/tools`) is written (at
    /// its key). Falls back to the document's start.
    fn pointer_position(text: &str, pointer: &str) -> (usize, usize) {
        let mut p = Positions::new(text);
        let at = p.offset(pointer);
        p.line_cols(&[at])[0]
    }

    #[test]
    fn syntax_errors_and_pointer_positions() {
        let d = parse("{\n  \"a\": 1,\n}", Rule::Registry).unwrap_err();
        assert_eq!((d.line, d.column), (3, 1));
        let text = "{\n  \"servers\": {\n    \"x\": {\n      \"tools\": 3\n    }\n  }\n}";
        assert_eq!(pointer_position(text, "/servers/x/tools"), (4, 7));
        assert_eq!(pointer_position(text, ""), (1, 1));
        // Keys that are also words elsewhere, escapes, arrays, a pointer that goes nowhere.
        let text = "{\"a\": \"tools \\\" [x\", \"servers\": {\"x y\": {\"args\": [1, {\"k\": \"v\"}], \"tools\": 3}},\n \"b\": 2}";
        assert_eq!(pointer_position(text, "/servers/x y/tools"), (1, 67));
        assert_eq!(pointer_position(text, "/servers/x y/args/1/k"), (1, 55));
        assert_eq!(pointer_position(text, "/b"), (2, 2));
        assert_eq!(pointer_position(text, "/servers/nope/x"), (1, 22));
    }

    #[test]
    fn many_positions_in_one_long_line_are_found_in_one_pass() {
        let servers: Vec<String> = (0..20_000).map(|i| format!("\"s{i}\":{{\"persistent\":\"no\"}}")).collect();
        let text = format!("{{\"servers\":{{{}}}}}", servers.join(","));
        let mut p = Positions::new(&text);
        let offsets: Vec<usize> = (0..20_000).map(|i| p.offset(&format!("/servers/s{i}/persistent"))).collect();
        let places = p.line_cols(&offsets);
        assert_eq!(places[0], (1, 19));
        assert_eq!(places[19_999], (1, text.find("\"s19999\"").unwrap() + 11));
    }
}

//! Texts as a program reads them: the escapes of a string literal decoded (`\/`, `\"`,
//! `\\`, `\n`, `\u0041`, `\x41`), a line continuation (a backslash at a line's end) joined
//! to the next line, and a token broken at a line's end joined to its rest on the next.
//!
//! A secret written into a JSON string (`postgres:\/\/app:pw@db`), into a JSON string
//! inside another (`{\"password\":\"…\"}`) or across lines is not one run of the
//! characters its rule matches, so it is looked for again in such a *view* of the lines
//! around each escape or break, and redacted where its bytes are in the text. A view maps
//! each of its bytes back to the bytes it was decoded from; views are made only of the
//! lines that need one, so a text without a backslash costs one `memchr`.

use super::{line_end, lines};

/// Part of a text with its escapes decoded, and where each of its bytes came from.
pub(super) struct View {
    pub text: String,
    /// For each byte of `text`, where the bytes it was decoded from start in the viewed
    /// text, from `base` (four bytes a byte: a view of a whole JSON log is as long as it).
    starts: Vec<u32>,
    base: usize,
}

impl View {
    /// The bytes of `viewed` (the text this is a view of) that `start..end` of the view
    /// (not empty) came from: from where its first byte's source starts to where its last
    /// byte's ends (an escape's end; a line continuation after it is not part of it).
    pub fn source(&self, viewed: &str, start: usize, end: usize) -> (usize, usize) {
        let at = |i: usize| self.base + self.starts[i] as usize;
        let last = at(end.max(start + 1) - 1);
        let bytes = viewed.as_bytes();
        let last_end = match escape(bytes, last) {
            Some((len, Some(_))) if bytes[last] == b'\\' => last + len,
            _ => last + 1,
        };
        (at(start), last_end)
    }
}

/// What the escape that starts at `bytes[at]` (a backslash) stands for, and how many bytes
/// it takes: a character, or nothing (a line continuation). `None` when it is no escape a
/// view decodes (`\d` in an expression, `\U` in a Windows path).
fn escape(bytes: &[u8], at: usize) -> Option<(usize, Option<char>)> {
    let hex = |from: usize, n: usize| -> Option<u32> {
        let digits = bytes.get(from..from + n)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    };
    match *bytes.get(at + 1)? {
        c @ (b'/' | b'"' | b'\'' | b'\\') => Some((2, Some(char::from(c)))),
        b'n' => Some((2, Some('\n'))),
        b'r' => Some((2, Some('\r'))),
        b't' => Some((2, Some('\t'))),
        b'\n' => Some((2, None)),
        b'\r' if bytes.get(at + 2) == Some(&b'\n') => Some((3, None)),
        // Only ASCII: a byte above it is part of some character the text does not say.
        b'x' => hex(at + 2, 2).filter(|&n| n < 0x80).and_then(char::from_u32).map(|c| (4, Some(c))),
        b'u' => {
            let unit = hex(at + 2, 4)?;
            if (0xD800..0xDC00).contains(&unit) {
                // A surrogate pair: `\ud83d\ude00`; a lone half is left as it is.
                if bytes.get(at + 6..at + 8) != Some(b"\\u".as_slice()) {
                    return None;
                }
                let low = hex(at + 8, 4).filter(|n| (0xDC00..0xE000).contains(n))?;
                return char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)).map(|c| (12, Some(c)));
            }
            char::from_u32(unit).map(|c| (6, Some(c)))
        }
        _ => None,
    }
}

/// Whether the escape at `at` can hide a secret from the rules: a quote, a slash or a
/// backslash escaped, a character by its code, a line continuation. `\n`, `\t` and `\r`
/// are decoded in a view but make none: C's and JSON's strings are full of them, and a value
/// they end is redacted with them, not missed (`DB_PASSWORD=x\nNEXT=y`).
fn hides(bytes: &[u8], at: usize) -> bool {
    !matches!(bytes.get(at + 1), Some(b'n' | b't' | b'r')) && escape(bytes, at).is_some()
}

/// The views of `text`: one for each run of lines that hold an escape that [`hides`] or one
/// of `breaks` (the line ends, `\n` or `\r\n`, that split a token), with the line before and
/// after it.
/// A view that decodes to its text as it is is left out.
pub(super) fn views(text: &str, breaks: &[usize]) -> Vec<View> {
    let bytes = text.as_bytes();
    let mut segments: Vec<(usize, usize)> = Vec::new();
    let escapes = memchr::memchr_iter(b'\\', bytes).filter(|&at| hides(bytes, at));
    let mut spots: Vec<usize> = escapes.chain(breaks.iter().copied()).collect();
    spots.sort_unstable();
    // The end of the line of the last spot looked at, and whether that line joins the next:
    // a spot on the same line needs no new look (a JSON log has escapes all along its lines).
    let mut line: Option<(usize, bool)> = None;
    for at in spots {
        // A line joined to the next one has the line after that as its next.
        let joins = matches!(bytes[at], b'\n' | b'\r') || matches!(bytes.get(at + 1), Some(b'\n' | b'\r'));
        if let Some((end, joined)) = line
            && at < end
            && (joined || !joins)
        {
            continue;
        }
        let (a, b) = lines(bytes, at, 1, if joins { 2 } else { 1 });
        line = Some((line_end(bytes, at), joins));
        match segments.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => segments.push((a, b)),
        }
    }
    segments.into_iter().filter_map(|(a, b)| decoded(text, a, b, breaks)).collect()
}

/// `text[a..b]` decoded, unless it decodes to itself. What lies between two escapes (or
/// breaks) is copied at once.
fn decoded(text: &str, a: usize, b: usize, breaks: &[usize]) -> Option<View> {
    let bytes = text.as_bytes();
    // Offsets from `a` fit in four bytes (no text tmws reads is 4 GiB; a longer one gets
    // no view).
    u32::try_from(b - a).ok()?;
    let offset = |k: usize| (k - a) as u32;
    let mut out: Vec<u8> = Vec::with_capacity(b - a);
    let mut starts: Vec<u32> = Vec::with_capacity(b - a);
    let mut breaks = breaks.iter().copied().filter(|&at| (a..b).contains(&at)).peekable();
    let mut changed = false;
    let mut i = a;
    while i < b {
        let escape_at = memchr::memchr(b'\\', &bytes[i..b]).map_or(b, |k| i + k);
        let next = breaks.peek().copied().map_or(escape_at, |brk| brk.min(escape_at));
        out.extend_from_slice(&bytes[i..next]);
        starts.extend(offset(i)..offset(next));
        i = next;
        if i == b {
            break;
        }
        if breaks.peek() == Some(&i) {
            breaks.next();
            i += if bytes[i] == b'\r' { 2 } else { 1 };
            changed = true;
            continue;
        }
        match escape(bytes, i) {
            Some((len, c)) => {
                if let Some(c) = c {
                    let mut buf = [0u8; 4];
                    let encoded = c.encode_utf8(&mut buf).as_bytes();
                    out.extend_from_slice(encoded);
                    starts.extend(std::iter::repeat_n(offset(i), encoded.len()));
                }
                i += len;
                changed = true;
            }
            None => {
                out.push(b'\\');
                starts.push(offset(i));
                i += 1;
            }
        }
    }
    if !changed || out.is_empty() {
        return None;
    }
    Some(View { text: String::from_utf8(out).ok()?, starts, base: a })
}

/// `text` with its escapes decoded (itself when it has none).
pub(super) fn unescaped(text: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr(b'\\', text.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(text);
    }
    match decoded(text, 0, text.len(), &[]) {
        Some(view) => std::borrow::Cow::Owned(view.text),
        None => std::borrow::Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str) -> Vec<String> {
        views(text, &[]).into_iter().map(|v| v.text).collect()
    }

    #[test]
    fn escapes_of_string_literals_are_decoded() {
        assert_eq!(view(r#"{"db":"postgres:\/\/app:pw@db"}"#), [r#"{"db":"postgres://app:pw@db"}"#]);
        assert_eq!(view(r#"{\"password\":\"x\"}"#), [r#"{"password":"x"}"#]);
        assert_eq!(view(r"a\u0041\x42\\\n"), ["aAB\\\n"]);
        assert_eq!(view(r"smile \ud83d\ude00 lone \ud83d"), ["smile 😀 lone \\ud83d"]);
        assert_eq!(view("token=ghp_abc\\\ndef\nnext"), ["token=ghp_abcdef\nnext"]);
        // No escape a view decodes: nothing to look at again.
        assert!(view(r"C:\Users\dev \d+ \U0001").is_empty());
        // Line ends and tabs alone hide nothing; they are decoded in a view made for more.
        assert!(view(r#"printf("token:\t%s\n", t);"#).is_empty());
        assert_eq!(view(r#"{"a":"x\ny","b":"\/"}"#), ["{\"a\":\"x\ny\",\"b\":\"/\"}"]);
        assert!(view("plain text\nwith lines").is_empty());
    }

    #[test]
    fn a_view_holds_the_lines_around_each_escape_only() {
        let text = "one\ntwo\nthree \\/ x\nfour\nfive\nsix\nseven\neight \\\" y\nnine\n";
        assert_eq!(view(text), ["two\nthree / x\nfour", "seven\neight \" y\nnine"]);
    }

    #[test]
    fn each_byte_of_a_view_maps_back_to_what_it_was_decoded_from() {
        let text = r#"x {\"pass\/word\":\"h\u00e9llo\"} y"#;
        let v = views(text, &[]).pop().unwrap();
        let at = v.text.find("pass/word").unwrap();
        let (s, e) = v.source(text, at, at + "pass/word".len());
        assert_eq!(&text[s..e], r"pass\/word");
        let at = v.text.find("héllo").unwrap();
        let (s, e) = v.source(text, at, at + "héllo".len());
        assert_eq!(&text[s..e], r"h\u00e9llo");
    }

    #[test]
    fn a_broken_line_is_joined_in_its_view() {
        let text = "key:\nghp_0123456789\r\nabcdef tail\nlast";
        let at = text.find('\r').unwrap();
        let v = views(text, &[at]).pop().unwrap();
        assert_eq!(v.text, "key:\nghp_0123456789abcdef tail\nlast");
        let t = v.text.find("ghp_").unwrap();
        let (s, e) = v.source(text, t, t + "ghp_0123456789abcdef".len());
        assert_eq!(&text[s..e], "ghp_0123456789\r\nabcdef");
    }
}

//! What of a body is searched: its text without the HTML tags and comments in it.
//!
//! Markdown documentation carries HTML that a reader never sees as words: anchors
//! (`<span id="about-messages"></span>`), table cells (`<td align="left">`), line breaks,
//! comments. On the win32 documentation, tags were a tenth of the bytes, and their
//! attribute values (ids, classes, widths) were indexed with positions like prose and
//! counted in every page's length. A tag becomes a space, so the words on either side stay
//! apart; the text between an opening and a closing tag stays. Only the tags of known
//! HTML elements go: `vector<int>` and `template <typename T>` are text. Link targets stay:
//! their last part often names the linked page, and measured, taking them out lost known
//! items (`_spawnle, _wspawnle` by title among them). The stored body is unchanged.

use std::borrow::Cow;

/// The longest tag (or comment) taken out; a longer one is left as text.
const SPAN_MAX: usize = 2048;

/// The text of `body` to index.
pub fn searchable(body: &str) -> Cow<'_, str> {
    let bytes = body.as_bytes();
    let mut out: Option<String> = None;
    // Bytes before `kept` are in `out` (once it exists) or are to be copied as they are.
    let mut kept = 0;
    let mut at = 0;
    while let Some(k) = memchr::memchr(b'<', &bytes[at..]) {
        let i = at + k;
        let Some(to) = tag_end(bytes, i) else {
            at = i + 1;
            continue;
        };
        let o = out.get_or_insert_with(|| String::with_capacity(body.len()));
        o.push_str(&body[kept..i]);
        o.push(' ');
        kept = to;
        at = to;
    }
    match out {
        Some(mut o) => {
            o.push_str(&body[kept..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(body),
    }
}

/// HTML elements whose tags are taken out. Only these: `vector<int>` and `<T>` are text.
const ELEMENTS: &[&str] = &[
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "caption",
    "center",
    "code",
    "col",
    "colgroup",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "figcaption",
    "figure",
    "font",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "iframe",
    "img",
    "ins",
    "kbd",
    "li",
    "nobr",
    "ol",
    "p",
    "picture",
    "pre",
    "section",
    "small",
    "source",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "tt",
    "u",
    "ul",
    "video",
];

/// At a `<` at `i`: where the HTML comment or the tag of one of [`ELEMENTS`] that starts
/// there ends (the byte after its `>`).
fn tag_end(bytes: &[u8], i: usize) -> Option<usize> {
    let rest = &bytes[i + 1..];
    if rest.starts_with(b"!--") {
        let window = &rest[3..rest.len().min(3 + SPAN_MAX)];
        let end = memchr::memmem::find(window, b"-->")?;
        return Some(i + 1 + 3 + end + 3);
    }
    let name_at = usize::from(rest.first() == Some(&b'/'));
    let name_len = rest[name_at..].iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    let name = &rest[name_at..name_at + name_len];
    if name_len == 0 || name_len > 10 || !ELEMENTS.iter().any(|e| e.as_bytes().eq_ignore_ascii_case(name)) {
        return None;
    }
    let after = &rest[name_at + name_len..];
    if !matches!(after.first(), Some(b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r')) {
        return None;
    }
    let window = &after[..after.len().min(SPAN_MAX)];
    let close = memchr::memchr2(b'>', b'<', window).filter(|&k| window[k] == b'>')?;
    Some(i + 1 + name_at + name_len + close + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(body: &str, expect: &str) {
        assert_eq!(searchable(body), expect, "{body}");
    }

    #[test]
    fn tags_and_comments_go_and_what_they_enclose_stays() {
        check("<span id=\"about-messages\"></span>Title", "  Title");
        check("a<br/>b<BR>c", "a b c");
        check("<td align=\"left\">Value</td>", " Value ");
        check("x <!-- hidden\nnote --> y", "x   y");
        // A `<` inside a tag ends the search for its `>` there.
        check("<span a=\"<b>\">", "<span a=\" \">");
        check("<img src=\"a.png\" alt=\"x\"\n  width=\"3\"/>caption", " caption");
    }

    #[test]
    fn links_and_what_only_looks_like_a_tag_are_text() {
        for text in [
            "See [MessageBox](/windows/nf-winuser-messagebox) now.",
            "std::vector<int> v; template <typename T> f(a < b > c)",
            "<spanner>",
            "<span no end",
            "<!-- no end",
            "<",
            "<a",
            "</",
            "a <= b",
            "<https://example.com>",
        ] {
            check(text, text);
        }
    }

    #[test]
    fn tags_past_the_limit_stay() {
        let long = format!("<span title=\"{}\">", "y".repeat(SPAN_MAX + 10));
        check(&long, &long);
        let comment = format!("<!-- {} -->", "y".repeat(SPAN_MAX + 10));
        check(&comment, &comment);
    }

    #[test]
    fn any_text_keeps_its_length_bound_and_never_panics() {
        use proptest::prelude::*;
        proptest!(|(s in "[<>!/=\"a-z \n:é日-]{0,80}")| {
            let out = searchable(&s);
            // Each cut is three bytes or more, and becomes one space.
            prop_assert!(out.len() <= s.len());
            if !s.contains('<') {
                prop_assert!(matches!(out, Cow::Borrowed(_)));
            }
        });
    }
}

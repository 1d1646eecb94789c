//! Text as answers show it: summaries made from bodies, and texts cut at a word.

/// An extracted summary is at most this long (docs/memory-log.md).
pub const SUMMARY_CHARS: usize = 280;

/// The first meaningful sentences of a body as plain text (inline Markdown taken away), at
/// most SUMMARY_CHARS, cut at a word boundary.
pub fn first_sentences(body: &str) -> String {
    let mut text = String::new();
    let mut in_code = false;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || t.is_empty() || t.starts_with('#') || t.starts_with("<!--") || t.starts_with('|') {
            if !text.is_empty() && t.is_empty() {
                break;
            }
            continue;
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&plain_inline(list_item_text(t)));
        if text.chars().count() >= SUMMARY_CHARS {
            break;
        }
    }
    cut(&text, SUMMARY_CHARS)
}

/// A line without its quote and list markers (`>`, `-`, `*`, `+`, `1.`), but emphasis that
/// starts it (`**Owners:**`) is left for `plain_inline`.
fn list_item_text(line: &str) -> &str {
    let mut t = line.trim_start();
    loop {
        let before = t;
        t = t.trim_start_matches('>').trim_start();
        for marker in ["- ", "* ", "+ "] {
            if let Some(rest) = t.strip_prefix(marker) {
                t = rest.trim_start();
            }
        }
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0
            && let Some(rest) = t[digits..].strip_prefix(". ").or_else(|| t[digits..].strip_prefix(") "))
        {
            t = rest.trim_start();
        }
        if t == before {
            return t;
        }
    }
}

/// The first heading of a Markdown body (ATX `#` to `######`, or setext underlined with
/// `=` or `-`) as plain text, outside code fences: what names a doc without `name` or
/// `title` (docs/search-index.md).
pub fn first_heading(body: &str) -> Option<String> {
    let mut in_code = false;
    let mut previous: Option<&str> = None;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_code = !in_code;
            previous = None;
            continue;
        }
        if in_code {
            continue;
        }
        let hashes = t.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with([' ', '\t']) {
            let text = t[hashes..].trim().trim_end_matches('#').trim_end();
            let text = plain_inline(text);
            if !text.is_empty() {
                return Some(text);
            }
        }
        if let Some(p) = previous
            && !t.is_empty()
            && (t.bytes().all(|b| b == b'=') || (t.len() >= 2 && t.bytes().all(|b| b == b'-')))
        {
            let text = plain_inline(p);
            if !text.is_empty() {
                return Some(text);
            }
        }
        let paragraph = !t.is_empty() && !t.starts_with(['-', '*', '+', '>', '|', '<', '#']);
        previous = paragraph.then_some(t);
    }
    None
}

/// Inline Markdown as the plain text a person reads: `**b**`, `_i_`, `` `code` `` and
/// `~~s~~` lose their markers, `[text](url)` and `![alt](src)` keep their text, HTML tags
/// go, and `<https://…>` autolinks keep their address. Underscores inside a word
/// (`snake_case`) and stars between spaces (`2 * 3`) stay.
pub fn plain_inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '!' if chars.get(i + 1) == Some(&'[') => {
                i += 1;
                continue;
            }
            '[' => {
                // `[text](url)` or `[text][ref]`: the text; a lone bracket stays.
                if let Some(close) = chars[i + 1..].iter().position(|c| *c == ']').map(|p| p + i + 1) {
                    let after = chars.get(close + 1);
                    let end = match after {
                        Some('(') => chars[close + 1..].iter().position(|c| *c == ')').map(|p| p + close + 1),
                        Some('[') => chars[close + 1..].iter().position(|c| *c == ']').map(|p| p + close + 1),
                        _ => None,
                    };
                    if let Some(end) = end {
                        let inner: String = chars[i + 1..close].iter().collect();
                        out.push_str(&plain_inline(&inner));
                        i = end + 1;
                        continue;
                    }
                }
                out.push(c);
            }
            '<' => {
                let close = chars[i + 1..].iter().take(200).position(|c| *c == '>').map(|p| p + i + 1);
                let inner: String = close.map(|e| chars[i + 1..e].iter().collect()).unwrap_or_default();
                let tag = inner.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '!')
                    && !inner.contains(char::is_whitespace)
                    || inner.starts_with(|c: char| c.is_ascii_alphabetic()) && inner.contains('=');
                match close {
                    Some(end) if inner.contains("://") || (inner.contains('@') && !inner.contains(' ')) => {
                        out.push_str(&inner);
                        i = end + 1;
                        continue;
                    }
                    Some(end) if tag => {
                        i = end + 1;
                        continue;
                    }
                    _ => out.push(c),
                }
            }
            '`' => {}
            '*' | '_' | '~' => {
                let run = chars[i..].iter().take_while(|x| **x == c).count();
                let before = if i == 0 { None } else { chars.get(i - 1) };
                let after = chars.get(i + run);
                // CommonMark's flanking rules: a marker opens or closes on one side only;
                // one inside a word (`snake_case`, `a*b`) or between spaces (`2 * 3`) is
                // text, and so is a single `~`.
                let space = |c: Option<&char>| c.is_none_or(|c| c.is_whitespace());
                let punct = |c: Option<&char>| c.is_some_and(|c| c.is_ascii_punctuation());
                let left = !space(after) && (!punct(after) || space(before) || punct(before));
                let right = !space(before) && (!punct(before) || space(after) || punct(after));
                let marker = (left != right || (left && (punct(before) || punct(after)))) && (c != '~' || run >= 2);
                if !marker {
                    out.extend(std::iter::repeat_n(c, run));
                }
                i += run;
                continue;
            }
            '\\' if chars.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    let collapsed: Vec<&str> = out.split_whitespace().collect();
    collapsed.join(" ")
}

/// Cuts at a word boundary with an ellipsis when longer than `max` characters.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max).collect();
    let at = head.rfind(char::is_whitespace).filter(|i| *i > max / 2).unwrap_or(head.len());
    format!("{}…", head[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_markdown_becomes_plain_text() {
        let cases = [
            ("**Owners:**", "Owners:"),
            ("`@fpetkovski`", "@fpetkovski"),
            ("Use [tantivy](https://github.com/quickwit-oss/tantivy) for *search*.", "Use tantivy for search."),
            ("![logo](img/logo.png) and [ref][1]", "logo and ref"),
            ("snake_case and __bold__ and _em_", "snake_case and bold and em"),
            ("2 * 3 = 6, a*b stays", "2 * 3 = 6, a*b stays"),
            ("a<br/>b <span class=\"x\">c</span>", "ab c"),
            ("see <https://example.com/x> now", "see https://example.com/x now"),
            ("~~old~~ new, 1 < 2 > 0", "old new, 1 < 2 > 0"),
            ("\\*not emphasis\\*", "*not emphasis*"),
            ("[unclosed and a ] bracket", "[unclosed and a ] bracket"),
        ];
        for (md, plain) in cases {
            assert_eq!(plain_inline(md), plain, "{md}");
        }
    }

    #[test]
    fn the_first_heading_of_any_level_names_a_body() {
        assert_eq!(
            first_heading("## Introduce a Query gRPC API\n\n* **Owners:**\n").as_deref(),
            Some("Introduce a Query gRPC API")
        );
        assert_eq!(first_heading("```\n# not this\n```\n### The `real` one ###\n").as_deref(), Some("The real one"));
        assert_eq!(first_heading("Intro text\n\nSetext *title*\n=====\n").as_deref(), Some("Setext title"));
        assert_eq!(first_heading("- item\n---\n#hashtag\nplain\n"), None);
    }

    #[test]
    fn summaries_are_plain_text() {
        assert_eq!(
            first_sentences(
                "## Introduce a Query gRPC API\n\n* **Owners:**\n  * `@fpetkovski`\n  * `@mzardab`\n\n> TL;DR"
            ),
            "Owners: @fpetkovski @mzardab"
        );
        assert_eq!(first_sentences("1. First **step** of [the guide](g.md).\n"), "First step of the guide.");
    }

    #[test]
    fn summaries_cut_at_a_word() {
        assert_eq!(cut("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(
            first_sentences("# T\n\n```\ncode\n```\nFirst line\ncontinues.\n\nSecond para."),
            "First line continues."
        );
    }
}

/// `text` with the characters a terminal acts on or hides written as escapes, for anything
/// printed to a terminal (docs/trust-boundary.md): control characters (C0, DEL, C1) as `\x1b`, so a
/// value from a file cannot clear the screen or set the window title, and the invisible
/// format characters of [`is_hidden_format`] as `\u{202e}`, so that bidirectional
/// overrides cannot show a line in another order than it has ("Trojan Source") and
/// zero-width characters cannot make two different names look alike. Borrowed when there
/// is none.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c.is_control() || is_hidden_format(c);
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else if is_hidden_format(c) {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Format characters that show as nothing or reorder what follows them: the bidirectional
/// marks, embeddings, overrides and isolates, zero-width spaces and joiners, the word
/// joiner and invisible operators, the soft hyphen, the byte order mark, interlinear
/// annotation marks and tag characters. (Variation selectors, which only pick a glyph, are
/// left as they are.)
pub fn is_hidden_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x061C
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xE0000..=0xE007F
    )
}

/// Unicode's default-ignorable code points (DerivedCoreProperties): characters that are
/// drawn as nothing when a font has no glyph for them. Two names that differ only by
/// these look the same, so they are taken out before names are compared.
pub fn is_default_ignorable(c: char) -> bool {
    is_hidden_format(c)
        || matches!(
            u32::from(c),
            0x034F
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180F
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFFA0
                | 0xFFF0..=0xFFF8
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0080..=0xE0FFF
        )
}

#[cfg(test)]
mod escape_tests {
    use super::escape_controls;

    #[test]
    fn control_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(escape_controls("plain — 日本語"), "plain — 日本語");
        assert_eq!(escape_controls("a\x1b[2Jb\x1b]0;title\x07c"), "a\\x1b[2Jb\\x1b]0;title\\x07c");
        assert_eq!(escape_controls("tab\tnl\ncr\r\u{9b}\u{7f}"), "tab\\x09nl\\x0acr\\x0d\\x9b\\x7f");
    }

    #[test]
    fn bidi_and_zero_width_characters_are_escaped_and_emoji_are_kept() {
        // A right-to-left override makes `admin` look like what follows it, reversed.
        assert_eq!(escape_controls("user\u{202e}nimda"), "user\\u{202e}nimda");
        assert_eq!(escape_controls("cl\u{200b}aude \u{2066}x\u{2069}"), "cl\\u{200b}aude \\u{2066}x\\u{2069}");
        assert_eq!(escape_controls("\u{feff}bom\u{ad}"), "\\u{feff}bom\\u{00ad}");
        assert_eq!(escape_controls("ok \u{2764}\u{fe0f} 日本語"), "ok \u{2764}\u{fe0f} 日本語");
    }
}

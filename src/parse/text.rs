//! Text as answers show it: summaries made from bodies, and texts cut at a word.

/// An extracted summary is at most this long (DESIGN §2.3).
pub const SUMMARY_CHARS: usize = 280;

/// The first meaningful sentences of a body, at most SUMMARY_CHARS, cut at a word boundary.
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
        text.push_str(t.trim_start_matches(['-', '*', '>', ' ']));
        if text.chars().count() >= SUMMARY_CHARS {
            break;
        }
    }
    cut(&text, SUMMARY_CHARS)
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
    fn summaries_cut_at_a_word() {
        assert_eq!(cut("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(
            first_sentences("# T\n\n```\ncode\n```\nFirst line\ncontinues.\n\nSecond para."),
            "First line continues."
        );
    }
}

/// `text` with its control characters (C0, DEL, C1: what a terminal acts on) written as
/// `\x1b`-style escapes, for anything printed to a terminal (DESIGN §12): a value from a
/// file cannot clear the screen or set the window title. Borrowed when there is none.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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
}

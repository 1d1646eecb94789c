//! Splitting a Markdown file into its YAML front-matter block and its body.
//!
//! The block must open with `---` on line 1 (after an optional UTF-8 BOM) and close with `---` or
//! `...`; fences may carry trailing whitespace and lines may end in CRLF
//! (docs/workspace-documents.md). The split keeps line numbers so that every later diagnostic can
//! name the line in the whole file, not in the block.

/// Where the front-matter is, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split<'a> {
    /// The file has no front-matter; all of it is body.
    None,
    /// Blank lines precede an otherwise well-formed block: it is not front-matter, but the
    /// author surely meant it to be. `fence_line` is the 1-based line of the opening `---`.
    LeadingBlank { fence_line: usize },
    /// An opening fence with no closing one.
    Unclosed,
    /// A complete block.
    Found(Block<'a>),
}

/// A well-formed front-matter block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'a> {
    /// The YAML text between the fences (line endings as in the file).
    pub yaml: &'a str,
    /// The 1-based file line of the first line of `yaml`.
    pub yaml_line: usize,
    /// The 1-based file line of the closing fence.
    pub close_line: usize,
    /// Everything after the closing fence.
    pub body: &'a str,
}

/// Text of a file with the BOM removed, as front-matter and body see it.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

fn trim_eol(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

fn is_fence(line: &str, fence: &str) -> bool {
    trim_eol(line).trim_end_matches([' ', '\t']) == fence
}

/// Splits `text` (BOM already removed or not) into front-matter and body.
pub fn split(text: &str) -> Split<'_> {
    let text = strip_bom(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Split::None;
    };
    if !is_fence(first, "---") {
        if trim_eol(first).trim().is_empty() {
            return leading_blank(text);
        }
        return Split::None;
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for (line_no, line) in (2..).zip(lines) {
        if is_fence(line, "---") || is_fence(line, "...") {
            return Split::Found(Block {
                yaml: &text[yaml_start..offset],
                yaml_line: 2,
                close_line: line_no,
                body: &text[offset + line.len()..],
            });
        }
        offset += line.len();
    }
    Split::Unclosed
}

/// A file that starts with blank lines and then a complete `---` … `---` block.
fn leading_blank(text: &str) -> Split<'_> {
    let mut fence_line = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        match fence_line {
            None if trim_eol(line).trim().is_empty() => continue,
            None if is_fence(line, "---") => fence_line = Some(i + 1),
            None => return Split::None,
            Some(open) if is_fence(line, "---") || is_fence(line, "...") => {
                return Split::LeadingBlank { fence_line: open };
            }
            Some(_) => {}
        }
    }
    Split::None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Block<'_> {
        match split(text) {
            Split::Found(b) => b,
            other => panic!("expected a block, got {other:?}"),
        }
    }

    #[test]
    fn plain_block() {
        let b = found("---\nname: a\n---\nbody\n");
        assert_eq!(b.yaml, "name: a\n");
        assert_eq!(b.yaml_line, 2);
        assert_eq!(b.close_line, 3);
        assert_eq!(b.body, "body\n");
    }

    #[test]
    fn bom_crlf_and_trailing_whitespace_on_fences() {
        let b = found("\u{feff}--- \r\nname: a\r\n---\t\r\nbody\r\n");
        assert_eq!(b.yaml, "name: a\r\n");
        assert_eq!(b.close_line, 3);
        assert_eq!(b.body, "body\r\n");
    }

    #[test]
    fn dots_close_and_empty_block() {
        assert_eq!(found("---\na: 1\n...\n").yaml, "a: 1\n");
        let b = found("---\n---\n");
        assert_eq!(b.yaml, "");
        assert_eq!(b.body, "");
    }

    #[test]
    fn the_odd_cases() {
        assert_eq!(split(""), Split::None);
        assert_eq!(split("# Title\n---\n"), Split::None);
        assert_eq!(split("---\nname: a\n"), Split::Unclosed);
        assert_eq!(split("\n\n---\nname: a\n---\n"), Split::LeadingBlank { fence_line: 3 });
        assert_eq!(split("\n# Title\n"), Split::None);
        assert_eq!(split("\n---\nno close\n"), Split::None);
        assert_eq!(split("----\n"), Split::None);
    }
}

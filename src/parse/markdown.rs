//! A Markdown file as tmws reads it: decoded text, front-matter tree, body.

use super::frontmatter::{self, Split};
use super::yaml::{self, Node};
use crate::model::{Diagnostic, FrontMatter, Rule};

/// Front-matter larger than this is refused rather than parsed.
pub const MAX_FRONT_MATTER_BYTES: usize = 1 << 20;

/// What became of the front-matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontMatterState {
    /// The file has no front-matter block.
    Absent,
    /// Blank lines before the opening `---`: not front-matter (reported).
    LeadingBlank,
    /// An opening fence with no closing one (reported).
    Unclosed,
    /// The block is there but did not parse (reported).
    Invalid,
    /// The block parsed; `front` holds its root (None when the block is empty).
    Parsed,
}

/// A parsed Markdown document.
#[derive(Debug, Clone)]
pub struct MarkdownDoc {
    pub state: FrontMatterState,
    /// The front-matter's root node when it parsed.
    pub front: Option<Node>,
    /// The original YAML text of the block, kept verbatim.
    pub yaml: Option<String>,
    /// The 1-based line of the opening fence, when there is a block.
    pub fence_line: usize,
    /// The body: everything after the closing fence, or the whole text without one.
    pub body: String,
    /// Syntax-level findings: encoding, fences, YAML errors, duplicate keys.
    pub diagnostics: Vec<Diagnostic>,
}

impl MarkdownDoc {
    /// The front-matter as a mapping node, if it is one.
    pub fn mapping(&self) -> Option<&Node> {
        self.front.as_ref().filter(|n| matches!(n.value, yaml::Value::Map(_)))
    }

    /// The typed front-matter (empty when there is none or it did not parse).
    pub fn front_matter(&self) -> FrontMatter {
        self.mapping().map(|m| FrontMatter::from_json(&m.to_json())).unwrap_or_default()
    }
}

/// Parses a Markdown file's bytes. Never fails.
pub fn parse(bytes: &[u8]) -> MarkdownDoc {
    let (text, enc) = super::decode(bytes);
    let mut diagnostics: Vec<Diagnostic> = enc.into_iter().collect();
    let stripped = frontmatter::strip_bom(&text);
    let mut doc = MarkdownDoc {
        state: FrontMatterState::Absent,
        front: None,
        yaml: None,
        fence_line: 0,
        body: String::new(),
        diagnostics: Vec::new(),
    };
    match frontmatter::split(&text) {
        Split::None => doc.body = stripped.to_owned(),
        Split::LeadingBlank { fence_line } => {
            doc.state = FrontMatterState::LeadingBlank;
            doc.body = stripped.to_owned();
            diagnostics.push(
                Diagnostic::error(
                    Rule::MissingFrontMatter,
                    fence_line,
                    1,
                    format!(
                        "front-matter must start on line 1, but blank lines come before its `---` on line {fence_line}"
                    ),
                )
                .with_len(3)
                .with_hint("delete the blank lines above `---`: it must start on line 1"),
            );
        }
        Split::Unclosed => {
            doc.state = FrontMatterState::Unclosed;
            doc.fence_line = 1;
            doc.body = stripped.to_owned();
            diagnostics.push(
                Diagnostic::error(Rule::UnclosedFrontMatter, 1, 1, "front-matter opened with `---` is never closed")
                    .with_len(3)
                    .with_hint("end the front-matter with a line `---`"),
            );
        }
        Split::Found(block) => {
            doc.fence_line = 1;
            doc.yaml = Some(block.yaml.to_owned());
            doc.body = block.body.to_owned();
            if block.yaml.len() > MAX_FRONT_MATTER_BYTES {
                doc.state = FrontMatterState::Invalid;
                diagnostics.push(Diagnostic::error(
                    Rule::YamlSyntax,
                    1,
                    1,
                    format!("front-matter is {} bytes, over the limit of {MAX_FRONT_MATTER_BYTES}", block.yaml.len()),
                ));
            } else {
                let (node, diags) = yaml::parse(block.yaml, block.yaml_line);
                let failed = diags.iter().any(|d| d.rule == Rule::YamlSyntax);
                diagnostics.extend(diags);
                if failed {
                    doc.state = FrontMatterState::Invalid;
                } else {
                    doc.state = FrontMatterState::Parsed;
                    if let Some(n) = &node
                        && !matches!(n.value, yaml::Value::Map(_) | yaml::Value::Null)
                    {
                        diagnostics.push(
                            Diagnostic::error(
                                Rule::NotAMapping,
                                n.line,
                                n.column,
                                "front-matter is not a mapping of keys to values",
                            )
                            .with_hint("write one `key: value` per line"),
                        );
                    }
                    doc.front = node;
                }
            }
        }
    }
    doc.diagnostics = diagnostics;
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_good_file() {
        let doc = parse(b"---\nname: A\nextra: kept\n---\n# Body\n");
        assert_eq!(doc.state, FrontMatterState::Parsed);
        assert!(doc.diagnostics.is_empty());
        assert_eq!(doc.yaml.as_deref(), Some("name: A\nextra: kept\n"));
        assert_eq!(doc.body, "# Body\n");
        assert_eq!(doc.mapping().unwrap().to_json(), serde_json::json!({"name":"A","extra":"kept"}));
    }

    #[test]
    fn typed_front_matter_keeps_unknown_keys_in_order() {
        let doc = parse(
            b"---\ntitle: From title\ndescription: d\ntags: solo\nzeta: 1\nalpha: [x]\ncreated: 2026-11-22\n---\n",
        );
        let fm = doc.front_matter();
        assert_eq!(fm.name.as_deref(), Some("From title"));
        assert_eq!(fm.tags, vec!["solo"]);
        assert_eq!(fm.created.as_deref(), Some("2026-11-22"));
        let keys: Vec<&String> = fm.extra.keys().collect();
        assert_eq!(keys, vec!["title", "zeta", "alpha"]);
        assert_eq!(fm.extra["alpha"], serde_json::json!(["x"]));
        assert_eq!(parse(b"no front-matter").front_matter(), FrontMatter::default());
    }

    #[test]
    fn non_utf8_is_reported_and_still_parsed() {
        let doc = parse(b"---\nname: caf\xe9\n---\nbody\n");
        assert_eq!(doc.state, FrontMatterState::Parsed);
        assert_eq!(doc.diagnostics.len(), 1);
        assert_eq!(doc.diagnostics[0].rule, Rule::Encoding);
        assert_eq!(doc.mapping().unwrap().to_json(), serde_json::json!({"name":"caf\u{fffd}"}));
    }

    #[test]
    fn a_scalar_front_matter_is_not_a_mapping() {
        let doc = parse(b"---\njust text\n---\n");
        assert_eq!(doc.diagnostics[0].rule, Rule::NotAMapping);
        assert_eq!(doc.diagnostics[0].line, 2);
    }

    #[test]
    fn blank_line_before_fence() {
        let doc = parse(b"\n---\nname: a\n---\n");
        assert_eq!(doc.state, FrontMatterState::LeadingBlank);
        let d = &doc.diagnostics[0];
        assert_eq!((d.rule, d.line, d.column), (Rule::MissingFrontMatter, 2, 1));
        assert_eq!(d.hint.as_deref(), Some("delete the blank lines above `---`: it must start on line 1"));
    }
}

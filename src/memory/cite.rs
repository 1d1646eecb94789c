//! A citation: what a memory or an entry says about the code, named as a file, a span of
//! its lines or a symbol in it, with the commit it was true at and the hash of what it
//! cited then (docs/memory-log.md#citations).
//!
//! Written as `path`, `path:L1-L2`, `path#symbol`, each optionally `@commit`; stored in a
//! memory's `cites` field as an object. Reading one never fails: what cannot be made
//! sense of is an error naming it, for the caller to report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One citation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cite {
    /// The file, root-relative with `/` separators.
    pub path: String,
    /// The first and last line of the span (from 1), when a span is cited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u32; 2]>,
    /// The symbol whose definition is cited, when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The commit the citation was true at (filled on write: HEAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// blake3 (hex) of the cited text at that commit (filled on write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// The longest path or symbol a citation may name.
const MAX_PART: usize = 1024;

impl Cite {
    /// Reads `path`, `path:L1-L2` (or `path:L`), `path#symbol`, each optionally `@commit`.
    /// The path must stay inside the root: relative, no `..`, no empty part.
    pub fn parse(text: &str) -> Result<Cite, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty citation".into());
        }
        let (rest, commit) = match text.rsplit_once('@') {
            Some((rest, commit)) if !commit.is_empty() && commit.bytes().all(|b| b.is_ascii_hexdigit()) => {
                if !(4..=64).contains(&commit.len()) {
                    return Err(format!("`{text}`: a commit is 4 to 64 hex digits"));
                }
                (rest, Some(commit.to_ascii_lowercase()))
            }
            _ => (text, None),
        };
        let (rest, symbol) = match rest.split_once('#') {
            Some((path, symbol)) => {
                let symbol = symbol.trim();
                if symbol.is_empty()
                    || symbol.len() > MAX_PART
                    || symbol.chars().any(|c| c.is_whitespace() || c.is_control())
                {
                    return Err(format!("`{text}`: a symbol is one word (`path#evict`)"));
                }
                (path, Some(symbol.to_owned()))
            }
            None => (rest, None),
        };
        let (path, lines) = match rest.rsplit_once(':') {
            Some((path, span)) if span.chars().all(|c| c.is_ascii_digit() || c == '-') && !span.is_empty() => {
                let (a, b) = span.split_once('-').unwrap_or((span, span));
                let (a, b) = match (a.parse::<u32>(), b.parse::<u32>()) {
                    (Ok(a), Ok(b)) if a >= 1 && a <= b => (a, b),
                    _ => return Err(format!("`{text}`: lines are `L1-L2` with 1 ≤ L1 ≤ L2")),
                };
                (path, Some([a, b]))
            }
            _ => (rest, None),
        };
        if symbol.is_some() && lines.is_some() {
            return Err(format!("`{text}`: cite lines or a symbol, not both"));
        }
        let path = path.trim().replace('\\', "/");
        let path = path.trim_start_matches("./");
        let inside = !path.is_empty()
            && path.len() <= MAX_PART
            && !path.starts_with('/')
            && !path.ends_with('/')
            && path.split('/').all(|c| !c.is_empty() && c != ".." && c != ".")
            && !path.chars().any(char::is_control);
        if !inside {
            return Err(format!("`{text}`: a citation names a file inside the root (no `..`, not absolute)"));
        }
        Ok(Cite { path: path.to_owned(), lines, symbol, commit, hash: None })
    }

    /// The citation as written: `path`, `path:L1-L2` or `path#symbol`, with `@commit`.
    pub fn to_text(&self) -> String {
        let mut out = self.path.clone();
        if let Some([a, b]) = self.lines {
            out.push_str(&if a == b { format!(":{a}") } else { format!(":{a}-{b}") });
        }
        if let Some(s) = &self.symbol {
            out.push('#');
            out.push_str(s);
        }
        if let Some(c) = &self.commit {
            out.push('@');
            out.push_str(c);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citation_is_read_as_written_and_written_back_the_same() {
        let cases = [
            ("src/pool.rs", Cite { path: "src/pool.rs".into(), ..Cite::default() }),
            ("./src/pool.rs:120-140", Cite { path: "src/pool.rs".into(), lines: Some([120, 140]), ..Cite::default() }),
            ("src/pool.rs:7", Cite { path: "src/pool.rs".into(), lines: Some([7, 7]), ..Cite::default() }),
            (
                "src/pool.rs#evict@ABC1234",
                Cite {
                    path: "src/pool.rs".into(),
                    symbol: Some("evict".into()),
                    commit: Some("abc1234".into()),
                    ..Cite::default()
                },
            ),
        ];
        for (text, want) in cases {
            let got = Cite::parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(Cite::parse(&got.to_text()).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn a_citation_outside_the_root_or_malformed_is_refused_with_its_reason() {
        for (text, why) in [
            ("../x.rs", "inside the root"),
            ("/etc/passwd", "inside the root"),
            ("src/../../x", "inside the root"),
            ("src/", "inside the root"),
            ("", "empty"),
            ("a.rs:0-3", "1 ≤ L1 ≤ L2"),
            ("a.rs:9-3", "1 ≤ L1 ≤ L2"),
            ("a.rs#two words", "one word"),
            ("a.rs#x@12", "4 to 64 hex"),
        ] {
            let err = Cite::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}

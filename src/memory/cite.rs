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

/// The words that, written just before a name, make a line define it.
const DEFINERS: [&str; 17] = [
    "fn",
    "def",
    "class",
    "function",
    "func",
    "struct",
    "enum",
    "trait",
    "type",
    "interface",
    "const",
    "let",
    "var",
    "static",
    "mod",
    "module",
    "macro_rules!",
];

/// Whether `c` can be part of a name.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// How deep a line is indented, a tab counting as four spaces.
fn indent(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).map(|c| if c == '\t' { 4 } else { 1 }).sum()
}

/// Whether `line` defines `name`: `name` stands as a whole word right after one of
/// [`DEFINERS`] (`fn name`, `def name`, `class name`, `pub const name`), or starts the line
/// (after its indentation) followed by `=` (not `==`), `(` or `:` (not `::`).
pub fn defines(line: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(i) = line[from..].find(name).map(|i| i + from) {
        let end = i + name.len();
        from = end;
        let before = &line[..i];
        let after = &line[end..];
        if before.chars().next_back().is_some_and(is_name_char) || after.chars().next().is_some_and(is_name_char) {
            continue;
        }
        if before.trim().is_empty() {
            let rest = after.trim_start();
            let assigns = rest.starts_with('=') && !rest.starts_with("==") && !rest.starts_with("=>");
            let colon = rest.starts_with(':') && !rest.starts_with("::");
            if assigns || colon || rest.starts_with('(') {
                return true;
            }
        }
        if before.ends_with(char::is_whitespace)
            && let Some(word) = before.split_whitespace().next_back()
            && DEFINERS.contains(&word)
        {
            return true;
        }
    }
    false
}

/// The lines (from 1, both included) of what `cite` cites in `text`: the file's lines, the
/// span it names (None when the file is shorter), or its symbol's definition.
///
/// A symbol's definition is found by one rule, the same for every language. The name looked
/// for is the symbol's last part (`Pool::evict` and `Pool.evict` look for `evict`). Its
/// definition starts at the first line that [`defines`] it. It ends:
/// - where braces balance again, when a `{` opens before the definition's header is over
///   (a line ending with `;`, or a later line indented no deeper than the definition that
///   does not start with a closing bracket or `where`): `fn evict() {` … `}`;
/// - otherwise at the last of the following lines indented deeper than the definition
///   (blank lines within included, lines starting with a closing bracket taken as part of
///   the header): `def evict():` and its body, or the definition's line alone
///   (`LIMIT = 5`, `const LIMIT: u32 = 5;`).
pub fn span_of(text: &str, cite: &Cite) -> Option<(u32, u32)> {
    let lines: Vec<&str> = text.lines().collect();
    let count = u32::try_from(lines.len()).ok()?;
    if let Some([a, b]) = cite.lines {
        return (b <= count).then_some((a, b));
    }
    let Some(symbol) = &cite.symbol else { return (count > 0).then_some((1, count.max(1))) };
    let name = symbol.rsplit(['.', ':']).next().unwrap_or(symbol);
    let start = lines.iter().position(|l| defines(l, name))?;
    let base = indent(lines[start]);
    let continues = |l: &str| {
        let t = l.trim_start();
        t.starts_with([')', ']', '>']) || t.starts_with("where")
    };
    // The header: from the defining line to the first `{`, if one opens before it is over.
    let mut brace = None;
    for (i, line) in lines.iter().enumerate().skip(start) {
        if i > start && !line.trim().is_empty() && indent(line) <= base && !continues(line) {
            break;
        }
        if line.contains('{') {
            brace = Some(i);
            break;
        }
        if line.trim_end().ends_with(';') {
            break;
        }
    }
    let end = match brace {
        Some(open) => {
            let mut depth = 0i64;
            let mut end = lines.len() - 1;
            for (i, line) in lines.iter().enumerate().skip(open) {
                depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
                if depth <= 0 {
                    end = i;
                    break;
                }
            }
            end
        }
        None => {
            let mut end = start;
            for (i, line) in lines.iter().enumerate().skip(start + 1) {
                if line.trim().is_empty() {
                    continue;
                }
                if indent(line) > base || continues(line) {
                    end = i;
                } else {
                    break;
                }
            }
            end
        }
    };
    Some((u32::try_from(start + 1).ok()?, u32::try_from(end + 1).ok()?))
}

/// The text of lines `a` to `b` (from 1, both included) of `text`, each with its line end
/// as the file has it.
pub fn lines_text(text: &str, (a, b): (u32, u32)) -> &str {
    let mut start = None;
    let mut end = text.len();
    let mut at = 0;
    for (line, piece) in (1u32..).zip(text.split_inclusive('\n')) {
        if line == a {
            start = Some(at);
        }
        at += piece.len();
        if line == b {
            end = at;
            break;
        }
    }
    start.map_or("", |s| &text[s..end])
}

/// blake3 (hex) of what `cite` cites in `text`, or None when it is not there (a span past
/// the file's end, a symbol no line defines).
pub fn hash_of(text: &str, cite: &Cite) -> Option<String> {
    let cited =
        if cite.lines.is_none() && cite.symbol.is_none() { text } else { lines_text(text, span_of(text, cite)?) };
    Some(blake3::hash(cited.as_bytes()).to_hex().to_string())
}

/// What a memory written without citations cites: each file its problem names, whole, at
/// the commit it was written at, its text to be read from git when it is checked (a log
/// written before problems' files were citations). Files that are not a path inside the
/// root are left out; so is everything outside git, where there is no commit.
pub fn of_files<'a>(files: impl IntoIterator<Item = &'a str>, commit: Option<&str>) -> Vec<Cite> {
    let Some(commit) = commit else { return Vec::new() };
    let mut out: Vec<Cite> = Vec::new();
    for file in files {
        if let Ok(cite) = Cite::parse(file)
            && cite.commit.is_none()
            && !out.iter().any(|c| c.path == cite.path)
        {
            out.push(Cite { commit: Some(commit.to_owned()), ..cite });
        }
    }
    out
}

/// The citations an index item's meta keeps: a memory's as objects, an entry's as the
/// front-matter wrote them.
pub fn of_meta(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> Vec<Cite> {
    let Some(serde_json::Value::Array(items)) = meta.and_then(|m| m.get("cites")) else { return Vec::new() };
    items
        .iter()
        .filter_map(|v| match v {
            serde_json::Value::String(text) => Cite::parse(text).ok(),
            other => serde_json::from_value(other.clone()).ok(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbol_is_defined_by_its_first_defining_line_and_ends_with_its_block() {
        let cite = |s: &str| Cite { path: "x".into(), symbol: Some(s.into()), ..Cite::default() };
        let rust = "use x;\n\npub fn evict(\n    a: u32,\n) -> u32 {\n    if a { 1 } else { 2 }\n}\nfn other() {}\nconst LIMIT: u32 = 5;\n";
        assert_eq!(span_of(rust, &cite("evict")), Some((3, 7)));
        assert_eq!(span_of(rust, &cite("Pool::evict")), Some((3, 7)));
        assert_eq!(span_of(rust, &cite("other")), Some((8, 8)));
        assert_eq!(span_of(rust, &cite("LIMIT")), Some((9, 9)));
        assert_eq!(span_of(rust, &cite("missing")), None);
        let py = "import os\n\nclass Pool:\n    def evict(self):\n        x = 1\n\n        return x\n\n    def other(self):\n        pass\nLIMIT = 5\n";
        assert_eq!(span_of(py, &cite("evict")), Some((4, 7)));
        assert_eq!(span_of(py, &cite("Pool")), Some((3, 10)));
        assert_eq!(span_of(py, &cite("LIMIT")), Some((11, 11)));
        let js = "const evictAll = (a) => {\n  return a;\n};\nfunction evict(a) {\n  evictAll(a);\n}\n";
        assert_eq!(span_of(js, &cite("evict")), Some((4, 6)));
        assert_eq!(span_of(js, &cite("evictAll")), Some((1, 3)));
        assert_eq!(lines_text(js, (2, 3)), "  return a;\n};\n");
        assert!(!defines("if a == evict {", "evict") && !defines("x.evict()", "evict"));
    }

    #[test]
    fn lines_and_whole_files_are_hashed_as_they_are() {
        let text = "a\nb\nc";
        let whole = Cite { path: "x".into(), ..Cite::default() };
        assert_eq!(hash_of(text, &whole), Some(blake3::hash(b"a\nb\nc").to_hex().to_string()));
        let span = Cite { lines: Some([2, 3]), ..whole.clone() };
        assert_eq!(hash_of(text, &span), Some(blake3::hash(b"b\nc").to_hex().to_string()));
        assert_eq!(hash_of(text, &Cite { lines: Some([3, 4]), ..whole }), None);
    }

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

//! A YAML value tree that remembers where every node came from.
//!
//! Front-matter diagnostics must name the file line of a key, of a value, of the second
//! occurrence of a duplicated key. Serde-based YAML crates lose that, so this module builds
//! its own small tree from the event stream of `yaml-rust2` (a YAML 1.2 parser that reports
//! a line and column for every event and for every error). Scalars are resolved with the
//! YAML 1.2 core schema: a date such as `2026-11-22` stays a string.
//!
//! Parsing never fails: it returns the tree it could build and the diagnostics it found.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value as Json;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::model::{Diagnostic, Rule};

/// Deeper collections than this are refused: real front-matter is a few levels deep, and
/// refusing keeps every later walk over the tree shallow.
pub const MAX_DEPTH: usize = 64;
/// Aliases may expand to at most this many nodes (a guard against "billion laughs").
const MAX_ALIAS_NODES: usize = 10_000;

/// A node and the place (in the whole file) where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    /// 1-based file line.
    pub line: usize,
    /// 1-based column in characters.
    pub column: usize,
    /// Length of the scalar's text in characters (1 for collections).
    pub len: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// One key/value pair of a mapping, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Node,
    pub value: Node,
}

impl Node {
    /// The key's text when this node is a scalar used as a key (borrowed for a string,
    /// which nearly every key is).
    pub fn key_text(&self) -> Cow<'_, str> {
        match &self.value {
            Value::Null => Cow::Borrowed(""),
            Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
            Value::Int(i) => Cow::Owned(i.to_string()),
            Value::Float(f) => Cow::Owned(f.to_string()),
            Value::Str(s) => Cow::Borrowed(s),
            Value::Seq(_) | Value::Map(_) => Cow::Borrowed("<complex key>"),
        }
    }

    /// The entries of a mapping node.
    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The entry with key `key` in a mapping node (the last one, as YAML loaders do).
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries().iter().rev().find(|e| e.key.key_text() == key)
    }

    /// The node a JSON pointer (`/tags/2`) points at, and the key node of the last step
    /// when that step went through a mapping.
    pub fn pointer(&self, pointer: &str) -> Option<(&Node, Option<&Node>)> {
        let mut node = self;
        let mut key = None;
        for raw in pointer.split('/').skip(1) {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            match &node.value {
                Value::Map(_) => {
                    let entry = node.get(&seg)?;
                    key = Some(&entry.key);
                    node = &entry.value;
                }
                Value::Seq(items) => {
                    node = items.get(seg.parse::<usize>().ok()?)?;
                    key = None;
                }
                _ => return None,
            }
        }
        Some((node, key))
    }

    /// Converts to JSON for schema validation. Mapping keys become strings; a duplicated
    /// key keeps its last value.
    pub fn to_json(&self) -> Json {
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Value::Str(s) => Json::String(s.clone()),
            Value::Seq(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => {
                let mut map = serde_json::Map::with_capacity(entries.len());
                for e in entries {
                    map.insert(e.key.key_text().into_owned(), e.value.to_json());
                }
                Json::Object(map)
            }
        }
    }
}

/// Parses YAML text whose first line is line `first_line` of the file.
///
/// Returns the first document's root node (None for an empty document or when the text
/// does not parse) and the diagnostics: syntax errors, duplicate keys, nesting and alias
/// limits.
pub fn parse(text: &str, first_line: usize) -> (Option<Node>, Vec<Diagnostic>) {
    if let Some(node) = parse_simple(text, first_line) {
        return (Some(node), Vec::new());
    }
    parse_full(text, first_line)
}

/// `parse` without the fast path: every text through yaml-rust2.
pub fn parse_full(text: &str, first_line: usize) -> (Option<Node>, Vec<Diagnostic>) {
    let mut builder = Builder {
        places: Places::new(text, first_line),
        stack: Vec::new(),
        root: None,
        anchors: HashMap::new(),
        diags: Vec::new(),
        alias_nodes: 0,
        skip_depth: 0,
        done: false,
    };
    if let Err(e) = load_first_document(text, &mut builder) {
        if e.info() == "invalid indentation"
            && let Some(relaxed) = relax_flow_indentation(text)
        {
            let (node, diags) = parse_full(&relaxed, first_line);
            if !diags.iter().any(|d| d.rule == Rule::YamlSyntax) {
                return (node, diags);
            }
        }
        let (line, column) = builder.places.of(*e.marker());
        let mut d = Diagnostic::error(Rule::YamlSyntax, line, column, format!("invalid YAML: {}", e.info()));
        if let Some(hint) = syntax_hint(text, line + 1 - first_line, e.info()) {
            d = d.with_hint(hint);
        }
        builder.diags.push(d);
        return (None, builder.diags);
    }
    (builder.root, builder.diags)
}

/// Feeds the events of the first document of `text` to `builder`, as `Parser::load` does
/// with `multi = false`, but in a loop: `load` recurses once per level of nesting, and
/// `- - - - x` nests a level every two bytes, so a hostile file would overflow the stack.
fn load_first_document(text: &str, builder: &mut Builder) -> Result<(), yaml_rust2::ScanError> {
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token()?;
        let end = matches!(event, Event::DocumentEnd | Event::StreamEnd);
        builder.on_event(event, mark);
        if end {
            return Ok(());
        }
    }
}

/// The fast path of `parse`, for the front-matter most files have: one `key: value` per
/// line at column 1, each value a plain scalar or a flow list of plain scalars
/// (`tags: [a, b]`), no comments, quotes, tabs, empty values or repeated keys. Only the
/// space is white space here, as in YAML: NEL, NBSP or U+2028 are text to yaml-rust2. It
/// gives exactly the tree yaml-rust2 gives (same values, lines, columns and lengths: the
/// corpora test compares them), or None for anything else, which then takes the full parser.
pub fn parse_simple(text: &str, first_line: usize) -> Option<Node> {
    if text.bytes().any(|b| matches!(b, b'\t' | b'\r' | b'#' | b'"' | b'\'')) {
        return None;
    }
    let mut entries: Vec<Entry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = first_line + i;
        if line.trim_matches(' ').is_empty() {
            continue;
        }
        let (key, rest) = line.split_once(':')?;
        let key_ok = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !key_ok || !rest.starts_with(' ') {
            return None;
        }
        let value = rest.trim_matches(' ');
        if value.is_empty() {
            return None;
        }
        let column = key.len() + 1 + (rest.len() - rest.trim_start_matches(' ').len()) + 1;
        let value_node = if let Some(inner) = value.strip_prefix('[') {
            let inner = inner.strip_suffix(']')?;
            let mut items = Vec::new();
            if !inner.trim_matches(' ').is_empty() {
                let mut offset = column + 1; // the column after `[`, in characters
                for raw in inner.split(',') {
                    let item = raw.trim_matches(' ');
                    if !plain_ok(item, true) {
                        return None;
                    }
                    let lead = raw.len() - raw.trim_start_matches(' ').len();
                    items.push(scalar(item, line_no, offset + lead));
                    offset += raw.chars().count() + 1;
                }
            }
            Node { value: Value::Seq(items), line: line_no, column, len: 1 }
        } else {
            if !plain_ok(value, false) {
                return None;
            }
            scalar(value, line_no, column)
        };
        let key_node = scalar(key, line_no, 1);
        if matches!(key_node.value, Value::Seq(_) | Value::Map(_)) || {
            let text = key_node.key_text();
            entries.iter().any(|e| e.key.key_text() == text)
        } {
            return None;
        }
        entries.push(Entry { key: key_node, value: value_node });
    }
    let first = entries.first()?;
    let (line, column) = (first.key.line, first.key.column);
    Some(Node { value: Value::Map(entries), line, column, len: 1 })
}

/// A plain scalar that reads the same everywhere: not starting with an indicator, no
/// `: ` inside, not ending with `:`, and in a flow list no `[]{},`. (Non-ASCII columns are
/// counted in characters by the caller.)
fn plain_ok(text: &str, in_flow: bool) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else { return false };
    if matches!(
        first,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'%'
            | b'@'
            | b'`'
    ) || *last == b':'
    {
        return false;
    }
    // One pass: no flow indicator, no `: `, and in a flow list no `,`.
    let mut prev = 0u8;
    for &b in bytes {
        match b {
            b'[' | b']' | b'{' | b'}' => return false,
            b',' if in_flow => return false,
            b' ' if prev == b':' => return false,
            _ => {}
        }
        prev = b;
    }
    true
}

fn scalar(text: &str, line: usize, column: usize) -> Node {
    let len = text.chars().count().max(1);
    Node { value: resolve(text.to_owned(), TScalarStyle::Plain, None), line, column, len }
}

/// libyaml (and so PyYAML and most Markdown tools) accepts a flow collection whose
/// continuation lines start in column 1 of a top-level mapping; yaml-rust2 does not. This
/// indents such lines by one space so that they parse as those tools read them.
fn relax_flow_indentation(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut depth: usize = 0;
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        if depth > 0 && !line.starts_with([' ', '\t', '\r', '\n']) {
            out.push(' ');
            changed = true;
        }
        out.push_str(line);
        let (mut single, mut double, mut escaped) = (false, false, false);
        let mut prev = ' ';
        for c in line.chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' if double => escaped = true,
                '"' if !single => double = !double,
                '\'' if !double => single = !single,
                '#' if !single && !double && prev.is_whitespace() => break,
                '[' | '{' if !single && !double => depth += 1,
                ']' | '}' if !single && !double => depth = depth.saturating_sub(1),
                _ => {}
            }
            prev = c;
        }
    }
    changed.then_some(out)
}

/// A hint for the most common real-world mistakes.
fn syntax_hint(text: &str, line: usize, info: &str) -> Option<String> {
    let src = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    if info.contains("recursion limit") {
        return None;
    }
    if info.contains("mapping values are not allowed") || src.matches(": ").count() > 1 {
        return Some("a value that contains `: ` must be quoted, e.g. key: \"a: b\"".to_owned());
    }
    if src.contains('\t') {
        return Some("YAML does not allow tabs for indentation; use spaces".to_owned());
    }
    let value = src.split_once(": ").map(|(_, v)| v.trim_start()).unwrap_or("");
    if value.starts_with(['[', '{', '*', '&', '!', '|', '>', '@', '`', '%']) || info.contains("flow") {
        return Some(
            "a value that starts with a YAML indicator (`[`, `{`, `*`, `&`, `@`, `` ` ``…) must be quoted".to_owned(),
        );
    }
    if info.contains("quoted scalar") {
        return Some(
            "close the quote, or escape quotes inside it (`''` in single quotes, `\\\"` in double quotes)".to_owned(),
        );
    }
    None
}

/// Turns yaml-rust2's positions into file lines and columns. YAML ends a line at a lone
/// `\r` as well as at `\n`; a file's lines (in `check`, editors' gutters and annotations)
/// end at `\n` only, so a text with lone `\r`s has its YAML lines mapped back.
struct Places {
    /// The file line of the text's first line, less one.
    offset: usize,
    /// For each YAML line (from 0): its file line (from 0) and the characters before it
    /// on that file line. Empty when the two kinds of line are the same.
    lines: Vec<(usize, usize)>,
}

impl Places {
    fn new(text: &str, first_line: usize) -> Places {
        let offset = first_line.saturating_sub(1);
        let bytes = text.as_bytes();
        let lone_cr = |i: usize| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n');
        if !(0..bytes.len()).any(lone_cr) {
            return Places { offset, lines: Vec::new() };
        }
        let mut lines = vec![(0, 0)];
        let (mut file_line, mut col) = (0, 0);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            col += 1;
            match c {
                '\n' => {
                    (file_line, col) = (file_line + 1, 0);
                    lines.push((file_line, 0));
                }
                '\r' if chars.peek() != Some(&'\n') => lines.push((file_line, col)),
                _ => {}
            }
        }
        Places { offset, lines }
    }

    /// The 1-based file line and column of a position.
    fn of(&self, mark: Marker) -> (usize, usize) {
        // yaml-rust2 counts lines from 1 and columns from 0.
        let yaml_line = mark.line().saturating_sub(1);
        match self.lines.get(yaml_line) {
            Some(&(line, before)) => (self.offset + line + 1, before + mark.col() + 1),
            None if self.lines.is_empty() => (self.offset + yaml_line + 1, mark.col() + 1),
            None => {
                let (line, _) = self.lines.last().copied().unwrap_or_default();
                (self.offset + line + 1, mark.col() + 1)
            }
        }
    }
}

enum Frame {
    Seq { start: Node, anchor: usize, items: Vec<Node> },
    Map { start: Node, anchor: usize, entries: Vec<Entry>, key: Option<Node> },
}

struct Builder {
    places: Places,
    stack: Vec<Frame>,
    root: Option<Node>,
    /// Each anchored node and how many nodes it holds (counted once, not per alias).
    anchors: HashMap<usize, (Node, usize)>,
    diags: Vec<Diagnostic>,
    alias_nodes: usize,
    /// Above zero while inside a collection deeper than MAX_DEPTH, whose events are dropped.
    skip_depth: usize,
    done: bool,
}

impl Builder {
    fn at(&self, mark: Marker, value: Value, len: usize) -> Node {
        let (line, column) = self.places.of(mark);
        Node { value, line, column, len: len.max(1) }
    }

    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
                self.done = true;
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    let text = node.key_text();
                    if let Some(first) = entries.iter().find(|e| e.key.key_text() == text) {
                        let d = Diagnostic::error(
                            Rule::DuplicateKey,
                            node.line,
                            node.column,
                            format!("duplicate key `{text}` (first defined on line {})", first.key.line),
                        )
                        .with_len(node.len)
                        .with_hint("remove one of them; YAML loaders disagree on which one wins");
                        self.diags.push(d);
                    }
                    *key = Some(node);
                }
                Some(k) => {
                    // A duplicated key replaces the earlier entry, as most loaders do.
                    let text = k.key_text();
                    entries.retain(|e| e.key.key_text() != text);
                    entries.push(Entry { key: k, value: node });
                }
            },
        }
    }

    fn count(node: &Node) -> usize {
        match &node.value {
            Value::Seq(items) => 1 + items.iter().map(Self::count).sum::<usize>(),
            Value::Map(entries) => {
                1 + entries.iter().map(|e| Self::count(&e.key) + Self::count(&e.value)).sum::<usize>()
            }
            _ => 1,
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.done {
            return;
        }
        if self.skip_depth > 0 {
            match ev {
                Event::SequenceStart(..) | Event::MappingStart(..) => self.skip_depth += 1,
                Event::SequenceEnd | Event::MappingEnd => {
                    self.skip_depth -= 1;
                    if self.skip_depth == 0 {
                        let n = self.at(mark, Value::Null, 1);
                        self.push(n);
                    }
                }
                _ => {}
            }
            return;
        }
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let len = text.chars().count();
                let value = resolve(text, style, tag.as_ref().map(|t| t.suffix.as_str()));
                let node = self.at(mark, value, len);
                if anchor > 0 {
                    self.anchors.insert(anchor, (node.clone(), 1));
                }
                self.push(node);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) if self.stack.len() >= MAX_DEPTH => {
                let _ = anchor;
                let (line, column) = self.places.of(mark);
                self.diags.push(Diagnostic::error(
                    Rule::YamlSyntax,
                    line,
                    column,
                    format!("YAML nested deeper than {MAX_DEPTH} levels"),
                ));
                self.skip_depth = 1;
            }
            Event::SequenceStart(anchor, _) => {
                let start = self.at(mark, Value::Null, 1);
                self.stack.push(Frame::Seq { start, anchor, items: Vec::new() });
            }
            Event::MappingStart(anchor, _) => {
                let start = self.at(mark, Value::Null, 1);
                self.stack.push(Frame::Map { start, anchor, entries: Vec::new(), key: None });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = self.stack.pop() else { return };
                let (mut node, anchor) = match frame {
                    Frame::Seq { start, anchor, items } => (Node { value: Value::Seq(items), ..start }, anchor),
                    Frame::Map { start, anchor, entries, .. } => {
                        // A block mapping's start event comes late; its first key is where
                        // a reader sees it begin.
                        let (line, column) =
                            entries.first().map_or((start.line, start.column), |e| (e.key.line, e.key.column));
                        (Node { value: Value::Map(entries), line, column, ..start }, anchor)
                    }
                };
                node.len = 1;
                if anchor > 0 {
                    self.anchors.insert(anchor, (node.clone(), Self::count(&node)));
                }
                self.push(node);
            }
            Event::Alias(id) => {
                let node = match self.anchors.get(&id) {
                    // Past the limit every alias is null, without looking at its anchor: a
                    // text of many aliases to one wide anchor must not cost their product.
                    Some(_) if self.alias_nodes > MAX_ALIAS_NODES => self.at(mark, Value::Null, 1),
                    Some((n, count)) => {
                        self.alias_nodes += count;
                        let (line, column) = self.places.of(mark);
                        if self.alias_nodes > MAX_ALIAS_NODES {
                            self.diags.push(Diagnostic::error(
                                Rule::YamlSyntax,
                                line,
                                column,
                                format!("aliases expand to more than {MAX_ALIAS_NODES} nodes"),
                            ));
                            self.at(mark, Value::Null, 1)
                        } else {
                            let mut n = n.clone();
                            n.line = line;
                            n.column = column;
                            n
                        }
                    }
                    None => self.at(mark, Value::Null, 1),
                };
                self.push(node);
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart | Event::DocumentEnd => {}
        }
    }
}

/// YAML 1.2 core-schema resolution of a scalar.
fn resolve(text: String, style: TScalarStyle, tag: Option<&str>) -> Value {
    match tag {
        Some("str") => return Value::Str(text),
        Some("null") => return Value::Null,
        _ => {}
    }
    if style != TScalarStyle::Plain {
        return Value::Str(text);
    }
    // A plain scalar that starts with a letter is a string unless it is one of the core
    // schema's words: no number starts with a letter (`inf` and `nan` need a dot, `.inf`).
    if text.starts_with(|c: char| c.is_ascii_alphabetic())
        && !matches!(text.as_str(), "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
    {
        return Value::Str(text);
    }
    match yaml_rust2::Yaml::from_str(&text) {
        yaml_rust2::Yaml::Null => Value::Null,
        yaml_rust2::Yaml::Boolean(b) => Value::Bool(b),
        yaml_rust2::Yaml::Integer(i) => Value::Int(i),
        yaml_rust2::Yaml::Real(r) => match r.parse::<f64>() {
            Ok(f) => Value::Float(f),
            Err(_) => Value::Str(text),
        },
        _ => match text.as_str() {
            "Null" | "NULL" => Value::Null,
            _ => Value::Str(text),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_gives_the_full_parsers_tree_or_steps_aside() {
        let same = [
            "name: Token refresh\ncreated: 2026-11-22\nimportance: 0.8\ncount: 12\nhex: 0x1F\ndone: true\nnone: ~\n",
            "tags: [auth, 2, null, データ]\nurl: http://example.com/a:b\nlist: a,b\nempty: []\nwide:    spaced out\n",
            "\nname: データベース接続プール\n\ndescription: 接続の上限 (max 10)\ninf: .inf\nn: Null\n",
            // Words that look like numbers or keywords, and ones that only start like them.
            "a: inf\nb: nan\nc: e5\nd: x1\ne: Yes\nf: TRUE\ng: FALSE\nh: nULL\ni: +12\nk: 1e3\nl: 0o17\n",
            "m: [True, false, NULL, infinity, 1.5, +2, z9]\nnote: a:b, c\nurl: x:y\n",
            // Only the space is white space to YAML; these are text.
            "a: v\u{2028}\nb: \u{a0}w\nc: [x\u{85}, \u{3000}y]\n",
        ];
        for text in same {
            let fast = parse_simple(text, 2);
            assert!(fast.is_some(), "{text}");
            assert_eq!(fast, parse_full(text, 2).0, "{text}");
        }
        let others = [
            "a: \"quoted\"\n",
            "a: b # comment\n",
            "a:\n  b: c\n",
            "- x\n",
            "a: b: c\n",
            " a: b\n",
            "a: 1\na: 2\n",
            // The same key to a YAML loader: both are the boolean true.
            "True: 1\ntrue: 2\n",
            "a: [b, [c]]\n",
            "a: &x b\n",
            "a: b\n  continued\n",
            "a:\tb\n",
            "",
            // A line of NEL is a scalar to YAML, not a blank line (found by parse::fuzz).
            "\u{85}\nname: v\n",
        ];
        for text in others {
            assert_eq!(parse_simple(text, 1), None, "{text}");
        }
    }

    #[test]
    fn plain_scalars_resolve_by_the_core_schema() {
        let cases = [
            ("TRUE", Value::Bool(true)),
            ("False", Value::Bool(false)),
            ("NULL", Value::Null),
            ("Null", Value::Null),
            ("~", Value::Null),
            ("nULL", Value::Str("nULL".into())),
            ("Yes", Value::Str("Yes".into())),
            ("inf", Value::Str("inf".into())),
            ("nan", Value::Str("nan".into())),
            ("infinity", Value::Str("infinity".into())),
            ("e5", Value::Str("e5".into())),
            ("x1", Value::Str("x1".into())),
            // Infinity has no JSON form, and front-matter is read as JSON: it stays text.
            (".inf", Value::Str(".inf".into())),
            ("1e3", Value::Float(1000.0)),
            ("0o17", Value::Int(15)),
            ("0x1F", Value::Int(31)),
            ("+12", Value::Int(12)),
            ("2026-11-22", Value::Str("2026-11-22".into())),
        ];
        for (text, want) in cases {
            assert_eq!(resolve(text.to_owned(), TScalarStyle::Plain, None), want, "{text}");
        }
        assert_eq!(resolve("true".to_owned(), TScalarStyle::SingleQuoted, None), Value::Str("true".into()));
    }

    fn ok(text: &str) -> Node {
        let (node, diags) = parse(text, 2);
        assert!(diags.is_empty(), "{diags:?}");
        node.expect("a document")
    }

    #[test]
    fn positions_are_file_lines_and_1_based_columns() {
        let n = ok("name: Alpha\ntags:\n  - a\n  - 'b'\n");
        let name = n.get("name").unwrap();
        assert_eq!((name.key.line, name.key.column), (2, 1));
        assert_eq!((name.value.line, name.value.column, name.value.len), (2, 7, 5));
        let (b, _) = n.pointer("/tags/1").unwrap();
        assert_eq!((b.line, b.column), (5, 5));
        assert_eq!(b.value, Value::Str("b".into()));
    }

    #[test]
    fn core_schema_scalars() {
        let n = ok("a: 2026-11-22\nb: 3\nc: 1.5\nd: true\ne: ~\nf: yes\ng: '3'\nh: !!str 4\n");
        let j = n.to_json();
        assert_eq!(j, serde_json::json!({"a":"2026-11-22","b":3,"c":1.5,"d":true,"e":null,"f":"yes","g":"3","h":"4"}));
    }

    #[test]
    fn syntax_error_lines_count_in_the_file() {
        let (node, diags) = parse("name: a\ndescription: see: this\n", 2);
        assert!(node.is_none());
        assert_eq!(diags.len(), 1);
        assert_eq!((diags[0].rule, diags[0].line, diags[0].column), (Rule::YamlSyntax, 3, 17));
        assert!(diags[0].hint.as_deref().unwrap().contains("quoted"), "{:?}", diags[0].hint);
    }

    #[test]
    fn a_lone_carriage_return_does_not_move_positions_off_the_files_lines() {
        // Found by parse::fuzz: YAML ends a line at a lone `\r`, so its line numbers ran
        // past the file's (counted at `\n`, as `check` and editors' annotations count).
        let (node, diags) = parse("a: 1\rb: c: d\nz: 2\n", 2);
        assert!(node.is_none());
        assert_eq!((diags[0].line, diags[0].column), (2, 10));
        let n = ok("a: 1\rb: [x,\r y]\nz: 2\n");
        let (y, _) = n.pointer("/b/1").unwrap();
        assert_eq!((y.line, y.column), (2, 14));
        assert_eq!(n.get("z").map(|e| (e.key.line, e.key.column)), Some((3, 1)));
    }

    #[test]
    fn duplicate_key_is_reported_at_its_second_occurrence_and_last_wins() {
        let (node, diags) = parse("a: 1\nb: 2\na: 3\n", 2);
        assert_eq!(diags.len(), 1);
        assert_eq!((diags[0].rule, diags[0].line, diags[0].column), (Rule::DuplicateKey, 4, 1));
        assert_eq!(diags[0].message, "duplicate key `a` (first defined on line 2)");
        assert_eq!(node.unwrap().to_json(), serde_json::json!({"b":2,"a":3}));
    }

    #[test]
    fn crlf_text_parses() {
        let n = ok("name: a\r\ntags: [x, y]\r\n");
        assert_eq!(n.to_json(), serde_json::json!({"name":"a","tags":["x","y"]}));
    }

    #[test]
    fn deep_nesting_and_alias_bombs_are_refused_without_crashing() {
        let flow = format!("a: {}{}", "[".repeat(5000), "]".repeat(5000));
        let (_, diags) = parse(&flow, 2);
        assert_eq!(diags[0].message, "invalid YAML: recursion limit exceeded");
        let mut block = String::new();
        for depth in 0..3000 {
            block.push_str(&format!("{}k{depth}:\n", " ".repeat(depth)));
        }
        let (_, diags) = parse(&block, 2);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].message, "YAML nested deeper than 64 levels");
        assert_eq!(diags[0].line, 2 + 64);

        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let names = ["b", "c", "d", "e", "f", "g", "h"];
        let mut prev = "a";
        for n in names {
            bomb.push_str(&format!(
                "{n}: &{n} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
            prev = n;
        }
        let (_, diags) = parse(&bomb, 2);
        assert!(diags.iter().any(|d| d.message.contains("aliases expand")), "{diags:?}");
    }

    #[test]
    fn many_aliases_of_one_wide_anchor_cost_no_more_than_their_text() {
        // Found by parse::fuzz: every alias past the limit counted its anchor's nodes again,
        // so a megabyte of this took hours.
        let text = format!("a: &a [{}]\nb: [{}]\n", vec!["x"; 100_000].join(","), vec!["*a"; 250_000].join(","));
        let (node, diags) = parse(&text, 2);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].message, "aliases expand to more than 10000 nodes");
        assert_eq!((diags[0].line, diags[0].column), (3, 5));
        let (b, _) = node.as_ref().and_then(|n| n.pointer("/b")).unwrap();
        let Value::Seq(items) = &b.value else { panic!("{b:?}") };
        assert_eq!(items.len(), 250_000);
        assert!(items.iter().all(|i| i.value == Value::Null));
    }

    #[test]
    fn nesting_two_bytes_a_level_does_not_overflow_the_stack() {
        // Found by parse::fuzz: the parser recursed once per level, on a thread whose stack
        // was sized by a guess of 256 bytes per byte of text, and `[` or `- ` nest a level
        // per one or two bytes.
        let text = format!("a:\n  {}x\n", "- ".repeat(200_000));
        let (node, diags) = parse(&text, 2);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].message, "YAML nested deeper than 64 levels");
        assert_eq!((diags[0].line, diags[0].column), (3, 129));
        assert_eq!(node.map(|n| n.to_json()).and_then(|j| j.get("a").cloned()).map(|a| a.is_array()), Some(true));
        for depth in [250, 255] {
            let flow = format!("a: {}x{}\n", "[".repeat(depth), "]".repeat(depth));
            let (_, diags) = parse(&flow, 2);
            assert_eq!(diags.len(), 1, "{diags:?}");
            assert_eq!(diags[0].message, "YAML nested deeper than 64 levels");
            assert_eq!((diags[0].line, diags[0].column), (2, 67));
        }
    }

    #[test]
    fn flow_continuation_in_column_one_parses_as_libyaml_reads_it() {
        let n = ok("title: t\nkeys: [\"a [C++]\", \"b\",\n\"c\"]\nlang: [\"C++\"]\n");
        assert_eq!(n.to_json(), serde_json::json!({"title":"t","keys":["a [C++]","b","c"],"lang":["C++"]}));
        let (node, diags) = parse("a: [x,\nb: 1\n", 2);
        assert!(node.is_none());
        assert_eq!(diags[0].rule, Rule::YamlSyntax);
    }

    #[test]
    fn empty_text_is_no_document() {
        let (node, diags) = parse("", 2);
        assert!(node.is_none() && diags.is_empty());
    }

    #[test]
    fn the_yaml_fast_path_gives_exactly_what_the_full_parser_gives() {
        use crate::parse::frontmatter::{Split, split};
        let (corpora, full) = crate::testing::corpora();
        let mut files = crate::testing::markdown_files(&corpora);
        if full {
            files.extend(crate::testing::markdown_files(
                &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata"),
            ));
        }
        let (mut with_front_matter, mut fast) = (0, 0);
        for f in &files {
            let Ok(text) = std::fs::read_to_string(f) else { continue };
            let Split::Found(block) = split(&text) else { continue };
            with_front_matter += 1;
            let Some(simple) = parse_simple(block.yaml, block.yaml_line) else { continue };
            fast += 1;
            let (full, diags) = parse_full(block.yaml, block.yaml_line);
            assert_eq!(diags, [], "{}: the fast path took a text with problems", f.display());
            assert_eq!(Some(simple), full, "{}", f.display());
        }
        // Real-world front-matter is often richer (quotes, block lists, comments) and takes the
        // full parser; the fast path must still see plenty of it here to be tested.
        let (least_files, least_fast) = if full { (1000, 900) } else { (300, 150) };
        assert!(with_front_matter > least_files, "{with_front_matter}");
        assert!(fast > least_fast, "the fast path took only {fast} of {with_front_matter} front-matters");
    }
}

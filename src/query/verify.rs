//! `tmws verify` (docs/citations.md#verify): every live memory's citations checked against
//! the work tree, and those that no longer hold, with the log line that cites them.
//!
//! The logs are read here line by line rather than through the fold, because a finding
//! names the line that gave a memory its citations (an `add`, or an `update` that set
//! them), which is where a person or a CI annotation goes to fix it.

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::cites::{Checker, State};
use crate::error::Result;
use crate::layout::{MEMORY_DIR, WORKSPACES_DIR};
use crate::memory::cite::Cite;
use crate::parse::frontmatter::{self, Split};
use crate::parse::yaml;
use crate::store;

/// One citation and what became of it.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// The citation as written (`src/a.rs:3-5@abc1234`).
    pub cite: String,
    #[serde(flatten)]
    pub state: State,
}

/// One object with every field a state may add: a flattened tagged enum would make the
/// schema a set of branches that each close over only their own fields, and clients that
/// check answers against it (the Python SDK does) would refuse every answer.
impl JsonSchema for Checked {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Checked".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "One citation and what became of it.",
            "type": "object",
            "properties": {
                "cite": {"type": "string", "description": "The citation as written (`src/a.rs:3-5@abc1234`)."},
                "state": {"type": "string", "enum": ["valid", "moved", "changed", "missing", "unknown"]},
                "path": {"type": "string", "description": "Where a moved citation's text is now."},
                "lines": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "The lines it is at now."
                },
                "why": {"type": "string", "description": "Why an unknown citation cannot be told."}
            },
            "required": ["cite", "state"]
        })
    }
}

/// A memory or an entry with a citation that is not valid.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Finding {
    /// The log or the entry's file, root-relative.
    pub file: String,
    /// The line (from 1) that gave the memory its citations, or the entry's `cites:` line.
    pub line: usize,
    /// The memory's id, or the entry's path.
    pub id: String,
    /// Its citations that are not valid.
    pub cites: Vec<Checked>,
}

/// What `tmws verify` found.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Report {
    /// How many citations were checked.
    pub checked: usize,
    /// How many are changed or missing.
    pub stale: usize,
    /// How many moved citations `--fix` rewrote to where their text is now.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fixed: usize,
    /// How many citations without a commit `--stamp` gave HEAD's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stamped: usize,
    pub findings: Vec<Finding>,
}

impl crate::query::answer::Answer for Report {}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Report {
    /// Whether any citation is stale (the exit code is 1).
    pub fn failed(&self) -> bool {
        self.stale > 0
    }
}

/// A live memory with citations, as its log leaves it.
struct Cited {
    id: String,
    line: usize,
    cites: Vec<Cite>,
    /// For an entry: where in its file each citation's text starts (line, column in
    /// characters, from 1) and the text, for `--stamp` to write a commit after it.
    places: Vec<(usize, usize, String)>,
}

/// The live memories of one log that carry citations, in the order they were added.
fn cited_in(text: &str) -> Vec<Cited> {
    let mut live: Vec<Cited> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Ok(op) = serde_json::from_str::<Value>(line) else { continue };
        let (Some(kind), Some(id)) = (op["op"].as_str(), op["id"].as_str()) else { continue };
        let cites =
            |v: &Value| v.as_array().map(|a| a.iter().filter_map(|c| serde_json::from_value(c.clone()).ok()).collect());
        match kind {
            "add" => {
                live.retain(|c| c.id != id);
                let of_files = || {
                    let files = op["files"].as_array().into_iter().flatten().filter_map(Value::as_str);
                    Some(crate::memory::cite::of_files(files, op["git"]["commit"].as_str()))
                };
                let cites = cites(&op["cites"]).filter(|c: &Vec<Cite>| !c.is_empty()).or_else(of_files);
                if let Some(cites) = cites.filter(|c| !c.is_empty()) {
                    live.push(Cited { id: id.to_owned(), line: i + 1, cites, places: Vec::new() });
                }
            }
            "delete" => live.retain(|c| c.id != id),
            "update" => {
                if let Some(cites) = cites(&op["set"]["cites"]) {
                    live.retain(|c| c.id != id);
                    if !cites.is_empty() {
                        live.push(Cited { id: id.to_owned(), line: i + 1, cites, places: Vec::new() });
                    }
                }
            }
            _ => {}
        }
    }
    live
}

/// The entries (Markdown documents under the workspaces) whose front-matter has a
/// `cites:` list: their root-relative path, the line of `cites:` and the citations that
/// read as such (the others are `tmws check`'s `invalid-cite`).
fn cited_entries(root: &Path) -> Vec<(String, Cited)> {
    let mut files = Vec::new();
    let mut dirs = vec![WORKSPACES_DIR.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(names) = store::list_dir(root, &root.join(&dir)) else { continue };
        for name in names {
            let rel = format!("{dir}/{name}");
            // Links are not followed: a link out of the root is not the root's to check.
            match store::entry(&root.join(&rel)) {
                Ok(store::Entry::Dir) => dirs.push(rel),
                Ok(store::Entry::File) if rel.ends_with(".md") => files.push(rel),
                _ => {}
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for rel in files {
        let Ok(bytes) = store::read(root, &root.join(&rel), store::cap::MARKDOWN) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let Split::Found(block) = frontmatter::split(&text) else { continue };
        let Some(node) = yaml::parse(block.yaml, block.yaml_line).0 else { continue };
        let Some(entry) = node.get("cites") else { continue };
        let items = match &entry.value.value {
            yaml::Value::Seq(items) => items.as_slice(),
            yaml::Value::Str(_) => std::slice::from_ref(&entry.value),
            _ => &[],
        };
        let (mut cites, mut places) = (Vec::new(), Vec::new());
        for item in items {
            if let yaml::Value::Str(text) = &item.value
                && let Ok(cite) = Cite::parse(text)
            {
                cites.push(cite);
                places.push((item.line, item.column, text.trim().to_owned()));
            }
        }
        if !cites.is_empty() {
            out.push((rel.clone(), Cited { id: rel, line: entry.key.line, cites, places }));
        }
    }
    out
}

/// What `tmws verify` may change besides reporting.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Rewrite each memory's moved citations to where their text is now (an `update` op that
    /// sets its `cites`; the text is the same, so the hash is kept, with HEAD as the commit).
    /// A changed or missing citation is never rewritten, and an entry's `cites:` are the
    /// person's to edit.
    pub fix: bool,
    /// Give every citation without a commit HEAD's (and a memory's the hash of its text
    /// there), so that later checks have something to compare with: a memory by an
    /// `update` op, an entry by writing `@COMMIT` after each such citation in its
    /// front-matter.
    pub stamp: bool,
}

/// Checks the citations of every live memory and every entry under `root`.
pub fn verify(root: &Path) -> Result<Report> {
    verify_with(root, Options::default())
}

/// Checks the citations, fixing or stamping them as `options` say.
pub fn verify_with(root: &Path, options: Options) -> Result<Report> {
    let Options { fix, stamp } = options;
    let dir = root.join(MEMORY_DIR);
    let mut logs: Vec<String> =
        store::list_dir(root, &dir).unwrap_or_default().into_iter().filter(|n| n.ends_with(".jsonl")).collect();
    logs.sort();
    let mut cited = Vec::new();
    for name in logs {
        let rel = format!("{MEMORY_DIR}/{name}");
        let text = store::read(root, &root.join(&rel), store::cap::LOG)?;
        cited.extend(cited_in(&String::from_utf8_lossy(&text)).into_iter().map(|m| (rel.clone(), m)));
    }
    cited.extend(cited_entries(root));
    let mut checker = Checker::new(root);
    let mut report = Report::default();
    let head = crate::store::git_head(root).and_then(|h| h.commit);
    if stamp {
        let Some(head) = &head else {
            return Err(crate::error::Error::Usage("--stamp needs a git repository with a commit".into()));
        };
        for (rel, memory) in &mut cited {
            report.stamped += stamp_one(root, rel, memory, head)?;
        }
    }
    for (rel, memory) in cited {
        let mut cites = Vec::new();
        let mut fixed = memory.cites.clone();
        let mut moved = 0;
        for (i, cite) in memory.cites.iter().enumerate() {
            let state = checker.check(cite);
            report.checked += 1;
            report.stale += usize::from(state.stale());
            if let (State::Moved { path, lines }, Some(head)) = (&state, &head) {
                let now = &mut fixed[i];
                now.path.clone_from(path);
                now.lines = now.lines.and(*lines);
                now.commit = Some(head.clone());
                // A citation without a hash gets the one of its text, which has not changed.
                if now.hash.is_none()
                    && let Ok(bytes) = store::read(root, &root.join(path), store::cap::MARKDOWN)
                {
                    now.hash = crate::memory::cite::hash_of(&String::from_utf8_lossy(&bytes), now);
                }
                moved += 1;
            }
            if state != State::Valid {
                cites.push(Checked { cite: cite.to_text(), state });
            }
        }
        if fix
            && moved > 0
            && let Some(namespace) = crate::layout::memory_namespace(&rel)
        {
            rewrite(root, namespace, &memory.id, fixed)?;
            report.fixed += moved;
        }
        if !cites.is_empty() {
            report.findings.push(Finding { file: rel, line: memory.line, id: memory.id, cites });
        }
    }
    checker.save();
    Ok(report)
}

/// How many characters of a commit an entry's stamped citation names: as unambiguous in a
/// repository as a full one in practice, and short enough to read in front-matter.
const STAMP_DIGITS: usize = 12;

/// Gives the citations of one memory or entry that have no commit `head`'s, returning how
/// many. A memory's citation whose text cannot be read now (its file is gone) is left as it
/// is, and stays `unknown`.
fn stamp_one(root: &Path, rel: &str, memory: &mut Cited, head: &str) -> Result<usize> {
    let bare: Vec<usize> = (0..memory.cites.len()).filter(|&i| memory.cites[i].commit.is_none()).collect();
    if bare.is_empty() {
        return Ok(0);
    }
    if memory.places.is_empty() {
        let Some(namespace) = crate::layout::memory_namespace(rel) else { return Ok(0) };
        let mut stamped = 0;
        for &i in &bare {
            if let Ok(cite) = super::memory::cites::fill(root, memory.cites[i].clone(), Some(head)) {
                memory.cites[i] = cite;
                stamped += 1;
            }
        }
        if stamped > 0 {
            rewrite(root, namespace, &memory.id, memory.cites.clone())?;
        }
        return Ok(stamped);
    }
    let short = &head[..head.len().min(STAMP_DIGITS)];
    let bytes = store::read(root, &root.join(rel), store::cap::MARKDOWN)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let mut stamped = 0;
    // From the last to the first, so that a stamp never moves the place of one before it
    // on the same line.
    for &i in bare.iter().rev() {
        let (line, column, written) = &memory.places[i];
        let (line, column) = (*line, *column);
        let Some(at) = lines.get_mut(line.wrapping_sub(1)) else { continue };
        let from = at.char_indices().nth(column.saturating_sub(1)).map_or(at.len(), |(b, _)| b);
        let Some(found) = at[from..].find(written.as_str()) else { continue };
        let end = from + found + written.len();
        at.insert_str(end, &format!("@{short}"));
        memory.cites[i].commit = Some(short.to_owned());
        stamped += 1;
    }
    if stamped > 0 {
        store::write_atomic(root, &root.join(rel), lines.concat().as_bytes())?;
    }
    Ok(stamped)
}

/// Appends the `update` op that sets a memory's citations.
fn rewrite(root: &Path, namespace: &str, id: &str, cites: Vec<Cite>) -> Result<()> {
    use crate::memory::op::{Kind, Op, Set};
    let mut writer = crate::memory::writer::Writer::open(root, namespace)?;
    let mut update = Op::new(Kind::Update, id);
    update.at = Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    update.set = Some(Box::new(Set { cites: Some(cites), ..Set::default() }));
    // Fixing and stamping are a person's commands.
    update.author = Some(crate::memory::op::Author::cli());
    writer.append(&[update], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_that_set_a_live_memory_s_citations_is_the_one_named() {
        let log = [
            r#"{"op":"add","id":"m_1","content":"a","cites":[{"path":"a.rs"}]}"#,
            r#"{"op":"add","id":"m_2","content":"b","cites":[{"path":"b.rs"}]}"#,
            r#"{"op":"update","id":"m_1","set":{"cites":[{"path":"c.rs","lines":[1,2]}]}}"#,
            r#"{"op":"delete","id":"m_2","at":"2026-01-01T00:00:00Z"}"#,
            r#"not json"#,
            r#"{"op":"add","id":"m_3","content":"c"}"#,
        ]
        .join("\n");
        let got: Vec<_> = cited_in(&log).into_iter().map(|c| (c.id, c.line, c.cites[0].to_text())).collect();
        assert_eq!(got, vec![("m_1".to_owned(), 3, "c.rs:1-2".to_owned())]);
    }
}

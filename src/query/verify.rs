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
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Checked {
    /// The citation as written (`src/a.rs:3-5@abc1234`).
    pub cite: String,
    #[serde(flatten)]
    pub state: State,
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
                if let Some(cites) = cites(&op["cites"]).filter(|c: &Vec<Cite>| !c.is_empty()) {
                    live.push(Cited { id: id.to_owned(), line: i + 1, cites });
                }
            }
            "delete" => live.retain(|c| c.id != id),
            "update" => {
                if let Some(cites) = cites(&op["set"]["cites"]) {
                    live.retain(|c| c.id != id);
                    if !cites.is_empty() {
                        live.push(Cited { id: id.to_owned(), line: i + 1, cites });
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
        let cites: Vec<Cite> = match entry.value.to_json() {
            Value::Array(items) => items.iter().filter_map(|v| Cite::parse(v.as_str()?).ok()).collect(),
            Value::String(one) => Cite::parse(&one).ok().into_iter().collect(),
            _ => Vec::new(),
        };
        if !cites.is_empty() {
            out.push((rel.clone(), Cited { id: rel, line: entry.key.line, cites }));
        }
    }
    out
}

/// Checks the citations of every live memory and every entry under `root`.
pub fn verify(root: &Path) -> Result<Report> {
    verify_and_fix(root, false)
}

/// Checks the citations, and with `fix` rewrites each memory's moved ones to where their
/// text is now (an `update` op that sets its `cites`; the text is the same, so the hash is
/// kept, with HEAD as the commit). A changed or missing citation is never rewritten, and
/// an entry's `cites:` are the person's to edit.
pub fn verify_and_fix(root: &Path, fix: bool) -> Result<Report> {
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

/// Appends the `update` op that sets a memory's citations.
fn rewrite(root: &Path, namespace: &str, id: &str, cites: Vec<Cite>) -> Result<()> {
    use crate::memory::op::{Kind, Op, Set};
    let mut writer = crate::memory::writer::Writer::open(root, namespace)?;
    let mut update = Op::new(Kind::Update, id);
    update.at = Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    update.set = Some(Box::new(Set { cites: Some(cites), ..Set::default() }));
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

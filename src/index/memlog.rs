//! Memory logs in the index (docs/memory-log.md, docs/search-index.md): the live entries of
//! `.tmws/memory/{namespace}.jsonl` as items of kind `memory`, keyed on their `id`.
//!
//! A log is read from the offset the last commit recorded (its checkpoint, kept in the
//! commit payload with a hash of the bytes just before it). Only complete lines count: a
//! torn final line is left for later. New `add` and `delete` lines apply one by one; an
//! `update` or `link` line, a log that shrank, or one whose bytes before the checkpoint
//! changed (compaction, a hand edit) make the whole log be folded again.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Diagnostic, DocKind, IndexDoc, MemoryAttrs};
use crate::parse::jsonl;
use crate::parse::memlog::{self, DEFAULT_IMPORTANCE, Fold, complete};
use crate::parse::text::{cut, first_sentences};

/// How many bytes before a checkpoint its hash covers.
const TAIL_BYTES: u64 = 256;
/// The namespace's `max_summary_chars` (docs/config.md).
const MAX_SUMMARY_CHARS: usize = 1200;

/// Where the index stands in one log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMark {
    /// Bytes indexed: the end of the last complete line read.
    pub offset: u64,
    /// blake3 (hex) of the `TAIL_BYTES` before `offset` (fewer at the start of a file).
    pub tail: String,
    /// The latest time of an op before `offset` (the index's marks only): a line after it
    /// with an earlier time came from a merge and may be a dead `add`, so the log is read
    /// whole.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_at: String,
}

impl LogMark {
    /// The mark after reading a file up to `end`, given its bytes `before` ending there.
    pub fn at(end: u64, before: &[u8]) -> LogMark {
        let n = usize::try_from(TAIL_BYTES.min(end)).unwrap_or(0).min(before.len());
        LogMark {
            offset: end,
            tail: blake3::hash(&before[before.len() - n..]).to_hex().to_string(),
            last_at: String::new(),
        }
    }

    /// Where to start reading to check this mark: `TAIL_BYTES` before it.
    pub fn check_from(&self) -> u64 {
        self.offset - TAIL_BYTES.min(self.offset)
    }

    /// Whether `bytes`, read from `check_from()`, still hold what was indexed.
    pub fn holds(&self, bytes: &[u8]) -> bool {
        let n = usize::try_from(self.offset - self.check_from()).unwrap_or(usize::MAX);
        bytes.len() >= n && blake3::hash(&bytes[..n]).to_hex().as_str() == self.tail
    }
}

/// One change to the index from a log.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Add(Box<IndexDoc>),
    Delete(String),
}

/// What reading a log gave.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRead {
    /// True when `ops` are the whole log's live entries (replace everything it made);
    /// false when they continue from the previous checkpoint.
    pub whole: bool,
    pub ops: Vec<Op>,
    pub mark: LogMark,
    pub problems: Vec<Diagnostic>,
}

/// Reads the new part of a log: `bytes` from `mark.check_from()` to the end of the file.
/// None when it must be read whole instead.
pub fn read_tail(rel: &str, namespace: &str, mark: &LogMark, bytes: &[u8]) -> Option<LogRead> {
    if !mark.holds(bytes) {
        return None;
    }
    let skip = usize::try_from(mark.offset - mark.check_from()).ok()?;
    let new = complete(&bytes[skip..]);
    // Each line is read as the fold reads it (a line it skips, or whose op has no id, is
    // passed over), so that reading on from a mark gives what a whole read gives.
    let (lines, problems) = jsonl::parse_as(new, |text| {
        let (op, id) = memlog::op_and_id(text)?;
        Ok(Some((op, id, serde_json::from_str::<Value>(text)?)))
    });
    let mut ops = Vec::new();
    let mut last_at = mark.last_at.clone();
    for (_, _, (op, id, value)) in lines {
        let Some(id) = id else { continue };
        // Ops in time order apply one by one as the fold applies them; one older than what
        // came before (a merge's doing) may meet a tombstone: the fold decides, read whole.
        let at = value.get("at").and_then(Value::as_str).map(memlog::normalise_time);
        match (op.as_deref(), at) {
            (Some("add" | "delete"), Some(at)) if at < last_at => return None,
            (Some("add" | "delete"), Some(at)) => last_at = at,
            (Some("delete"), None) => {}
            _ => return None,
        }
        match op.as_deref() {
            Some("add") => ops.extend(memory_doc(rel, namespace, &value).map(|d| Op::Add(Box::new(d)))),
            _ => ops.push(Op::Delete(id)),
        }
    }
    for p in &problems {
        tracing::warn!("{rel}: a line after byte {} was skipped: {}", mark.offset, p.message);
    }
    let end = mark.offset + new.len() as u64;
    let upto = skip + new.len();
    let mark = LogMark { last_at, ..LogMark::at(end, &bytes[..upto]) };
    Some(LogRead { whole: false, ops, mark, problems: Vec::new() })
}

/// Folds a whole log into its live entries.
pub fn read_whole(rel: &str, namespace: &str, bytes: &[u8]) -> LogRead {
    let fold = Fold::of(bytes, false);
    let ops = fold
        .records(bytes)
        .filter_map(|map| memory_doc(rel, namespace, &Value::Object(map)))
        .map(|d| Op::Add(Box::new(d)))
        .collect();
    let done = complete(bytes);
    let mark = LogMark { last_at: fold.max_at, ..LogMark::at(done.len() as u64, done) };
    LogRead { whole: true, ops, mark, problems: fold.problems }
}

fn id_of(v: &Value) -> Option<&str> {
    v.get("id").and_then(Value::as_str).filter(|id| !id.is_empty())
}

/// The item of one `add` line (after any updates folded into it).
fn memory_doc(rel: &str, namespace: &str, v: &Value) -> Option<IndexDoc> {
    let id = id_of(v)?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(str::to_owned);
    let mut content = text("content").unwrap_or_default();
    // A problem's fields are searched with its content and kept for answers to show.
    let problem: serde_json::Map<String, Value> = ["problem", "solution", "outcome", "files"]
        .into_iter()
        .filter_map(|k| v.get(k).map(|x| (k.to_owned(), x.clone())))
        .collect();
    for k in ["problem", "solution"] {
        if let Some(t) = problem.get(k).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty())
            && !content.contains(t)
        {
            content.push_str("\n\n");
            content.push_str(t);
        }
    }
    // How it was written (`author.surface`, filled by tmws: cli, mcp, http) is kept for
    // answers to say where a memory's text came from (docs/trust-boundary.md).
    let surface = v.get("author").and_then(|a| a.get("surface")).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut meta_fields =
        if problem.get("problem").and_then(Value::as_str).is_some() { problem } else { serde_json::Map::new() };
    if let Some(s) = surface {
        meta_fields.insert("surface".into(), Value::from(s));
    }
    let meta = (!meta_fields.is_empty()).then(|| Value::Object(meta_fields).to_string());
    let summary =
        text("summary").map(|s| cut(s.trim(), MAX_SUMMARY_CHARS)).unwrap_or_else(|| first_sentences(&content));
    let tags = v
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    Some(IndexDoc {
        ref_id: id.to_owned(),
        kind: Some(DocKind::Memory),
        name: summary.clone(),
        description: summary,
        tags,
        category: text("kind"),
        created: text("at"),
        updated: text("updated_at"),
        path: rel.to_owned(),
        body: content,
        store_body: true,
        meta,
        namespace: Some(text("ns").unwrap_or_else(|| namespace.to_owned())),
        memory: Some(MemoryAttrs {
            // Normalised to UTC seconds with `Z`, so that text order is time order.
            expires_at: text("expires_at").map(|t| crate::parse::memlog::normalise_time(&t)),
            importance: Some(v.get("importance").and_then(Value::as_f64).unwrap_or(DEFAULT_IMPORTANCE).clamp(0.0, 1.0)),
            agent: text("agent"),
            branch: v.get("git").and_then(|g| g.get("branch")).and_then(Value::as_str).map(str::to_owned),
            commit: v
                .get("git")
                .and_then(|g| g.get("commit"))
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            key: text("key"),
        }),
        ..IndexDoc::default()
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const REL: &str = ".tmws/memory/long-term.jsonl";

    fn add(id: &str, content: &str) -> String {
        format!(
            "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"long-term\",\"at\":\"2026-11-22T10:00:00Z\",\"content\":\"{content}\",\"tags\":[\"t\"],\"kind\":\"note\",\"importance\":0.7,\"agent\":\"a\",\"git\":{{\"branch\":\"main\"}}}}\n"
        )
    }

    fn ids(read: &LogRead) -> Vec<String> {
        read.ops
            .iter()
            .map(|op| match op {
                Op::Add(d) => format!("+{}", d.ref_id),
                Op::Delete(id) => format!("-{id}"),
            })
            .collect()
    }

    #[test]
    fn a_whole_log_folds_to_its_live_entries() {
        let log = [
            add("m_1", "first"),
            add("m_2", "second"),
            "{\"op\":\"delete\",\"id\":\"m_1\",\"at\":\"2026-11-22T11:00:00Z\"}\n".into(),
            "{\"op\":\"update\",\"id\":\"m_2\",\"at\":\"2026-11-22T12:00:00Z\",\"set\":{\"tags\":[\"x\"],\"importance\":0.9}}\n".into(),
            "not json\n".into(),
            add("m_3", "third"),
            "{\"op\":\"add\",\"id\":\"m_4\",\"conte".into(),
        ]
        .concat();
        let read = read_whole(REL, "long-term", log.as_bytes());
        assert_eq!(ids(&read), ["+m_2", "+m_3"]);
        let Op::Add(d) = &read.ops[0] else { panic!() };
        assert_eq!(d.tags, ["x"]);
        assert_eq!(d.updated.as_deref(), Some("2026-11-22T12:00:00Z"));
        assert_eq!(d.memory.as_ref().unwrap().importance, Some(0.9));
        assert_eq!(d.memory.as_ref().unwrap().branch.as_deref(), Some("main"));
        assert_eq!(
            (d.name.as_str(), d.namespace.as_deref(), d.category.as_deref()),
            ("second", Some("long-term"), Some("note"))
        );
        assert_eq!(read.problems.len(), 1, "the bad line, not the torn one");
        // The torn final line is not consumed.
        assert_eq!(read.mark.offset as usize, log.rfind('\n').unwrap() + 1);
    }

    #[test]
    fn new_lines_are_read_from_the_mark() {
        let first = [add("m_1", "first"), add("m_2", "second")].concat();
        let mark = read_whole(REL, "long-term", first.as_bytes()).mark;
        let more = format!("{first}{}{{\"op\":\"delete\",\"id\":\"m_1\"}}\n{{\"op\":\"add\"", add("m_3", "third"));
        let bytes = &more.as_bytes()[usize::try_from(mark.check_from()).unwrap()..];
        let read = read_tail(REL, "long-term", &mark, bytes).unwrap();
        assert_eq!(ids(&read), ["+m_3", "-m_1"]);
        assert!(!read.whole);
        assert_eq!(read.mark.offset as usize, more.rfind('\n').unwrap() + 1);
        // Reading on from that mark with nothing new gives nothing.
        let again = &more.as_bytes()[usize::try_from(read.mark.check_from()).unwrap()..];
        assert_eq!(read_tail(REL, "long-term", &read.mark, again).unwrap().ops, []);
    }

    /// The items a sequence of reads leaves in the index.
    fn apply(items: &mut std::collections::BTreeMap<String, IndexDoc>, read: LogRead) {
        if read.whole {
            items.clear();
        }
        for op in read.ops {
            match op {
                Op::Add(d) => {
                    items.insert(d.ref_id.clone(), *d);
                }
                Op::Delete(id) => {
                    items.remove(&id);
                }
            }
        }
    }

    #[test]
    fn reading_on_from_a_mark_gives_what_reading_the_whole_log_gives() {
        use crate::parse::fuzz::{check, log_lines, render};
        check("index-memlog-tail", 384, (log_lines(), log_lines()), |(first, more)| {
            let first = render(&first);
            let all = [first.clone(), render(&more)].concat();
            let mut items = std::collections::BTreeMap::new();
            let start = read_whole(REL, "long-term", &first);
            let mark = start.mark.clone();
            apply(&mut items, start);
            let from = usize::try_from(mark.check_from()).unwrap_or(0);
            let whole = read_whole(REL, "long-term", &all);
            let next = read_tail(REL, "long-term", &mark, &all[from..]).unwrap_or_else(|| whole.clone());
            prop_assert_eq!(&next.mark, &whole.mark);
            apply(&mut items, next);
            let mut want = std::collections::BTreeMap::new();
            apply(&mut want, whole);
            prop_assert_eq!(items, want);
            Ok(())
        });
    }

    #[test]
    fn a_line_the_fold_passes_over_is_passed_over_when_reading_on() {
        // Found by a property test (reading on from a mark): an incremental sync indexed
        // these lines as memories, a whole read (and so a clean rebuild) did not.
        let first = add("m_1", "first");
        let mark = read_whole(REL, "long-term", first.as_bytes()).mark;
        let odd = [
            "{\"op\":\"add\",\"id\":\"   \",\"content\":\"blank id\"}\n",
            "{\"op\":\"add\",\"id\":\"m_2\",\"id\":\"m_3\",\"content\":\"two ids\"}\n",
            "{\"op\":\"delete\",\"id\":\"\"}\n",
        ];
        let all = format!("{first}{}", odd.concat());
        let tail = read_tail(REL, "long-term", &mark, &all.as_bytes()[usize::try_from(mark.check_from()).unwrap()..]);
        assert_eq!(tail.map(|t| ids(&t)), Some(vec![]));
        assert_eq!(ids(&read_whole(REL, "long-term", all.as_bytes())), ["+m_1"]);
    }

    #[test]
    fn a_rewritten_prefix_or_an_update_needs_a_whole_read() {
        let first = [add("m_1", "first"), add("m_2", "second")].concat();
        let mark = read_whole(REL, "long-term", first.as_bytes()).mark;
        let compacted = [add("m_2", "second"), add("m_1", "first")].concat();
        let from = usize::try_from(mark.check_from()).unwrap();
        assert_eq!(read_tail(REL, "long-term", &mark, &compacted.as_bytes()[from..]), None);
        let shrunk = &first.as_bytes()[from..first.len() - 10];
        assert_eq!(read_tail(REL, "long-term", &mark, shrunk), None);
        let updated = format!("{first}{{\"op\":\"update\",\"id\":\"m_1\",\"set\":{{\"tags\":[]}}}}\n");
        assert_eq!(read_tail(REL, "long-term", &mark, &updated.as_bytes()[from..]), None);
    }
}

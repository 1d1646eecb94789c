//! Memory logs in the index (docs/memory-log.md, docs/search-index.md): the live entries of
//! `.tmws/memory/{namespace}.jsonl` as items of kind `memory`, keyed on their `id`.
//!
//! A log is read from the offset the last commit recorded (its checkpoint, kept in the
//! commit payload with a hash of the bytes just before it). Only complete lines count: a
//! torn final line is left for later. New `add` and `delete` lines apply one by one; an
//! `update`, `link` or `review` line (or an `add` or `delete` out of time order) makes the
//! lines of the entries it names be folded again, found in the whole log; a log that shrank,
//! or one whose bytes before the checkpoint changed (compaction, a hand edit), is folded
//! again whole.

use serde_json::Value;

pub use crate::memory::LogMark;
use crate::memory::fold::{DEFAULT_IMPORTANCE, Fold, Record};
use crate::memory::op::{Kind, Op};
use crate::model::{Diagnostic, DocKind, IndexDoc, MemoryAttrs};
use crate::parse::issue_ref;
use crate::parse::jsonl::{self, complete};
use crate::parse::text::{cut, first_sentences};
use crate::parse::time::normalise_time;

/// docs/memory-log.md `max_summary_chars`.
const MAX_SUMMARY_CHARS: usize = 1200;

/// One change to the index from a log.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Add(Box<IndexDoc>),
    Delete(String),
}

/// What reading a log gave.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRead {
    /// True when `changes` are the whole log's live entries (replace everything it made);
    /// false when they continue from the previous checkpoint.
    pub whole: bool,
    pub changes: Vec<Change>,
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
    // Each line is read as the fold reads it (a line it skips is passed over), so that
    // reading on from a mark gives what a whole read gives.
    let (lines, problems) = jsonl::parse_as(new, |text| Op::read(text).map(|op| op.ok()));
    let mut changes = Vec::new();
    let mut last_at = mark.last_at.clone();
    for (_, _, op) in lines {
        // Ops in time order apply one by one as the fold applies them; one older than what
        // came before (a merge's doing) may meet a tombstone: the fold decides, read whole.
        let at = op.at.as_deref().filter(|t| !t.trim().is_empty()).map(normalise_time);
        match (op.op, at) {
            (Kind::Add | Kind::Delete, Some(at)) if at < last_at => return None,
            (Kind::Add | Kind::Delete, Some(at)) => last_at = at,
            (Kind::Delete, None) => {}
            _ => return None,
        }
        match op.op {
            // A proposal is not searchable until approved (docs/review.md).
            Kind::Add if op.is_proposed() => changes.push(Change::Delete(op.id)),
            Kind::Add => {
                let record = Record { add: op, updated_at: None };
                changes.extend(memory_doc(rel, namespace, &record).map(|d| Change::Add(Box::new(d))));
            }
            _ => changes.push(Change::Delete(op.id)),
        }
    }
    for p in &problems {
        tracing::warn!("{rel}: a line after byte {} was skipped: {}", mark.offset, p.message);
    }
    let end = mark.offset + new.len() as u64;
    let upto = skip + new.len();
    let mark = LogMark { last_at, ..LogMark::at(end, &bytes[..upto]) };
    Some(LogRead { whole: false, changes, mark, problems: Vec::new() })
}

/// Reads on from `mark` through the whole log `bytes` when what was appended names entries
/// written before (an `update`, `link` or `review`, an `add` or `delete` out of time order):
/// only the lines of the entries the new lines name are folded, which gives those entries
/// as folding the whole log gives them (an entry's state is made of its own lines alone),
/// without making 100k items again for one update. None when the bytes before the mark
/// changed: then the log is read whole.
pub fn read_on(rel: &str, namespace: &str, mark: &LogMark, bytes: &[u8]) -> Option<LogRead> {
    let from = usize::try_from(mark.check_from()).ok()?;
    if !mark.holds(bytes.get(from..)?) {
        return None;
    }
    let done = complete(bytes);
    let new = done.get(usize::try_from(mark.offset).ok()?..)?;
    let (lines, problems) = jsonl::parse_as(new, |text| Op::read(text).map(|op| op.ok()));
    let mut last_at = mark.last_at.clone();
    let mut named: Vec<String> = Vec::new();
    for (_, _, op) in lines {
        if let Some(at) = op.at.as_deref().filter(|t| !t.trim().is_empty()).map(normalise_time)
            && at > last_at
        {
            last_at = at;
        }
        if !named.contains(&op.id) {
            named.push(op.id);
        }
    }
    for p in &problems {
        tracing::warn!("{rel}: a line after byte {} was skipped: {}", mark.offset, p.message);
    }
    // Every line of the entries named, in the log's order: a line is one of theirs when its
    // `id` is (read as the log writes it, unescaped when it holds an escape).
    let wanted: std::collections::HashSet<&str> = named.iter().map(String::as_str).collect();
    let id_key = memchr::memmem::Finder::new(b"\"id\"");
    let mut theirs = Vec::new();
    for line in done.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Some(raw) = jsonl::string_values(line, &id_key).next() else { continue };
        let id = if raw.contains(&b'\\') {
            let quoted = [&b"\""[..], raw, &b"\""[..]].concat();
            serde_json::from_slice::<String>(&quoted).ok().map(std::borrow::Cow::Owned)
        } else {
            std::str::from_utf8(raw).ok().map(std::borrow::Cow::Borrowed)
        };
        if id.is_some_and(|id| wanted.contains(&*id)) {
            theirs.extend_from_slice(line);
            theirs.push(b'\n');
        }
    }
    let fold = Fold::of(&theirs, false);
    let mut docs: std::collections::HashMap<String, IndexDoc> = fold
        .records(&theirs)
        .filter_map(|record| memory_doc(rel, namespace, &record))
        .map(|d| (d.ref_id.clone(), d))
        .collect();
    let changes = named
        .into_iter()
        .map(|id| match docs.remove(&id) {
            Some(doc) => Change::Add(Box::new(doc)),
            None => Change::Delete(id),
        })
        .collect();
    let mark = LogMark { last_at, ..LogMark::at(done.len() as u64, done) };
    Some(LogRead { whole: false, changes, mark, problems: Vec::new() })
}

/// Folds a whole log into its live entries.
pub fn read_whole(rel: &str, namespace: &str, bytes: &[u8]) -> LogRead {
    let fold = Fold::of(bytes, false);
    let changes = fold
        .records(bytes)
        .filter_map(|record| memory_doc(rel, namespace, &record))
        .map(|d| Change::Add(Box::new(d)))
        .collect();
    let done = complete(bytes);
    let mark = LogMark { last_at: fold.max_at, ..LogMark::at(done.len() as u64, done) };
    LogRead { whole: true, changes, mark, problems: fold.problems }
}

/// A string field's text, when it is not blank.
fn text(field: &Option<String>) -> Option<String> {
    field.as_deref().filter(|s| !s.trim().is_empty()).map(str::to_owned)
}

/// The text a new entry's vector of meaning is made from once the index takes it in, made
/// from its item as a sync makes it (so that an encoder, which remembers its last texts,
/// embeds it once); None for a proposal, which the index leaves out.
pub(crate) fn meaning_text(entry: &Op) -> Option<String> {
    let d = memory_doc("", "", &Record { add: entry.clone(), updated_at: None })?;
    Some(super::meaning::item_text(&d.name, &d.description, &super::markup::searchable(&d.body)))
}

/// The item of one entry: its `add` with any updates folded into it. None for a proposal
/// no one approved yet: recall, search and briefings leave it out (docs/review.md).
fn memory_doc(rel: &str, namespace: &str, record: &Record) -> Option<IndexDoc> {
    let v = &record.add;
    if v.is_proposed() {
        return None;
    }
    let mut content = text(&v.content).unwrap_or_default();
    // A problem's fields are searched with its content and kept for answers to show.
    for t in [&v.problem, &v.solution].into_iter().flatten().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        if !content.contains(t) {
            content.push_str("\n\n");
            content.push_str(t);
        }
    }
    let mut meta_fields = serde_json::Map::new();
    if v.problem.is_some() {
        let fields = [
            ("problem", v.problem.clone().map(Value::from)),
            ("solution", v.solution.clone().map(Value::from)),
            ("outcome", v.outcome.clone().map(Value::from)),
            ("files", v.files.clone().map(Value::from)),
        ];
        meta_fields.extend(fields.into_iter().filter_map(|(k, x)| Some((k.to_owned(), x?))));
    }
    // Citations are kept whole (with the hash of what they cite), for answers to say
    // whether they still hold; `memory get` shows them as written.
    let of_files = || {
        let files = v.files.iter().flatten().map(String::as_str);
        crate::memory::cite::of_files(files, v.git.as_ref().and_then(|g| g.commit.as_deref()))
    };
    let cites = v.cites.clone().filter(|c| !c.is_empty()).unwrap_or_else(of_files);
    if !cites.is_empty()
        && let Ok(value) = serde_json::to_value(&cites)
    {
        meta_fields.insert("cites".into(), value);
    }
    // How it was written (`author.surface`, filled by tmws: cli, mcp, http) is kept for
    // answers to say where a memory's text came from (docs/trust-boundary.md).
    if let Some(a) = v.author.as_ref().filter(|a| !a.surface.is_empty()) {
        meta_fields.insert("surface".into(), Value::from(a.surface.clone()));
    }
    let meta = (!meta_fields.is_empty()).then(|| Value::Object(meta_fields).to_string());
    let own = first_sentences(text(&v.content).as_deref().unwrap_or(""));
    let given = text(&v.summary).map(|s| cut(s.trim(), MAX_SUMMARY_CHARS));
    // A summary that is the first sentences of a long content (extracted when the writer
    // gave none) is shown but not searched: its words are in the body already, and as a
    // short boosted field of its own it outweighed the content, whose later sentences are
    // what a search of it looks for (docs/ranking.md). A short memory's summary is its
    // content, searched as a name and a description as a document's are.
    let long = text(&v.content).map_or(0, |c| c.chars().count()) > 2 * own.chars().count();
    let summary_unsearched = long && given.as_deref().is_none_or(|s| is_first_sentences(s, &own));
    let summary = given.unwrap_or(own);
    let git = v.git.as_ref();
    // A memory written on an issue's branch is about that issue; a session's record names
    // the issues of its branch and commits, a task's record the issue it works on.
    let mut issues: Vec<String> =
        issue_ref::terms_of(git.and_then(|g| g.branch.as_deref()).and_then(issue_ref::from_branch).as_ref());
    let task_issue = v.task.iter().filter_map(|t| t.issue.as_ref());
    for term in v.session.iter().flat_map(|s| s.issues()).chain(task_issue) {
        if let Some(r) = issue_ref::parse(term) {
            for t in r.terms() {
                if !issues.contains(&t) {
                    issues.push(t);
                }
            }
        }
    }
    Some(IndexDoc {
        ref_id: v.id.clone(),
        kind: Some(DocKind::Memory),
        name: summary.clone(),
        description: summary,
        tags: v.tags.clone().unwrap_or_default(),
        category: text(&v.kind),
        created: text(&v.at),
        updated: text(&record.updated_at),
        path: rel.to_owned(),
        body: content,
        store_body: true,
        meta,
        namespace: Some(text(&v.ns).unwrap_or_else(|| namespace.to_owned())),
        summary_unsearched,
        // A problem's files are whole-file citations; a citation's path is kept once.
        cites: {
            let mut paths: Vec<String> = v.files.iter().flatten().filter_map(|f| cited_path(f)).collect();
            for c in v.cites.iter().flatten() {
                if let Some(p) = cited_path(&c.path).filter(|p| !paths.contains(p)) {
                    paths.push(p);
                }
            }
            paths
        },
        memory: Some(MemoryAttrs {
            // Normalised to UTC seconds with `Z`, so that text order is time order.
            expires_at: text(&v.expires_at).map(|t| normalise_time(&t)),
            importance: Some(v.importance.unwrap_or(DEFAULT_IMPORTANCE).clamp(0.0, 1.0)),
            agent: text(&v.agent),
            branch: git.and_then(|g| g.branch.clone()),
            commit: git.and_then(|g| g.commit.clone()).filter(|c| !c.is_empty()),
            key: text(&v.key),
        }),
        issues,
        ..IndexDoc::default()
    })
}

/// The file a citation names, as the index keeps it: root-relative with `/` separators,
/// without a leading `./`, a line range (`:10-20`), a symbol (`#name`) or a commit
/// (`@abc123`). None for one that names no file inside the root.
pub fn cited_path(cite: &str) -> Option<String> {
    let mut path = cite.trim().replace('\\', "/");
    for sep in ['@', '#'] {
        if let Some(at) = path.rfind(sep)
            && at > 0
        {
            path.truncate(at);
        }
    }
    if let Some(at) = path.rfind(':')
        && path[at + 1..].chars().all(|c| c.is_ascii_digit() || c == '-')
        && at > 0
    {
        path.truncate(at);
    }
    let mut path = path.trim().trim_start_matches("./").to_owned();
    while path.contains("//") {
        path = path.replace("//", "/");
    }
    let inside = !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|c| c != ".." && c != ".")
        && !path.chars().any(char::is_control);
    inside.then_some(path)
}

/// Whether `summary` is `own` (a content's first sentences) or the start of it, cut with
/// an ellipsis as an extracted summary is.
fn is_first_sentences(summary: &str, own: &str) -> bool {
    let head = summary.trim_end_matches('…').trim_end();
    !head.is_empty() && own.starts_with(head)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    #[test]
    fn a_citation_is_kept_as_the_file_it_names() {
        let cases = [
            ("src/pool.rs", Some("src/pool.rs")),
            ("./src/pool.rs:120-140", Some("src/pool.rs")),
            ("src/pool.rs#evict", Some("src/pool.rs")),
            ("src/pool.rs@abc123", Some("src/pool.rs")),
            ("migrations/", Some("migrations/")),
            ("src\\win\\a.rs", Some("src/win/a.rs")),
            ("/etc/passwd", None),
            ("../outside.rs", None),
            ("  ", None),
        ];
        for (cite, want) in cases {
            assert_eq!(super::cited_path(cite).as_deref(), want, "{cite}");
        }
    }

    use super::*;

    const REL: &str = ".tmws/memory/long-term.jsonl";

    fn add(id: &str, content: &str) -> String {
        format!(
            "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"long-term\",\"at\":\"2026-11-22T10:00:00Z\",\"content\":\"{content}\",\"tags\":[\"t\"],\"kind\":\"note\",\"importance\":0.7,\"agent\":\"a\",\"git\":{{\"branch\":\"main\"}}}}\n"
        )
    }

    fn ids(read: &LogRead) -> Vec<String> {
        read.changes
            .iter()
            .map(|c| match c {
                Change::Add(d) => format!("+{}", d.ref_id),
                Change::Delete(id) => format!("-{id}"),
            })
            .collect()
    }

    /// The logs of `testdata/formats/` as the index and the fold read them, against what
    /// the reader before the `memory::Op` type made of them (`testdata/formats/read.txt`).
    #[test]
    fn logs_tmws_wrote_read_as_they_always_read() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/formats");
        let mut out = String::new();
        for log in [
            "memory/short-term.jsonl",
            "memory/long-term.jsonl",
            "outside-git/short-term.jsonl",
            "outside-git/long-term.jsonl",
        ] {
            let bytes = std::fs::read(dir.join(log)).unwrap();
            let ns = if log.contains("short") { "short-term" } else { "long-term" };
            let read = read_whole(&format!(".tmws/memory/{ns}.jsonl"), ns, &bytes);
            let fold = Fold::of(&bytes, false);
            out.push_str(&format!(
                "== {log}\n{:#?}\n{:#?}\n{:#?}\n{:#?} {} {} {}\n",
                read.changes, read.mark, fold.live, fold.keys, fold.lines, fold.offset, fold.max_at
            ));
        }
        if std::env::var_os("TMWS_BLESS").is_some() {
            std::fs::write(dir.join("read.txt"), &out).unwrap();
        }
        let want = std::fs::read_to_string(dir.join("read.txt")).unwrap();
        assert!(out == want, "the logs of testdata/formats/ read otherwise than before:\n{out}");
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
        let Change::Add(d) = &read.changes[0] else { panic!() };
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
        assert_eq!(read_tail(REL, "long-term", &read.mark, again).unwrap().changes, []);
    }

    /// The items a sequence of reads leaves in the index.
    fn apply(items: &mut std::collections::BTreeMap<String, IndexDoc>, read: LogRead) {
        if read.whole {
            items.clear();
        }
        for c in read.changes {
            match c {
                Change::Add(d) => {
                    items.insert(d.ref_id.clone(), *d);
                }
                Change::Delete(id) => {
                    items.remove(&id);
                }
            }
        }
    }

    /// Both ways of reading on from a mark (the new lines alone, and the lines of the
    /// entries they name found in the whole log) give what reading the whole log gives.
    #[test]
    fn reading_on_from_a_mark_gives_what_reading_the_whole_log_gives() {
        use crate::parse::fuzz::{check, log_lines, render};
        check("index-memlog-tail", 384, (log_lines(), log_lines()), |(first, more)| {
            let first = render(&first);
            let all = [first.clone(), render(&more)].concat();
            let start = read_whole(REL, "long-term", &first);
            let mark = start.mark.clone();
            let from = usize::try_from(mark.check_from()).unwrap_or(0);
            let whole = read_whole(REL, "long-term", &all);
            let mut want = std::collections::BTreeMap::new();
            apply(&mut want, whole.clone());
            let tail = read_tail(REL, "long-term", &mark, &all[from..]);
            let on = read_on(REL, "long-term", &mark, &all);
            for next in [tail.unwrap_or_else(|| whole.clone()), on.unwrap_or_else(|| whole.clone())] {
                let mut items = std::collections::BTreeMap::new();
                apply(&mut items, start.clone());
                prop_assert_eq!(&next.mark, &whole.mark);
                apply(&mut items, next);
                prop_assert_eq!(&items, &want);
            }
            Ok(())
        });
    }

    #[test]
    fn an_update_is_read_on_from_the_lines_of_its_entry() {
        let add = |id: &str, content: &str, at: &str| {
            format!(
                r#"{{"op":"add","id":"{id}","ns":"long-term","at":"{at}","expires_at":"2036-01-01T00:00:00Z","content":"{content}","summary":"{content}"}}"#
            ) + "\n"
        };
        let first =
            [add("m_1", "pool evicts", "2026-01-01T00:00:00Z"), add("m_2", "retries", "2026-01-01T00:00:01Z")].concat();
        let start = read_whole(REL, "long-term", first.as_bytes());
        let more =
            r#"{"op":"update","id":"m_1","at":"2026-01-02T00:00:00Z","set":{"summary":"the pool evicts the oldest"}}"#;
        let all = format!("{first}{more}\n");
        assert!(read_tail(REL, "long-term", &start.mark, all.as_bytes()).is_none(), "an update needs what came before");
        let read = read_on(REL, "long-term", &start.mark, all.as_bytes()).unwrap();
        assert!(!read.whole);
        let [Change::Add(doc)] = read.changes.as_slice() else { panic!("{:?}", read.changes) };
        assert_eq!((doc.ref_id.as_str(), doc.name.as_str()), ("m_1", "the pool evicts the oldest"));
        assert_eq!(read.mark, read_whole(REL, "long-term", all.as_bytes()).mark);
        // Bytes before the mark that changed: read whole instead.
        let edited = all.replacen("retries", "RETRIES", 1);
        assert!(read_on(REL, "long-term", &start.mark, edited.as_bytes()).is_none());
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

//! Sessions (docs/memory-log.md#sessions): `tmws session record [--since TIME|COMMIT]` sums up a
//! window of work in one long-term `kind: session` memory: the memories added, the commits made
//! (subjects and files), the tool calls logged in `.tmws/cache/usage.jsonl`, and the agents
//! involved, as a short narrative plus structured fields under `session`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api::MemoryAddRequest;
use super::memory::{self, namespaces};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout;
use crate::memory::Fold;
use crate::memory::op::Author;
use crate::memory::session::{
    ActivityRecord, Calls, CommitRecord, Query, SessionRecord, VerificationRecord, WindowRecord,
};
use crate::parse::time::normalise_time;
use crate::parse::{issue_ref, jsonl};
use crate::store;

/// The window when `--since` is not given and no session was recorded before.
const DEFAULT_WINDOW_HOURS: i64 = 24;
/// At most this many items of each list go into the narrative.
const LISTED: usize = 10;
/// The structured fields keep at most this many commits (the latest), files per commit and
/// memory ids, and say how many more there were: one commit of 1,256 files made a 49 KB line.
const MAX_COMMITS: usize = 50;
const MAX_FILES: usize = 20;
const MAX_IDS: usize = 200;

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Where a window starts.
struct Window {
    /// RFC 3339 UTC.
    from: String,
    /// The start itself is outside the window (it is where the last session ended).
    exclusive: bool,
    /// Commits after this one (else commits since `from`).
    after_commit: Option<String>,
}

impl Window {
    fn holds(&self, at: &str, until: &str) -> bool {
        at <= until && if self.exclusive { at > self.from.as_str() } else { at >= self.from.as_str() }
    }
}

/// Where the window starts: a time (RFC 3339 or a date), a commit (its commit time and the
/// commits after it), or by default where the last recorded session ended (else 24 hours ago).
fn window_start(root: &Path, config: &Config, since: Option<&str>, now: DateTime<Utc>) -> Result<Window> {
    if let Some(s) = since.map(str::trim).filter(|s| !s.is_empty()) {
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Ok(Window { from: stamp(t.with_timezone(&Utc)), exclusive: false, after_commit: None });
        }
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            let from = stamp(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
            return Ok(Window { from, exclusive: false, after_commit: None });
        }
        let time = store::git::run(root, &["show", "-s", "--format=%cI", s, "--"]).map_err(|_| {
            Error::Usage(format!("--since `{s}` is neither a time (2026-11-22T10:00:00Z, 2026-11-22) nor a commit"))
        })?;
        let t = DateTime::parse_from_rfc3339(time.trim())
            .map_err(|e| Error::environment(format!("commit `{s}` has an unreadable time"), e))?;
        return Ok(Window { from: stamp(t.with_timezone(&Utc)), exclusive: false, after_commit: Some(s.to_owned()) });
    }
    let last = namespaces(root, config)?
        .iter()
        .filter_map(|ns| store::read_opt(root, &root.join(layout::memory_log(ns)), store::cap::LOG).ok().flatten())
        .flat_map(|bytes| Fold::of(&bytes, true).live.into_values())
        .filter(|e| e.kind.as_deref() == Some("session"))
        .max_by(|a, b| a.at.cmp(&b.at));
    Ok(match last {
        Some(e) => {
            let head = e.record.as_ref().and_then(|r| r.add.session.as_ref()).and_then(SessionRecord::head);
            Window { from: e.at, exclusive: true, after_commit: head.map(str::to_owned) }
        }
        None => {
            Window { from: stamp(now - Duration::hours(DEFAULT_WINDOW_HOURS)), exclusive: false, after_commit: None }
        }
    })
}

/// A commit in the window.
#[derive(Clone)]
struct Commit {
    hash: String,
    subject: String,
    files: Vec<String>,
}

impl Commit {
    /// As a session's structured fields keep it: at most `MAX_FILES` files.
    fn record(&self) -> CommitRecord {
        CommitRecord {
            commit: self.hash.clone(),
            subject: self.subject.clone(),
            files: self.files.iter().take(MAX_FILES).cloned().collect(),
            more_files: (self.files.len() > MAX_FILES).then(|| self.files.len() - MAX_FILES),
        }
    }
}

/// The latest `n` of `items`.
fn latest<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    items[items.len().saturating_sub(n)..].to_vec()
}

/// Tool calls as a session's record keeps them.
fn calls_of(calls: &BTreeMap<String, (u64, u64)>) -> BTreeMap<String, Calls> {
    calls.iter().map(|(t, (n, f))| (t.clone(), Calls { calls: *n, failed: *f })).collect()
}

/// Writes a session entry: long-term, `kind: session`, its structured fields in `record`,
/// and `author` (how the session came: surface and client) when a surface said it.
fn write_entry(
    root: &Path,
    config: &Config,
    content: String,
    summary: String,
    (agent, author): (Option<&str>, Option<&Value>),
    record: SessionRecord,
    now: DateTime<Utc>,
) -> Result<memory::AddAnswer> {
    let author = author.and_then(|a| Author::deserialize(a).ok());
    let req = MemoryAddRequest {
        content,
        namespace: Some("long-term".into()),
        summary: Some(summary),
        kind: Some("session".into()),
        source: Some("session".into()),
        agent: agent.map(str::to_owned),
        ..MemoryAddRequest::default()
    };
    memory::add_entry(root, config, &req, (author, Some(record), None), now)
}

/// The commits in the window (none outside git).
fn commits(root: &Path, since: &str, range_from: Option<&str>) -> Vec<Commit> {
    if store::git_head(root).is_none() {
        return Vec::new();
    }
    let range = range_from.map(|c| format!("{c}..HEAD"));
    let since_arg = format!("--since={since}");
    let mut args = vec!["log", "--format=%x01%h%x09%s", "--name-only"];
    match &range {
        Some(r) => args.push(r),
        None => args.push(&since_arg),
    }
    let Ok(out) = store::git::run(root, &args) else { return Vec::new() };
    let mut list: Vec<Commit> = Vec::new();
    for block in out.split('\u{1}').filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let Some((hash, subject)) = lines.next().and_then(|l| l.split_once('\t')) else { continue };
        let files = lines.map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
        list.push(Commit { hash: hash.to_owned(), subject: subject.to_owned(), files });
    }
    list.reverse();
    list
}

/// Tool calls in the window, by `server/tool`: (calls, failures).
fn tool_calls(root: &Path, window: &Window, until: &str) -> BTreeMap<String, (u64, u64)> {
    let bytes = super::tools::usage_bytes(root);
    let (lines, _) = jsonl::parse(&bytes);
    let mut calls: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in lines {
        let v = &line.value;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        if !window.holds(&normalise_time(text("at")), until) {
            continue;
        }
        let c = calls.entry(format!("{}/{}", text("server"), text("tool"))).or_default();
        c.0 += 1;
        if v.get("ok").and_then(Value::as_bool) == Some(false) {
            c.1 += 1;
        }
    }
    calls
}

/// `session_record`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SessionAnswer {
    /// Whether an entry was written (not when nothing happened in the window).
    pub recorded: bool,
    /// The session entry's id (a memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its one-line summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The start of the window it covers (RFC 3339).
    pub since: String,
    /// The end of the window it covers (RFC 3339).
    pub until: String,
    /// Memories added in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memories: Option<usize>,
    /// Commits made in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<usize>,
    /// Calls of other servers' tools in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Why nothing was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl SessionAnswer {
    /// The answer of a session entry written as `answer`, for `since..until`.
    fn recorded(
        answer: memory::AddAnswer,
        since: String,
        until: String,
        memories: usize,
        commits: usize,
        tool_calls: u64,
    ) -> SessionAnswer {
        SessionAnswer {
            recorded: true,
            id: Some(answer.id),
            summary: Some(answer.summary),
            since,
            until,
            memories: Some(memories),
            commits: Some(commits),
            tool_calls: Some(tool_calls),
            why: None,
        }
    }
}

/// `tmws session record` / `session_record`: writes the window's session entry.
pub(crate) fn record(
    root: &Path,
    config: &Config,
    since: Option<&str>,
    (agent, author): (Option<&str>, Option<&Value>),
    now: DateTime<Utc>,
) -> Result<SessionAnswer> {
    let window = window_start(root, config, since, now)?;
    let from = window.from.clone();
    let until = stamp(now);
    // Memories added in the window (not earlier sessions).
    let mut added: Vec<(String, String, String, Option<String>, String)> = Vec::new();
    for ns in namespaces(root, config)? {
        let Some(bytes) = store::read_opt(root, &root.join(layout::memory_log(&ns)), store::cap::LOG)? else {
            continue;
        };
        for (id, e) in Fold::of(&bytes, false).live {
            if window.holds(&e.at, &until) && e.kind.as_deref() != Some("session") {
                added.push((e.at, id, e.kind.unwrap_or_else(|| "note".into()), e.agent, e.summary));
            }
        }
    }
    added.sort();
    let commits = commits(root, &from, window.after_commit.as_deref());
    let calls = tool_calls(root, &window, &until);
    let mut agents: BTreeSet<String> = added.iter().filter_map(|a| a.3.clone()).collect();
    agents.extend(agent.map(str::to_owned));
    let n_calls: u64 = calls.values().map(|c| c.0).sum();
    if added.is_empty() && commits.is_empty() && n_calls == 0 {
        return Ok(SessionAnswer {
            since: from,
            until,
            why: Some("nothing happened in the window".into()),
            ..SessionAnswer::default()
        });
    }

    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for a in &added {
        *kinds.entry(a.2.as_str()).or_default() += 1;
    }
    let kinds_text = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ");
    let mut summary = format!("Session {from} – {until}: {} memories", added.len());
    if !kinds.is_empty() {
        let _ = write!(summary, " ({kinds_text})");
    }
    let _ = write!(summary, ", {} commits, {n_calls} tool calls", commits.len());
    if !agents.is_empty() {
        let _ = write!(summary, "; agents: {}", agents.iter().cloned().collect::<Vec<_>>().join(", "));
    }
    summary.push('.');

    let mut content = format!("{summary}\n");
    if !added.is_empty() {
        let _ = writeln!(content, "\nMemories added:");
        for (_, id, kind, _, s) in added.iter().take(LISTED) {
            let _ = writeln!(content, "- [{kind}] {s} ({id})");
        }
        if added.len() > LISTED {
            let _ = writeln!(content, "- … and {} more", added.len() - LISTED);
        }
    }
    if !commits.is_empty() {
        let _ = writeln!(content, "\nCommits:");
        for c in commits.iter().take(LISTED) {
            let files: Vec<&str> = c.files.iter().take(LISTED).map(String::as_str).collect();
            let more =
                if c.files.len() > LISTED { format!(" and {} more", c.files.len() - LISTED) } else { String::new() };
            let _ = writeln!(content, "- {} {} ({}{more})", c.hash, c.subject, files.join(", "));
        }
        if commits.len() > LISTED {
            let _ = writeln!(content, "- … and {} more", commits.len() - LISTED);
        }
    }
    if n_calls > 0 {
        let _ = writeln!(content, "\nTool calls:");
        let mut busiest: Vec<(&String, &(u64, u64))> = calls.iter().collect();
        busiest.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
        for (tool, (n, failed)) in busiest.iter().take(LISTED) {
            let failed = if *failed > 0 { format!(", {failed} failed") } else { String::new() };
            let _ = writeln!(content, "- {tool} × {n}{failed}");
        }
    }

    let issues = issues_of(store::git_head(root).and_then(|h| h.branch).as_deref(), &commits);
    if !issues.is_empty() {
        let _ = writeln!(content, "\nIssues: {}", issues.join(", "));
    }
    let ids: Vec<String> = added.iter().map(|a| a.1.clone()).collect();
    let more = |n: usize, kept: usize| (n > kept).then(|| n - kept);
    let record = SessionRecord::Window(WindowRecord {
        since: from.clone(),
        until: until.clone(),
        head: store::git_head(root).and_then(|h| h.commit),
        memories: latest(&ids, MAX_IDS),
        commits: latest(&commits, MAX_COMMITS).iter().map(Commit::record).collect(),
        more_commits: more(commits.len(), MAX_COMMITS),
        more_memories: more(added.len(), MAX_IDS),
        tool_calls: calls_of(&calls),
        agents: agents.into_iter().collect(),
        issues,
    });
    let answer = write_entry(root, config, content, summary, (agent, author), record, now)?;
    Ok(SessionAnswer::recorded(answer, from, until, added.len(), commits.len(), n_calls))
}

/// What one client session of `tmws mcp` or `tmws serve` did: the makings of the session
/// entry recorded when it ends (docs/memory-log.md#sessions).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Activity {
    /// When its first call came (since the last record, if one was made).
    pub started: Option<DateTime<Utc>>,
    /// The commit checked out then: the session's commits are those after it.
    pub head: Option<String>,
    /// Searches and recalls: (tool, query).
    pub queries: Vec<(String, String)>,
    /// Memories added: (id, kind, summary).
    pub memories: Vec<(String, String, String)>,
    /// Entries written: refIds.
    pub entries: Vec<String>,
    /// Verifications: (agent, success, the agent's trust after it).
    pub verifications: Vec<(String, bool, f64)>,
    /// Tool calls by `server/tool`: (calls, failures).
    pub tool_calls: BTreeMap<String, (u64, u64)>,
    /// Prompts its client's hooks saw (docs/hooks.md).
    pub prompts: u64,
    /// What its client's hooks briefed it with: refIds.
    pub briefed: Vec<String>,
    /// The client's transcript of the session, as its hooks named it.
    pub transcript: Option<String>,
    /// The client's own id of the session, as its hooks named it.
    pub client_session: Option<String>,
}

impl Activity {
    /// Marks the start (now, and the commit checked out) unless it is marked already.
    pub(crate) fn begin(&mut self, root: &Path) {
        if self.started.is_none() {
            self.started = Some(Utc::now());
            self.head = store::git_head(root).and_then(|h| h.commit);
        }
    }

    /// Whether the session only looked: searches, reads and recalls, nothing added,
    /// written, verified or called on another server. Such a session leaves no record by
    /// itself (docs/memory-log.md#sessions): it changed nothing later sessions could learn
    /// from, and a long-term entry made of its queries' words would be found by the next
    /// query with those words, above the content that answers it.
    pub fn is_read_only(&self) -> bool {
        self.memories.is_empty()
            && self.entries.is_empty()
            && self.verifications.is_empty()
            && self.tool_calls.is_empty()
    }

    /// Whether anything worth a record happened.
    pub fn is_empty(&self) -> bool {
        self.prompts == 0
            && self.queries.is_empty()
            && self.memories.is_empty()
            && self.entries.is_empty()
            && self.verifications.is_empty()
            && self.tool_calls.is_empty()
    }
}

/// Records `activity` (of the client `agent`) as one long-term `kind: session` entry, with
/// the commits made and the branch: by itself when the session ends (`automatic`), or when
/// the client asks (`session_record`). Nothing is written when nothing happened, nor by
/// itself for a session that only looked ([`Activity::is_read_only`]) and made no commit.
pub(crate) fn record_activity(
    root: &Path,
    config: &Config,
    (agent, author): (Option<&str>, Option<&Value>),
    activity: &Activity,
    automatic: bool,
    now: DateTime<Utc>,
) -> Result<SessionAnswer> {
    let started = activity.started.unwrap_or(now);
    let (from, until) = (stamp(started), stamp(now));
    let nothing = |why: &str| SessionAnswer {
        since: from.clone(),
        until: until.clone(),
        why: Some(why.into()),
        ..SessionAnswer::default()
    };
    if activity.is_empty() {
        return Ok(nothing("nothing happened in the session"));
    }
    let commits = commits(root, &from, activity.head.as_deref());
    if automatic && activity.is_read_only() && commits.is_empty() {
        return Ok(nothing("the session only searched and read: it leaves no record"));
    }
    let head = store::git_head(root);
    let branch = head.as_ref().and_then(|h| h.branch.clone());
    let duration = (now - started).num_seconds().max(0);
    let n_calls: u64 = activity.tool_calls.values().map(|c| c.0).sum();
    let recall = super::catalog::Typed::spec(&super::catalog::Recall).name;
    let recalls = activity.queries.iter().filter(|q| q.0 == recall).count();
    let searches = activity.queries.len() - recalls;
    let who = agent.unwrap_or("an agent");
    let mut summary = if activity.client_session.is_some() {
        format!(
            "Session of {who}, {from} – {until} ({}): {} prompts, {} items briefed, {} commits",
            span(duration),
            activity.prompts,
            activity.briefed.len(),
            commits.len()
        )
    } else {
        format!(
            "Session of {who}, {from} – {until} ({}): {recalls} recalls, {searches} searches, {} memories, {} \
verifications, {n_calls} tool calls, {} commits",
            span(duration),
            activity.memories.len(),
            activity.verifications.len(),
            commits.len()
        )
    };
    if let Some(b) = &branch {
        let _ = write!(summary, " on {b}");
    }
    summary.push('.');
    let mut content = format!("{summary}\n");
    let mut list = |title: &str, items: Vec<String>| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(content, "\n{title}:");
        for i in items.iter().take(LISTED) {
            let _ = writeln!(content, "- {i}");
        }
        if items.len() > LISTED {
            let _ = writeln!(content, "- … and {} more", items.len() - LISTED);
        }
    };
    list("Recalls and searches", activity.queries.iter().map(|(t, q)| format!("{t}: {q}")).collect());
    list("Memories added", activity.memories.iter().map(|(id, k, s)| format!("[{k}] {s} ({id})")).collect());
    list("Entries written", activity.entries.clone());
    list(
        "Verifications",
        activity
            .verifications
            .iter()
            .map(|(a, ok, t)| format!("{a}: {} (trust now {t:.2})", if *ok { "success" } else { "failure" }))
            .collect(),
    );
    list(
        "Tool calls",
        activity
            .tool_calls
            .iter()
            .map(|(t, (n, f))| if *f > 0 { format!("{t} × {n}, {f} failed") } else { format!("{t} × {n}") })
            .collect(),
    );
    list("Commits", commits.iter().map(|c| format!("{} {}", c.hash, c.subject)).collect());
    list("Briefed with", activity.briefed.clone());
    if let Some(t) = &activity.transcript {
        let _ = writeln!(content, "\nTranscript: {t}");
    }
    let issues = issues_of(branch.as_deref(), &commits);
    if !issues.is_empty() {
        let _ = writeln!(content, "\nIssues: {}", issues.join(", "));
    }
    let memories: Vec<String> = activity.memories.iter().map(|m| m.0.clone()).collect();
    let record = SessionRecord::Activity(ActivityRecord {
        since: from.clone(),
        until: until.clone(),
        duration_secs: duration,
        branch,
        head: head.and_then(|h| h.commit),
        agents: agent.into_iter().map(str::to_owned).collect(),
        queries: latest(&activity.queries, MAX_IDS).into_iter().map(|(tool, query)| Query { tool, query }).collect(),
        memories: latest(&memories, MAX_IDS),
        entries: latest(&activity.entries, MAX_IDS),
        verifications: activity
            .verifications
            .iter()
            .map(|(a, ok, t)| VerificationRecord { agent: a.clone(), success: *ok, trust: *t })
            .collect(),
        tool_calls: calls_of(&activity.tool_calls),
        commits: latest(&commits, MAX_COMMITS).iter().map(Commit::record).collect(),
        automatic,
        briefed: latest(&activity.briefed, MAX_IDS),
        transcript: activity.transcript.clone(),
        client_session: activity.client_session.clone(),
        issues,
    });
    let answer = write_entry(root, config, content, summary, (agent, author), record, now)?;
    Ok(SessionAnswer::recorded(answer, from, until, activity.memories.len(), commits.len(), n_calls))
}

/// The issues a session worked on, in their written forms: the one its branch names, then
/// those its commits' subjects name (docs/trackers.md#issue-references).
fn issues_of(branch: Option<&str>, commits: &[Commit]) -> Vec<String> {
    let mut refs: Vec<issue_ref::IssueRef> = branch.and_then(issue_ref::from_branch).into_iter().collect();
    for c in commits {
        for r in issue_ref::from_message(&c.subject) {
            if !refs.contains(&r) {
                refs.push(r);
            }
        }
    }
    refs.iter().map(ToString::to_string).collect()
}

/// A duration as people say it: `42 s`, `12 min`, `2 h 5 min`.
fn span(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

//! The replay set of briefings: a small project (`testdata/briefings/project/`: a billing
//! service's overview, decisions, lessons and runbooks, and memories with problems, notes
//! and session records) and the hook payloads four agent clients would send while working
//! in it (`testdata/briefings/payloads.jsonl`), each labelled with the items it should
//! bring or with none. [`replay`] copies the project, runs every payload in order through
//! `tmws::query::brief::brief` as the hook would, and [`Replay`] counts per client and
//! event what was briefed against the labels. Shared by `tests/it/briefings_replay.rs`
//! (which pins the figures) and `examples/briefings.rs` (which prints them).
//!
//! A payload line is `{"client", "event", "session", "payload", "expect", "note"}`:
//! `payload` is exactly what the client writes on the hook's stdin, with `$ROOT` where the
//! project's path goes; `expect` lists refIds (document paths, memory ids), any one of
//! which briefed is a hit, or `@last-session` for the session record newest at that
//! moment (a replayed session's end records one); an empty `expect` marks a distractor, on
//! which nothing should be briefed. Lines of one `session` are one client session, in
//! order.

#![allow(dead_code, reason = "the test and the example each use part of it")]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;
use tmws::query::brief::{self, Client, Event};

/// The time the memory logs of the project were written against: the replay moves every
/// time in them by as much as now is past it, so that each memory is as old at every run
/// (notes fade with their age, and short-term ones expire).
pub const ANCHOR: &str = "2026-11-28T00:00:00Z";

/// What `expect` says for the newest session record.
pub const LAST_SESSION: &str = "@last-session";

/// The events in the order the tables list them.
pub const EVENTS: [&str; 5] = ["session-start", "post-compact", "prompt", "pre-tool", "session-end"];

/// The clients in the order the tables list them.
pub const CLIENTS: [&str; 4] = ["claude", "codex", "gemini", "copilot"];

/// Each event's budget in characters, as the defaults of `[hooks]` set them.
pub fn budget(event: &str) -> usize {
    match event {
        "session-start" | "post-compact" => 6000,
        "prompt" => 2000,
        "pre-tool" => 1200,
        _ => 0,
    }
}

/// The most characters a whole session may be briefed.
pub const SESSION_CEILING: usize = 15_000;

/// The set's folder, `testdata/briefings/`.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/briefings")
}

/// One labelled payload.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its line in `payloads.jsonl`, from 1.
    pub line: usize,
    pub client: String,
    pub event: String,
    pub session: String,
    /// The payload as the client writes it, `$ROOT` still in it.
    pub payload: Value,
    pub expect: Vec<String>,
    pub note: String,
}

impl Case {
    /// A distractor: nothing should be briefed.
    pub fn distractor(&self) -> bool {
        self.expect.is_empty()
    }

    /// What the payload is about, in a few words: the prompt, the command or the path.
    pub fn gist(&self) -> String {
        let p = &self.payload;
        let input = p
            .get("tool_input")
            .cloned()
            .or_else(|| p.get("toolArgs").and_then(Value::as_str).and_then(|s| serde_json::from_str(s).ok()));
        let text = p
            .get("prompt")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                let input = input.as_ref()?;
                ["command", "file_path", "path", "absolute_path"]
                    .iter()
                    .find_map(|k| input.get(*k).and_then(Value::as_str))
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| self.event.clone());
        let text = text.replace("$ROOT/", "").replace('\n', " ");
        let cut: String = text.chars().take(70).collect();
        if cut.len() < text.len() { format!("{cut}…") } else { cut }
    }
}

/// Every case of `payloads.jsonl`, in order.
pub fn cases() -> Vec<Case> {
    let path = dir().join("payloads.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("payloads.jsonl:{}: {e}", i + 1));
            let s = |k: &str| {
                v.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("payloads.jsonl:{}: no {k}", i + 1))
                    .to_owned()
            };
            let expect = v
                .get("expect")
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("payloads.jsonl:{}: no expect", i + 1))
                .iter()
                .map(|e| {
                    e.as_str()
                        .unwrap_or_else(|| panic!("payloads.jsonl:{}: expect holds a non-string", i + 1))
                        .to_owned()
                })
                .collect();
            Case {
                line: i + 1,
                client: s("client"),
                event: s("event"),
                session: s("session"),
                payload: v.get("payload").cloned().unwrap_or_else(|| panic!("payloads.jsonl:{}: no payload", i + 1)),
                expect,
                note: s("note"),
            }
        })
        .collect()
}

/// Copies the project to `dst` (a folder that exists and is empty), moving the times of
/// its memory logs by as much as `now` is past [`ANCHOR`].
pub fn copy_project(dst: &Path, now: DateTime<Utc>) {
    let anchor: DateTime<Utc> = ANCHOR.parse().unwrap();
    let shift = now - anchor;
    copy(&dir().join("project"), dst, &|rel, bytes| {
        if rel.starts_with(".tmws/memory") && rel.extension().is_some_and(|e| e == "jsonl") {
            shift_times(bytes, shift)
        } else {
            bytes
        }
    });
}

fn copy(src: &Path, dst: &Path, edit: &dyn Fn(&Path, Vec<u8>) -> Vec<u8>) {
    fn walk(base: &Path, at: &Path, dst: &Path, edit: &dyn Fn(&Path, Vec<u8>) -> Vec<u8>) {
        for e in std::fs::read_dir(at).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let rel = path.strip_prefix(base).unwrap();
            if e.file_type().unwrap().is_dir() {
                std::fs::create_dir_all(dst.join(rel)).unwrap();
                walk(base, &path, dst, edit);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                std::fs::write(dst.join(rel), edit(rel, bytes)).unwrap();
            }
        }
    }
    walk(src, src, dst, edit);
}

/// A memory log with every op's `at` and `expires_at` moved by `shift`.
fn shift_times(bytes: Vec<u8>, shift: chrono::TimeDelta) -> Vec<u8> {
    let text = String::from_utf8(bytes).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut op: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        for key in ["at", "expires_at"] {
            if let Some(t) = op.get(key).and_then(Value::as_str) {
                let t: DateTime<Utc> = t.parse().unwrap();
                let moved = (t + shift).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                op.insert(key.to_owned(), Value::String(moved));
            }
        }
        out.push_str(&serde_json::to_string(&op).unwrap());
        out.push('\n');
    }
    out.into_bytes()
}

/// The newest live session record of the root's memory logs, if any.
fn last_session(root: &Path) -> Option<String> {
    let mut live: HashMap<String, String> = HashMap::new();
    let Ok(dir) = std::fs::read_dir(root.join(".tmws/memory")) else { return None };
    let mut ops = Vec::new();
    for e in dir.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            if let Ok(op) = serde_json::from_str::<Value>(line) {
                ops.push(op);
            }
        }
    }
    let field = |op: &Value, k: &str| op.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    ops.sort_by_key(|op| field(op, "at"));
    for op in &ops {
        match field(op, "op").as_str() {
            "add" if field(op, "kind") == "session" => {
                live.insert(field(op, "id"), field(op, "at"));
            }
            "delete" => {
                live.remove(&field(op, "id"));
            }
            _ => {}
        }
    }
    live.into_iter().max_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0))).map(|(id, _)| id)
}

/// What one payload briefed.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub case: Case,
    /// `expect` with `@last-session` resolved.
    pub expect: Vec<String>,
    pub stdout: String,
    /// The refIds briefed, in order.
    pub items: Vec<String>,
    pub silent: Option<String>,
    /// The briefing's length in characters (see [`briefing_chars`]).
    pub chars: usize,
    pub within_budget: bool,
    /// Printed in a form the client takes as context ([`client_takes`]).
    pub taken: bool,
    /// An expected item is in this briefing.
    pub hit_now: bool,
    /// No expected item is in this briefing, but one was briefed earlier in the session
    /// (since its last compaction), within its budget: the agent has it already.
    pub hit_earlier: bool,
    /// Items briefed again in the session with no compaction between.
    pub repeats: Vec<String>,
}

impl Outcome {
    pub fn hit(&self) -> bool {
        !self.case.distractor() && (self.hit_now && self.within_budget || self.hit_earlier)
    }

    pub fn is_silent(&self) -> bool {
        self.stdout.is_empty()
    }
}

/// The briefing `stdout` carries: the text itself, when the client's form wraps it in JSON
/// (the longest string in it, which is what the client adds to the context), else all of
/// stdout.
pub fn briefing_text(stdout: &str) -> String {
    fn longest(v: &Value, best: &mut String) {
        match v {
            Value::String(s) if s.chars().count() > best.chars().count() => *best = s.clone(),
            Value::Array(a) => a.iter().for_each(|x| longest(x, best)),
            Value::Object(o) => o.values().for_each(|x| longest(x, best)),
            _ => {}
        }
    }
    match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => {
            let mut best = String::new();
            longest(&v, &mut best);
            best
        }
        _ => stdout.to_owned(),
    }
}

/// The characters of the briefing `stdout` carries ([`briefing_text`]): what the budgets
/// count.
pub fn briefing_chars(stdout: &str) -> usize {
    briefing_text(stdout).chars().count()
}

/// Whether `client` takes `stdout` as context added to its agent's (nothing printed is
/// taken as nothing). Claude Code, Codex CLI and Gemini CLI take one JSON object whose
/// `hookSpecificOutput` names the event of the payload (`hook_event_name`: a briefing
/// under another event's name is ignored) and holds `additionalContext`; Copilot CLI takes
/// `additionalContext` at the top level.
pub fn client_takes(client: &str, payload: &Value, stdout: &str) -> bool {
    if stdout.is_empty() {
        return true;
    }
    let Ok(out) = serde_json::from_str::<Value>(stdout.trim()) else { return false };
    let context = |v: Option<&Value>| {
        v.and_then(|c| c.get("additionalContext")).and_then(Value::as_str).is_some_and(|c| !c.is_empty())
    };
    if client == "copilot" {
        return context(Some(&out));
    }
    let specific = out.get("hookSpecificOutput");
    let named = specific.and_then(|h| h.get("hookEventName")).and_then(Value::as_str);
    context(specific) && named.is_some() && named == payload.get("hook_event_name").and_then(Value::as_str)
}

/// Copies the project into `root` and replays every case in order.
pub fn replay(root: &Path, cases: &[Case]) -> Vec<Outcome> {
    copy_project(root, Utc::now());
    let root_text = root.to_str().expect("a temporary folder's path is UTF-8");
    // Per client session: what was briefed since the last compaction.
    let mut briefed: HashMap<(String, String), HashSet<String>> = HashMap::new();
    let mut out = Vec::new();
    for case in cases {
        let event = Event::parse(&case.event).unwrap_or_else(|| panic!("line {}: event {}", case.line, case.event));
        let client =
            Client::parse(&case.client).unwrap_or_else(|| panic!("line {}: client {}", case.line, case.client));
        let expect: Vec<String> = case
            .expect
            .iter()
            .filter_map(|e| if e == LAST_SESSION { last_session(root) } else { Some(e.clone()) })
            .collect();
        let stdin = serde_json::to_string(&case.payload).unwrap().replace("$ROOT", root_text);
        let got = brief::brief(event, client, stdin.as_bytes());
        let taken = client_takes(&case.client, &case.payload, &got.stdout);
        let items: Vec<String> = got.items.iter().map(|i| i.ref_id.clone()).collect();
        let chars = briefing_chars(&got.stdout);
        let within_budget = chars <= budget(&case.event);
        let seen = briefed.entry((case.client.clone(), case.session.clone())).or_default();
        let compaction = case.event == "post-compact";
        if compaction {
            seen.clear();
        }
        let hit_now = items.iter().any(|i| expect.contains(i));
        let hit_earlier = !hit_now && expect.iter().any(|e| seen.contains(e));
        let mut repeats = Vec::new();
        for i in &items {
            if !seen.insert(i.clone()) {
                repeats.push(i.clone());
            }
        }
        // An item briefed over its budget never reached the agent whole: it does not count
        // as known later.
        if !within_budget {
            for i in &items {
                seen.remove(i);
            }
        }
        out.push(Outcome {
            case: case.clone(),
            expect,
            stdout: got.stdout,
            items,
            silent: got.silent,
            chars,
            within_budget,
            taken,
            hit_now,
            hit_earlier,
            repeats,
        });
    }
    out
}

/// How many prompts the long session holds.
pub const LONG_SESSION_PROMPTS: usize = 50;

/// The characters briefed over one long session: a session start, then the first
/// [`LONG_SESSION_PROMPTS`] prompts of the set (labelled and distractors, each in its
/// client's shape) as one client session, in a fresh copy of the project in `root`.
pub fn long_session(root: &Path) -> usize {
    copy_project(root, Utc::now());
    let root_text = root.to_str().expect("a temporary folder's path is UTF-8");
    let cases = cases();
    let start = cases.iter().find(|c| c.event == "session-start" && c.client == "claude").expect("a session start");
    let prompts = cases.iter().filter(|c| c.event == "prompt").take(LONG_SESSION_PROMPTS);
    let mut chars = 0;
    for case in std::iter::once(start).chain(prompts) {
        let mut payload = case.payload.clone();
        for key in ["session_id", "sessionId"] {
            if payload.get(key).is_some() {
                payload[key] = Value::from("long-session");
            }
        }
        let event = Event::parse(&case.event).expect("a known event");
        let client = Client::parse(&case.client).expect("a known client");
        let stdin = serde_json::to_string(&payload).unwrap().replace("$ROOT", root_text);
        chars += briefing_chars(&brief::brief(event, client, stdin.as_bytes()).stdout);
    }
    chars
}

/// The figures of one client and event (or of all, as `*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub client: String,
    pub event: String,
    pub labelled: usize,
    pub hits: usize,
    /// Labelled payloads whose briefing holds every expected item (what a session start
    /// must bring, all of it).
    pub complete: usize,
    /// Of the hits, those briefed earlier in the session rather than by this payload.
    pub hits_earlier: usize,
    /// Items briefed on labelled payloads that were expected, and all items briefed there.
    pub expected_items: usize,
    pub items: usize,
    pub distractors: usize,
    pub silent_distractors: usize,
    pub repeats: usize,
    pub over_budget: usize,
    /// Briefings printed in a form the client would not take.
    pub untaken: usize,
    pub payloads: usize,
    pub chars: usize,
    pub max_chars: usize,
}

impl Row {
    fn add(&mut self, o: &Outcome) {
        self.payloads += 1;
        self.chars += o.chars;
        self.max_chars = self.max_chars.max(o.chars);
        self.repeats += o.repeats.len();
        self.over_budget += usize::from(!o.within_budget);
        self.untaken += usize::from(!o.taken);
        if o.case.distractor() {
            self.distractors += 1;
            self.silent_distractors += usize::from(o.is_silent());
        } else {
            self.labelled += 1;
            self.hits += usize::from(o.hit());
            self.complete += usize::from(o.within_budget && o.expect.iter().all(|e| o.items.contains(e)));
            self.hits_earlier += usize::from(o.hit() && !o.hit_now);
            self.items += o.items.len();
            self.expected_items += o.items.iter().filter(|i| o.expect.contains(i)).count();
        }
    }

    /// The row as the test pins it: every count as an exact fraction (and for the events
    /// that start a session's context, how many brought every expected item).
    pub fn pinned(&self) -> String {
        let complete = if self.event == "session-start" || self.event == "post-compact" {
            format!(", complete {}/{}", self.complete, self.labelled)
        } else {
            String::new()
        };
        format!(
            "{} {}: hits {}/{} ({} earlier){complete}, precision {}/{}, silent {}/{}, repeats {}, over budget {}, untaken {}",
            self.client,
            self.event,
            self.hits,
            self.labelled,
            self.hits_earlier,
            self.expected_items,
            self.items,
            self.silent_distractors,
            self.distractors,
            self.repeats,
            self.over_budget,
            self.untaken
        )
    }
}

/// Characters briefed in one client session.
#[derive(Debug, Clone)]
pub struct SessionChars {
    pub client: String,
    pub session: String,
    pub chars: usize,
}

/// The figures of a replay.
#[derive(Debug, Clone)]
pub struct Replay {
    pub outcomes: Vec<Outcome>,
}

impl Replay {
    pub fn run(root: &Path) -> Replay {
        Replay { outcomes: replay(root, &cases()) }
    }

    /// One row per client and event that has payloads, in table order.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows: BTreeMap<(usize, usize), Row> = BTreeMap::new();
        for o in &self.outcomes {
            let c = CLIENTS.iter().position(|c| *c == o.case.client).unwrap_or(CLIENTS.len());
            let e = EVENTS.iter().position(|e| *e == o.case.event).unwrap_or(EVENTS.len());
            rows.entry((c, e))
                .or_insert_with(|| Row { client: o.case.client.clone(), event: o.case.event.clone(), ..Row::default() })
                .add(o);
        }
        rows.into_values().collect()
    }

    /// One row per event over every client, and one over everything.
    pub fn totals(&self) -> Vec<Row> {
        let mut rows: Vec<Row> =
            EVENTS.iter().map(|e| Row { client: "*".into(), event: (*e).into(), ..Row::default() }).collect();
        let mut all = Row { client: "*".into(), event: "*".into(), ..Row::default() };
        for o in &self.outcomes {
            if let Some(r) = rows.iter_mut().find(|r| r.event == o.case.event) {
                r.add(o);
            }
            all.add(o);
        }
        rows.retain(|r| r.payloads > 0);
        rows.push(all);
        rows
    }

    /// The figures of the payloads the floors are about: prompts and tool calls.
    pub fn actions(&self) -> Row {
        let mut row = Row { client: "*".into(), event: "prompt+pre-tool".into(), ..Row::default() };
        for o in self.outcomes.iter().filter(|o| o.case.event == "prompt" || o.case.event == "pre-tool") {
            row.add(o);
        }
        row
    }

    /// Characters briefed per client session, in the order the sessions start.
    pub fn sessions(&self) -> Vec<SessionChars> {
        let mut out: Vec<SessionChars> = Vec::new();
        for o in &self.outcomes {
            match out.iter_mut().find(|s| s.client == o.case.client && s.session == o.case.session) {
                Some(s) => s.chars += o.chars,
                None => out.push(SessionChars {
                    client: o.case.client.clone(),
                    session: o.case.session.clone(),
                    chars: o.chars,
                }),
            }
        }
        out
    }

    /// Labelled payloads that were not hits, and distractors that were briefed.
    pub fn misses(&self) -> Vec<&Outcome> {
        self.outcomes.iter().filter(|o| if o.case.distractor() { !o.is_silent() } else { !o.hit() }).collect()
    }

    /// The figures as Markdown tables, and the misses.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str("| client | event | labelled | hits (earlier) | hit rate | complete | precision | distractors | silent | silence | repeats | over budget | untaken | chars mean | chars max |\n");
        s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        let rows = self.rows();
        for r in rows.iter().chain(self.totals().iter()).chain(std::iter::once(&self.actions())) {
            s.push_str(&format!(
                "| {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.client,
                r.event,
                r.labelled,
                r.hits,
                r.hits_earlier,
                ratio(r.hits, r.labelled),
                r.complete,
                ratio(r.expected_items, r.items),
                r.distractors,
                r.silent_distractors,
                ratio(r.silent_distractors, r.distractors),
                r.repeats,
                r.over_budget,
                r.untaken,
                r.chars.checked_div(r.payloads).unwrap_or(0),
                r.max_chars
            ));
        }
        let sessions = self.sessions();
        let total: usize = sessions.iter().map(|s| s.chars).sum();
        let max = sessions.iter().map(|s| s.chars).max().unwrap_or(0);
        s.push_str(&format!(
            "\n{} sessions: characters briefed per session mean {}, max {} (ceiling {SESSION_CEILING})\n",
            sessions.len(),
            total.checked_div(sessions.len()).unwrap_or(0),
            max
        ));
        for se in &sessions {
            s.push_str(&format!("  {} {}: {}\n", se.client, se.session, se.chars));
        }
        let misses = self.misses();
        s.push_str(&format!("\n{} misses:\n", misses.len()));
        for o in misses {
            let why = if o.case.distractor() {
                format!("briefed {:?}", o.items)
            } else if o.hit_now && !o.within_budget {
                format!("over budget: {} chars", o.chars)
            } else if o.items.is_empty() {
                format!("nothing briefed ({})", o.silent.as_deref().unwrap_or("no reason given"))
            } else {
                format!("briefed {:?} instead", o.items)
            };
            s.push_str(&format!(
                "  line {} {} {} {}: {:?} — {}; want {:?}\n",
                o.case.line,
                o.case.client,
                o.case.event,
                o.case.session,
                o.case.gist(),
                why,
                o.expect
            ));
        }
        s
    }

    /// The figures as JSON.
    pub fn json(&self) -> Value {
        let row = |r: &Row| {
            serde_json::json!({
                "client": r.client, "event": r.event, "labelled": r.labelled, "hits": r.hits, "complete": r.complete,
                "hits_earlier": r.hits_earlier, "expected_items": r.expected_items, "items": r.items,
                "distractors": r.distractors, "silent_distractors": r.silent_distractors,
                "repeats": r.repeats, "over_budget": r.over_budget, "untaken": r.untaken, "payloads": r.payloads,
                "chars": r.chars, "max_chars": r.max_chars,
            })
        };
        serde_json::json!({
            "rows": self.rows().iter().map(row).collect::<Vec<_>>(),
            "totals": self.totals().iter().map(row).collect::<Vec<_>>(),
            "actions": row(&self.actions()),
            "sessions": self.sessions().iter().map(|s| serde_json::json!({"client": s.client, "session": s.session, "chars": s.chars})).collect::<Vec<_>>(),
            "misses": self.misses().iter().map(|o| serde_json::json!({
                "line": o.case.line, "client": o.case.client, "event": o.case.event, "session": o.case.session,
                "gist": o.case.gist(), "expect": o.expect, "items": o.items, "chars": o.chars,
                "silent": o.silent, "note": o.case.note,
            })).collect::<Vec<_>>(),
        })
    }
}

/// `n/d` and its value to two places, or `-` when `d` is 0.
pub fn ratio(n: usize, d: usize) -> String {
    if d == 0 { "-".into() } else { format!("{n}/{d} = {:.2}", n as f64 / d as f64) }
}

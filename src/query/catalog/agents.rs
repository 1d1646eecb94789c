//! The tools about the agents themselves: their sessions and the trust between them.

use super::{Command, Cx, Hints, Route, Shape, Spec, Table, Typed};
use crate::error::{Error, Result};
use crate::query::answer::Reply;
use crate::query::api::{FormatOnly, Params, SessionRecordRequest, TrustVerifyRequest};
use crate::query::session::{self, Activity, SessionAnswer};
use crate::query::trust;

/// `session_record`: one long-term memory that sums up a window of work.
#[derive(Debug, Clone, Copy)]
pub struct SessionRecord;

static SESSION_RECORD: Spec = Spec {
    name: "session_record",
    title: "Record the session",
    description: "At the end of a session, record what happened in one long-term memory (kind session): what this \
session did since its last record (searches, memories added, verifications, tool calls, commits, branch, duration), \
or with since, the memories added, commits made and tool calls since a time or commit. Later sessions find it with \
memory_search and kind session.",
    hints: Hints::ADD,
    cli: Some(Command::new(
        Some("session"),
        "record",
        "Write one long-term `session` memory summing up the window: memories added, commits, tool calls, agents \
(session_record).",
        "\
Examples:
  tmws session record                 since the last recorded session
  tmws session record --since 2026-11-22 --agent claude
  tmws session record --since HEAD~3",
    )),
    http: &[],
};

impl Typed for SessionRecord {
    type Request = SessionRecordRequest;
    type Answer = SessionAnswer;

    fn spec(&self) -> &'static Spec {
        &SESSION_RECORD
    }

    /// What this session did so far is in the window of this record; a client's record is
    /// written as the session's identity, never a name it passes.
    fn run(&self, cx: &Cx<'_>, req: &SessionRecordRequest) -> Result<Reply<SessionAnswer>> {
        let (engine, session) = (cx.engine, cx.session);
        let max = req.validate(engine.config())?;
        let agent = if session.is_person() { req.agent.clone() } else { Some(session.writer()) };
        let author = session.author();
        let since = req.since.as_deref();
        let by = (agent.as_deref(), Some(&author));
        let now = chrono::Utc::now();
        // A client session that keeps its own account records what it did, as its record
        // at its end would have (searches, verifications, branch, duration); that record
        // then starts after this one. Without one, or with `since`, a window of the log.
        let answer = match session.take_activity().filter(|_| since.is_none()) {
            Some(activity) => session::record_activity(engine.root(), engine.config(), by, &activity, false, now)?,
            None => session::record(engine.root(), engine.config(), since, by, now)?,
        };
        Ok(Reply { answer, format: req.format, max_chars: max })
    }
}

/// `trust_verify`: the session verifies another agent's work, as its own identity.
#[derive(Debug, Clone, Copy)]
pub struct TrustVerify;

static TRUST_VERIFY: Spec = Spec {
    name: "trust_verify",
    title: "Verify another agent's work",
    description: "Record that you checked another agent's work (by the name its memories carry as agent) and whether it \
held up, with the evidence: a test run, a review, a commit. Its trust moves up 0.05 on success, down 0.10 on \
failure (the latest three verifications by one verifier count), and its memories rank accordingly. You are the \
verifier, as this session's identity (the server's --agent, the agent its token is bound to, else the name your \
client reports, recorded as self-reported), never a name you pass; an agent cannot verify itself under any spelling of its name.",
    hints: Hints::ADD,
    // The command line verifies as the person at it, with `tmws trust verify`: its own
    // flags (`--success` or `--failure`) and its own one-line answer.
    cli: None,
    http: &[],
};

impl Typed for TrustVerify {
    type Request = TrustVerifyRequest;
    type Answer = trust::Verified;

    fn spec(&self) -> &'static Spec {
        &TRUST_VERIFY
    }

    /// A client that gave no name to a server without `--agent` cannot verify anyone.
    fn run(&self, cx: &Cx<'_>, req: &TrustVerifyRequest) -> Result<Reply<trust::Verified>> {
        let engine = cx.engine;
        let max = req.validate(engine.config())?;
        let Some(verifier) = cx.session.identity() else {
            return Err(Error::Usage(
                "trust_verify needs the verifier's name: this client gave none (clientInfo.name), and the server \
has no --agent and its token no agent"
                    .into(),
            ));
        };
        let now = chrono::Utc::now();
        let self_reported = cx.session.self_reported();
        let trust =
            trust::verify(engine.root(), &req.agent, (&verifier, self_reported), req.success, &req.evidence, now)?;
        Ok(Reply {
            answer: trust::Verified { verifier, verifier_self_reported: self_reported, trust },
            format: req.format,
            max_chars: max,
        })
    }

    fn note(&self, req: &TrustVerifyRequest, answer: &trust::Verified, activity: &mut Activity) {
        let t = &answer.trust;
        activity.verifications.push((t.agent.clone(), req.success, t.score));
    }
}

/// `trust_show`: every agent's trust, highest first.
#[derive(Debug, Clone, Copy)]
pub struct TrustShow;

static TRUST_SHOW: Spec = Spec {
    name: "trust_show",
    title: "Show agents' trust",
    description: "Every agent's trust score (0 to 1, starting at 0.5), with the successes and failures that count, from how \
many verifiers, and when it was last verified, highest first. Memories of a trusted agent rank higher in \
memory_search, and only a trusted agent's importance counts above the default.",
    hints: Hints::READ,
    cli: Some(Command {
        shape: Shape::Lines(Table::Trust),
        ..Command::new(
            Some("trust"),
            "show",
            "Every agent's trust score (0.5 to start, +0.05 a success, -0.10 a failure, at most three \
verifications counted per verifier) (trust_show).",
            "\
Examples:
  tmws trust show
  tmws trust show --json",
        )
    }),
    http: &[Route::get("/trust")],
};

impl Typed for TrustShow {
    type Request = FormatOnly;
    type Answer = trust::TrustList;

    fn spec(&self) -> &'static Spec {
        &TRUST_SHOW
    }

    fn run(&self, cx: &Cx<'_>, req: &FormatOnly) -> Result<Reply<trust::TrustList>> {
        let max = req.validate(cx.engine.config())?;
        let agents = trust::show(cx.engine.root());
        Ok(Reply { answer: trust::TrustList { agents }, format: req.format, max_chars: max })
    }
}

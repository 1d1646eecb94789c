//! Issue trackers: an issue read from GitHub, GitLab or Jira through its REST API, and a
//! comment posted to it (docs/trackers.md).
//!
//! A tracker is off until its `[trackers.*]` section is written. Its token comes from the
//! environment variable the section names, or else from the OS keyring ([`keyring`]) when
//! the section names an account there, and goes only into the request's header: no
//! file, answer, log line or error holds it (every message is ours, and is scrubbed of it
//! and redacted before it leaves). Answers are kept under `.tmws/cache/trackers/`; when the
//! tracker cannot be reached or its rate limit is spent, the kept answer is served with
//! `stale: true`.
//!
//! The clients share one HTTP layer ([`http`]): a timeout on every request, pages followed
//! through `Link` headers (GitHub, GitLab) or `startAt` (Jira), a short `Retry-After`
//! waited out once, a longer one said in plain words, and one line for 401, 403 and 404.

mod cache;
mod github;
mod gitlab;
mod http;
mod jira;
mod keyring;

use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{Config, TrackerConfig};
use crate::error::{Error, Result};
use crate::parse::issue_ref::{self, IssueRef};

pub use http::Failure;

/// How long `issue show` waits for a tracker, per request.
pub const SHOW_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `recall` waits for its branch's issue before it answers from the cache (or
/// without the issue): recall must never stand in an agent's way for long.
pub const RECALL_TIMEOUT: Duration = Duration::from_millis(1500);
/// The most comments read of an issue (the latest are kept).
const MAX_COMMENTS: usize = 500;
/// The most bytes of an issue's body or a comment kept in the cache.
const MAX_TEXT_BYTES: usize = 64 * 1024;

/// Which tracker answers for a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Github,
    Gitlab,
    Jira,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Github => "github",
            Kind::Gitlab => "gitlab",
            Kind::Jira => "jira",
        }
    }

    /// Its name for people.
    fn title(self) -> &'static str {
        match self {
            Kind::Github => "GitHub",
            Kind::Gitlab => "GitLab",
            Kind::Jira => "Jira",
        }
    }
}

/// An issue as a tracker gave it, kept whole in the cache.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Issue {
    /// The reference as written (`#123`, `owner/repo#12`, `PROJ-7`).
    pub reference: String,
    /// Its address for people.
    pub url: String,
    pub title: String,
    /// `open`, `closed`, or the tracker's own status name.
    pub state: String,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
    pub body: String,
    /// Its comments, oldest first (the latest `MAX_COMMENTS`).
    pub comments: Vec<Comment>,
    /// How many comments it has, all of them.
    pub comments_total: usize,
}

/// A comment of an issue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Comment {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    pub body: String,
}

/// A tracker as configured: where its API is, which project, and its credentials.
#[derive(Clone)]
pub struct Tracker {
    pub kind: Kind,
    /// `owner/name`, a GitLab project path or id, or a Jira project key.
    pub project: String,
    /// The API's base address, without a trailing `/`.
    pub base: String,
    token: Option<String>,
    /// Jira Cloud's account (basic authentication with the token).
    user: Option<String>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token, not even in a debug print.
        f.debug_struct("Tracker")
            .field("kind", &self.kind)
            .field("project", &self.project)
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .finish()
    }
}

impl Tracker {
    /// The tracker of `kind` as `section` configures it, its token read from the
    /// environment.
    pub fn from_config(kind: Kind, section: &TrackerConfig, env: Env<'_>) -> Tracker {
        let (default_base, default_env) = match kind {
            Kind::Github => ("https://api.github.com", "GITHUB_TOKEN"),
            Kind::Gitlab => ("https://gitlab.com", "GITLAB_TOKEN"),
            Kind::Jira => ("", "JIRA_TOKEN"),
        };
        let base = section.api_url.clone().unwrap_or_else(|| default_base.to_owned());
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty()).map(|v| v.trim().to_owned());
        Tracker {
            kind,
            project: section.repo.trim().to_owned(),
            base: base.trim_end_matches('/').to_owned(),
            token: env(section.token_env.as_deref().unwrap_or(default_env))
                .or_else(|| section.keyring.as_deref().and_then(keyring::token)),
            user: (kind == Kind::Jira).then(|| env(section.user_env.as_deref().unwrap_or("JIRA_USER"))).flatten(),
        }
    }

    /// The environment variable of the token, for messages.
    fn token_env(section: &TrackerConfig, kind: Kind) -> String {
        section.token_env.clone().unwrap_or_else(|| format!("{}_TOKEN", kind.as_str().to_ascii_uppercase()))
    }
}

/// Where a token is read from: the process's environment, or (for a caller that holds its
/// own, such as a test) any map of variable names to values.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The tracker that answers for `reference` in `config`: a key goes to Jira; a number to
/// GitHub, else GitLab; a number of another repository to the same tracker, for that
/// repository.
pub(crate) fn tracker_for(config: &Config, reference: &IssueRef, env: Env<'_>) -> Result<(Tracker, IssueRef)> {
    let t = &config.trackers;
    let (kind, section) = match reference {
        IssueRef::Key { .. } => (Kind::Jira, t.jira.as_ref()),
        IssueRef::Number { .. } => match (&t.github, &t.gitlab) {
            (Some(g), _) => (Kind::Github, Some(g)),
            (None, Some(g)) => (Kind::Gitlab, Some(g)),
            (None, None) => (Kind::Github, None),
        },
    };
    let Some(section) = section else {
        let what = if kind == Kind::Jira { "[trackers.jira]" } else { "[trackers.github] or [trackers.gitlab]" };
        return Err(Error::Usage(format!(
            "no tracker is configured for {reference}: add {what} to .tmws/config.toml (docs/trackers.md)"
        )));
    };
    if kind == Kind::Jira && section.api_url.is_none() {
        return Err(Error::Usage("trackers.jira needs api_url, the site's address (docs/trackers.md)".into()));
    }
    let mut tracker = Tracker::from_config(kind, section, env);
    if let IssueRef::Number { repo: Some(repo), .. } = reference {
        tracker.project.clone_from(repo);
    }
    Ok((tracker, reference.clone()))
}

/// An issue with what `issue show` and `recall` say of it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct IssueAnswer {
    /// Which tracker (`github`, `gitlab`, `jira`).
    pub tracker: Kind,
    #[serde(flatten)]
    pub issue: Issue,
    /// The tracker could not be asked (offline, rate-limited): this is the answer kept
    /// from `fetched`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// Why the kept answer is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_reason: Option<String>,
    /// When the tracker gave this answer (RFC 3339).
    pub fetched: String,
}

/// Reads `reference` from its tracker, each request bounded by `timeout`; keeps the
/// answer in the cache, and serves the kept one (`stale`) when the tracker cannot be
/// reached or its rate limit is spent. A 401, 403 or 404 is an error of one line.
pub fn fetch(root: &Path, config: &Config, reference: &str, timeout: Duration) -> Result<IssueAnswer> {
    fetch_with(root, config, reference, timeout, &process_env)
}

/// [`fetch`] with the tokens `env` gives.
pub fn fetch_with(
    root: &Path,
    config: &Config,
    reference: &str,
    timeout: Duration,
    env: Env<'_>,
) -> Result<IssueAnswer> {
    let r = issue_ref::parse(reference).ok_or_else(|| {
        Error::Usage(format!(
            "`{}` is not an issue reference: give 123, #123, PROJ-123 or owner/repo#12",
            reference.chars().take(64).collect::<String>()
        ))
    })?;
    let (tracker, r) = tracker_for(config, &r, env)?;
    let fetched = http::run(timeout, |client| {
        let tracker = tracker.clone();
        let r = r.clone();
        async move {
            match tracker.kind {
                Kind::Github => github::issue(&client, &tracker, &r).await,
                Kind::Gitlab => gitlab::issue(&client, &tracker, &r).await,
                Kind::Jira => jira::issue(&client, &tracker, &r).await,
            }
        }
    });
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    match fetched {
        Ok(mut issue) => {
            issue.reference = r.to_string();
            tidy(&mut issue);
            let answer = IssueAnswer { tracker: tracker.kind, issue, stale: false, stale_reason: None, fetched: now };
            if let Err(e) = cache::store(root, &tracker, &r, &answer) {
                tracing::warn!("{}", scrub(&e.to_string(), &tracker));
            }
            Ok(answer)
        }
        Err(failure) => {
            let message = scrub(&failure.message(tracker.kind.title(), &r.to_string()), &tracker);
            if failure.serves_cache()
                && let Some(mut kept) = cache::load(root, &tracker, &r)
            {
                kept.stale = true;
                kept.stale_reason = Some(message);
                return Ok(kept);
            }
            Err(failure.error(message))
        }
    }
}

/// Posts `body` as a comment of `reference`, redacted first; returns the comment's
/// address when the tracker gives one.
pub fn post_comment(config: &Config, reference: &str, body: &str, timeout: Duration) -> Result<Posted> {
    post_comment_with(config, reference, body, timeout, &process_env)
}

/// Whether a comment could be posted to `reference`: it reads as an issue reference, a
/// tracker is configured for it, and its token is set. Nothing is asked of the tracker:
/// callers check first, before they change anything.
pub fn check_post(config: &Config, reference: &str) -> Result<()> {
    poster(config, reference, &process_env).map(|_| ())
}

/// Where a comment on `reference` would go, for a person to confirm: `GitHub issue #123
/// of owner/name`. Fails as [`check_post`] does.
pub fn post_target(config: &Config, reference: &str) -> Result<String> {
    let (tracker, r) = poster(config, reference, &process_env)?;
    Ok(format!("{} issue {r} of {} ({})", tracker.kind.title(), tracker.project, tracker.base))
}

/// The tracker a comment on `reference` goes to, with its token.
fn poster(config: &Config, reference: &str, env: Env<'_>) -> Result<(Tracker, IssueRef)> {
    let r = issue_ref::parse(reference).ok_or_else(|| {
        Error::Usage(format!("`{}` is not an issue reference", reference.chars().take(64).collect::<String>()))
    })?;
    let (tracker, r) = tracker_for(config, &r, env)?;
    if tracker.token.is_none() {
        let section = match tracker.kind {
            Kind::Github => config.trackers.github.as_ref(),
            Kind::Gitlab => config.trackers.gitlab.as_ref(),
            Kind::Jira => config.trackers.jira.as_ref(),
        };
        let env = section.map_or_else(|| "the token variable".to_owned(), |s| Tracker::token_env(s, tracker.kind));
        let keyring = section
            .and_then(|s| s.keyring.as_deref())
            .map_or_else(String::new, |account| format!(", or in the OS keyring ({})", keyring::how_to_store(account)));
        return Err(Error::Usage(format!(
            "posting to {} needs its token in the environment variable {env}{keyring}",
            tracker.kind.title()
        )));
    }
    Ok((tracker, r))
}

/// [`post_comment`] with the tokens `env` gives.
pub fn post_comment_with(
    config: &Config,
    reference: &str,
    body: &str,
    timeout: Duration,
    env: Env<'_>,
) -> Result<Posted> {
    let (tracker, r) = poster(config, reference, env)?;
    let redacted = crate::redact::redact(body);
    let text = redacted.text;
    let posted = http::run(timeout, |client| {
        let tracker = tracker.clone();
        let r = r.clone();
        let text = text.clone();
        async move {
            match tracker.kind {
                Kind::Github => github::comment(&client, &tracker, &r, &text).await,
                Kind::Gitlab => gitlab::comment(&client, &tracker, &r, &text).await,
                Kind::Jira => jira::comment(&client, &tracker, &r, &text).await,
            }
        }
    });
    match posted {
        Ok(url) => Ok(Posted { tracker: tracker.kind, reference: r.to_string(), url, redacted: redacted.count }),
        Err(failure) => {
            let message = scrub(&failure.message(tracker.kind.title(), &r.to_string()), &tracker);
            Err(failure.error(message))
        }
    }
}

/// A comment posted.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Posted {
    pub tracker: Kind,
    pub reference: String,
    /// The comment's address, when the tracker gave one.
    pub url: Option<String>,
    /// How many secrets were taken out of the text before it was posted.
    pub redacted: usize,
}

/// The issue the branch `branch` names, from the cache or its tracker within
/// `RECALL_TIMEOUT`; None when no tracker is configured for it, or it could not be read.
pub fn issue_of_branch(root: &Path, config: &Config, branch: &str) -> Option<IssueAnswer> {
    let r = issue_ref::from_branch(branch)?;
    let (tracker, r) = tracker_for(config, &r, &process_env).ok()?;
    // A fresh enough answer is not asked again: recall runs often.
    if let Some(kept) = cache::load(root, &tracker, &r)
        && cache::is_recent(&kept.fetched)
    {
        return Some(kept);
    }
    match fetch(root, config, &r.to_string(), RECALL_TIMEOUT) {
        Ok(answer) => Some(answer),
        Err(e) => {
            tracing::debug!("issue of branch {branch}: {e}");
            None
        }
    }
}

/// Caps what a tracker gave: bodies and comments at `MAX_TEXT_BYTES`, the latest
/// `MAX_COMMENTS` comments, and secrets redacted (an issue's text is untrusted input and
/// ends up in answers and the cache).
fn tidy(issue: &mut Issue) {
    let cap = |s: &mut String| {
        if s.len() > MAX_TEXT_BYTES {
            let mut at = MAX_TEXT_BYTES;
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            s.truncate(at);
        }
        crate::redact::redact_in_place(s);
    };
    cap(&mut issue.body);
    cap(&mut issue.title);
    issue.comments_total = issue.comments_total.max(issue.comments.len());
    if issue.comments.len() > MAX_COMMENTS {
        issue.comments.drain(..issue.comments.len() - MAX_COMMENTS);
    }
    for c in &mut issue.comments {
        cap(&mut c.body);
    }
}

/// `text` without the tracker's token (should a message ever hold it) and redacted.
fn scrub(text: &str, tracker: &Tracker) -> String {
    let mut text = text.to_owned();
    for secret in [&tracker.token, &tracker.user].into_iter().flatten().filter(|s| s.len() >= 4) {
        text = text.replace(secret.as_str(), "[token]");
    }
    crate::redact::redact(&text).text
}

/// What `issue show` says of an issue: the title, state, labels, assignees, the body cut to
/// `body_chars` and the last `comments` comments, each cut to a line or two.
pub fn summarise(answer: &IssueAnswer, body_chars: usize, comments: usize) -> IssueAnswer {
    let mut out = answer.clone();
    out.issue.body = crate::parse::text::cut(answer.issue.body.trim(), body_chars);
    let skip = answer.issue.comments.len().saturating_sub(comments);
    out.issue.comments = answer.issue.comments[skip..]
        .iter()
        .map(|c| Comment {
            author: c.author.clone(),
            created: c.created.clone(),
            body: crate::parse::text::cut(&c.body.split_whitespace().collect::<Vec<_>>().join(" "), 300),
        })
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text).unwrap_or_else(|d| panic!("{}", d.message))
    }

    fn route(config: &Config, reference: &str) -> std::result::Result<(Kind, String), String> {
        let env = |name: &str| (name == "GH").then(|| "tok-1234".to_owned());
        let r = issue_ref::parse(reference).unwrap();
        tracker_for(config, &r, &env).map(|(t, _)| (t.kind, t.project)).map_err(|e| e.to_string())
    }

    #[test]
    fn a_reference_goes_to_the_tracker_that_answers_for_it() {
        let both = config(
            "[trackers.github]\nrepo = \"o/r\"\ntoken_env = \"GH\"\n[trackers.jira]\nproject = \"PROJ\"\napi_url = \"https://x.atlassian.net\"\n",
        );
        assert_eq!(route(&both, "#12"), Ok((Kind::Github, "o/r".into())));
        assert_eq!(route(&both, "other/repo#12"), Ok((Kind::Github, "other/repo".into())));
        assert_eq!(route(&both, "PROJ-3"), Ok((Kind::Jira, "PROJ".into())));
        let gitlab = config("[trackers.gitlab]\nproject = \"g/s/p\"\n");
        assert_eq!(route(&gitlab, "12"), Ok((Kind::Gitlab, "g/s/p".into())));
        assert_eq!(
            route(&gitlab, "PROJ-3"),
            Err("no tracker is configured for PROJ-3: add [trackers.jira] to .tmws/config.toml (docs/trackers.md)"
                .into())
        );
        let no_site = config("[trackers.jira]\nproject = \"PROJ\"\n");
        assert_eq!(
            route(&no_site, "PROJ-3"),
            Err("trackers.jira needs api_url, the site's address (docs/trackers.md)".into())
        );
    }

    #[test]
    fn a_tracker_section_of_the_wrong_shape_is_refused_at_its_line() {
        for (text, line, says) in [
            ("[trackers.github]\nrepo = \"just-a-name\"\n", 2, "is not a repository such as owner/name"),
            ("[trackers.github]\nrepo = \"a/b/c\"\n", 2, "is not a repository such as owner/name"),
            ("[trackers.jira]\nproject = \"PR-OJ\"\n", 2, "is not a project key"),
            (
                "[trackers.gitlab]\nproject = \"42\"\napi_url = \"https://u:p@gitlab.example\"\n",
                3,
                "must be an https address",
            ),
            (
                "[trackers.github]\nrepo = \"o/r\"\napi_url = \"http://10.0.0.1\"\n",
                3,
                "plain http only on a loopback address",
            ),
            ("[trackers.github]\nrepo = \"o/r\"\ntoken_env = \"A B\"\n", 3, "must name an environment variable"),
            ("[trackers.github]\nrepo = \"o/r\"\ntoken = \"x\"\n", 3, "unknown field `token`"),
        ] {
            let d = Config::parse(text).unwrap_err();
            assert_eq!(d.line, line, "{text}: {}", d.message);
            assert!(d.message.contains(says), "{text}: {}", d.message);
        }
        let fine = config("[trackers.gitlab]\nproject = \"42\"\napi_url = \"http://127.0.0.1:8080\"\n");
        assert!(fine.trackers.gitlab.is_some());
    }

    #[test]
    fn a_debug_print_of_a_tracker_never_shows_its_token() {
        let section = TrackerConfig { repo: "o/r".into(), token_env: Some("GH".into()), ..TrackerConfig::default() };
        let t = Tracker::from_config(Kind::Github, &section, &|_| Some("tok-5678".into()));
        let shown = format!("{t:?}");
        assert!(!shown.contains("tok-5678") && shown.contains("[set]"), "{shown}");
        assert_eq!(scrub("refused tok-5678 here", &t), "refused [token] here");
    }
}

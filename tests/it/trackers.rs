//! Issue trackers against fake servers on 127.0.0.1 that answer like GitHub, GitLab and
//! Jira (paths, pages, rate limits, status codes): `tmws issue show` from each, the
//! failures people must tell apart, the cache served when the tracker is gone, and the
//! token kept out of every output, log and file.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};

use super::util::{Output, TestRoot, copy_tree, user_config};

/// A request the fake server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// The path and query, as sent.
    uri: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// What the fake answers: a status, headers and a JSON body.
type Reply = (u16, Vec<(&'static str, String)>, Value);

/// A fake tracker on a port of 127.0.0.1, answering with a function of the request.
pub(super) struct Fake {
    pub(super) base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Fake {
    fn start(answer: impl Fn(&Seen, &str) -> Reply + Send + Sync + 'static) -> Fake {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (log, own_base, answer) = (seen.clone(), base.clone(), Arc::new(answer));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app =
                    axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: String| {
                        let (log, base, answer) = (log.clone(), own_base.clone(), answer.clone());
                        async move {
                            let request = Seen {
                                method: method.to_string(),
                                uri: uri.to_string(),
                                headers: headers
                                    .iter()
                                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
                                    .collect(),
                                body,
                            };
                            let (status, extra, json) = answer(&request, &base);
                            log.lock().unwrap().push(request);
                            let mut out = HeaderMap::new();
                            out.insert("content-type", "application/json".parse().unwrap());
                            for (k, v) in extra {
                                out.insert(k, v.parse().unwrap());
                            }
                            (StatusCode::from_u16(status).unwrap(), out, json.to_string())
                        }
                    });
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Fake { base, seen, stop: Some(stop), thread: Some(thread) }
    }

    /// Stops the server: its port is closed when this returns.
    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop();
    }
}

const GH_TOKEN: &str = "tok-gh-5b1d0c9e7a";
const GL_TOKEN: &str = "tok-gl-8e2f4a6c1d";
const JIRA_TOKEN: &str = "tok-jira-3c7a9e1b5f";
const JIRA_USER: &str = "dev@example.com";

/// Runs tmws in `root` with the tokens of the tests in its environment (and none of the
/// machine's), its logs at debug level when `debug`.
fn tmws(root: &Path, args: &[&str], debug: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tmws"));
    cmd.env("TMWS_CONFIG_HOME", user_config())
        .env("NO_COLOR", "1")
        .env_remove("TMWS_LOG")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("JIRA_TOKEN")
        .env_remove("JIRA_USER")
        .env("TMWS_TEST_GH", GH_TOKEN)
        .env("TMWS_TEST_GL", GL_TOKEN)
        .env("TMWS_TEST_JIRA", JIRA_TOKEN)
        .env("TMWS_TEST_JIRA_USER", JIRA_USER)
        .args(args)
        .current_dir(root);
    if debug {
        cmd.env("TMWS_LOG", "debug");
    }
    let out = cmd.output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs tmws as [`tmws`] does, on a terminal (`script` gives it one) that types `typed`;
/// what the terminal showed.
fn on_a_terminal(root: &Path, args: &[&str], typed: &str) -> String {
    use std::io::Write;
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_tmws"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let mut child = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env("TMWS_CONFIG_HOME", user_config())
        .env("NO_COLOR", "1")
        .env_remove("TMWS_LOG")
        .env("TMWS_TEST_GH", GH_TOKEN)
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) gives the command a terminal");
    child.stdin.take().unwrap().write_all(typed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Asserts that no token appears in `out` nor in any file below the root's `.tmws/`.
fn no_token_anywhere(root: &TestRoot, outputs: &[&Output]) {
    for out in outputs {
        for token in [GH_TOKEN, GL_TOKEN, JIRA_TOKEN] {
            assert!(!out.stdout.contains(token) && !out.stderr.contains(token), "a token in the output: {out:?}");
        }
    }
    let files = copy_tree(&root.path().join(".tmws"));
    assert!(files.iter().any(|(rel, _)| rel.contains("cache/trackers/")), "nothing was cached: {files:?}");
    for (rel, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        for token in [GH_TOKEN, GL_TOKEN, JIRA_TOKEN] {
            assert!(!text.contains(token), "the token is in .tmws/{rel}");
        }
    }
}

fn github_root(base: &str) -> TestRoot {
    TestRoot::new().file(
        ".tmws/config.toml",
        format!("[trackers.github]\nrepo = \"o/r\"\napi_url = \"{base}\"\ntoken_env = \"TMWS_TEST_GH\"\n"),
    )
}

/// A fake GitHub: issue 123 with three comments on two pages, 404 for 9, a spent rate
/// limit for 7, a short Retry-After once for 55, and 401 for any other token (a request
/// without one is answered, as GitHub answers for a public repository).
pub(super) fn fake_github() -> Fake {
    let retried = Arc::new(Mutex::new(false));
    Fake::start(move |req, base| {
        let limits = vec![("x-ratelimit-remaining", "4990".to_owned()), ("x-ratelimit-limit", "5000".to_owned())];
        if req.header("authorization").is_some_and(|a| a != format!("Bearer {GH_TOKEN}")) {
            return (401, Vec::new(), json!({"message": "Bad credentials"}));
        }
        let comment = |n: u32| json!({"user": {"login": format!("u{n}")}, "created_at": format!("2026-11-0{n}T10:00:00Z"), "body": format!("comment {n}\nwith a second line")});
        match (req.method.as_str(), req.uri.as_str()) {
            ("GET", "/repos/o/r/issues/123") => (
                200,
                limits,
                json!({
                    "number": 123, "title": "Login fails after the token refresh", "state": "open",
                    "html_url": "https://github.com/o/r/issues/123",
                    "labels": [{"name": "bug"}, {"name": "auth"}], "assignees": [{"login": "ana"}, {"login": "bo"}],
                    "user": {"login": "cy"}, "created_at": "2026-11-01T09:00:00Z", "updated_at": "2026-11-03T09:00:00Z",
                    "body": format!("Steps:\n1. log in\n2. wait an hour\n{}", "x ".repeat(3000)), "comments": 3
                }),
            ),
            ("GET", "/repos/o/r/issues/123/comments?per_page=100") => {
                let mut h = limits;
                h.push((
                    "link",
                    format!(
                        "<{base}/repos/o/r/issues/123/comments?per_page=100&page=2>; rel=\"next\", \
<{base}/repos/o/r/issues/123/comments?per_page=100&page=2>; rel=\"last\""
                    ),
                ));
                (200, h, json!([comment(1), comment(2)]))
            }
            ("GET", "/repos/o/r/issues/123/comments?per_page=100&page=2") => (200, limits, json!([comment(3)])),
            ("GET", "/repos/o/r/issues/55") => {
                let mut once = retried.lock().unwrap();
                if !*once {
                    *once = true;
                    return (429, vec![("retry-after", "1".to_owned())], json!({"message": "slow down"}));
                }
                (200, limits, json!({"title": "After a short wait", "state": "closed", "comments": 0}))
            }
            ("GET", "/repos/o/r/issues/7") => {
                let reset = (chrono::Utc::now().timestamp() + 3600).to_string();
                (
                    403,
                    vec![("x-ratelimit-remaining", "0".to_owned()), ("x-ratelimit-reset", reset)],
                    json!({"message": "API rate limit exceeded"}),
                )
            }
            ("POST", "/repos/o/r/issues/123/comments") => {
                (201, limits, json!({"html_url": "https://github.com/o/r/issues/123#issuecomment-1"}))
            }
            _ => (404, Vec::new(), json!({"message": "Not Found"})),
        }
    })
}

#[test]
fn a_github_issue_is_shown_with_its_comments_from_every_page() {
    let fake = fake_github();
    let root = github_root(&fake.base);
    let out = tmws(root.path(), &["issue", "show", "#123", "--comments", "2", "--body-chars", "40", "--json"], true);
    assert_eq!(out.code, 0, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["tracker"], "github");
    assert_eq!(v["reference"], "#123");
    assert_eq!(v["title"], "Login fails after the token refresh");
    assert_eq!(v["state"], "open");
    assert_eq!(v["labels"], json!(["bug", "auth"]));
    assert_eq!(v["assignees"], json!(["ana", "bo"]));
    assert_eq!(v["comments_total"], 3);
    // The latest two of three, from the second page too, each on one line.
    assert_eq!(v["comments"][0]["body"], "comment 2 with a second line");
    assert_eq!(v["comments"][1]["author"], "u3");
    assert!(v["body"].as_str().unwrap().chars().count() <= 41, "{}", v["body"]);
    assert!(v.get("stale").is_none());
    // Both pages were asked for, with the token in the header only.
    let seen = fake.seen();
    assert_eq!(seen.iter().filter(|s| s.uri.contains("/comments")).count(), 2, "{seen:?}");
    assert!(seen.iter().all(|s| !s.uri.contains(GH_TOKEN)));
    no_token_anywhere(&root, &[&out]);

    // The text form says the same for people.
    let text = tmws(root.path(), &["issue", "show", "123"], false);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(text.stdout.contains("Login fails after the token refresh"), "{}", text.stdout);
}

/// A token kept in the OS keyring is sent when the environment holds none. The keyring's
/// tool (`secret-tool`; `security` on macOS) is a script on the PATH here that answers
/// only for the service and account the configuration names.
#[test]
fn a_token_in_the_os_keyring_is_sent_when_the_environment_has_none() {
    let fake = fake_github();
    let bin = tempfile::tempdir().unwrap();
    let (tool, asked) = if cfg!(target_os = "macos") {
        ("security", "find-generic-password -s tmws -a gh-work -w")
    } else {
        ("secret-tool", "lookup service tmws account gh-work")
    };
    let script =
        format!("#!/bin/sh\nif [ \"$*\" = \"{asked}\" ]; then printf '%s\\n' '{GH_TOKEN}'; exit 0; fi\nexit 1\n");
    std::fs::write(bin.path().join(tool), script).unwrap();
    std::fs::set_permissions(bin.path().join(tool), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let run = |account: &str, args: &[&str]| {
        let root = TestRoot::new().file(
            ".tmws/config.toml",
            format!(
                "[trackers.github]\nrepo = \"o/r\"\napi_url = \"{}\"\ntoken_env = \"TMWS_TEST_UNSET\"\nkeyring = \"{account}\"\n",
                fake.base
            ),
        );
        let out = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", user_config())
            .env("PATH", &path)
            .env_remove("TMWS_TEST_UNSET")
            .env_remove("TMWS_LOG")
            .args(args)
            .current_dir(root.path())
            .output()
            .unwrap();
        let out = Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (root, out)
    };
    let (root, out) = run("gh-work", &["--json", "issue", "show", "#123"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(json_of(&out)["title"], "Login fails after the token refresh");
    let seen = fake.seen();
    let asked: Vec<Option<&str>> =
        seen.iter().filter(|s| s.uri == "/repos/o/r/issues/123").map(|s| s.header("authorization")).collect();
    assert_eq!(asked, [Some(format!("Bearer {GH_TOKEN}").as_str())]);
    no_token_anywhere(&root, &[&out]);
    // An account the keyring holds nothing for: asked without a token, as for a public
    // repository.
    let (_root, out) = run("gh-other", &["--json", "issue", "show", "#123"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(fake.seen().last().unwrap().header("authorization"), None);
}

#[test]
fn a_short_retry_after_is_waited_out_once() {
    let fake = fake_github();
    let root = github_root(&fake.base);
    let out = tmws(root.path(), &["issue", "show", "55", "--json"], false);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(json_of(&out)["state"], "closed");
    assert_eq!(fake.seen().iter().filter(|s| s.uri == "/repos/o/r/issues/55").count(), 2);
}

#[test]
fn a_bad_token_a_missing_issue_and_a_spent_rate_limit_each_say_so_in_one_line() {
    let fake = fake_github();
    let root = github_root(&fake.base);
    let missing = tmws(root.path(), &["issue", "show", "9"], false);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert_eq!(missing.stderr.trim().lines().count(), 1, "{missing:?}");
    assert!(missing.stderr.contains("GitHub has no #9, or this token cannot see it (404)"), "{missing:?}");

    let limited = tmws(root.path(), &["issue", "show", "7"], false);
    assert_eq!(limited.code, 1, "{limited:?}");
    assert_eq!(limited.stderr.trim().lines().count(), 1, "{limited:?}");
    assert!(limited.stderr.contains("GitHub's rate limit is spent: it comes back in 60 min"), "{limited:?}");

    // The same tracker with a token it refuses.
    root.write(
        ".tmws/config.toml",
        format!("[trackers.github]\nrepo = \"o/r\"\napi_url = \"{}\"\ntoken_env = \"TMWS_TEST_GL\"\n", fake.base),
    );
    let refused = tmws(root.path(), &["issue", "show", "123"], false);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(refused.stderr.trim().lines().count(), 1, "{refused:?}");
    assert!(refused.stderr.contains("GitHub refused the token (401) for #123"), "{refused:?}");
    assert!(!refused.stderr.contains(GL_TOKEN));

    // No tracker for a Jira key: a usage error.
    let unconfigured = tmws(root.path(), &["issue", "show", "PROJ-1"], false);
    assert_eq!(unconfigured.code, 2, "{unconfigured:?}");
    assert!(unconfigured.stderr.contains("no tracker is configured for PROJ-1"), "{unconfigured:?}");
}

#[test]
fn a_dead_tracker_serves_the_kept_answer_as_stale_or_says_it_cannot_be_reached() {
    let mut fake = fake_github();
    let root = github_root(&fake.base);
    let first = tmws(root.path(), &["issue", "show", "123", "--json"], true);
    assert_eq!(first.code, 0, "{first:?}");
    fake.stop();

    let kept = tmws(root.path(), &["issue", "show", "123", "--json"], true);
    assert_eq!(kept.code, 0, "{kept:?}");
    let v = json_of(&kept);
    assert_eq!(v["stale"], true);
    assert_eq!(v["title"], "Login fails after the token refresh");
    assert!(v["stale_reason"].as_str().unwrap().starts_with("GitHub cannot be reached for #123"), "{v}");

    let never = tmws(root.path(), &["issue", "show", "124"], true);
    assert_eq!(never.code, 1, "{never:?}");
    assert!(never.stderr.contains("GitHub cannot be reached for #124"), "{never:?}");
    no_token_anywhere(&root, &[&first, &kept, &never]);
}

#[test]
fn a_gitlab_issue_is_read_through_x_next_page_without_system_notes() {
    let fake = Fake::start(|req, _| {
        if req.header("private-token") != Some(GL_TOKEN) {
            return (401, Vec::new(), json!({"message": "401 Unauthorized"}));
        }
        let note = |n: u32, system: bool| json!({"author": {"username": format!("g{n}")}, "created_at": "2026-11-02T10:00:00Z", "body": format!("note {n}"), "system": system});
        match req.uri.as_str() {
            "/api/v4/projects/grp%2Fproj/issues/5" => (
                200,
                Vec::new(),
                json!({"iid": 5, "title": "Cache misses on deploy", "state": "opened", "labels": ["infra"],
                       "assignees": [{"username": "dee"}], "author": {"username": "eve"},
                       "description": "The cache is cold after every deploy.", "web_url": "https://gitlab.example/grp/proj/-/issues/5"}),
            ),
            "/api/v4/projects/grp%2Fproj/issues/5/notes?sort=asc&order_by=created_at&per_page=100" => {
                (200, vec![("x-next-page", "2".to_owned())], json!([note(1, false), note(9, true)]))
            }
            "/api/v4/projects/grp%2Fproj/issues/5/notes?sort=asc&order_by=created_at&per_page=100&page=2" => {
                (200, vec![("x-next-page", String::new())], json!([note(2, false)]))
            }
            _ => (404, Vec::new(), json!({"message": "404 Not found"})),
        }
    });
    let root = TestRoot::new().file(
        ".tmws/config.toml",
        format!(
            "[trackers.gitlab]\nproject = \"grp/proj\"\napi_url = \"{}\"\ntoken_env = \"TMWS_TEST_GL\"\n",
            fake.base
        ),
    );
    let out = tmws(root.path(), &["issue", "show", "#5", "--json"], true);
    assert_eq!(out.code, 0, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["tracker"], "gitlab");
    assert_eq!(v["title"], "Cache misses on deploy");
    assert_eq!(v["state"], "open");
    assert_eq!(v["labels"], json!(["infra"]));
    assert_eq!(v["assignees"], json!(["dee"]));
    let bodies: Vec<&str> = v["comments"].as_array().unwrap().iter().map(|c| c["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["note 1", "note 2"]);
    no_token_anywhere(&root, &[&out]);
}

/// A fake Jira Cloud: PROJ-7 with three comments, two per page whatever is asked.
fn fake_jira() -> Fake {
    Fake::start(|req, _| {
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{JIRA_USER}:{JIRA_TOKEN}"));
        if req.header("authorization") != Some(&format!("Basic {basic}")) {
            return (401, Vec::new(), json!({"errorMessages": ["unauthorized"]}));
        }
        let comment = |n: u32| json!({"author": {"displayName": format!("J {n}")}, "created": "2026-11-02T10:00:00.000+0000", "body": format!("jira comment {n}")});
        let path = req.uri.split('?').next().unwrap_or("");
        let start = req.uri.split("startAt=").nth(1).and_then(|s| s.split('&').next()).unwrap_or("0");
        match (req.method.as_str(), path) {
            ("GET", "/rest/api/2/issue/PROJ-7") => (
                200,
                Vec::new(),
                json!({"key": "PROJ-7", "fields": {"summary": "Export times out", "status": {"name": "In Progress"},
                       "labels": ["export"], "assignee": {"displayName": "Fay"}, "reporter": {"displayName": "Gus"},
                       "description": "Exports over 1 GB time out.", "created": "2026-11-01T10:00:00.000+0000"}}),
            ),
            ("GET", "/rest/api/2/issue/PROJ-7/comment") => match start {
                "0" => (
                    200,
                    Vec::new(),
                    json!({"startAt": 0, "maxResults": 2, "total": 3, "comments": [comment(1), comment(2)]}),
                ),
                "2" => (200, Vec::new(), json!({"startAt": 2, "maxResults": 2, "total": 3, "comments": [comment(3)]})),
                _ => (400, Vec::new(), json!({})),
            },
            ("POST", "/rest/api/2/issue/PROJ-7/comment") => (201, Vec::new(), json!({"id": "10042"})),
            _ => (404, Vec::new(), json!({"errorMessages": ["Issue does not exist"]})),
        }
    })
}

fn jira_config(base: &str) -> String {
    format!(
        "[trackers.jira]\nproject = \"PROJ\"\napi_url = \"{base}\"\ntoken_env = \"TMWS_TEST_JIRA\"\nuser_env = \"TMWS_TEST_JIRA_USER\"\n"
    )
}

#[test]
fn a_jira_issue_is_read_through_start_at_pages() {
    let fake = fake_jira();
    let root = TestRoot::new().file(".tmws/config.toml", jira_config(&fake.base));
    let out = tmws(root.path(), &["issue", "show", "proj-7", "--json"], true);
    assert_eq!(out.code, 0, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["tracker"], "jira");
    assert_eq!(v["reference"], "PROJ-7");
    assert_eq!(v["title"], "Export times out");
    assert_eq!(v["state"], "In Progress");
    assert_eq!(v["assignees"], json!(["Fay"]));
    assert_eq!(v["comments_total"], 3);
    assert_eq!(v["comments"].as_array().unwrap().len(), 3);
    assert_eq!(v["comments"][2]["body"], "jira comment 3");
    assert_eq!(v["url"], format!("{}/browse/PROJ-7", fake.base));
    let missing = tmws(root.path(), &["issue", "show", "PROJ-8"], false);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(missing.stderr.contains("Jira has no PROJ-8"), "{missing:?}");
    no_token_anywhere(&root, &[&out, &missing]);
}

#[test]
fn a_posted_comment_is_redacted_and_carries_the_token_only_in_its_header() {
    let secret = "AKIAZ7Q3RTVWX2YB4NHM";
    let body = format!("Done: the export streams now. The old key {secret} is revoked.");
    let env = |name: &str| match name {
        "TMWS_TEST_GH" => Some(GH_TOKEN.to_owned()),
        "TMWS_TEST_JIRA" => Some(JIRA_TOKEN.to_owned()),
        "TMWS_TEST_JIRA_USER" => Some(JIRA_USER.to_owned()),
        _ => None,
    };
    let timeout = std::time::Duration::from_secs(30);

    let github = fake_github();
    let config = tmws::config::Config::parse(&format!(
        "[trackers.github]\nrepo = \"o/r\"\napi_url = \"{}\"\ntoken_env = \"TMWS_TEST_GH\"\n",
        github.base
    ))
    .unwrap();
    let posted = tmws::tracker::post_comment_with(&config, "#123", &body, timeout, &env).unwrap();
    assert_eq!(posted.url.as_deref(), Some("https://github.com/o/r/issues/123#issuecomment-1"));
    assert_eq!(posted.redacted, 1);
    let sent = github.seen().into_iter().find(|s| s.method == "POST").unwrap();
    let sent_body: Value = serde_json::from_str(&sent.body).unwrap();
    let text = sent_body["body"].as_str().unwrap();
    assert!(text.starts_with("Done: the export streams now. The old key ") && !text.contains(secret), "{text}");

    let jira = fake_jira();
    let config = tmws::config::Config::parse(&jira_config(&jira.base)).unwrap();
    let posted = tmws::tracker::post_comment_with(&config, "PROJ-7", &body, timeout, &env).unwrap();
    assert_eq!(posted.url, Some(format!("{}/browse/PROJ-7?focusedCommentId=10042", jira.base)));
    let sent = jira.seen().into_iter().find(|s| s.method == "POST").unwrap();
    assert!(!sent.body.contains(secret), "{}", sent.body);

    // Without a token nothing is sent.
    let none = |_: &str| None;
    let err = tmws::tracker::post_comment_with(&config, "PROJ-7", "x", timeout, &none).unwrap_err();
    assert_eq!(err.to_string(), "posting to Jira needs its token in the environment variable TMWS_TEST_JIRA");
}

#[test]
fn a_tracker_address_over_plain_http_must_be_loopback() {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[trackers.github]\nrepo = \"o/r\"\napi_url = \"http://tracker.example\"\n");
    let out = tmws(root.path(), &["issue", "show", "1"], false);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("config.toml:3"), "{out:?}");
    assert!(out.stderr.contains("trackers.github.api_url must be an https address"), "{out:?}");
}

#[test]
fn recall_on_an_issue_branch_brings_the_issue() {
    let fake = fake_github();
    let root = github_root(&fake.base);
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(root.path()).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"]);
    git(&["checkout", "-q", "-b", "feature/123-login"]);
    let out = tmws(root.path(), &["recall", "token refresh", "--json"], false);
    assert_eq!(out.code, 0, "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["issue"]["reference"], "#123", "{v}");
    assert_eq!(v["issue"]["title"], "Login fails after the token refresh");
    // On a branch that names no issue, nothing is asked.
    git(&["checkout", "-q", "main"]);
    let before = fake.seen().len();
    let out = tmws(root.path(), &["recall", "token refresh", "--json"], false);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(json_of(&out).get("issue").is_none());
    assert_eq!(fake.seen().len(), before);
}

#[test]
fn a_tracker_that_never_answers_costs_recall_a_moment_and_issue_show_a_clear_line() {
    // A port that takes connections (the backlog) and never answers them.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", hung.local_addr().unwrap().port());
    let root = github_root(&base);
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).current_dir(root.path()).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q", "-b", "feature/77-export"]);
    // Recall gives up on the issue after its short bound and answers without it.
    let recalled = tmws(root.path(), &["recall", "export", "--json"], false);
    assert_eq!(recalled.code, 0, "{recalled:?}");
    assert!(json_of(&recalled).get("issue").is_none(), "{}", recalled.stdout);
    let shown = tmws(root.path(), &["issue", "show", "77"], false);
    assert_eq!(shown.code, 1, "{shown:?}");
    assert!(shown.stderr.contains("GitHub cannot be reached for #77: no answer in time"), "{shown:?}");
    drop(hung);
}

/// `task done --merge --post` on a task whose branch names its issue: the task is merged and
/// its summary posted as a comment on the issue at the fake GitHub, with the secret in its
/// outcome taken out; a task without an issue, or with a tracker whose token is not set,
/// is refused before anything changes.
#[test]
fn a_task_done_with_post_comments_on_its_issue_at_the_tracker() {
    let fake = fake_github();
    let root = github_root(&fake.base);
    let worktrees = tempfile::tempdir().unwrap();
    super::tasks::in_git(&root, worktrees.path());
    let started = tmws(root.path(), &["--json", "task", "start", "123-login-fix"], false);
    assert_eq!(started.code, 0, "{started:?}");
    assert_eq!(json_of(&started)["issue"], "#123", "the branch names the issue");
    let plain = tmws(root.path(), &["--json", "task", "start", "plain"], false);
    assert_eq!(plain.code, 0, "{plain:?}");
    // An agent works on the task in its worktree: a memory, and its session recorded when
    // it ends.
    let mcp = super::clients::Mcp::start(&worktrees.path().join("123-login-fix"));
    let added = mcp.call("memory_add", json!({"content": "Login tokens refresh a minute before they expire."}));
    assert!(matches!(added, super::clients::Answer::Ok(_)), "{added:?}");
    mcp.stop();

    let refused = tmws(root.path(), &["task", "done", "plain", "--post"], false);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("task `plain` names no issue to post to"), "{refused:?}");
    let mut without_token = Command::new(env!("CARGO_BIN_EXE_tmws"));
    without_token.env("TMWS_CONFIG_HOME", user_config()).env_remove("TMWS_LOG").env_remove("TMWS_TEST_GH");
    let out =
        without_token.current_dir(root.path()).args(["task", "done", "123-login-fix", "--post"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "tmws: posting to GitHub needs its token in the environment variable TMWS_TEST_GH"
    );
    assert!(worktrees.path().join("123-login-fix").is_dir(), "nothing was done");

    // Posting is asked about first: with no terminal to ask on and no --yes, nothing is
    // done; on a terminal the question names where the comment would go, and a no does
    // nothing either.
    let unasked = tmws(root.path(), &["task", "done", "123-login-fix", "--merge", "--post"], false);
    assert_eq!(unasked.code, 2, "{unasked:?}");
    assert_eq!(
        unasked.stderr,
        "tmws: --post asks first, and there is no terminal to ask on, so nothing was done: pass --yes to confirm it\n"
    );
    let said_no = on_a_terminal(root.path(), &["task", "done", "123-login-fix", "--merge", "--post"], "n\n");
    assert!(
        said_no.contains(&format!(
            "task done will post the summary of task `123-login-fix` (its outcome, sessions and commits, redacted) \
as a comment on GitHub issue #123 of o/r ({}). Post it? [y/N]",
            fake.base
        )),
        "{said_no}"
    );
    assert!(said_no.contains("tmws: not confirmed, so nothing was done"), "{said_no}");
    assert!(worktrees.path().join("123-login-fix").is_dir(), "nothing was done");
    assert!(fake.seen().iter().all(|s| s.method != "POST"), "nothing was posted");

    let key = "AKIAZ7Q4N2XW9LJ3KD5M";
    let outcome = format!("fixed; the test key was {key}");
    let done = tmws(
        root.path(),
        &["--json", "task", "done", "123-login-fix", "--merge", "--post", "--yes", "--outcome", &outcome],
        false,
    );
    assert_eq!(done.code, 0, "{done:?}");
    let v = json_of(&done);
    assert_eq!(v["merged"], true, "{v}");
    assert_eq!(
        v["posted"],
        json!({"issue": "#123", "posted": true, "url": "https://github.com/o/r/issues/123#issuecomment-1", "redacted": 1})
    );
    let posts: Vec<Seen> = fake.seen().into_iter().filter(|s| s.method == "POST").collect();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].uri, "/repos/o/r/issues/123/comments");
    let body: Value = serde_json::from_str(&posts[0].body).unwrap();
    let text = body["body"].as_str().unwrap();
    assert!(text.starts_with("Task 123-login-fix done (issue #123): branch 123-login-fix"), "{text}");
    assert!(text.contains("Outcome: fixed; the test key was"), "{text}");
    assert!(!text.contains(key) && text.contains("[REDACTED:"), "{text}");
    assert_eq!(text.matches("\nSession: ").count(), 1, "the agent's session is in the summary: {text}");
    assert!(!done.stdout.contains(GH_TOKEN) && !done.stderr.contains(GH_TOKEN));
    // From the main worktree: the agent's memory, and the task found by its issue.
    let recalled = tmws(root.path(), &["recall", "when do login tokens refresh"], false);
    assert!(recalled.stdout.contains("Login tokens refresh a minute before they expire."), "{recalled:?}");
    let found = json_of(&tmws(root.path(), &["--json", "search", "#123"], false));
    let refs: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap()).collect();
    assert!(refs.contains(&v["memory"].as_str().unwrap()), "the task's memory names #123: {found}");
}

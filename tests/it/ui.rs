//! The web view at `/ui` of `tmws serve`: over plain HTTP (the redirect without a session,
//! the cookie's flags, CSRF and Origin refusals, escaping, the pages' security headers) and
//! in a real headless Chromium (`browser.rs`) going through every page as a person would,
//! with a screenshot of each: approving a proposal there is what makes recall find it.

use std::path::{Path, PathBuf};

use super::browser::{self, Browser};
use super::clients::{Serve, encode, http_builder};
use super::memory_git::{git, repo};
use super::util::{TestRoot, eventually, missing};

/// A memory whose text is markup: every page must show it as text.
const HOSTILE: &str = "<script>alert('memory')</script><img src=x onerror=alert(1)> renders as text";

/// A plain HTTP client of the web view: no redirects followed, cookies by hand.
struct Ui<'s> {
    serve: &'s Serve,
    http: reqwest::Client,
    cookie: Option<String>,
}

/// An answer: status, headers, body.
struct Got {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

impl<'s> Ui<'s> {
    fn new(serve: &'s Serve) -> Ui<'s> {
        let http = http_builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Ui { serve, http, cookie: None }
    }

    fn send(&self, request: reqwest::RequestBuilder) -> Got {
        let request = match &self.cookie {
            Some(c) => request.header("cookie", c),
            None => request,
        };
        self.serve.rt.block_on(async {
            let r = request.send().await.unwrap();
            let (status, headers) = (r.status().as_u16(), r.headers().clone());
            Got { status, headers, body: r.text().await.unwrap() }
        })
    }

    fn get(&self, path: &str) -> Got {
        self.send(self.http.get(format!("{}{path}", self.serve.url)))
    }

    /// A form POST with `fields`, and an `Origin` when given.
    fn post(&self, path: &str, fields: &[(&str, &str)], origin: Option<&str>) -> Got {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
        let mut request = self
            .http
            .post(format!("{}{path}", self.serve.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.join("&"));
        if let Some(o) = origin {
            request = request.header("origin", o);
        }
        self.send(request)
    }

    /// Signs in with the server's token and keeps the session cookie.
    fn sign_in(&mut self) -> Got {
        let token = self.serve.token.clone();
        let got = self.post("/ui/signin", &[("token", &token), ("next", "/ui/memories")], None);
        let set = got.header("set-cookie");
        self.cookie = Some(set.split(';').next().unwrap().to_owned());
        got
    }

    /// The CSRF token of the page at `path`.
    fn csrf(&self, path: &str) -> String {
        let page = self.get(path).body;
        let at = page.find("name=\"csrf\" value=\"").unwrap_or_else(|| panic!("no csrf field: {page}")) + 19;
        page[at..at + 64].to_owned()
    }
}

/// A root in git with a workspace document, a memory citing a file that then changed, a
/// memory holding markup, and one written by another agent.
fn root_with_memories() -> (TestRoot, String) {
    let root = repo();
    root.write(
        "resources/workspaces/demo/OVERVIEW.md",
        "---\nname: Demo\ndescription: The demo workspace.\n---\n\n# Demo\n\nThe **overview** with <b>raw html</b>.\n",
    );
    root.write("src/pool.rs", "pub fn evict() {\n    drop_oldest();\n}\n");
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-qm", "pool"]);
    let add = |args: &[&str]| {
        let mut all = vec!["--json", "memory", "add", "--namespace", "long-term"];
        all.extend_from_slice(args);
        let out = root.run(&all);
        assert_eq!(out.code, 0, "{out:?}");
        serde_json::from_str::<serde_json::Value>(&out.stdout).unwrap()["id"].as_str().unwrap().to_owned()
    };
    add(&["The pool evicts the oldest connection first.", "--cite", "src/pool.rs:1-3", "--tags", "pool"]);
    let hostile = add(&[HOSTILE, "--tags", "html"]);
    add(&["Deploys go out on Tuesdays.", "--agent", "deploy-bot", "--kind", "decision"]);
    // The cited code changes: the first memory is stale.
    root.write("src/pool.rs", "pub fn evict() {\n    drop_newest();\n}\n");
    (root, hostile)
}

#[test]
fn a_page_without_the_session_cookie_redirects_to_sign_in() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let ui = Ui::new(&serve);
    for (path, next) in [("/ui", "%2Fui"), ("/ui/memories?kind=note", "%2Fui%2Fmemories%3Fkind%3Dnote")] {
        let got = ui.get(path);
        assert_eq!(got.status, 303, "{path}");
        assert_eq!(got.header("location"), format!("/ui/signin?next={next}"));
    }
    // A made-up cookie is no session.
    let mut forged = Ui::new(&serve);
    forged.cookie = Some(format!("tmws_ui={}", serve.token));
    assert_eq!(forged.get("/ui/memories").status, 303);
    // The sign-in page and the assets need none.
    assert_eq!(ui.get("/ui/signin").status, 200);
    assert_eq!(ui.get("/ui/assets/style.css").status, 200);
    // The REST routes still want the bearer token, cookie or not.
    let mut signed = Ui::new(&serve);
    signed.sign_in();
    assert_eq!(signed.get("/memory/stats").status, 401);
}

#[test]
fn signing_in_sets_an_httponly_strict_cookie_that_is_not_the_token() {
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), None);
    let mut ui = Ui::new(&serve);
    let wrong = ui.post("/ui/signin", &[("token", "not-the-token")], None);
    assert_eq!((wrong.status, wrong.header("set-cookie")), (401, ""));
    assert!(wrong.body.contains("That is not this server's token."), "{}", wrong.body);
    let got = ui.sign_in();
    assert_eq!((got.status, got.header("location")), (303, "/ui/memories"));
    let cookie = got.header("set-cookie");
    let parts: Vec<&str> = cookie.split("; ").collect();
    assert_eq!(&parts[1..], ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"], "{cookie}");
    let value = parts[0].strip_prefix("tmws_ui=").unwrap();
    assert_eq!(value.len(), 64);
    assert!(!value.contains(&serve.token) && !serve.token.contains(value));
    let page = ui.get("/ui/memories");
    assert_eq!(page.status, 200);
    assert!(!page.body.contains(&serve.token), "a page never shows the token");
    // A sign-in that would send the browser to another site goes to the web view.
    let away = ui.post("/ui/signin", &[("token", &serve.token), ("next", "//evil.example/ui")], None);
    assert_eq!(away.header("location"), "/ui");
}

#[test]
fn a_change_without_the_csrf_token_or_from_another_site_is_refused_and_changes_nothing() {
    let (root, id) = root_with_memories();
    let serve = Serve::start(root.path(), None);
    let mut ui = Ui::new(&serve);
    ui.sign_in();
    let log = || root.read(".tmws/memory/long-term.jsonl");
    let before = log();
    let csrf = ui.csrf("/ui/memories");
    let own = serve.url.clone();
    for (fields, origin, status) in [
        (vec![("id", id.as_str())], Some(own.as_str()), 403),
        (vec![("id", id.as_str()), ("csrf", "0".repeat(64).as_str())], None, 403),
        (vec![("id", id.as_str()), ("csrf", csrf.as_str())], Some("http://evil.example"), 403),
    ] {
        let got = ui.post("/ui/memory/forget", &fields, origin);
        assert_eq!(got.status, status, "{fields:?} {origin:?}: {}", got.body);
        assert_eq!(log(), before);
    }
    let refused = ui.post("/ui/memory/forget", &[("id", &id)], None);
    assert!(refused.body.contains("does not carry the page's CSRF token"), "{}", refused.body);
    // With the page's token, from the page's origin: forgotten, as `memory delete` does.
    let got = ui.post("/ui/memory/forget", &[("id", &id), ("csrf", &csrf), ("back", "/ui/memories")], Some(&own));
    assert_eq!((got.status, got.header("location")), (303, "/ui/memories"));
    let last: serde_json::Value = serde_json::from_str(log().lines().last().unwrap()).unwrap();
    assert_eq!((last["op"].as_str(), last["id"].as_str()), (Some("delete"), Some(id.as_str())));
}

#[test]
fn a_memory_holding_markup_is_shown_as_text_on_every_page() {
    let (root, id) = root_with_memories();
    let serve = Serve::start(root.path(), None);
    let mut ui = Ui::new(&serve);
    ui.sign_in();
    let escaped = "&lt;script&gt;alert(&#39;memory&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";
    let page = ui.get(&format!("/ui/memory?id={id}"));
    assert!(page.body.contains(&format!("<pre class=\"content\">{escaped} renders as text</pre>")), "{}", page.body);
    // Its summary, in the list and in search results, is text too.
    for path in [format!("/ui/memory?id={id}"), "/ui/memories".to_owned(), "/ui/search?q=renders+text".to_owned()] {
        let page = eventually(&format!("{path} showing the memory"), || {
            let got = ui.get(&path);
            if got.body.contains("alert(&#39;memory&#39;) renders as text") { Ok(got) } else { Err(got.body) }
        });
        assert_eq!(page.status, 200, "{path}");
        assert!(!page.body.contains("<script>alert") && !page.body.contains("<img src=x"), "{path}");
    }
    // A document's raw HTML is text too, and its front-matter a table.
    let doc = ui.get("/ui/doc?ref=resources/workspaces/demo/OVERVIEW.md");
    assert!(doc.body.contains("<strong>overview</strong> with &lt;b&gt;raw html&lt;/b&gt;"), "{}", doc.body);
    assert!(doc.body.contains("<tr><th>name</th><td>Demo</td></tr>"), "{}", doc.body);
}

#[test]
fn pages_load_nothing_from_another_origin_and_say_so() {
    let (root, _) = root_with_memories();
    let serve = Serve::start(root.path(), None);
    let mut ui = Ui::new(&serve);
    ui.sign_in();
    for path in
        ["/ui", "/ui/workspaces", "/ui/search?q=pool", "/ui/memories", "/ui/review", "/ui/servers", "/ui/signin"]
    {
        let page = ui.get(path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let csp = page.header("content-security-policy");
        assert!(csp.starts_with("default-src 'none'; script-src 'self'; style-src 'self';"), "{path}: {csp}");
        assert_eq!(page.header("x-frame-options"), "DENY");
        for attr in ["src=\"http", "href=\"http", "src=\"//", "href=\"//", "url(http"] {
            assert!(!page.body.contains(attr), "{path} loads from another origin: {attr}");
        }
    }
    // The citation that changed is shown with its state, and the filter finds it.
    let stale = ui.get("/ui/memories?stale=1");
    assert!(stale.body.contains("src/pool.rs:1-3@"), "{}", stale.body);
    assert!(stale.body.contains("</code> changed</li>"), "{}", stale.body);
    assert!(!stale.body.contains("Tuesdays"), "{}", stale.body);
    let by = ui.get("/ui/memories?author=deploy-bot");
    assert!(by.body.contains("Deploys go out on Tuesdays.") && !by.body.contains("evicts"), "{}", by.body);
}

/// Where the screenshots go: the tests' output folder, and `TMWS_UI_SHOTS` too when set.
fn shots() -> (PathBuf, Option<PathBuf>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-shots");
    (dir, std::env::var_os("TMWS_UI_SHOTS").map(PathBuf::from))
}

fn shoot(browser: &Browser, name: &str) {
    let (dir, also) = shots();
    let path = dir.join(format!("{name}.png"));
    browser.screenshot(&path);
    if let Some(also) = also {
        std::fs::create_dir_all(&also).unwrap();
        std::fs::copy(&path, also.join(format!("{name}.png"))).unwrap();
    }
}

#[test]
fn a_person_uses_the_web_view_in_a_real_browser() {
    let Some((chromium, driver)) = browser::programs() else {
        return missing("chromium and chromedriver (apt-get install chromium chromium-driver)");
    };
    let (root, hostile) = root_with_memories();
    // What agents write waits for a person.
    let config = root.read(".tmws/config.toml");
    root.write(".tmws/config.toml", format!("{config}\n[review]\nagents = \"propose\"\n"));
    let serve = Serve::start(root.path(), None);
    let propose = |text: &str| {
        let body = serde_json::json!({"content": text, "namespace": "long-term"}).to_string();
        let added = serve.post("/memory?format=json", &body).json();
        assert_eq!(added["proposed"], true, "{added}");
        added["id"].as_str().unwrap().to_owned()
    };
    let keep = propose("The staging deploy needs the VPN turned off first.");
    let drop = propose("Tabs are better than spaces in every file.");
    let recalled = || serve.get("/recall?task=staging+deploy+VPN&format=json").body;
    assert!(!recalled().contains(&keep), "a proposal is not recalled");
    let b = Browser::start(&chromium, &driver);
    let url = |p: &str| format!("{}{p}", serve.url);

    // No session: the sign-in page, which comes back to the page asked for.
    b.go(&url("/ui/memories"));
    b.find("#signin");
    assert!(b.url().starts_with(&url("/ui/signin?next=")), "{}", b.url());
    shoot(&b, "01-sign-in");
    b.type_into("#token", &serve.token);
    b.click("#signin-button");
    eventually("the memories page after signing in", || {
        if b.count("#filters") == 1 { Ok(()) } else { Err((b.url(), b.source())) }
    });
    assert_eq!(b.url(), url("/ui/memories"));
    let cookies = b.cookies();
    let cookie = &cookies[0];
    assert_eq!((cookie["httpOnly"].as_bool(), cookie["sameSite"].as_str()), (Some(true), Some("Strict")), "{cookies}");
    assert_eq!(b.run("return document.cookie;", serde_json::json!([])), "", "script cannot read the session");

    // The overview with its charts.
    b.go(&url("/ui"));
    b.find("figure.chart svg path");
    shoot(&b, "02-overview");

    // Search, then a document.
    b.go(&url("/ui/search"));
    b.type_into("#f-q", "demo overview");
    b.click("#search-button");
    b.find("ol.results li a");
    assert!(b.text_of("ol.results li .meta").contains("why: matched"), "{}", b.source());
    shoot(&b, "03-search");
    b.click("ol.results li a");
    b.find("article.markdown");
    assert_eq!(b.text_of("table.front-matter tr td"), "Demo");
    assert!(b.text_of("article.markdown").contains("with <b>raw html</b>."));
    assert_eq!(b.count("article.markdown b"), 0, "raw HTML is not markup");
    shoot(&b, "04-document");
    b.go(&url("/ui/workspaces?scope=demo"));
    b.find("table.docs tbody tr");
    shoot(&b, "05-workspaces");

    // Memories, filtered; the one holding markup is text.
    b.go(&url("/ui/memories"));
    b.type_into("#f-author", "deploy-bot");
    b.click("#filter-button");
    b.find("li.memory");
    eventually("one memory by deploy-bot", || if b.count("li.memory") == 1 { Ok(()) } else { Err(b.source()) });
    assert!(b.text_of("li.memory .author").contains("deploy-bot"));
    shoot(&b, "06-memories-filtered");
    b.go(&url("/ui/memories?stale=1"));
    b.find("ul.cites li.stale");
    assert!(b.text_of("ul.cites li.stale").ends_with("changed"));
    shoot(&b, "07-memories-stale");
    b.go(&url(&format!("/ui/memory?id={hostile}")));
    b.find("pre.content");
    assert!(b.text_of("pre.content").starts_with("<script>alert('memory')</script>"));
    assert_eq!(b.count("main script, main img"), 0, "the memory's markup made no element");
    shoot(&b, "08-memory-escaped");

    // Forget it: the form's POST, then the log's delete op.
    b.click("form.inline button[name=forget]");
    b.find("#filters");
    let log = root.read(".tmws/memory/long-term.jsonl");
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!((last["op"].as_str(), last["id"].as_str()), (Some("delete"), Some(hostile.as_str())));

    // A POST made without the page's CSRF token (as a forged form would be) is refused.
    b.run(
        "var f = document.createElement('form'); f.method = 'post'; f.action = '/ui/memory/forget';
         var i = document.createElement('input'); i.name = 'id'; i.value = arguments[0]; f.appendChild(i);
         document.body.appendChild(f); f.submit();",
        serde_json::json!([hostile]),
    );
    b.find("p.error");
    assert!(b.text_of("p.error").starts_with("Refused: this form does not carry the page's CSRF token."));
    shoot(&b, "09-csrf-refused");

    // The review queue: approve one (a review op in the log, then recall finds it), reject
    // the other (a review op and a delete).
    b.go(&url("/ui/review"));
    b.find(&format!("li.proposal[data-id='{keep}']"));
    assert_eq!(b.count("li.proposal"), 2);
    shoot(&b, "11-review");
    b.click(&format!("li.proposal[data-id='{keep}'] button[name=approve]"));
    eventually("the approved proposal gone from the queue", || {
        if b.count(&format!("li.proposal[data-id='{keep}']")) == 0 && b.count("main h1") == 1 {
            Ok(())
        } else {
            Err(b.source())
        }
    });
    let ops = |id: &str| -> Vec<serde_json::Value> {
        let log = root.read(".tmws/memory/long-term.jsonl");
        log.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).filter(|o| o["id"] == id).collect()
    };
    let approved = ops(&keep);
    assert_eq!((approved[1]["op"].as_str(), approved[1]["decision"].as_str()), (Some("review"), Some("approve")));
    eventually(
        "recall finding the approved memory",
        || if recalled().contains(&keep) { Ok(()) } else { Err(recalled()) },
    );
    b.click(&format!("li.proposal[data-id='{drop}'] button[name=reject]"));
    b.find("p.hint");
    let rejected = ops(&drop);
    let kinds: Vec<&str> = rejected.iter().filter_map(|o| o["op"].as_str()).collect();
    assert_eq!(kinds, ["add", "review", "delete"], "{rejected:?}");
    assert_eq!(rejected[1]["decision"], "reject");
    shoot(&b, "12-review-done");

    // The registry and the pool.
    b.go(&url("/ui/servers"));
    b.find("main table");
    shoot(&b, "10-servers");

    // Without the cookie: back to the sign-in page.
    b.delete_cookies();
    b.go(&url("/ui/memories"));
    b.find("#signin");
    assert!(b.url().starts_with(&url("/ui/signin")));
}

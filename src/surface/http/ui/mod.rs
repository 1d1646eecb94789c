//! The web view at `/ui` (docs/web-view.md): server-rendered pages for people, on the port
//! of `tmws serve`, with every asset inside the binary.
//!
//! The guard checks `Host` and `Origin` here as on every route, but not the bearer token:
//! a browser signs in once with the server's token (`session.rs`) and carries a session
//! cookie after. A page asked without a live session redirects to the sign-in page; every
//! change is a POST carrying the session's CSRF token, and each is the library call the
//! CLI makes, so the memory log shows the same op. Every page says, through its
//! `Content-Security-Policy`, that it loads nothing from another origin and runs no inline
//! script; all text on it went through one escaping function (`html.rs`).

mod html;
mod pages;
mod pulse;
mod session;

use std::collections::HashMap;
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use self::html::Html;
use self::session::{Sessions, Signed};
use super::AppState;
use crate::error::{Error, Result};
use crate::query::view::MemoryFilter;
use crate::query::{Engine, review};

/// The web view's state in the server: who is signed in, and the last hour's samples.
#[derive(Debug)]
pub(super) struct Ui {
    sessions: Sessions,
    pulse: pulse::Pulse,
}

impl Ui {
    /// The web view of a server whose token is `token`.
    pub(super) fn new(token: &str) -> Ui {
        Ui { sessions: Sessions::new(token), pulse: pulse::Pulse::default() }
    }

    /// Notes a request of any route for the charts.
    pub(super) fn record(&self, took: Duration, lag_ms: u64) {
        self.pulse.record(took, lag_ms);
    }
}

/// Whether `path` is the web view's: the guard lets it through without a bearer token.
pub(super) fn is_ui(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// The stylesheet and the script, inside the binary.
const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");

/// What every page of the web view says about itself: nothing from another origin, no
/// inline script or style, no framing, no referrer to other sites, no caching of pages that
/// show memories.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The web view's routes.
pub(super) fn routes(router: Router<AppState>) -> Router<AppState> {
    router
        .route("/ui", get(home))
        .route("/ui/", get(home))
        .route("/ui/signin", get(signin_page).post(signin))
        .route("/ui/signout", post(signout))
        .route("/ui/assets/style.css", get(|| async { asset(STYLE, "text/css; charset=utf-8") }))
        .route("/ui/assets/app.js", get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }))
        .route("/ui/workspaces", get(workspaces))
        .route("/ui/doc", get(doc))
        .route("/ui/search", get(search))
        .route("/ui/memories", get(memories))
        .route("/ui/memory", get(memory))
        .route("/ui/memory/forget", post(forget))
        .route("/ui/review", get(review))
        .route("/ui/review/approve", post(approve))
        .route("/ui/review/reject", post(reject))
        .route("/ui/servers", get(servers))
}

fn secured(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Not `no-referrer`: under it a browser sends `Origin: null` with a form's POST, which
    // the Origin check refuses.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    secured(([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "max-age=3600")], body).into_response())
}

/// A page: its HTML in the common frame, with the headers every page has.
fn page(status: StatusCode, title: &str, nav: pages::Nav, signed: Option<&Signed>, body: Html) -> Response {
    let html = pages::frame(title, nav, signed, body);
    secured(
        (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], html)
            .into_response(),
    )
}

fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    secured(r)
}

/// The request's session, or the redirect to the sign-in page that comes back here.
fn signed_in(app: &AppState, headers: &HeaderMap, uri: &Uri) -> std::result::Result<Signed, Box<Response>> {
    app.ui.sessions.of(headers).ok_or_else(|| {
        let back = uri.path_and_query().map_or("/ui", |p| p.as_str());
        let mut h = Html::default();
        h.href("/ui/signin", &[("next", back)]);
        // The link was escaped for an attribute; a Location header takes it unescaped.
        Box::new(redirect(&h.into_string().replace("&amp;", "&")))
    })
}

/// A page's signed-in session, or the redirect to the sign-in page that returns to it.
impl axum::extract::FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &AppState,
    ) -> std::result::Result<Signed, Response> {
        signed_in(app, &parts.headers, &parts.uri).map_err(|r| *r)
    }
}

/// Where to go after signing in: a path of the web view, never another site.
fn local_next(next: Option<&String>) -> &str {
    match next {
        Some(n) if is_ui(n.split(['?', '#']).next().unwrap_or("")) && !n.contains("//") && !n.contains('\\') => n,
        _ => "/ui",
    }
}

/// Runs `f` with the engine on a blocking thread.
async fn blocking<T: Send + 'static>(
    engine: &Engine,
    f: impl FnOnce(&Engine) -> Result<T> + Send + 'static,
) -> Result<T> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || f(&engine))
        .await
        .map_err(|e| Error::environment("the page did not finish", e))?
}

/// The page of an error: its one line (paths relative to the root) and its status.
fn error_page(app: &AppState, signed: Option<&Signed>, e: &Error) -> Response {
    let status = StatusCode::from_u16(e.category().http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let answer = app.engine.error_answer(e);
    let mut h = Html::default();
    h.el("<p class=\"error\">", &answer.error, "</p>");
    if let Some(hint) = &answer.hint {
        h.el("<p class=\"hint\">", hint, "</p>");
    }
    page(status, "Error", pages::Nav::None, signed, h)
}

type Params = Query<HashMap<String, String>>;

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> &'a str {
    q.get(name).map_or("", |v| v.trim())
}

async fn signin_page(Query(q): Params) -> Response {
    let body = pages::signin(local_next(q.get("next")), None);
    page(StatusCode::OK, "Sign in", pages::Nav::None, None, body)
}

async fn signin(State(app): State<AppState>, Form(form): Form<HashMap<String, String>>) -> Response {
    let next = local_next(form.get("next"));
    match form.get("token").and_then(|t| app.ui.sessions.sign_in(t)) {
        Some(id) => {
            let mut r = redirect(next);
            if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&id)) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        None => {
            let body = pages::signin(next, Some("That is not this server's token."));
            page(StatusCode::UNAUTHORIZED, "Sign in", pages::Nav::None, None, body)
        }
    }
}

/// A change's form: the session's CSRF token must be in it, or nothing is done.
fn checked(
    app: &AppState,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> std::result::Result<Signed, Box<Response>> {
    let Some(signed) = app.ui.sessions.of(headers) else {
        return Err(Box::new(redirect("/ui/signin")));
    };
    if form.get("csrf").is_some_and(|c| signed.csrf_matches(c)) {
        Ok(signed)
    } else {
        let mut h = Html::default();
        h.raw("<p class=\"error\">Refused: this form does not carry the page's CSRF token. Nothing was changed.</p>");
        Err(Box::new(page(StatusCode::FORBIDDEN, "Refused", pages::Nav::None, Some(&signed), h)))
    }
}

async fn signout(
    State(app): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    if let Err(refused) = checked(&app, &headers, &form) {
        return *refused;
    }
    app.ui.sessions.sign_out(&headers);
    let mut r = redirect("/ui/signin");
    if let Ok(v) = HeaderValue::from_str(&session::clear_cookie()) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn home(State(app): State<AppState>, signed: Signed) -> Response {
    match blocking(&app.engine, |e| e.memory_counts()).await {
        Ok(counts) => {
            let body = pages::home(&app.engine.health(), &counts, &app.ui.pulse.hour());
            page(StatusCode::OK, "Overview", pages::Nav::Home, Some(&signed), body)
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

async fn workspaces(State(app): State<AppState>, signed: Signed, Query(q): Params) -> Response {
    let scope = param(&q, "scope").to_owned();
    let offset: usize = param(&q, "from").parse().unwrap_or(0);
    let shown = scope.clone();
    // Every document of a large root is no list for a page: a scope is chosen first.
    let found = blocking(&app.engine, move |e| {
        let docs = if shown.is_empty() { Default::default() } else { e.documents(&shown, offset, pages::PAGE)? };
        Ok((e.scopes()?, docs))
    })
    .await;
    match found {
        Ok((scopes, docs)) => {
            let body = pages::workspaces(&scopes, &scope, offset, &docs);
            page(StatusCode::OK, "Workspaces", pages::Nav::Workspaces, Some(&signed), body)
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

async fn doc(State(app): State<AppState>, signed: Signed, Query(q): Params) -> Response {
    let req = crate::query::api::WorkspaceReadRequest { ref_id: param(&q, "ref").to_owned(), ..Default::default() };
    match blocking(&app.engine, move |e| e.ask(&crate::query::catalog::WorkspaceRead, &req)).await {
        Ok(read) => {
            let title = read.answer.name.clone().unwrap_or_else(|| read.answer.ref_id.clone());
            page(StatusCode::OK, &title, pages::Nav::Workspaces, Some(&signed), pages::document(&read.answer))
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

async fn search(State(app): State<AppState>, signed: Signed, Query(q): Params) -> Response {
    let (words, scope) = (param(&q, "q").to_owned(), param(&q, "scope").to_owned());
    if words.is_empty() {
        let body = pages::search(&words, &scope, None);
        return page(StatusCode::OK, "Search", pages::Nav::Search, Some(&signed), body);
    }
    let mut args = serde_json::Map::new();
    args.insert("query".into(), words.clone().into());
    if !scope.is_empty() {
        args.insert("scope".into(), scope.clone().into());
    }
    let asked = blocking(&app.engine, move |e| {
        use crate::query::api::Params as _;
        let req = crate::query::api::SearchRequest::from_args(args)?;
        e.ask(&crate::query::catalog::Search, &req)
    })
    .await;
    match asked {
        Ok(found) => {
            let body = pages::search(&words, &scope, Some(&found.answer));
            page(StatusCode::OK, "Search", pages::Nav::Search, Some(&signed), body)
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

/// The memory list's filters, as the page's form names them.
#[derive(Debug, Clone, Default)]
pub(super) struct Filters {
    pub namespace: String,
    pub kind: String,
    pub author: String,
    pub tag: String,
    pub branch: String,
    pub stale: bool,
    pub proposed: bool,
}

impl Filters {
    fn of(q: &HashMap<String, String>) -> Filters {
        let on = |name| matches!(param(q, name), "1" | "on" | "true" | "yes");
        Filters {
            namespace: param(q, "namespace").to_owned(),
            kind: param(q, "kind").to_owned(),
            author: param(q, "author").to_owned(),
            tag: param(q, "tag").to_owned(),
            branch: param(q, "branch").to_owned(),
            stale: on("stale"),
            proposed: on("proposed"),
        }
    }
}

async fn memories(State(app): State<AppState>, signed: Signed, Query(q): Params) -> Response {
    let f = Filters::of(&q);
    // Proposals are in no answer until approved: the review queue lists them.
    if f.proposed {
        return match blocking(&app.engine, review::list).await {
            Ok(p) => {
                let body = pages::proposed_memories(&f, &p, &signed.csrf);
                page(StatusCode::OK, "Memories", pages::Nav::Memories, Some(&signed), body)
            }
            Err(e) => error_page(&app, Some(&signed), &e),
        };
    }
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let filter = MemoryFilter {
        namespace: some(&f.namespace),
        kind: some(&f.kind),
        author: some(&f.author),
        tag: some(&f.tag),
        branch: some(&f.branch),
        stale: f.stale,
    };
    match blocking(&app.engine, move |e| e.memory_cards(&filter, pages::PAGE)).await {
        Ok((total, cards)) => {
            let body = pages::memories(&f, total, &cards, &signed.csrf);
            page(StatusCode::OK, "Memories", pages::Nav::Memories, Some(&signed), body)
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

async fn memory(State(app): State<AppState>, signed: Signed, Query(q): Params) -> Response {
    let id = param(&q, "id").to_owned();
    let shown = id.clone();
    match blocking(&app.engine, move |e| e.memory_card(&shown)).await {
        Ok(Some(card)) => page(
            StatusCode::OK,
            &card.hit.summary.clone(),
            pages::Nav::Memories,
            Some(&signed),
            pages::memory(&card, &signed.csrf),
        ),
        Ok(None) => error_page(
            &app,
            Some(&signed),
            &Error::NotFound(format!("no memory `{}`", crate::query::api::preview(&id))),
        ),
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

/// Where a change's form asks to go back to: a page of the web view.
fn back(form: &HashMap<String, String>) -> String {
    local_next(form.get("back")).to_owned()
}

/// A change asked for by a page's form: checked (the session, the CSRF token) before
/// `change` runs on the engine; then the browser goes to `to`, or sees the error.
async fn change<T: Send + 'static>(
    app: &AppState,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
    to: &str,
    change: impl FnOnce(&Engine) -> Result<T> + Send + 'static,
) -> Response {
    let signed = match checked(app, headers, form) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match blocking(&app.engine, change).await {
        Ok(_) => redirect(to),
        Err(e) => error_page(app, Some(&signed), &e),
    }
}

async fn forget(
    State(app): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let req = crate::query::api::MemoryDeleteRequest { id: param(&form, "id").to_owned(), ..Default::default() };
    let to = back(&form);
    change(&app, &headers, &form, &to, move |e| e.ask(&crate::query::catalog::MemoryDelete, &req)).await
}

async fn review(State(app): State<AppState>, signed: Signed) -> Response {
    match blocking(&app.engine, review::list).await {
        Ok(proposals) => {
            let body = pages::review(&proposals, &signed.csrf);
            page(StatusCode::OK, "Review", pages::Nav::Review, Some(&signed), body)
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

/// Who settles proposals from a page: the person signed in, as the HTTP surface knows them.
fn reviewer() -> review::Reviewer {
    review::Reviewer::person("http")
}

async fn approve(
    State(app): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let ids = vec![param(&form, "id").to_owned()];
    let supersede = review::Supersede { ids: Vec::new(), similar: param(&form, "supersede_similar") == "1" };
    change(&app, &headers, &form, "/ui/review", move |e| review::approve(e, &ids, &supersede, &reviewer())).await
}

async fn reject(
    State(app): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let ids = vec![param(&form, "id").to_owned()];
    change(&app, &headers, &form, "/ui/review", move |e| review::reject(e, &ids, &reviewer())).await
}

async fn servers(State(app): State<AppState>, signed: Signed) -> Response {
    match blocking(&app.engine, |e| Ok((e.registry_list()?, e.pool_live()))).await {
        Ok((listed, live)) => {
            page(StatusCode::OK, "Servers", pages::Nav::Servers, Some(&signed), pages::servers(&listed, &live))
        }
        Err(e) => error_page(&app, Some(&signed), &e),
    }
}

//! The web view's pages, each a function from what the engine answered to HTML.
//!
//! Every value shown goes through [`Html::text`] (or a link or field built on it); the
//! markup is this file's own text. Lists are cut to [`PAGE`] rows with a link to the next
//! rows, so that a page of a root with 100k memories weighs what a page of ten does.

use std::collections::BTreeMap;

use serde_json::Value;

use super::html::Html;
use super::pulse::Hour;
use super::session::Signed;
use crate::query::Health;
use crate::query::read::ReadAnswer;
use crate::query::registry::Listed;
use crate::query::review::{Proposal, Proposals};
use crate::query::view::{DocumentPage, MemoryCard, STALE_SCAN};
use crate::query::{SearchAnswer, context::ScopeSummary};

/// Rows of a list on one page.
pub(super) const PAGE: usize = 50;

/// The section of the navigation a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nav {
    None,
    Home,
    Workspaces,
    Search,
    Memories,
    Review,
    Servers,
}

const SECTIONS: [(Nav, &str, &str); 6] = [
    (Nav::Home, "/ui", "Overview"),
    (Nav::Workspaces, "/ui/workspaces", "Workspaces"),
    (Nav::Search, "/ui/search", "Search"),
    (Nav::Memories, "/ui/memories", "Memories"),
    (Nav::Review, "/ui/review", "Review"),
    (Nav::Servers, "/ui/servers", "Servers"),
];

/// A page's whole HTML: head, navigation (with the sign-out form when signed in), body.
pub(super) fn frame(title: &str, nav: Nav, signed: Option<&Signed>, body: Html) -> String {
    let mut h = Html::default();
    h.raw("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.el("<title>", &format!("{title} · tmws"), "</title>");
    h.raw("<link rel=\"stylesheet\" href=\"/ui/assets/style.css\"><script src=\"/ui/assets/app.js\" defer></script>");
    h.raw("</head><body><header><span class=\"brand\">tmws</span>");
    if let Some(signed) = signed {
        h.raw("<nav>");
        for (section, path, name) in SECTIONS {
            h.raw(if section == nav { "<a class=\"here\" href=\"" } else { "<a href=\"" });
            h.href(path, &[]).raw("\">").text(name).raw("</a>");
        }
        h.raw("</nav><form class=\"signout\" method=\"post\" action=\"/ui/signout\">").hidden("csrf", &signed.csrf);
        h.raw("<button>Sign out</button></form>");
    }
    h.raw("</header><main>");
    h.el("<h1>", title, "</h1>");
    let mut out = h.into_string();
    out.push_str(&body.into_string());
    out.push_str("</main></body></html>\n");
    out
}

pub(super) fn signin(next: &str, error: Option<&'static str>) -> Html {
    let mut h = Html::default();
    if let Some(e) = error {
        h.raw("<p class=\"error\">").raw(e).raw("</p>");
    }
    h.raw("<p>Give the server's token once (<code>TMWS_TOKEN</code>, or the content of ");
    h.raw("<code>.tmws/cache/token</code>). The browser keeps a session cookie, not the token.</p>");
    h.raw("<form method=\"post\" action=\"/ui/signin\" id=\"signin\">").hidden("next", next);
    h.raw("<label>Token <input type=\"password\" name=\"token\" id=\"token\" autocomplete=\"off\" autofocus></label> ");
    h.raw("<button id=\"signin-button\">Sign in</button></form>");
    h
}

pub(super) fn home(health: &Health, counts: &BTreeMap<String, u64>, hour: &Hour) -> Html {
    let mut h = Html::default();
    h.raw("<section class=\"cards\"><div class=\"card\"><b>Index</b> ");
    h.text(if health.ready { "ready" } else { "building" }).raw(", ").num(health.lag_ms).raw(" ms behind</div>");
    h.raw("<div class=\"card\"><b>Memories</b> ").num(counts.values().sum::<u64>());
    for (ns, n) in counts {
        h.raw(" · ").link("/ui/memories", &[("namespace", ns)], ns).raw(" ").num(n);
    }
    h.raw("</div></section><h2>The last hour</h2><section class=\"charts\">");
    h.chart("Requests per minute", "", &hour.requests);
    h.chart("Mean latency", "ms", &hour.latency_ms);
    h.chart("Index lag", "ms", &hour.lag_ms);
    h.raw("</section>");
    h
}

pub(super) fn workspaces(scopes: &[ScopeSummary], scope: &str, offset: usize, docs: &DocumentPage) -> Html {
    let mut h = Html::default();
    h.raw("<div class=\"split\"><aside><h2>Scopes</h2><ul class=\"scopes\">");
    // The workspaces, and the domains and repositories of the one chosen: a root of
    // thousands of repositories still makes a short list.
    let chosen = scope.split('/').next().unwrap_or("");
    let shown = |s: &&ScopeSummary| {
        !s.scope.contains('/')
            || (!chosen.is_empty() && s.scope.strip_prefix(chosen).is_some_and(|r| r.starts_with('/')))
    };
    for s in scopes.iter().filter(shown) {
        h.raw(if s.scope == scope { "<li class=\"here\">" } else { "<li>" });
        h.link("/ui/workspaces", &[("scope", &s.scope)], &s.scope);
        if !s.name.is_empty() {
            h.el(" <small>", &s.name, "</small>");
        }
        h.raw("</li>");
    }
    h.raw("</ul></aside><section>");
    if scope.is_empty() {
        h.raw("<p class=\"hint\">Choose a workspace, domain or repository to list its documents.</p></section></div>");
        return h;
    }
    h.el("<h2>", scope, "");
    h.raw("</h2><p class=\"count\">").num(docs.total).raw(" documents</p>");
    h.raw("<table class=\"docs\"><thead><tr><th>Name</th><th>Kind</th><th>Topic</th><th>Status</th><th>Description</th></tr></thead><tbody>");
    for d in &docs.rows {
        h.raw("<tr><td>").link("/ui/doc", &[("ref", &d.ref_id)], if d.name.is_empty() { &d.ref_id } else { &d.name });
        h.el("</td><td>", &d.kind, "</td><td>");
        h.text(d.topic.as_deref().unwrap_or("")).el("</td><td>", d.status.as_deref().unwrap_or(""), "</td><td>");
        h.text(&d.description).raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    if offset + docs.rows.len() < docs.total {
        let next = (offset + docs.rows.len()).to_string();
        h.raw("<p>").link("/ui/workspaces", &[("scope", scope), ("from", &next)], "Next documents").raw("</p>");
    }
    h.raw("</section></div>");
    h
}

/// A front-matter value as one line of text.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(value_text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

pub(super) fn document(read: &ReadAnswer) -> Html {
    let mut h = Html::default();
    h.raw("<p class=\"meta\">").text(&read.kind);
    if let Some(scope) = &read.scope {
        h.raw(" in ").link("/ui/workspaces", &[("scope", scope)], scope);
    }
    h.raw(" · <code>").text(&read.ref_id).raw("</code></p>");
    if let Some(Value::Object(fields)) = &read.front_matter {
        h.raw("<table class=\"front-matter\"><tbody>");
        for (k, v) in fields {
            h.el("<tr><th>", k, "</th>").el("<td>", &value_text(v), "</td></tr>");
        }
        h.raw("</tbody></table>");
    }
    h.raw("<article class=\"markdown\">").markdown(&read.body).raw("</article>");
    h
}

pub(super) fn search(words: &str, scope: &str, found: Option<&SearchAnswer>) -> Html {
    let mut h = Html::default();
    h.raw("<form method=\"get\" action=\"/ui/search\" class=\"filters\">");
    h.input("q", "Words", words)
        .input("scope", "Scope", scope)
        .raw("<button id=\"search-button\">Search</button></form>");
    let Some(found) = found else { return h };
    for (asked, meant) in &found.corrected {
        h.raw("<p class=\"hint\">Searched ").text(meant).raw(" for ").text(asked).raw("</p>");
    }
    h.raw("<p class=\"count\">").num(found.results.len()).raw(" results</p><ol class=\"results\">");
    for r in &found.results {
        h.raw("<li><div class=\"title\">");
        let title = if r.name.is_empty() { &r.summary } else { &r.name };
        if r.kind == "memory" {
            h.link("/ui/memory", &[("id", &r.ref_id)], title);
        } else {
            h.link("/ui/doc", &[("ref", &r.ref_id)], title);
        }
        h.raw(" <span class=\"score\">").num(r.score).raw("</span></div><div class=\"meta\">").text(&r.kind);
        if let Some(scope) = r.scope.as_deref().or(r.namespace.as_deref()) {
            h.raw(" · ").text(scope);
        }
        h.raw(" · why: ");
        match &r.why {
            Some(why) => h.text(why),
            None => h.raw("matched ").text(&r.matched.join(", ")),
        };
        if let Some(author) = &r.author {
            h.raw(" · by ").text(author);
        }
        h.raw("</div>");
        if !r.name.is_empty() && r.summary != r.name {
            h.el("<p>", &r.summary, "</p>");
        }
        h.raw("</li>");
    }
    h.raw("</ol>");
    h
}

/// A memory's provenance, importance and citations, as a list and its own page show them.
fn card_meta(h: &mut Html, card: &MemoryCard) {
    let m = &card.hit;
    h.raw("<div class=\"meta\">");
    h.text(m.namespace.as_deref().unwrap_or("")).raw(" · ").text(m.kind.as_deref().unwrap_or("note"));
    if let Some(p) = &m.from {
        h.raw(" · by <b class=\"author\">").text(&p.author).raw("</b> (trust ").num(format!("{:.2}", p.trust));
        h.raw(", via ").text(&p.source).raw(")");
    }
    if let Some(i) = m.importance {
        h.raw(" · importance ").num(format!("{i:.2}"));
    }
    if let Some(at) = &m.created_at {
        h.raw(" · ").text(at);
    }
    if let Some(b) = &m.branch {
        h.raw(" · branch ").text(b);
    }
    if !m.tags.is_empty() {
        h.raw(" · tags ").text(&m.tags.join(", "));
    }
    if card.stale() {
        h.raw(" · <span class=\"badge stale\">stale</span>");
    }
    h.raw("</div>");
    if !card.cites.is_empty() {
        h.raw("<ul class=\"cites\">");
        for c in &card.cites {
            h.raw(if c.stale { "<li class=\"stale\"><code>" } else { "<li><code>" });
            h.text(&c.cite).raw("</code> ").text(&c.state).raw("</li>");
        }
        h.raw("</ul>");
    }
}

/// The form that forgets a memory (a delete op, as `tmws memory delete`).
fn forget_form(h: &mut Html, id: &str, csrf: &str, back: &str) {
    h.raw("<form method=\"post\" action=\"/ui/memory/forget\" class=\"inline\">").hidden("csrf", csrf);
    h.hidden("id", id).hidden("back", back).raw("<button class=\"danger\" name=\"forget\">Forget</button></form>");
}

fn filter_form(h: &mut Html, f: &super::Filters) {
    h.raw("<form method=\"get\" action=\"/ui/memories\" class=\"filters\" id=\"filters\">");
    h.input("namespace", "Namespace", &f.namespace).input("kind", "Kind", &f.kind);
    h.input("author", "Author", &f.author).input("tag", "Tag", &f.tag).input("branch", "Branch", &f.branch);
    h.raw(if f.stale {
        "<label><input type=\"checkbox\" name=\"stale\" value=\"1\" checked> stale</label> "
    } else {
        "<label><input type=\"checkbox\" name=\"stale\" value=\"1\"> stale</label> "
    });
    h.raw(if f.proposed {
        "<label><input type=\"checkbox\" name=\"proposed\" value=\"1\" checked> proposed</label> "
    } else {
        "<label><input type=\"checkbox\" name=\"proposed\" value=\"1\"> proposed</label> "
    });
    h.raw("<button id=\"filter-button\">Filter</button></form>");
}

pub(super) fn memories(f: &super::Filters, total: usize, cards: &[MemoryCard], csrf: &str) -> Html {
    let mut h = Html::default();
    filter_form(&mut h, f);
    h.raw("<p class=\"count\">");
    if f.stale {
        h.num(cards.len()).raw(" stale, of the newest ").num(total.min(STALE_SCAN)).raw(" the other filters leave");
    } else {
        h.num(cards.len()).raw(" shown of ").num(total);
    }
    h.raw("</p><ul class=\"memories\">");
    for card in cards {
        h.raw("<li class=\"memory\"><div class=\"title\">").link(
            "/ui/memory",
            &[("id", &card.hit.id)],
            &card.hit.summary,
        );
        h.raw(" <code>").text(&card.hit.id).raw("</code> ");
        forget_form(&mut h, &card.hit.id, csrf, "/ui/memories");
        h.raw("</div>");
        card_meta(&mut h, card);
        h.raw("</li>");
    }
    h.raw("</ul>");
    h
}

pub(super) fn memory(card: &MemoryCard, csrf: &str) -> Html {
    let mut h = Html::default();
    h.raw("<p><code>").text(&card.hit.id).raw("</code> ");
    forget_form(&mut h, &card.hit.id, csrf, "/ui/memories");
    h.raw("</p>");
    card_meta(&mut h, card);
    if let Some(key) = &card.hit.key {
        h.raw("<p class=\"meta\">key ").text(key).raw("</p>");
    }
    if let Some(at) = &card.hit.expires_at {
        h.raw("<p class=\"meta\">expires ").text(at).raw("</p>");
    }
    h.raw("<p class=\"hint\">Stored text is data written by its author, not instructions.</p>");
    h.raw("<pre class=\"content\">").text(card.hit.content.as_deref().unwrap_or("")).raw("</pre>");
    h
}

/// Who wrote a proposal and through what.
fn proposal_meta(h: &mut Html, p: &Proposal) {
    h.raw("<div class=\"meta\"><span class=\"badge proposed\">proposed</span> ").text(&p.what);
    if let Some(ns) = &p.namespace {
        h.raw(" · ").text(ns);
    }
    h.raw(" · by <b class=\"author\">").text(p.agent.as_deref().unwrap_or("unknown")).raw("</b>");
    if let Some(a) = &p.author {
        h.raw(" (via ").text(&a.surface);
        if let Some(client) = &a.client {
            h.raw(", ").text(client);
        }
        h.raw(")");
    }
    h.raw(" · ").text(&p.at);
    if let Some(key) = &p.key {
        h.raw(" · key ").text(key);
    }
    h.raw("</div>");
}

/// One proposal with the forms that settle it.
fn proposal(h: &mut Html, p: &Proposal, csrf: &str) {
    h.raw("<li class=\"proposal\" data-id=\"")
        .text(&p.id)
        .raw("\"><div class=\"title\">")
        .text(&p.summary)
        .raw(" <code>")
        .text(&p.id)
        .raw("</code></div>");
    proposal_meta(h, p);
    if let Some(content) = &p.content {
        h.raw("<pre class=\"content\">").text(content).raw("</pre>");
    }
    if let Some(old) = &p.supersedes {
        h.raw("<p class=\"meta\">Approving it supersedes ")
            .link("/ui/memory", &[("id", old)], old)
            .raw(" (same key).</p>");
    }
    if !p.similar_to.is_empty() {
        h.raw("<p class=\"meta\">Close in meaning to live memories:</p><ul class=\"similar\">");
        for s in &p.similar_to {
            h.raw("<li>").link("/ui/memory", &[("id", &s.id)], &s.summary).raw(" ");
            forget_form(h, &s.id, csrf, "/ui/review");
            h.raw("</li>");
        }
        h.raw("</ul>");
    }
    h.raw("<form method=\"post\" action=\"/ui/review/approve\" class=\"inline\">")
        .hidden("csrf", csrf)
        .hidden("id", &p.id);
    if !p.similar_to.is_empty() {
        h.raw("<label><input type=\"checkbox\" name=\"supersede_similar\" value=\"1\"> and supersede them</label> ");
    }
    h.raw("<button class=\"good\" name=\"approve\">Approve</button></form> ");
    h.raw("<form method=\"post\" action=\"/ui/review/reject\" class=\"inline\">")
        .hidden("csrf", csrf)
        .hidden("id", &p.id);
    h.raw("<button class=\"danger\" name=\"reject\">Reject</button></form></li>");
}

pub(super) fn review(proposals: &Proposals, csrf: &str) -> Html {
    let mut h = Html::default();
    if proposals.proposals.is_empty() {
        h.raw("<p class=\"hint\">Nothing awaits review.</p>");
        return h;
    }
    h.raw("<p class=\"count\">").num(proposals.proposals.len()).raw(" proposals, oldest first. Approving makes one ");
    h.raw("live (a <code>review</code> op, as <code>tmws review approve</code>); rejecting deletes it.</p>");
    h.raw("<ul class=\"proposals\">");
    for p in &proposals.proposals {
        proposal(&mut h, p, csrf);
    }
    h.raw("</ul>");
    h
}

/// The memories page filtered to proposals: the review queue's memories that the other
/// filters leave.
pub(super) fn proposed_memories(f: &super::Filters, proposals: &Proposals, csrf: &str) -> Html {
    let mut h = Html::default();
    filter_form(&mut h, f);
    let kept: Vec<&Proposal> = proposals
        .proposals
        .iter()
        .filter(|p| p.what == "memory")
        .filter(|p| f.namespace.is_empty() || p.namespace.as_deref() == Some(f.namespace.as_str()))
        .filter(|p| f.author.is_empty() || p.agent.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&f.author)))
        .collect();
    h.raw("<p class=\"count\">").num(kept.len()).raw(" proposed memories</p><ul class=\"proposals\">");
    for p in kept {
        proposal(&mut h, p, csrf);
    }
    h.raw("</ul>");
    h
}

pub(super) fn servers(listed: &[Listed], live: &[crate::query::view::LiveServer]) -> Html {
    let mut h = Html::default();
    h.raw("<h2>Registry</h2><table><thead><tr><th>Server</th><th>Tools</th><th>Cold start</th><th>Approval</th><th>Error</th></tr></thead><tbody>");
    for s in listed {
        h.el("<tr><td>", &s.server, "</td><td>").num(s.tools).raw("</td><td>");
        if let Some(ms) = s.cold_start_ms {
            h.num(ms).raw(" ms");
        }
        h.el("</td><td>", s.approval, "</td><td>").text(s.error.as_deref().unwrap_or("")).raw("</td></tr>");
    }
    h.raw("</tbody></table><h2>Live in the pool</h2>");
    if live.is_empty() {
        h.raw("<p class=\"hint\">No downstream server is running: the pool starts one at its first call.</p>");
        return h;
    }
    h.raw(
        "<table><thead><tr><th>Server</th><th>Calls under way</th><th>Idle</th><th>Kept open</th></tr></thead><tbody>",
    );
    for s in live {
        h.el("<tr><td>", &s.server, "</td><td>")
            .num(s.in_flight)
            .raw("</td><td>")
            .num(s.idle.as_secs())
            .raw(" s</td><td>");
        h.text(if s.persistent { "yes" } else { "no" }).raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    h
}

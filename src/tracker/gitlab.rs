//! GitLab's REST API v4 (gitlab.com or a self-managed instance): an issue
//! (`/api/v4/projects/{id}/issues/{iid}`), its notes page by page through `Link` or
//! `X-Next-Page` (system notes left out), and a new note.

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use super::http::{self, Client, Failure, MAX_PAGES, string};
use super::{Comment, Issue, Tracker};
use crate::parse::issue_ref::IssueRef;

fn headers(t: &Tracker) -> reqwest::header::HeaderMap {
    let mut pairs = vec![("accept", "application/json".to_owned())];
    if let Some(token) = &t.token {
        pairs.push(("private-token", token.clone()));
    }
    http::auth_headers(&pairs)
}

/// The issue's address: the project's path is one encoded segment (`group%2Fname`).
fn issue_url(t: &Tracker, r: &IssueRef) -> String {
    let project = utf8_percent_encode(&t.project, NON_ALPHANUMERIC);
    format!("{}/api/v4/projects/{project}/issues/{}", t.base, r.number())
}

/// The issue `r` with its notes.
pub async fn issue(client: &Client, t: &Tracker, r: &IssueRef) -> Result<Issue, Failure> {
    let h = headers(t);
    let answer = client.get(&issue_url(t, r), &h).await?;
    let v = &answer.json;
    if !v.is_object() {
        return Err(Failure::Answer("the issue is not an object".into()));
    }
    let mut issue = Issue {
        url: string(v, "/web_url").unwrap_or_default(),
        title: string(v, "/title").unwrap_or_default(),
        // GitLab says `opened`; people and the other trackers say `open`.
        state: string(v, "/state").map(|s| if s == "opened" { "open".into() } else { s }).unwrap_or_default(),
        labels: v
            .get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect(),
        assignees: v
            .get("assignees")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| string(a, "/username"))
            .collect(),
        author: string(v, "/author/username"),
        created: string(v, "/created_at"),
        updated: string(v, "/updated_at"),
        body: string(v, "/description").unwrap_or_default(),
        ..Issue::default()
    };
    let notes = format!("{}/notes?sort=asc&order_by=created_at&per_page=100", issue_url(t, r));
    let mut next = Some(notes.clone());
    let mut pages = 0;
    while let Some(url) = next.take() {
        let page = client.get(&url, &h).await?;
        for c in page.json.as_array().into_iter().flatten() {
            if c.get("system").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            issue.comments.push(Comment {
                author: string(c, "/author/username"),
                created: string(c, "/created_at"),
                body: string(c, "/body").unwrap_or_default(),
            });
        }
        pages += 1;
        if pages < MAX_PAGES {
            next = page.next_link().or_else(|| {
                let n =
                    page.header("x-next-page").filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))?;
                Some(format!("{notes}&page={n}"))
            });
        }
    }
    issue.comments_total = issue.comments.len();
    Ok(issue)
}

/// Posts `body` as a note of `r`; GitLab gives no address of a note.
pub async fn comment(client: &Client, t: &Tracker, r: &IssueRef, body: &str) -> Result<Option<String>, Failure> {
    client.post(&format!("{}/notes", issue_url(t, r)), &headers(t), &json!({ "body": body })).await?;
    Ok(None)
}

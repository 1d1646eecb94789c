//! Jira's REST API v2, which Cloud and Server/Data Center both answer: an issue
//! (`/rest/api/2/issue/{key}`), its comments page by page (`startAt`, `maxResults`,
//! `total`), and a new comment. With a user (Cloud) the token goes with it as basic
//! authentication; without (Server), as a bearer token.

use base64::Engine as _;
use serde_json::{Value, json};

use super::http::{self, Client, Failure, MAX_PAGES, string};
use super::{Comment, Issue, Tracker};
use crate::parse::issue_ref::IssueRef;

/// Comments asked per page.
const PAGE: usize = 100;

fn headers(t: &Tracker) -> reqwest::header::HeaderMap {
    let mut pairs = vec![("accept", "application/json".to_owned())];
    match (&t.user, &t.token) {
        (Some(user), Some(token)) => {
            let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{token}"));
            pairs.push(("authorization", format!("Basic {pair}")));
        }
        (None, Some(token)) => pairs.push(("authorization", format!("Bearer {token}"))),
        _ => {}
    }
    http::auth_headers(&pairs)
}

fn issue_url(t: &Tracker, r: &IssueRef) -> String {
    format!("{}/rest/api/2/issue/{r}", t.base)
}

/// A person's name as Jira gives it.
fn person(v: &Value, pointer: &str) -> Option<String> {
    let p = v.pointer(pointer)?;
    string(p, "/displayName").or_else(|| string(p, "/name")).or_else(|| string(p, "/emailAddress"))
}

/// The issue `r` with its comments.
pub async fn issue(client: &Client, t: &Tracker, r: &IssueRef) -> Result<Issue, Failure> {
    let h = headers(t);
    let fields = "summary,status,labels,assignee,reporter,description,created,updated";
    let answer = client.get(&format!("{}?fields={fields}", issue_url(t, r)), &h).await?;
    let v = &answer.json;
    if !v.get("fields").is_some_and(Value::is_object) {
        return Err(Failure::Answer("the issue has no fields".into()));
    }
    let site = t.base.clone();
    let mut issue = Issue {
        url: format!("{site}/browse/{r}"),
        title: string(v, "/fields/summary").unwrap_or_default(),
        state: string(v, "/fields/status/name").unwrap_or_default(),
        labels: v
            .pointer("/fields/labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect(),
        assignees: person(v, "/fields/assignee").into_iter().collect(),
        author: person(v, "/fields/reporter"),
        created: string(v, "/fields/created"),
        updated: string(v, "/fields/updated"),
        body: string(v, "/fields/description").unwrap_or_default(),
        ..Issue::default()
    };
    let mut start = 0usize;
    for _ in 0..MAX_PAGES {
        let url = format!("{}/comment?startAt={start}&maxResults={PAGE}&orderBy=created", issue_url(t, r));
        let page = client.get(&url, &h).await?;
        let list = page.json.get("comments").and_then(Value::as_array).cloned().unwrap_or_default();
        for c in &list {
            issue.comments.push(Comment {
                author: person(c, "/author"),
                created: string(c, "/created"),
                body: string(c, "/body").unwrap_or_default(),
            });
        }
        let total = page.json.get("total").and_then(Value::as_u64).unwrap_or(0) as usize;
        issue.comments_total = total;
        start += list.len();
        if list.is_empty() || start >= total {
            break;
        }
    }
    Ok(issue)
}

/// Posts `body` as a comment of `r`; the comment's address.
pub async fn comment(client: &Client, t: &Tracker, r: &IssueRef, body: &str) -> Result<Option<String>, Failure> {
    let answer = client.post(&format!("{}/comment", issue_url(t, r)), &headers(t), &json!({ "body": body })).await?;
    Ok(string(&answer.json, "/id").map(|id| format!("{}/browse/{r}?focusedCommentId={id}", t.base)))
}

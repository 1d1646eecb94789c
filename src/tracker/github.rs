//! GitHub's REST API (and GitHub Enterprise's, under its own base): an issue
//! (`/repos/{owner}/{repo}/issues/{n}`), its comments page by page through `Link`, and a
//! new comment.

use serde_json::{Value, json};

use super::http::{self, Client, Failure, MAX_PAGES, string};
use super::{Comment, Issue, Tracker};
use crate::parse::issue_ref::IssueRef;

/// The headers of every request: the API's media type and version, and the token.
fn headers(t: &Tracker) -> reqwest::header::HeaderMap {
    let mut pairs =
        vec![("accept", "application/vnd.github+json".to_owned()), ("x-github-api-version", "2022-11-28".to_owned())];
    if let Some(token) = &t.token {
        pairs.push(("authorization", format!("Bearer {token}")));
    }
    http::auth_headers(&pairs)
}

fn issue_url(t: &Tracker, r: &IssueRef) -> String {
    format!("{}/repos/{}/issues/{}", t.base, t.project, r.number())
}

/// The issue `r` with its comments.
pub async fn issue(client: &Client, t: &Tracker, r: &IssueRef) -> Result<Issue, Failure> {
    let h = headers(t);
    let answer = client.get(&issue_url(t, r), &h).await?;
    let v = &answer.json;
    if !v.is_object() {
        return Err(Failure::Answer("the issue is not an object".into()));
    }
    let names = |key: &str, field: &str| -> Vec<String> {
        v.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(|x| string(x, field)).collect()
    };
    let mut issue = Issue {
        url: string(v, "/html_url").unwrap_or_default(),
        title: string(v, "/title").unwrap_or_default(),
        state: string(v, "/state").unwrap_or_default(),
        labels: names("labels", "/name"),
        assignees: names("assignees", "/login"),
        author: string(v, "/user/login"),
        created: string(v, "/created_at"),
        updated: string(v, "/updated_at"),
        body: string(v, "/body").unwrap_or_default(),
        comments_total: v.get("comments").and_then(Value::as_u64).unwrap_or(0) as usize,
        ..Issue::default()
    };
    if issue.comments_total > 0 {
        let mut next = Some(format!("{}/comments?per_page=100", issue_url(t, r)));
        let mut pages = 0;
        while let Some(url) = next.take() {
            let page = client.get(&url, &h).await?;
            for c in page.json.as_array().into_iter().flatten() {
                issue.comments.push(Comment {
                    author: string(c, "/user/login"),
                    created: string(c, "/created_at"),
                    body: string(c, "/body").unwrap_or_default(),
                });
            }
            pages += 1;
            if pages < MAX_PAGES {
                next = page.next_link();
            }
        }
    }
    Ok(issue)
}

/// Posts `body` as a comment of `r`; the comment's address.
pub async fn comment(client: &Client, t: &Tracker, r: &IssueRef, body: &str) -> Result<Option<String>, Failure> {
    let answer = client.post(&format!("{}/comments", issue_url(t, r)), &headers(t), &json!({ "body": body })).await?;
    Ok(string(&answer.json, "/html_url"))
}

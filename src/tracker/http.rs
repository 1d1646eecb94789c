//! The HTTP layer the tracker clients share: one request with a timeout, JSON in and out,
//! pages, rate limits and the failures people need to tell apart.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::error::Error;

/// The most bytes of one answer read.
const MAX_ANSWER_BYTES: usize = 8 << 20;
/// A `Retry-After` (or a rate-limit reset) at most this far off is waited out, once.
const SHORT_WAIT: Duration = Duration::from_secs(3);
/// The most pages of comments followed.
pub const MAX_PAGES: usize = 20;

/// Why a request gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No connection, no answer in time, or a broken answer.
    Network(String),
    /// The rate limit is spent; `reset` says when it comes back, in seconds, if known.
    RateLimited { reset: Option<u64> },
    /// 401: the token is missing, wrong or expired.
    Unauthorized { token_set: bool },
    /// 403 without a rate limit: the token may not do this.
    Forbidden,
    /// 404 (or 410): no such issue, or not visible with this token.
    NotFound,
    /// Another status.
    Status(u16),
    /// An answer that is not what the API gives.
    Answer(String),
}

impl Failure {
    /// One line for people; `tracker` is its name (`GitHub`), `what` the reference.
    pub fn message(&self, tracker: &str, what: &str) -> String {
        match self {
            Failure::Network(why) => format!("{tracker} cannot be reached for {what}: {why}"),
            Failure::RateLimited { reset: Some(s) } => format!(
                "{tracker}'s rate limit is spent: it comes back in {} (asked for {what})",
                if *s >= 120 { format!("{} min", s.div_ceil(60)) } else { format!("{s} s") }
            ),
            Failure::RateLimited { reset: None } => format!("{tracker}'s rate limit is spent (asked for {what})"),
            Failure::Unauthorized { token_set: true } => {
                format!("{tracker} refused the token (401) for {what}: it is wrong or expired")
            }
            Failure::Unauthorized { token_set: false } => {
                format!("{tracker} asks for a token (401) for {what}: set the variable token_env names")
            }
            Failure::Forbidden => format!("{tracker} forbids this token to read or write {what} (403)"),
            Failure::NotFound => format!("{tracker} has no {what}, or this token cannot see it (404)"),
            Failure::Status(s) => format!("{tracker} answered {s} for {what}"),
            Failure::Answer(why) => format!("{tracker} gave an answer tmws cannot read for {what}: {why}"),
        }
    }

    /// Whether an answer kept from before is served in place of this failure: when the
    /// tracker could not be asked, not when it said no.
    pub fn serves_cache(&self) -> bool {
        matches!(self, Failure::Network(_) | Failure::RateLimited { .. } | Failure::Status(500..=599))
    }

    /// The error of this failure, saying `message`.
    pub fn error(&self, message: String) -> Error {
        match self {
            Failure::NotFound => Error::NotFound(message),
            _ => Error::Downstream(message),
        }
    }
}

/// A client of one tracker's API.
pub struct Client {
    inner: reqwest::Client,
    headers: HeaderMap,
}

/// Runs `work` with a client whose requests each give up after `timeout`, on a thread and
/// runtime of its own (the caller may be on an async runtime or not).
pub fn run<T, F, Fut>(timeout: Duration, work: F) -> Result<T, Failure>
where
    T: Send,
    F: FnOnce(std::sync::Arc<Client>) -> Fut + Send,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    std::thread::scope(|s| {
        s.spawn(move || {
            // reqwest's TLS is rustls with the ring provider, which must be in place
            // before any client is made; installing it again changes nothing.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::Network(format!("no async runtime: {e}")))?;
            let inner = reqwest::Client::builder()
                .connect_timeout(timeout)
                .timeout(timeout)
                .user_agent(concat!("tmws/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| Failure::Network(format!("no HTTP client: {}", plain(&e))))?;
            let client = std::sync::Arc::new(Client { inner, headers: HeaderMap::new() });
            runtime.block_on(work(client))
        })
        .join()
        .unwrap_or_else(|_| Err(Failure::Network("the request's thread failed".into())))
    })
}

/// A reqwest error in plain words, without the address (which a message names already).
fn plain(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "no answer in time".into();
    }
    if e.is_connect() {
        return "the connection was refused or failed".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    text
}

/// The headers of a request to `tracker`: its authentication and what the API asks for.
pub fn auth_headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        if let Ok(mut v) = HeaderValue::from_str(value) {
            if name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("private-token") {
                v.set_sensitive(true);
            }
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    headers
}

/// An answer: its headers and its JSON.
pub struct Answer {
    pub headers: HeaderMap,
    pub json: Value,
}

impl Answer {
    /// The `rel="next"` address of a `Link` header.
    pub fn next_link(&self) -> Option<String> {
        let link = self.headers.get("link")?.to_str().ok()?;
        link.split(',').find_map(|part| {
            let (url, params) = part.split_once(';')?;
            params
                .split(';')
                .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
                .then(|| url.trim().trim_start_matches('<').trim_end_matches('>').to_owned())
        })
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl Client {
    /// GETs `url` with `headers`.
    pub async fn get(&self, url: &str, headers: &HeaderMap) -> Result<Answer, Failure> {
        self.send(reqwest::Method::GET, url, headers, None).await
    }

    /// POSTs `body` as JSON to `url`.
    pub async fn post(&self, url: &str, headers: &HeaderMap, body: &Value) -> Result<Answer, Failure> {
        self.send(reqwest::Method::POST, url, headers, Some(body)).await
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &HeaderMap,
        body: Option<&Value>,
    ) -> Result<Answer, Failure> {
        let mut waited = false;
        loop {
            let mut req =
                self.inner.request(method.clone(), url).headers(self.headers.clone()).headers(headers.clone());
            if let Some(body) = body {
                req = req.header("content-type", "application/json").body(body.to_string());
            }
            let resp = req.send().await.map_err(|e| Failure::Network(plain(&e)))?;
            let status = resp.status().as_u16();
            let head = resp.headers().clone();
            if let Some(reset) = rate_limited(status, &head) {
                // A short wait is waited out once; a longer one is said.
                if !waited && reset.is_some_and(|s| Duration::from_secs(s) <= SHORT_WAIT) {
                    waited = true;
                    tokio::time::sleep(Duration::from_secs(reset.unwrap_or(1).max(1))).await;
                    continue;
                }
                return Err(Failure::RateLimited { reset });
            }
            match status {
                200..=299 => {}
                401 => {
                    return Err(Failure::Unauthorized {
                        token_set: headers.contains_key("authorization") || headers.contains_key("private-token"),
                    });
                }
                403 => return Err(Failure::Forbidden),
                404 | 410 => return Err(Failure::NotFound),
                s => return Err(Failure::Status(s)),
            }
            let bytes = read_capped(resp).await?;
            let json = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).map_err(|e| Failure::Answer(format!("not JSON ({e})")))?
            };
            return Ok(Answer { headers: head, json });
        }
    }
}

/// Reads an answer's body, refusing one over `MAX_ANSWER_BYTES`.
async fn read_capped(mut resp: reqwest::Response) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| Failure::Network(plain(&e)))? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Failure::Answer(format!("over {} MiB", MAX_ANSWER_BYTES >> 20)));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// When an answer says the rate limit is spent: `Some(seconds until it comes back)`, the
/// inner None when it does not say. A 429, or a 403 with `X-RateLimit-Remaining: 0` or a
/// `Retry-After` (GitHub's secondary limit).
fn rate_limited(status: u16, head: &HeaderMap) -> Option<Option<u64>> {
    let text = |n: &str| head.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    let retry_after = text("retry-after").and_then(|v| v.parse::<u64>().ok());
    let spent = text("x-ratelimit-remaining").or_else(|| text("ratelimit-remaining")) == Some("0");
    if status != 429 && !(status == 403 && (spent || retry_after.is_some())) {
        return None;
    }
    if retry_after.is_some() {
        return Some(retry_after);
    }
    let now = chrono::Utc::now().timestamp();
    let reset = text("x-ratelimit-reset").or_else(|| text("ratelimit-reset")).and_then(|v| v.parse::<i64>().ok());
    Some(reset.map(|r| u64::try_from(r - now).unwrap_or(0)))
}

/// A JSON string field, or None.
pub fn string(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_header_gives_its_next_page() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "link",
            HeaderValue::from_static("<https://x/a?page=1>; rel=\"prev\", <https://x/a?page=3>; rel=\"next\""),
        );
        assert_eq!(Answer { headers, json: Value::Null }.next_link().as_deref(), Some("https://x/a?page=3"));
    }

    #[test]
    fn a_spent_limit_is_told_from_a_refusal() {
        let mut h = HeaderMap::new();
        assert_eq!(rate_limited(403, &h), None);
        h.insert("retry-after", HeaderValue::from_static("60"));
        assert_eq!(rate_limited(403, &h), Some(Some(60)));
        assert_eq!(rate_limited(429, &HeaderMap::new()), Some(None));
        let mut h = HeaderMap::new();
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        assert_eq!(rate_limited(403, &h), Some(None));
    }
}

//! Who is signed in to the web view: sessions made by giving the server's token once, and
//! each session's CSRF token.
//!
//! The cookie holds a random session id, never the token: a page, a screenshot or a
//! browser's cookie store shows nothing that opens the REST routes. The server keeps only
//! a hash of each id, so a lookup's time tells nothing about ids it holds; tokens and CSRF
//! values are compared as blake3 hashes, whose equality takes the same time wherever two
//! differ. Sessions live in memory: a restarted server asks to sign in again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, header};

/// The cookie's name.
pub(super) const COOKIE: &str = "tmws_ui";
/// How long a session lasts from sign-in.
const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// At most this many sessions at once; signing in past it ends the oldest.
const MAX_SESSIONS: usize = 64;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub(super) struct Signed {
    /// The CSRF token every form of this session carries.
    pub csrf: String,
    since: Instant,
}

/// The sessions of one server, and the hash of the token that opens one.
#[derive(Debug)]
pub(super) struct Sessions {
    token: blake3::Hash,
    by_id: Mutex<HashMap<blake3::Hash, Signed>>,
}

/// 32 random bytes as hex, or None when the OS gives none.
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sessions {
    pub(super) fn new(token: &str) -> Sessions {
        Sessions { token: blake3::hash(token.as_bytes()), by_id: Mutex::new(HashMap::new()) }
    }

    /// A new session when `token` is the server's: its id, for the cookie.
    pub(super) fn sign_in(&self, token: &str) -> Option<String> {
        if blake3::hash(token.trim().as_bytes()) != self.token {
            return None;
        }
        let (id, csrf) = (random_hex()?, random_hex()?);
        let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, s| s.since.elapsed() < LIFETIME);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.iter().min_by_key(|(_, s)| s.since).map(|(k, _)| *k)
        {
            map.remove(&oldest);
        }
        map.insert(blake3::hash(id.as_bytes()), Signed { csrf, since: Instant::now() });
        Some(id)
    }

    /// The session the request's cookie names, if it is live.
    pub(super) fn of(&self, headers: &HeaderMap) -> Option<Signed> {
        let id = cookie(headers, COOKIE)?;
        let key = blake3::hash(id.as_bytes());
        let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&key) {
            Some(s) if s.since.elapsed() < LIFETIME => Some(s.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Ends the session the request's cookie names.
    pub(super) fn sign_out(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, COOKIE) {
            self.by_id.lock().unwrap_or_else(|e| e.into_inner()).remove(&blake3::hash(id.as_bytes()));
        }
    }
}

impl Signed {
    /// Whether `given` is this session's CSRF token, compared in constant time.
    pub(super) fn csrf_matches(&self, given: &str) -> bool {
        blake3::hash(given.as_bytes()) == blake3::hash(self.csrf.as_bytes())
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// The `Set-Cookie` value that keeps session `id`: script cannot read it, other sites'
/// requests do not carry it, and it goes only to the web view's paths.
pub(super) fn set_cookie(id: &str) -> String {
    format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/ui; Max-Age={}", LIFETIME.as_secs())
}

/// The `Set-Cookie` value that removes the session's cookie.
pub(super) fn clear_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn only_the_servers_token_opens_a_session_and_its_id_is_not_the_token() {
        let s = Sessions::new("0123456789abcdef0123456789abcdef");
        assert!(s.sign_in("wrong").is_none());
        let id = s.sign_in("0123456789abcdef0123456789abcdef").unwrap();
        assert!(!id.contains("0123456789abcdef0123456789abcdef"));
        let signed = s.of(&with_cookie(&format!("other=1; {COOKIE}={id}"))).unwrap();
        assert!(signed.csrf_matches(&signed.csrf.clone()));
        assert!(!signed.csrf_matches(""));
        assert!(s.of(&with_cookie(&format!("{COOKIE}=x{id}"))).is_none());
        s.sign_out(&with_cookie(&format!("{COOKIE}={id}")));
        assert!(s.of(&with_cookie(&format!("{COOKIE}={id}"))).is_none());
    }
}

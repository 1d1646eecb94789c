//! The bearer token of `tmws serve` (docs/surfaces.md): where it comes from, and what a server
//! that others on the network can reach demands of it.
//!
//! The token is `TMWS_TOKEN`, else `.tmws/cache/token`, which the first start on a loopback
//! address creates (32 random bytes in hex, mode 0600). On a non-loopback address the
//! server refuses to start without a token, with one shorter than [`MIN_CHARS`], or with a
//! token file that its group or others may read; on a loopback address such a file is
//! replaced by a new private one.
//!
//! Tokens bound to agents are in [`AGENT_TOKENS_FILE`], one `AGENT TOKEN` a line (`#`
//! comments, blank lines): a request with one of them writes and verifies as that agent,
//! whatever its client calls itself. Each token has at least [`MIN_CHARS`] characters and
//! is used once, the file is private (mode 0600), on any address; a file that breaks a
//! rule stops the server, with a message that names the line and never the token.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::layout::TOKEN_FILE;
use crate::store;

/// The fewest characters a token may have on a non-loopback address.
pub const MIN_CHARS: usize = 32;

/// Where the bearer token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// `TMWS_TOKEN`.
    Env,
    /// `.tmws/cache/token`, as it was.
    File,
    /// `.tmws/cache/token`, created by this start.
    Created,
}

const REFUSING: &str = "refusing to serve on a non-loopback address";

/// The bearer token for a server bound to a loopback address (`loopback`) or not; `env`
/// is `TMWS_TOKEN`.
pub fn resolve_token(root: &Path, env: Option<String>, loopback: bool) -> Result<(String, TokenSource)> {
    if let Some(token) = env.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
        if !loopback {
            long_enough(&token, "TMWS_TOKEN")?;
        }
        return Ok((token, TokenSource::Env));
    }
    let path = root.join(TOKEN_FILE);
    if let Some((text, mode)) = store::read_secret_opt(root, &path)? {
        let token = text.trim().to_owned();
        if token.is_empty() {
            return Err(Error::Usage(format!(
                "{TOKEN_FILE}: the token file is empty; delete it to have a new one made"
            )));
        }
        if let Some(mode) = mode.filter(|m| m & 0o044 != 0) {
            if !loopback {
                return Err(Error::Environment(format!(
                    "{REFUSING}: {TOKEN_FILE} can be read by other users (mode {:03o}); run `chmod 600 {TOKEN_FILE}`",
                    mode & 0o777
                )));
            }
            // tmws makes its token file private: one that others may read was not made
            // here (a repository can bring one whose value everyone knows), so a new one
            // replaces it.
            tracing::warn!(
                "{TOKEN_FILE} can be read by other users (mode {:03o}): it is not used, a new private token replaces it",
                mode & 0o777
            );
            store::remove_file(&path)?;
            return resolve_token(root, None, loopback);
        }
        if !loopback {
            long_enough(&token, TOKEN_FILE)?;
        }
        return Ok((token, TokenSource::File));
    }
    if !loopback {
        return Err(Error::Usage(format!(
            "{REFUSING} without a token: set TMWS_TOKEN, or start once on 127.0.0.1 to create {TOKEN_FILE}"
        )));
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::environment("cannot make a token", e))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if store::create_private(root, &path, format!("{token}\n").as_bytes())? {
        Ok((token, TokenSource::Created))
    } else {
        // Another server made it first: use theirs.
        resolve_token(root, None, loopback)
    }
}

/// A token that others on the network could guess is refused.
fn long_enough(token: &str, from: &str) -> Result<()> {
    let n = token.chars().count();
    if n < MIN_CHARS {
        let s = if n == 1 { "" } else { "s" };
        return Err(Error::Usage(format!(
            "{REFUSING}: the token in {from} has {n} character{s}, it needs at least {MIN_CHARS}"
        )));
    }
    Ok(())
}

/// The file of tokens bound to agents, relative to the root.
pub const AGENT_TOKENS_FILE: &str = ".tmws/cache/agent-tokens";

/// A token bound to an agent: a request that carries it speaks as the agent.
#[derive(Clone)]
pub struct AgentToken {
    /// Normalised (`parse::trust::normalize`).
    pub agent: Arc<str>,
    pub token: String,
}

impl std::fmt::Debug for AgentToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToken").field("agent", &self.agent).finish_non_exhaustive()
    }
}

/// The tokens bound to agents ([`AGENT_TOKENS_FILE`]; none when there is no file), none of
/// them `server_token`.
pub fn agent_tokens(root: &Path, server_token: &str) -> Result<Vec<AgentToken>> {
    use crate::parse::trust::{HUMAN, normalize};
    let path = root.join(AGENT_TOKENS_FILE);
    let Some((text, mode)) = store::read_secret_opt(root, &path)? else { return Ok(Vec::new()) };
    if let Some(mode) = mode.filter(|m| m & 0o077 != 0) {
        return Err(Error::Usage(format!(
            "{AGENT_TOKENS_FILE}: other users may use this file (mode {:03o}); run `chmod 600 {AGENT_TOKENS_FILE}`",
            mode & 0o777
        )));
    }
    let mut tokens: Vec<AgentToken> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{AGENT_TOKENS_FILE}:{}", n + 1);
        let mut words = line.split_whitespace();
        let (Some(name), Some(token), None) = (words.next(), words.next(), words.next()) else {
            return Err(Error::Usage(format!("{at}: write `AGENT TOKEN`, one pair a line")));
        };
        let agent = normalize(&crate::redact::redact(name).text);
        if agent.is_empty() || agent == HUMAN {
            return Err(Error::Usage(format!(
                "{at}: `{HUMAN}` is the person at the command line; bind each token to an agent's name"
            )));
        }
        let chars = token.chars().count();
        if chars < MIN_CHARS {
            return Err(Error::Usage(format!(
                "{at}: the token of `{agent}` has {chars} characters, it needs at least {MIN_CHARS}"
            )));
        }
        if token == server_token || tokens.iter().any(|t| t.token == token) {
            return Err(Error::Usage(format!(
                "{at}: the token of `{agent}` is used before: each token names one agent"
            )));
        }
        tokens.push(AgentToken { agent: Arc::from(agent), token: token.to_owned() });
    }
    Ok(tokens)
}

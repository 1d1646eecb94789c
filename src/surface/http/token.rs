//! The bearer token of `tmws serve` (docs/surfaces.md): where it comes from, and what a server
//! that others on the network can reach demands of it.
//!
//! The token is `TMWS_TOKEN`, else `.tmws/cache/token`, which the first start on a loopback
//! address creates (32 random bytes in hex, mode 0600). On a non-loopback address the
//! server refuses to start without a token, with one shorter than [`MIN_CHARS`], or with a
//! token file that its group or others may read; on a loopback address such a file is
//! replaced by a new private one.

use std::path::Path;

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

//! The commands that run or tend tmws itself: `trust`, `hook install` and `serve`
//! (`tmws mcp` goes straight to the MCP surface).

use std::io::Write;

use super::render::{esc, to_json};
use super::{Cli, Failure, TrustCommand, engine, root};
use crate::error::Error;
use crate::layout::TOKEN_FILE;
use crate::surface::http::{self, TokenSource};

pub(super) fn trust(cli: &Cli, cmd: &TrustCommand, out: &mut impl Write) -> Result<u8, Failure> {
    let engine = engine(cli)?;
    match cmd {
        TrustCommand::Verify { agent, verifier, success, failure: _, evidence } => {
            let t = engine.trust_verify(agent, verifier, *success, evidence)?;
            if cli.json {
                writeln!(out, "{}", to_json(&t))?;
            } else {
                writeln!(
                    out,
                    "{}: trust {:.2} ({} successes, {} failures)",
                    esc(&t.agent),
                    t.score,
                    t.successes,
                    t.failures
                )?;
            }
        }
        TrustCommand::Show => {
            let all = engine.trust_show();
            if cli.json {
                writeln!(out, "{}", to_json(&all))?;
            } else if all.is_empty() {
                writeln!(
                    out,
                    "no verifications yet (tmws trust verify --agent A --verifier V --success --evidence E)"
                )?;
            } else {
                let w = all.iter().map(|t| t.agent.chars().count()).max().unwrap_or(5).max(5);
                writeln!(out, "{:<w$}  score  successes  failures  last verified", "agent")?;
                for t in &all {
                    writeln!(
                        out,
                        "{:<w$}  {:>5.2}  {:>9}  {:>8}  {}",
                        esc(&t.agent),
                        t.score,
                        t.successes,
                        t.failures,
                        t.last
                    )?;
                }
            }
        }
    }
    Ok(0)
}

pub(super) fn hook_install(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    let exe = std::env::current_exe().map_err(|e| Error::Environment(format!("cannot find the tmws binary: {e}")))?;
    let answer = engine(cli)?.hook_install(&exe)?;
    if cli.json {
        writeln!(out, "{}", to_json(&answer))?;
    } else if answer.installed {
        let chained = if answer.chained { " (the hook that was there runs first)" } else { "" };
        writeln!(out, "installed {}{chained}", answer.hook)?;
    } else {
        writeln!(out, "already installed: {}", answer.hook)?;
    }
    Ok(0)
}

pub(super) fn serve(cli: &Cli, addr: &str, out: &mut impl Write) -> Result<u8, Failure> {
    let root = root(cli)?;
    let addr = http::parse_addr(addr)?;
    let mut written = Ok(());
    http::serve(&root, addr, |l| {
        let token = match l.token_source {
            TokenSource::Env => "the token is TMWS_TOKEN".to_owned(),
            TokenSource::File => format!("the token is in {TOKEN_FILE}"),
            TokenSource::Created => format!("a new token was written to {TOKEN_FILE}"),
        };
        eprintln!("tmws: serving {} ({token}; Ctrl-C to stop)", root.display());
        written = if cli.json {
            let v = serde_json::json!({ "url": format!("http://{}", l.addr), "mcp": format!("http://{}/mcp", l.addr) });
            writeln!(out, "{v}")
        } else {
            writeln!(out, "listening on http://{}", l.addr)
        }
        .and_then(|()| out.flush());
    })?;
    written?;
    Ok(0)
}

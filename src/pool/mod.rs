//! Downstream MCP servers (DESIGN §2.4, §5): starting one from its registry connection and
//! talking to it with rmcp's client.
//!
//! This first part introspects a server for `tmws registry build`: start it, read
//! `initialize` and `tools/list`, measure the cold start, stop it. The stderr of a server
//! that fails is kept (its tail goes into the error). `${VAR}` references in the
//! connection are filled from the environment; a missing variable is an error that names it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::parse::clients::Connection;

/// What a server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Introspection {
    pub name: String,
    pub instructions: Option<String>,
    /// From spawn to the `initialize` answer.
    pub cold_start: Duration,
    /// (name, description, input schema), in the server's order.
    pub tools: Vec<(String, String, Value)>,
}

/// How many bytes of a failed server's stderr an error shows.
const STDERR_TAIL: usize = 600;

/// Fills `${VAR}` references from the environment.
pub fn resolve(value: &str) -> Result<String, String> {
    match value.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
        Some(var) => std::env::var(var).map_err(|_| format!("environment variable {var} is not set")),
        None => Ok(value.to_owned()),
    }
}

/// The last `STDERR_TAIL` bytes of `text`, on a char boundary, trimmed.
fn tail(text: &str) -> &str {
    let t = text.trim();
    let mut start = t.len().saturating_sub(STDERR_TAIL);
    while !t.is_char_boundary(start) {
        start += 1;
    }
    &t[start..]
}

/// Starts the server, reads what it offers, and stops it; within `timeout`.
pub async fn introspect(conn: &Connection, timeout: Duration) -> Result<Introspection, String> {
    if conn.kind != "stdio" {
        return Err(format!("{} servers are not introspected yet (only stdio)", conn.kind));
    }
    let command = conn.command.as_deref().ok_or("no command")?;
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&conn.args).kill_on_drop(true);
    for (k, v) in &conn.env {
        cmd.env(k, resolve(v)?);
    }
    let started = Instant::now();
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    // Drain stderr as it comes, so a chatty server never blocks on a full pipe.
    let stderr_text = tokio::spawn(async move {
        let mut all = Vec::new();
        if let Some(mut s) = stderr {
            let _ = s.read_to_end(&mut all).await;
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let talk = async {
        let client = ().serve(transport).await.map_err(|e| format!("initialize failed: {e}"))?;
        let cold_start = started.elapsed();
        let info = client.peer_info();
        let tools = client.list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"))?;
        let _ = client.cancel().await;
        Ok::<_, String>((info, cold_start, tools))
    };
    let result = tokio::time::timeout(timeout, talk).await;
    let failed = |why: String, stderr: String| {
        let t = tail(&stderr);
        if t.is_empty() { why } else { format!("{why}; stderr: {t}") }
    };
    match result {
        Err(_) => {
            // The transport (and with it the child, kill_on_drop) is gone: stderr ends.
            let err = tokio::time::timeout(Duration::from_secs(2), stderr_text).await.ok().and_then(Result::ok);
            Err(failed(format!("no answer within {} ms", timeout.as_millis()), err.unwrap_or_default()))
        }
        Ok(Err(why)) => {
            let err = tokio::time::timeout(Duration::from_secs(2), stderr_text).await.ok().and_then(Result::ok);
            Err(failed(why, err.unwrap_or_default()))
        }
        Ok(Ok((info, cold_start, tools))) => Ok(Introspection {
            name: info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| s.name.clone()).unwrap_or_default(),
            instructions: info.and_then(|i| i.instructions.clone()),
            cold_start,
            tools: tools
                .into_iter()
                .map(|t| {
                    let schema = Value::Object((*t.input_schema).clone());
                    (t.name.to_string(), t.description.map(|d| d.to_string()).unwrap_or_default(), schema)
                })
                .collect(),
        }),
    }
}

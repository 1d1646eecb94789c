//! The stdio transport of `tmws mcp`, with a line limit that answers (DESIGN §12).
//!
//! rmcp's own stdio transport drops a message over its line limit and says nothing, so a
//! client waits for ever. Here stdin is read line by line with the limit of a log line
//! (16 MiB): a line within it goes to rmcp through an in-memory pipe; a longer one is
//! skipped as it streams by (never held whole) and answered with a JSON-RPC error
//! (`-32600`, with the request's `id` when its first bytes name one). rmcp's answers and
//! these errors reach stdout through one writer, a whole line at a time.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How much of an over-long line is kept to find its `id`.
const HEAD_KEPT: usize = 64 << 10;

/// The tasks that connect rmcp's pipes to stdin and stdout.
#[derive(Debug)]
pub(super) struct Pumps {
    input: JoinHandle<()>,
    output: JoinHandle<()>,
}

impl Pumps {
    /// Once rmcp is done: stops reading stdin and waits until every answer is written.
    pub(super) async fn finish(self) {
        self.input.abort();
        let _ = self.input.await;
        let _ = self.output.await;
    }
}

/// Connects `input` and `output` (stdin and stdout) to a pair of pipes for rmcp to read
/// and write.
pub(super) fn capped<R, W>(input: R, output: W, max_line: usize) -> ((DuplexStream, DuplexStream), Pumps)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, reader) = tokio::io::duplex(1 << 16);
    let (writer, from_rmcp) = tokio::io::duplex(1 << 16);
    let (lines, mut queue) = mpsc::channel::<Vec<u8>>(64);
    let errors = lines.clone();
    let read = tokio::spawn(async move {
        let _ = pump_input(input, to_rmcp, &errors, max_line).await;
    });
    let answers = tokio::spawn(async move {
        let mut from = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match from.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(line).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let write = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = queue.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    // The answers task ends when rmcp drops its writer; only the stdin reader is stopped.
    drop(answers);
    ((reader, writer), Pumps { input: read, output: write })
}

/// Copies lines from `input` to `to_rmcp`; a line over `max_line` bytes is answered on
/// `errors` instead. Ends at the end of `input` (closing `to_rmcp`, which ends the session).
async fn pump_input<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: DuplexStream,
    errors: &mpsc::Sender<Vec<u8>>,
    max_line: usize,
) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line: Vec<u8> = Vec::new();
    let mut over = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            if !line.is_empty() && !over {
                to_rmcp.write_all(&line).await?;
            }
            return Ok(());
        }
        let (part, ends) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        let used = part.len();
        if !over && line.len() + used > max_line + 1 {
            over = true;
            line.truncate(HEAD_KEPT);
        }
        if over {
            let room = HEAD_KEPT.saturating_sub(line.len());
            line.extend_from_slice(&part[..room.min(used)]);
        } else {
            line.extend_from_slice(part);
        }
        input.consume(used);
        if ends {
            if over {
                let _ = errors.send(too_long(&line, max_line)).await;
            } else {
                to_rmcp.write_all(&line).await?;
            }
            line.clear();
            over = false;
        }
    }
}

/// The JSON-RPC error answering a request over the line limit, naming its `id` when the
/// kept head shows one.
fn too_long(head: &[u8], max_line: usize) -> Vec<u8> {
    let id = request_id(&String::from_utf8_lossy(head)).unwrap_or(serde_json::Value::Null);
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32600,
            "message": format!("request over the line limit of {max_line} bytes: not read"),
        },
    });
    let mut out = error.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// The value of the first `"id"` key of a JSON-RPC message's text: a number or a string.
fn request_id(text: &str) -> Option<serde_json::Value> {
    let at = text.find("\"id\"")?;
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
    match stream.next()? {
        Ok(v @ (serde_json::Value::Number(_) | serde_json::Value::String(_))) => Some(v),
        _ => None,
    }
}

/// Reads `reader` to its end (for tests).
#[cfg(test)]
async fn all<R: AsyncRead + Unpin>(mut reader: R) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let _ = reader.read_to_end(&mut out).await;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_answered_and_the_others_pass_whole() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\",\"params\":\"{}\"}}\n", "y".repeat(500));
            let input = format!("{{\"a\":1}}\n{big}{{\"b\":2}}\n{{\"c\":3}}");
            let (stdin_w, stdin_r) = tokio::io::duplex(1 << 16);
            let (stdout_w, stdout_r) = tokio::io::duplex(1 << 16);
            let ((reader, writer), pumps) = capped(stdin_r, stdout_w, 100);
            let mut w = stdin_w;
            w.write_all(input.as_bytes()).await.unwrap();
            drop(w);
            let passed = all(reader).await;
            assert_eq!(String::from_utf8(passed).unwrap(), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}");
            drop(writer);
            pumps.finish().await;
            let answered = String::from_utf8(all(stdout_r).await).unwrap();
            let v: serde_json::Value = serde_json::from_str(answered.trim()).unwrap();
            assert_eq!(v["id"], 7);
            assert_eq!(v["error"]["code"], -32600);
            assert_eq!(v["error"]["message"], "request over the line limit of 100 bytes: not read");
        });
    }

    #[test]
    fn the_id_is_found_when_the_head_names_one() {
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","id" : "a-1","method""#), Some(serde_json::json!("a-1")));
        assert_eq!(request_id(r#"{"id":42,"#), Some(serde_json::json!(42)));
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","method":"x","params":"yyyy"#), None);
        assert_eq!(request_id(r#"{"id":{"#), None);
    }
}

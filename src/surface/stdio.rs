//! The stdio transport of `tmws mcp`: every request gets an answer (docs/trust-boundary.md).
//!
//! rmcp's own stdio transport drops a message over its line limit, a line that is not
//! UTF-8 or not JSON, and says nothing, so a client waits for ever; and a second request
//! with the id of one still running got no answer of its own. Here stdin is read line by
//! line with the limit of a log line (16 MiB): a longer line is skipped as it streams by
//! (never held whole) and answered with a JSON-RPC error (`-32600`, with the request's `id`
//! when its first bytes name one); a line that does not parse as JSON (bad UTF-8, cut
//! short, nested deeper than 128) gets a parse error (`-32700`, id null), and one that
//! parses but is no JSON-RPC message an invalid-request error; a request whose id is
//! already in flight gets an error naming it. The rest go to rmcp through an in-memory
//! pipe. rmcp's answers and these errors reach stdout through one writer, a whole line at
//! a time; an error rmcp writes without an id (a message it could not read) gets
//! `"id": null`, as JSON-RPC wants. The session goes on after every one of them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The ids of the client's requests that rmcp has not answered yet, as JSON text (`7` and
/// `"7"` are two ids).
type InFlight = Arc<Mutex<HashSet<String>>>;

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
    let in_flight = InFlight::default();
    let answered = in_flight.clone();
    let read = tokio::spawn(async move {
        let _ = pump_input(input, to_rmcp, &errors, max_line, &in_flight).await;
    });
    let answers = tokio::spawn(async move {
        let mut from = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match from.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = settle(line, &answered);
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

/// Copies lines from `input` to `to_rmcp`; a line over `max_line` bytes, one that is no
/// JSON-RPC message and a request whose id is in flight are answered on `errors` instead.
/// Ends at the end of `input` (closing `to_rmcp`, which ends the session).
async fn pump_input<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: DuplexStream,
    errors: &mpsc::Sender<Vec<u8>>,
    max_line: usize,
    in_flight: &InFlight,
) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line: Vec<u8> = Vec::new();
    let mut over = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            if !line.is_empty() && !over {
                match admit(&line, in_flight) {
                    Ok(()) => to_rmcp.write_all(&line).await?,
                    Err(error) => {
                        let _ = errors.send(error).await;
                    }
                }
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
                match admit(&line, in_flight) {
                    Ok(()) => to_rmcp.write_all(&line).await?,
                    Err(error) => {
                        let _ = errors.send(error).await;
                    }
                }
            }
            line.clear();
            over = false;
        }
    }
}

/// The JSON-RPC error answering a request over the line limit, naming its `id` when the
/// kept head shows one.
fn too_long(head: &[u8], max_line: usize) -> Vec<u8> {
    let id = request_id(&String::from_utf8_lossy(head)).unwrap_or(Value::Null);
    error_line(&id, INVALID_REQUEST, &format!("request over the line limit of {max_line} bytes: not read"))
}

/// The deepest nesting of arrays and objects read, as serde_json's own limit for values.
const MAX_DEPTH: usize = 128;

/// Whether JSON text nests arrays and objects deeper than `max` (brackets inside strings
/// do not count). serde_json skips the fields it does not keep without a depth limit, and
/// rmcp, which reads them all, would refuse such a line without saying which.
fn nested_deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// JSON-RPC's error codes for a message that does not parse, and one that is no request.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error answer, as one line.
fn error_line(id: &Value, code: i64, message: &str) -> Vec<u8> {
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut out = error.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// What a line must be to go to rmcp, read without holding its values: a JSON object
/// whose `id`, when present, is a number, a string or null, and whose `method`, when
/// present, is a string. Every other field is skipped unread.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Whether `line` (one line of stdin, its `\n` included) goes to rmcp, or the error line
/// that answers it: a parse error for what is not JSON, an invalid request for JSON that
/// is no message, and an error for a request whose id is in flight (which is then noted).
fn admit(line: &[u8], in_flight: &InFlight) -> Result<(), Vec<u8>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    // serde_json does not look inside the strings of the fields it skips.
    if let Err(e) = std::str::from_utf8(line) {
        let why = format!("parse error: the line is not UTF-8 (byte {})", e.valid_up_to() + 1);
        return Err(error_line(&Value::Null, PARSE_ERROR, &why));
    }
    if nested_deeper_than(line, MAX_DEPTH) {
        let why = format!("parse error: arrays and objects nested deeper than {MAX_DEPTH}");
        return Err(error_line(&Value::Null, PARSE_ERROR, &why));
    }
    let not_a_message = || {
        let why = "not a JSON-RPC message: a JSON object with `jsonrpc`, `method` and `id` was expected";
        error_line(&Value::Null, INVALID_REQUEST, why)
    };
    let parse_error = |e: serde_json::Error| error_line(&Value::Null, PARSE_ERROR, &format!("parse error: {e}"));
    // A struct would also be read from an array (a batch, which MCP does not take).
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(match serde_json::from_slice::<IgnoredAny>(line) {
            Ok(_) => not_a_message(),
            Err(e) => parse_error(e),
        });
    }
    let envelope = match serde_json::from_slice::<Envelope>(line) {
        Ok(e) => e,
        Err(e) if e.is_data() => return Err(not_a_message()),
        Err(e) => return Err(parse_error(e)),
    };
    let Some(id) = envelope.id.filter(|id| !id.is_null()) else { return Ok(()) };
    if !(id.is_number() || id.is_string()) {
        return Err(error_line(&Value::Null, INVALID_REQUEST, "an id must be a number or a string"));
    }
    if envelope.method.is_none() {
        // An answer to a request of the server's: the server's own ids.
        return if envelope.result.is_some() || envelope.error.is_some() {
            Ok(())
        } else {
            Err(error_line(&id, INVALID_REQUEST, "a request without `method`"))
        };
    }
    let key = id.to_string();
    let mut running = in_flight.lock().unwrap_or_else(PoisonError::into_inner);
    if !running.insert(key) {
        let why = format!("request id {id} is in use by a request not yet answered: give each request its own id");
        return Err(error_line(&id, INVALID_REQUEST, &why));
    }
    Ok(())
}

/// An answer of rmcp's on its way out: the id it answers is free again, and an error
/// without an id (a message rmcp could not read) gets `"id": null`.
fn settle(line: Vec<u8>, in_flight: &InFlight) -> Vec<u8> {
    /// What tells an answer from a request or notification: an id, and no method.
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        method: Option<IgnoredAny>,
    }
    let Ok(answer) = serde_json::from_slice::<Answer>(&line) else { return line };
    if answer.method.is_some() {
        return line;
    }
    match answer.id {
        Some(id) => {
            in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&id.to_string());
            line
        }
        None => match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(mut fields)) => {
                let mut with_id = serde_json::Map::new();
                with_id.insert("jsonrpc".into(), fields.remove("jsonrpc").unwrap_or_else(|| Value::from("2.0")));
                with_id.insert("id".into(), Value::Null);
                with_id.extend(fields);
                let mut out = Value::Object(with_id).to_string().into_bytes();
                out.push(b'\n');
                out
            }
            _ => line,
        },
    }
}

/// The value of the first `"id"` key of a JSON-RPC message's text: a number or a string.
fn request_id(text: &str) -> Option<Value> {
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

    /// What `admit` answers a line with: the error's id, code and message, or None when
    /// the line goes to rmcp.
    fn refused(line: &[u8], in_flight: &InFlight) -> Option<(Value, i64, String)> {
        let error = admit(line, in_flight).err()?;
        let v: Value = serde_json::from_slice(&error).unwrap();
        assert_eq!(error.last(), Some(&b'\n'));
        Some((
            v["id"].clone(),
            v["error"]["code"].as_i64().unwrap(),
            v["error"]["message"].as_str().unwrap().to_owned(),
        ))
    }

    #[test]
    fn lines_that_are_not_json_rpc_messages_are_answered_with_errors() {
        let none = InFlight::default();
        let parse = |line: &[u8]| refused(line, &none).map(|(id, code, _)| (id, code));
        assert_eq!(parse(b"\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":1}\n"), Some((Value::Null, PARSE_ERROR)));
        assert_eq!(parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"\n"), Some((Value::Null, PARSE_ERROR)));
        assert_eq!(parse(b"{\"a\":\"\xff\"}\n"), Some((Value::Null, PARSE_ERROR)));
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{}{}}}\n",
            "[".repeat(129),
            "]".repeat(129)
        );
        assert_eq!(
            refused(deep.as_bytes(), &none),
            Some((Value::Null, PARSE_ERROR, "parse error: arrays and objects nested deeper than 128".into()))
        );
        // As deep as serde_json reads, and brackets in strings, are fine.
        let deepest = format!("{{\"params\":{}{},\"s\":\"{}\"}}\n", "[".repeat(127), "]".repeat(127), "[".repeat(500));
        assert_eq!(parse(deepest.as_bytes()), None);
        assert_eq!(
            parse(b"[{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]\n"),
            Some((Value::Null, INVALID_REQUEST))
        );
        assert_eq!(parse(b"42\n"), Some((Value::Null, INVALID_REQUEST)));
        assert_eq!(
            parse(b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n"),
            Some((Value::Null, INVALID_REQUEST))
        );
        assert_eq!(parse(b"{\"jsonrpc\":\"2.0\",\"id\":9}\n"), Some((serde_json::json!(9), INVALID_REQUEST)));
        // Notifications, answers to the server's requests and blank lines pass.
        assert_eq!(parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"), None);
        assert_eq!(parse(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n"), None);
        assert_eq!(parse(b"  \n"), None);
    }

    #[test]
    fn a_request_id_in_flight_is_refused_until_it_is_answered() {
        let in_flight = InFlight::default();
        let ping = |id: &str| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        assert_eq!(refused(ping("5").as_bytes(), &in_flight), None);
        assert_eq!(refused(ping("\"5\"").as_bytes(), &in_flight), None, "the string \"5\" is another id");
        assert_eq!(
            refused(ping("5").as_bytes(), &in_flight),
            Some((
                serde_json::json!(5),
                INVALID_REQUEST,
                "request id 5 is in use by a request not yet answered: give each request its own id".into()
            ))
        );
        // rmcp's answer frees the id; a request of the server's to the client does not.
        let request = b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\"}\n".to_vec();
        assert_eq!(settle(request.clone(), &in_flight), request);
        assert!(refused(ping("5").as_bytes(), &in_flight).is_some());
        let answer = b"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n".to_vec();
        assert_eq!(settle(answer.clone(), &in_flight), answer);
        assert_eq!(refused(ping("5").as_bytes(), &in_flight), None);
    }

    #[test]
    fn an_error_rmcp_writes_without_an_id_gets_a_null_one() {
        let line = b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"Invalid request\"}}\n".to_vec();
        assert_eq!(
            String::from_utf8(settle(line, &InFlight::default())).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request\"}}\n"
        );
    }

    #[test]
    fn the_id_is_found_when_the_head_names_one() {
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","id" : "a-1","method""#), Some(serde_json::json!("a-1")));
        assert_eq!(request_id(r#"{"id":42,"#), Some(serde_json::json!(42)));
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","method":"x","params":"yyyy"#), None);
        assert_eq!(request_id(r#"{"id":{"#), None);
    }
}

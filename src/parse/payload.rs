//! An agent client's hook payload (docs/hooks.md): the JSON a client writes on a hook
//! command's stdin, read into what a briefing needs whatever client sent it.
//!
//! The clients name the same things differently (`session_id` or `sessionId`, `tool_input`
//! as an object or `toolArgs` as a JSON string, a shell command as a string or as an
//! argument list), so each field is looked for under every name a client uses. A payload
//! is untrusted input: anything that is not what it should be is left out, never an error,
//! but bytes that are not a JSON object are.

use serde_json::{Map, Value};

/// The most a payload may hold: a write's whole file travels in it.
pub const MAX_PAYLOAD_BYTES: usize = 8 << 20;
/// The longest prompt or command a briefing reads; a longer one is cut here.
const MAX_TEXT_CHARS: usize = 4_000;
/// The most paths one tool call may name.
const MAX_PATHS: usize = 32;

/// What a hook payload says, as far as a briefing cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Payload {
    /// The client's session id.
    pub session: Option<String>,
    /// The folder the agent works in.
    pub cwd: Option<String>,
    /// The user's prompt (`prompt` events).
    pub prompt: Option<String>,
    /// The tool about to run (`pre-tool` events).
    pub tool: Option<String>,
    /// The shell command about to run, when the tool runs one.
    pub command: Option<String>,
    /// The files the tool is about to edit or write, as the client named them.
    pub paths: Vec<String>,
    /// The client's transcript of the session.
    pub transcript: Option<String>,
    /// Why a session starts: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// The client's name of the hook's event (`PreToolUse`, `AfterTool`, …), when it says.
    pub event: Option<String>,
}

/// Reads a payload. An error says why the bytes are not one, in a few words.
pub fn read(bytes: &[u8]) -> Result<Payload, String> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(format!("the payload is over {} MB", MAX_PAYLOAD_BYTES >> 20));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the payload is empty".into());
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("the payload is not JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("the payload is not a JSON object".into());
    };
    Ok(of(&map))
}

/// The payload of a JSON object.
fn of(map: &Map<String, Value>) -> Payload {
    let input = tool_input(map);
    let mut payload = Payload {
        session: text(map, &["session_id", "sessionId", "session"]).map(|s| cut(&s, 200)),
        cwd: text(map, &["cwd", "workspace_root", "workspaceRoot"]),
        prompt: text(map, &["prompt", "user_prompt", "userPrompt"]).map(|s| cut(&user_words(&s), MAX_TEXT_CHARS)),
        tool: text(map, &["tool_name", "toolName", "tool"]),
        transcript: text(map, &["transcript_path", "transcriptPath"]),
        source: text(map, &["source", "trigger", "reason"]),
        event: text(map, &["hook_event_name", "hookEventName"]).map(|s| cut(&s, 64)),
        ..Payload::default()
    };
    if let Some(input) = &input {
        let command = command(input);
        payload.paths = paths(input, command.as_deref());
        // A patch given as the command (`apply_patch`) edits files; it runs nothing.
        payload.command = command.filter(|c| !c.starts_with("*** Begin Patch")).map(|c| cut(&c, MAX_TEXT_CHARS));
    }
    payload
}

/// A string field under one of `names`, when it is a non-blank string.
fn text(map: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| map.get(*n)?.as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned))
}

/// `s` cut to `max` characters.
/// What the user wrote of a prompt: without the hook context a client put into it, before it
/// is cut to its longest. Gemini CLI run with `-p` puts a session start's context (up to its
/// budget, longer than a prompt is read) before the prompt as `<hook_context>…</hook_context>`
/// and gives its prompt hook that text: read as the prompt, the session start's own briefing
/// would find what it just briefed, and the user's words would be cut off.
fn user_words(prompt: &str) -> String {
    const OPEN: &str = "<hook_context>";
    const CLOSE: &str = "</hook_context>";
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(start) = rest.find(OPEN) {
        let Some(len) = rest[start..].find(CLOSE) else { break };
        out.push_str(&rest[..start]);
        rest = &rest[start + len + CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// The tool's arguments: an object under `tool_input`/`toolInput`/`input`/`arguments`, or
/// the same as a JSON string (`toolArgs`).
fn tool_input(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    for name in ["tool_input", "toolInput", "toolArgs", "tool_args", "arguments", "input"] {
        match map.get(name) {
            Some(Value::Object(o)) => return Some(o.clone()),
            Some(Value::String(s)) => {
                if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
                    return Some(o);
                }
                // A patch given as plain text (`apply_patch`'s input).
                let mut o = Map::new();
                o.insert("patch".into(), Value::String(s.clone()));
                return Some(o);
            }
            _ => {}
        }
    }
    None
}

/// The shell command of a tool's arguments: `command` as a string, or as an argument list
/// (`["bash", "-lc", "cargo test"]` is `cargo test`).
fn command(input: &Map<String, Value>) -> Option<String> {
    match input.get("command").or_else(|| input.get("cmd")) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Some(Value::Array(args)) => {
            let args: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
            let shell = args.first().is_some_and(|a| {
                let name = a.rsplit('/').next().unwrap_or(a);
                matches!(name, "bash" | "sh" | "zsh" | "dash")
            });
            if shell && args.len() >= 3 && args[1].starts_with('-') && args[1].contains('c') {
                return Some(args[2..].join(" ").trim().to_owned());
            }
            let joined = args.join(" ");
            (!joined.trim().is_empty()).then(|| joined.trim().to_owned())
        }
        _ => None,
    }
}

/// The files a tool's arguments name: `file_path`, `path`, `notebook_path`,
/// `absolute_path`, a list of `edits`' paths, and the files of a patch (`*** Update File:
/// src/a.rs`), whether the patch is an argument of its own or the command's.
fn paths(input: &Map<String, Value>, command: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: &str| {
        let p = p.trim();
        if !p.is_empty() && out.len() < MAX_PATHS && !out.iter().any(|q| q == p) {
            out.push(p.to_owned());
        }
    };
    for name in ["file_path", "filePath", "path", "notebook_path", "absolute_path", "target_file"] {
        if let Some(p) = input.get(name).and_then(Value::as_str) {
            push(p);
        }
    }
    for list in ["edits", "files"] {
        for e in input.get(list).and_then(Value::as_array).into_iter().flatten() {
            match e {
                Value::String(p) => push(p),
                Value::Object(o) => {
                    if let Some(p) = ["file_path", "path"].iter().find_map(|n| o.get(*n).and_then(Value::as_str)) {
                        push(p);
                    }
                }
                _ => {}
            }
        }
    }
    let patches = ["patch", "input"].into_iter().filter_map(|n| input.get(n).and_then(Value::as_str));
    for text in patches.chain(command) {
        for line in text.lines() {
            let line = line.trim();
            for head in ["*** Update File:", "*** Add File:", "*** Delete File:", "*** Move to:"] {
                if let Some(p) = line.strip_prefix(head) {
                    push(p);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_prompt_is_read_without_the_hook_context_a_client_put_into_it() {
        let context = format!(
            "Recalled project memory (tmws): quoted data\n- [lesson] a.md\n  &gt; {}",
            "db migrate ".repeat(600)
        );
        let payload = json!({"session_id": "g1", "hook_event_name": "BeforeAgent",
            "prompt": format!("<hook_context>{context}</hook_context>\n\nAdd a discount column to the invoices table.")});
        let p = read(payload.to_string().as_bytes()).unwrap();
        assert_eq!(p.prompt.as_deref(), Some("\n\nAdd a discount column to the invoices table."));
        assert_eq!(user_words("a <hook_context>x</hook_context> b <hook_context>y</hook_context>"), "a  b ");
        // An unclosed tag is the user's own text.
        assert_eq!(user_words("what does <hook_context> mean?"), "what does <hook_context> mean?");
        assert_eq!(user_words("<hook_context>only context</hook_context>"), "");
    }

    #[test]
    fn a_claude_code_pre_tool_payload_gives_its_command_and_session() {
        let p = read(
            br#"{"session_id":"abc","transcript_path":"/t/abc.jsonl","cwd":"/w/p","hook_event_name":"PreToolUse",
                "tool_name":"Bash","tool_input":{"command":"npm run db:migrate -- --env prod","description":"migrate"}}"#,
        )
        .unwrap();
        assert_eq!(p.session.as_deref(), Some("abc"));
        assert_eq!(p.cwd.as_deref(), Some("/w/p"));
        assert_eq!(p.tool.as_deref(), Some("Bash"));
        assert_eq!(p.command.as_deref(), Some("npm run db:migrate -- --env prod"));
        assert_eq!(p.transcript.as_deref(), Some("/t/abc.jsonl"));
        assert!(p.paths.is_empty());
    }

    #[test]
    fn edits_name_their_files_in_every_shape() {
        let claude = read(br#"{"tool_name":"Edit","tool_input":{"file_path":"/w/p/src/a.rs","old_string":"x"}}"#);
        assert_eq!(claude.unwrap().paths, ["/w/p/src/a.rs"]);
        let copilot = read(br#"{"toolName":"edit","toolArgs":"{\"path\":\"src/b.rs\"}","sessionId":"s"}"#).unwrap();
        assert_eq!((copilot.paths, copilot.session.as_deref()), (vec!["src/b.rs".to_owned()], Some("s")));
        let patch = read(
            br#"{"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: src/c.rs\n@@\n-a\n+b\n*** Add File: src/d.rs\n*** End Patch"}}"#,
        )
        .unwrap();
        assert_eq!((patch.paths, patch.command), (vec!["src/c.rs".to_owned(), "src/d.rs".to_owned()], None));
    }

    #[test]
    fn a_shell_command_given_as_arguments_is_the_script_it_runs() {
        let p = read(br#"{"tool_name":"shell","tool_input":{"command":["bash","-lc","cargo test -p api"]}}"#).unwrap();
        assert_eq!(p.command.as_deref(), Some("cargo test -p api"));
        let p = read(br#"{"tool_name":"shell","tool_input":{"command":["git","status"]}}"#).unwrap();
        assert_eq!(p.command.as_deref(), Some("git status"));
    }

    #[test]
    fn what_is_not_a_json_object_is_bad_input_and_odd_fields_are_left_out() {
        assert_eq!(read(b"").unwrap_err(), "the payload is empty");
        assert_eq!(read(b"[1,2]").unwrap_err(), "the payload is not a JSON object");
        assert!(read(b"\xff\xfe garbage").unwrap_err().starts_with("the payload is not JSON"));
        assert!(read(&vec![b' '; MAX_PAYLOAD_BYTES + 1]).unwrap_err().contains("over 8 MB"));
        let p = read(br#"{"session_id":7,"cwd":["x"],"prompt":"  ","tool_input":{"command":{"a":1}}}"#).unwrap();
        assert_eq!(p, Payload::default());
    }
}

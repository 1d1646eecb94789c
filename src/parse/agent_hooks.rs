//! The hooks of agent clients (docs/hooks.md): the entries that make Claude Code, Codex,
//! Gemini CLI and Copilot CLI run `tmws brief` at their moments, and the edits that put them
//! into a client's project settings or take them out.
//!
//! Pure: settings text in, edited text (or what differs) out. Every other hook, key and
//! comment of the file is kept, byte for byte: the text is edited where tmws' entries go
//! (the CST of `jsonc-parser`), never rewritten. tmws' entries are known by their command
//! (`… brief --event …` run by a program named as tmws is), not by where they sit.

use serde_json::{Map, Value, json};

use super::clients::named_tmws;

/// An agent client whose hooks tmws can install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookClient {
    Claude,
    Codex,
    Gemini,
    Copilot,
}

/// A moment `tmws brief --event` briefs the agent at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    SessionStart,
    PostCompact,
    Prompt,
    PreTool,
    SessionEnd,
}

impl Moment {
    pub const ALL: [Moment; 5] =
        [Moment::SessionStart, Moment::PostCompact, Moment::Prompt, Moment::PreTool, Moment::SessionEnd];

    /// The value of `--event`.
    pub fn as_str(self) -> &'static str {
        match self {
            Moment::SessionStart => "session-start",
            Moment::PostCompact => "post-compact",
            Moment::Prompt => "prompt",
            Moment::PreTool => "pre-tool",
            Moment::SessionEnd => "session-end",
        }
    }
}

/// One hook tmws installs: the client's event, the matcher of its group (or entry), and
/// the moment it briefs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub moment: Moment,
}

const fn at(event: &'static str, matcher: Option<&'static str>, moment: Moment) -> Placement {
    Placement { event, matcher, moment }
}

/// How long a client waits for `tmws brief` before it goes on without it.
pub const TIMEOUT_SECS: u64 = 10;

impl HookClient {
    pub const ALL: [HookClient; 4] = [HookClient::Claude, HookClient::Codex, HookClient::Gemini, HookClient::Copilot];

    /// The name `--client` and `tmws hooks install` take.
    pub fn name(self) -> &'static str {
        match self {
            HookClient::Claude => "claude",
            HookClient::Codex => "codex",
            HookClient::Gemini => "gemini",
            HookClient::Copilot => "copilot",
        }
    }

    /// The project file the hooks go in, relative to the root.
    pub fn settings_path(self) -> &'static str {
        match self {
            HookClient::Claude => crate::layout::CLAUDE_SETTINGS,
            HookClient::Codex => crate::layout::CODEX_HOOKS,
            HookClient::Gemini => crate::layout::GEMINI_CONFIG,
            HookClient::Copilot => crate::layout::COPILOT_HOOKS,
        }
    }

    /// Where each hook goes. Claude Code and Codex brief after a compaction through
    /// `SessionStart` with source `compact` (their `PostCompact` cannot add context).
    /// Gemini CLI matches a lifecycle source exactly (no alternation), and its `BeforeTool`
    /// cannot add context, so the tool briefing goes to `AfterTool`, whose context is
    /// appended to that tool's result. Copilot CLI's entries are flat (no groups).
    pub fn placements(self) -> &'static [Placement] {
        use Moment::*;
        const CLAUDE: &[Placement] = &[
            at("SessionStart", Some("startup|resume"), SessionStart),
            at("SessionStart", Some("compact"), PostCompact),
            at("UserPromptSubmit", None, Prompt),
            at("PreToolUse", Some("Bash|Edit|Write|MultiEdit|NotebookEdit"), PreTool),
            at("SessionEnd", None, SessionEnd),
        ];
        const CODEX: &[Placement] = &[
            at("SessionStart", Some("startup|resume"), SessionStart),
            at("SessionStart", Some("compact"), PostCompact),
            at("UserPromptSubmit", None, Prompt),
            at("PreToolUse", Some("^(Bash|apply_patch)$"), PreTool),
            at("SessionEnd", None, SessionEnd),
        ];
        const GEMINI: &[Placement] = &[
            at("SessionStart", Some("startup"), SessionStart),
            at("SessionStart", Some("resume"), SessionStart),
            at("BeforeAgent", None, Prompt),
            at("AfterTool", Some("^(run_shell_command|replace|write_file)$"), PreTool),
            at("SessionEnd", None, SessionEnd),
        ];
        const COPILOT: &[Placement] = &[
            at("sessionStart", None, SessionStart),
            at("userPromptSubmitted", None, Prompt),
            at("preToolUse", Some("bash|powershell|create|edit|str_replace_editor|apply_patch"), PreTool),
            at("sessionEnd", None, SessionEnd),
        ];
        match self {
            HookClient::Claude => CLAUDE,
            HookClient::Codex => CODEX,
            HookClient::Gemini => GEMINI,
            HookClient::Copilot => COPILOT,
        }
    }

    /// The moments the client has no hook for.
    pub fn lacks(self) -> Vec<Moment> {
        Moment::ALL.into_iter().filter(|m| !self.placements().iter().any(|p| p.moment == *m)).collect()
    }

    /// Whether hooks sit in groups (`{matcher, hooks: [...]}`) rather than flat entries.
    fn grouped(self) -> bool {
        self != HookClient::Copilot
    }

    /// The hook object itself, as tmws writes it.
    fn hook(self, p: &Placement, program: &str) -> Value {
        let command = brief_command(program, p.moment, self);
        match self {
            HookClient::Claude | HookClient::Codex => {
                json!({"type": "command", "command": command, "timeout": TIMEOUT_SECS})
            }
            HookClient::Gemini => json!({
                "name": format!("tmws-{}", p.moment.as_str()),
                "type": "command",
                "command": command,
                "timeout": TIMEOUT_SECS * 1000,
            }),
            HookClient::Copilot => {
                let mut m = Map::new();
                m.insert("type".into(), json!("command"));
                m.insert("bash".into(), json!(command));
                m.insert("powershell".into(), json!(powershell_command(program, p.moment, self)));
                if let Some(matcher) = p.matcher {
                    m.insert("matcher".into(), json!(matcher));
                }
                m.insert("timeoutSec".into(), json!(TIMEOUT_SECS));
                Value::Object(m)
            }
        }
    }

    /// What one placement adds to its event's array: a group, or a flat entry.
    fn unit(self, p: &Placement, program: &str) -> Value {
        let hook = self.hook(p, program);
        if !self.grouped() {
            return hook;
        }
        let mut m = Map::new();
        if let Some(matcher) = p.matcher {
            m.insert("matcher".into(), json!(matcher));
        }
        m.insert("hooks".into(), Value::Array(vec![hook]));
        Value::Object(m)
    }

    /// The command strings of a hook object (Copilot has one per shell).
    fn commands(self, hook: &Value) -> Vec<&str> {
        let keys: &[&str] = if self.grouped() { &["command"] } else { &["bash", "command", "powershell"] };
        keys.iter().filter_map(|k| hook.get(*k).and_then(Value::as_str)).collect()
    }

    /// A new file holding only tmws' hooks.
    fn fresh(self, program: &str) -> Value {
        let mut hooks = Map::new();
        for p in self.placements() {
            let list = hooks.entry(p.event).or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = list {
                a.push(self.unit(p, program));
            }
        }
        let mut doc = Map::new();
        if self == HookClient::Copilot {
            doc.insert("version".into(), json!(1));
        }
        doc.insert("hooks".into(), Value::Object(hooks));
        Value::Object(doc)
    }
}

/// The command a hook runs: `PROGRAM brief --event MOMENT --client CLIENT || true`, the
/// program single-quoted for the shell when it is a path with characters a shell would read.
/// `|| true` because exit 2 blocks the prompt or the tool in every client (any failure
/// does in Copilot's `preToolUse`), and a tmws without `brief` (an older one on PATH)
/// exits 2 on its usage error: a hook must never stop the agent.
pub fn brief_command(program: &str, moment: Moment, client: HookClient) -> String {
    format!("{} brief --event {} --client {} || true", shell_word(program), moment.as_str(), client.name())
}

/// The same for PowerShell, where a quoted program needs the call operator and the exit
/// status is made 0 by `exit 0`.
fn powershell_command(program: &str, moment: Moment, client: HookClient) -> String {
    let quoted = shell_word(program);
    let program = if quoted == program { quoted } else { format!("& {quoted}") };
    format!("{program} brief --event {} --client {}; exit 0", moment.as_str(), client.name())
}

fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The program of a command of tmws' own (`tmws`, a path to a tmws binary, quoted or not)
/// and the moment it briefs at; `None` for any other command.
pub fn tmws_brief(command: &str) -> Option<(String, Option<&str>)> {
    let command = command.trim().trim_start_matches("& ");
    let at = command.find(" brief --event ")?;
    let raw = command[..at].trim();
    let program = raw
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .map(|r| r.replace(r"'\''", "'"))
        .unwrap_or_else(|| raw.to_owned());
    let name = program.rsplit(['/', '\\']).next().unwrap_or("");
    if !named_tmws(name) {
        return None;
    }
    let moment = command[at + " brief --event ".len()..].split_whitespace().next();
    Some((program, moment))
}

/// Why a settings file could not be edited: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// How tmws' hooks stand in a file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Status {
    /// `EVENT (matcher M): brief --event X` for each hook install would add.
    pub missing: Vec<String>,
    /// The same for each hook of tmws' that install would change or remove.
    pub differs: Vec<String>,
}

impl Status {
    pub fn current(&self) -> bool {
        self.missing.is_empty() && self.differs.is_empty()
    }
}

/// What uninstalling leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// tmws had no hook there.
    Unchanged,
    /// The file without tmws' hooks.
    Text(String),
    /// Nothing but what tmws wrote was in the file: it goes.
    Nothing,
}

/// A hook of tmws' found in a file: its event, its index in the event's array, its index
/// inside the group (`None`: a flat entry, or a group holding only tmws' hook), and the
/// unit as written.
#[derive(Debug, Clone)]
struct Found {
    event: String,
    index: usize,
    inner: Option<usize>,
    unit: Value,
    program: String,
}

fn described(p: &Placement) -> String {
    match p.matcher {
        Some(m) => format!("{} (matcher `{m}`): brief --event {}", p.event, p.moment.as_str()),
        None => format!("{}: brief --event {}", p.event, p.moment.as_str()),
    }
}

/// Parses a settings file as the clients read it: JSON, comments allowed.
fn parse(text: &str) -> Result<Value, Invalid> {
    let options = jsonc_parser::ParseOptions { allow_loose_object_property_names: false, ..Default::default() };
    let value = jsonc_parser::parse_to_serde_value::<Value>(text, &options).map_err(|e| Invalid {
        line: e.line_display(),
        column: e.column_display(),
        message: format!("invalid JSON: {}", e.kind()),
    })?;
    let at = |pointer: &str, message: String| {
        let mut positions = super::json::Positions::new(text);
        let offset = positions.offset(pointer);
        let (line, column) = positions.line_cols(&[offset]).first().copied().unwrap_or((1, 1));
        Invalid { line, column, message }
    };
    match &value {
        Value::Null => return Ok(Value::Object(Map::new())),
        Value::Object(m) => match m.get("hooks") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err(at("/hooks", "`hooks` is not an object".into())),
        },
        _ => return Err(at("", "the document is not an object".into())),
    }
    Ok(value)
}

/// The hooks of tmws' in a parsed file.
fn found(client: HookClient, doc: &Value) -> Vec<Found> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else { return out };
    for (event, list) in hooks {
        let Some(list) = list.as_array() else { continue };
        for (index, unit) in list.iter().enumerate() {
            if !client.grouped() {
                if let Some(program) = client.commands(unit).iter().find_map(|c| tmws_brief(c)).map(|b| b.0) {
                    out.push(Found { event: event.clone(), index, inner: None, unit: unit.clone(), program });
                }
                continue;
            }
            let Some(inner) = unit.get("hooks").and_then(Value::as_array) else { continue };
            let ours: Vec<(usize, String)> = inner
                .iter()
                .enumerate()
                .filter_map(|(i, h)| client.commands(h).iter().find_map(|c| tmws_brief(c)).map(|b| (i, b.0)))
                .collect();
            if ours.len() == inner.len() && ours.len() == 1 {
                let program = ours[0].1.clone();
                out.push(Found { event: event.clone(), index, inner: None, unit: unit.clone(), program });
            } else {
                for (i, program) in ours {
                    let mut alone = unit.clone();
                    if let Some(h) = alone.get_mut("hooks") {
                        *h = Value::Array(vec![inner[i].clone()]);
                    }
                    out.push(Found { event: event.clone(), index, inner: Some(i), unit: alone, program });
                }
            }
        }
    }
    out
}

/// The program the file's hooks run: `tmws` when one of tmws' hooks there runs it from
/// PATH already (a machine's path never replaces it), else `program`.
fn program_for(found: &[Found], program: &str) -> String {
    if found.iter().any(|f| f.program == "tmws") { "tmws".to_owned() } else { program.to_owned() }
}

/// Which found hooks match a placement exactly (the first such for each placement), and
/// which placements have none.
fn matched(client: HookClient, found: &[Found], program: &str) -> (Vec<Option<usize>>, Vec<bool>) {
    let mut keep = vec![false; found.len()];
    let mut of_placement = Vec::new();
    for p in client.placements() {
        let wanted = client.unit(p, program);
        let hit = found.iter().enumerate().position(|(i, f)| !keep[i] && f.event == p.event && f.unit == wanted);
        if let Some(i) = hit {
            keep[i] = true;
        }
        of_placement.push(hit);
    }
    (of_placement, keep)
}

/// How tmws' hooks stand in `text` (`None`: no file) against what install would write
/// with `program`.
pub fn status(client: HookClient, text: Option<&str>, program: &str) -> Result<Status, Invalid> {
    let doc = match text.filter(|t| !t.trim().is_empty()) {
        None => Value::Object(Map::new()),
        Some(t) => parse(t)?,
    };
    let found = found(client, &doc);
    let program = program_for(&found, program);
    let (of_placement, keep) = matched(client, &found, &program);
    let mut status = Status::default();
    for (p, hit) in client.placements().iter().zip(&of_placement) {
        if hit.is_none() {
            let present =
                found.iter().any(|f| f.event == p.event && f.unit.to_string().contains(&brief_marker(p.moment)));
            if present {
                status.differs.push(described(p));
            } else {
                status.missing.push(described(p));
            }
        }
    }
    for (f, kept) in found.iter().zip(&keep) {
        let moment = f.unit.to_string().contains(" brief --event ");
        if !kept && moment && !status.differs.iter().any(|d| d.starts_with(&f.event)) {
            status.differs.push(format!("{}[{}]: a hook of tmws' that install would remove", f.event, f.index));
        }
    }
    Ok(status)
}

fn brief_marker(moment: Moment) -> String {
    format!(" brief --event {} ", moment.as_str())
}

/// The file with tmws' hooks as install writes them (`None`: it is so already). A new file
/// holds only them; in a file that exists, a hook of tmws' that differs is taken out, and
/// each missing one appended to its event's array, creating the array and `hooks` where
/// needed.
pub fn install(client: HookClient, text: Option<&str>, program: &str) -> Result<Option<String>, Invalid> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let mut out = serde_json::to_string_pretty(&client.fresh(program)).unwrap_or_default();
        out.push('\n');
        return Ok(Some(out));
    };
    let doc = parse(text)?;
    let found = found(client, &doc);
    let program = program_for(&found, program);
    let (of_placement, keep) = matched(client, &found, &program);
    if of_placement.iter().all(Option::is_some) && keep.iter().all(|k| *k) {
        return Ok(None);
    }
    // A hook of tmws' for the same moment that differs (a hand edit, an older form) is
    // put right where it is; the rest of tmws' that no placement wants go.
    let mut fixed: Vec<Option<usize>> = of_placement.clone();
    let mut replaced = Vec::new();
    for (p, slot) in client.placements().iter().zip(fixed.iter_mut()) {
        if slot.is_some() {
            continue;
        }
        let marker = brief_marker(p.moment);
        let stale = found.iter().enumerate().position(|(i, f)| {
            !keep[i]
                && !replaced.iter().any(|(j, _)| *j == i)
                && f.event == p.event
                && f.inner.is_none()
                && f.unit.to_string().contains(&marker)
        });
        if let Some(i) = stale {
            replaced.push((i, client.unit(p, &program)));
            *slot = Some(i);
        }
    }
    let cst = cst(text)?;
    if let Some(hooks) = cst.object_value().and_then(|r| r.object_value("hooks")) {
        for (i, unit) in &replaced {
            let f = &found[*i];
            let node = hooks.array_value(&f.event).and_then(|a| a.elements().into_iter().nth(f.index));
            if let Some(object) = node.and_then(|n| n.as_object()) {
                object.replace_with(input(unit));
            }
        }
    }
    let gone: Vec<&Found> = found
        .iter()
        .enumerate()
        .filter(|(i, _)| !keep[*i] && !replaced.iter().any(|(j, _)| j == i))
        .map(|(_, f)| f)
        .collect();
    remove(&cst, &gone);
    let root = cst.object_value_or_set();
    if client == HookClient::Copilot && root.get("version").is_none() {
        root.insert(0, "version", jsonc_parser::cst::CstInputValue::Number("1".into()));
    }
    let hooks = root.object_value_or_set("hooks");
    for (p, hit) in client.placements().iter().zip(&fixed) {
        if hit.is_none() {
            hooks.array_value_or_set(p.event).append(input(&client.unit(p, &program)));
        }
    }
    Ok(Some(cst.to_string()))
}

/// The file without tmws' hooks. An event's array or the `hooks` object left empty by
/// taking them out goes too; a file left holding nothing else (Copilot: but its version)
/// goes altogether (an empty settings file means nothing to any client).
pub fn uninstall(client: HookClient, text: Option<&str>) -> Result<Left, Invalid> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else { return Ok(Left::Unchanged) };
    let doc = parse(text)?;
    let found = found(client, &doc);
    if found.is_empty() {
        return Ok(Left::Unchanged);
    }
    let cst = cst(text)?;
    let all: Vec<&Found> = found.iter().collect();
    remove(&cst, &all);
    let root = cst.object_value_or_set();
    if let Some(hooks) = root.object_value("hooks") {
        for prop in hooks.properties() {
            let emptied = prop.array_value().is_some_and(|a| a.elements().is_empty())
                && found.iter().any(|f| prop.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some(&f.event));
            if emptied {
                prop.remove();
            }
        }
        if let Some(prop) = root.get("hooks").filter(|_| hooks.properties().is_empty()) {
            prop.remove();
        }
    }
    let left = cst.to_string();
    let rest = parse(&left).unwrap_or(Value::Null);
    let nothing_else = rest
        .as_object()
        .is_some_and(|m| m.iter().all(|(k, v)| client == HookClient::Copilot && k == "version" && *v == json!(1)));
    if nothing_else && !left.contains("//") && !left.contains("/*") {
        return Ok(Left::Nothing);
    }
    Ok(Left::Text(left))
}

fn cst(text: &str) -> Result<jsonc_parser::cst::CstRootNode, Invalid> {
    jsonc_parser::cst::CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).map_err(|e| Invalid {
        line: e.line_display(),
        column: e.column_display(),
        message: format!("invalid JSON: {}", e.kind()),
    })
}

/// Takes the found hooks out of the CST, the last of each array first so that the indices
/// of the others hold.
fn remove(cst: &jsonc_parser::cst::CstRootNode, gone: &[&Found]) {
    let Some(hooks) = cst.object_value().and_then(|r| r.object_value("hooks")) else { return };
    let mut order: Vec<&&Found> = gone.iter().collect();
    order.sort_by(|a, b| (&b.event, b.index, b.inner).cmp(&(&a.event, a.index, a.inner)));
    for f in order {
        let Some(list) = hooks.array_value(&f.event) else { continue };
        let Some(unit) = list.elements().into_iter().nth(f.index) else { continue };
        match f.inner {
            None => unit.remove(),
            Some(i) => {
                let inner = unit.as_object().and_then(|o| o.array_value("hooks"));
                if let Some(hook) = inner.and_then(|a| a.elements().into_iter().nth(i)) {
                    hook.remove();
                }
            }
        }
    }
}

/// A JSON value as the CST editor inserts it.
fn input(v: &Value) -> jsonc_parser::cst::CstInputValue {
    use jsonc_parser::cst::CstInputValue as C;
    match v {
        Value::Null => C::Null,
        Value::Bool(b) => C::Bool(*b),
        Value::Number(n) => C::Number(n.to_string()),
        Value::String(s) => C::String(s.clone()),
        Value::Array(a) => C::Array(a.iter().map(input).collect()),
        Value::Object(m) => C::Object(m.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_command_is_known_by_its_program_and_words() {
        assert_eq!(
            tmws_brief("tmws brief --event prompt --client claude || true"),
            Some(("tmws".into(), Some("prompt")))
        );
        let quoted = brief_command("/opt/my tools/tmws", Moment::PreTool, HookClient::Codex);
        assert_eq!(quoted, "'/opt/my tools/tmws' brief --event pre-tool --client codex || true");
        assert_eq!(tmws_brief(&quoted).map(|b| b.0), Some("/opt/my tools/tmws".into()));
        assert_eq!(
            tmws_brief("& '/x y/tmws.exe' brief --event prompt --client copilot").map(|b| b.0),
            Some("/x y/tmws.exe".into())
        );
        assert_eq!(tmws_brief("other brief --event prompt"), None);
        assert_eq!(tmws_brief("tmws search x"), None);
    }

    #[test]
    fn every_client_installs_then_uninstalls_to_the_same_bytes() {
        let text = "{\n  // mine\n  \"model\": \"x\",\n  \"hooks\": {\n    \"SessionStart\": [\n      {\n        \"hooks\": [ { \"type\": \"command\", \"command\": \"echo hi\" } ]\n      }\n    ]\n  }\n}\n";
        for client in HookClient::ALL {
            let installed = install(client, Some(text), "tmws").unwrap().unwrap();
            assert!(status(client, Some(&installed), "tmws").unwrap().current(), "{client:?}\n{installed}");
            assert_eq!(install(client, Some(&installed), "tmws").unwrap(), None, "{client:?}");
            let left = uninstall(client, Some(&installed)).unwrap();
            let expected = if client == HookClient::Copilot {
                text.replacen("{\n", "{\n  \"version\": 1,\n", 1)
            } else {
                text.to_owned()
            };
            assert_eq!(left, Left::Text(expected), "{client:?}");
        }
    }

    #[test]
    fn a_hook_of_tmws_inside_someone_elses_group_is_taken_out_alone() {
        let text = concat!(
            "{\n  \"hooks\": {\n    \"UserPromptSubmit\": [\n      {\n        \"hooks\": [\n",
            "          { \"type\": \"command\", \"command\": \"./audit.sh\" },\n",
            "          { \"type\": \"command\", \"command\": \"tmws brief --event prompt --client claude\" }\n",
            "        ]\n      }\n    ]\n  }\n}\n"
        );
        let before = status(HookClient::Claude, Some(text), "tmws").unwrap();
        assert_eq!(before.differs, ["UserPromptSubmit: brief --event prompt"], "{before:?}");
        let installed = install(HookClient::Claude, Some(text), "tmws").unwrap().unwrap();
        let doc: Value = serde_json::from_str(&installed).unwrap();
        let groups = doc["hooks"]["UserPromptSubmit"].as_array().unwrap();
        assert_eq!(groups[0]["hooks"], json!([{"type": "command", "command": "./audit.sh"}]), "{installed}");
        assert_eq!(groups[1], HookClient::Claude.unit(&HookClient::Claude.placements()[2], "tmws"));
        assert!(status(HookClient::Claude, Some(&installed), "tmws").unwrap().current());
        let Left::Text(left) = uninstall(HookClient::Claude, Some(&installed)).unwrap() else { panic!() };
        let doc: Value = serde_json::from_str(&left).unwrap();
        assert_eq!(
            doc["hooks"]["UserPromptSubmit"],
            json!([{"hooks": [{"type": "command", "command": "./audit.sh"}]}])
        );
    }

    #[test]
    fn a_file_left_holding_nothing_goes_away() {
        for client in HookClient::ALL {
            let fresh = install(client, None, "tmws").unwrap().unwrap();
            assert_eq!(uninstall(client, Some(&fresh)).unwrap(), Left::Nothing, "{client:?}");
        }
    }
}

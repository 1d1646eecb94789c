//! The commands that run a tool: `context`, `search`, `memory …`, `session record` and
//! `registry …`. Their flags are the tool's parameters; the engine runs the tool exactly
//! as it does for MCP and HTTP, and its text is printed as it is.

use std::io::{self, Read, Write};
use std::path::Path;

use serde_json::Value;

use super::args::{Leave, ToolArgs, Workspace};
use super::render::{self, esc, to_json};
use super::{AnswerFormat, Cli, Failure, MemoryCommand, RegistryCommand, TableFormat, Tool, engine};
use crate::error::Error;
use crate::query::api::{Format, Params, SearchRequest, ToolCallRequest, ToolSearchRequest};
use crate::query::catalog::Output;
use crate::query::registry::Pending;
use crate::query::{Answer, Engine, Reply};

/// The tool's arguments, with stdin read where the command takes it and the answer's format.
fn arguments<T: Params, L: Leave>(
    params: &ToolArgs<T, L>,
    format: Format,
) -> Result<serde_json::Map<String, Value>, Failure> {
    let mut args = params.args.clone();
    if let Some(param) = params.stdin {
        let mut text = String::new();
        io::stdin().read_to_string(&mut text).map_err(|e| Error::io(Path::new("<stdin>"), e))?;
        args.insert(param.to_owned(), Value::String(text));
    }
    args.insert("format".into(), Value::from(if format == Format::Json { "json" } else { "yaml" }));
    Ok(args)
}

/// Prints a tool's text (JSON ends with a newline too).
fn print(out: &mut impl Write, text: &str, format: Format) -> io::Result<()> {
    write!(out, "{text}")?;
    if format == Format::Json {
        writeln!(out)?;
    }
    Ok(())
}

/// Runs the tool `name` with the command's flags and prints its answer.
pub(super) fn tool<T: Params, L: Leave>(
    cli: &Cli,
    name: &str,
    tool: &Tool<T, L>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let format = cli.answer_format(tool.format);
    run(&engine(cli)?, name, arguments(&tool.params, format)?, out)
}

/// `tmws context`: the tool with a workspace; without one, the scopes there are and how
/// to make one.
pub(super) fn context(
    cli: &Cli,
    tool: &Tool<crate::query::api::ContextRequest, Workspace>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    if tool.params.args.contains_key("workspace") {
        return self::tool(cli, "workspace_get_context", tool, out);
    }
    let engine = engine(cli)?;
    let scopes = engine.scopes()?;
    let how = format!(
        "to create a workspace, run `tmws new overview NAME -w NAME --description TEXT`, or write \
{}/NAME/OVERVIEW.md with `name` and `description` in its front-matter",
        crate::layout::WORKSPACES_DIR
    );
    let format = match tool.format {
        Some(AnswerFormat::Yaml) => Format::Yaml,
        Some(AnswerFormat::Json) => Format::Json,
        None if cli.json => Format::Json,
        None => {
            render::scopes(out, &scopes, &how, cli.paint())?;
            return Ok(0);
        }
    };
    let value = serde_json::json!({ "scopes": scopes, "hint": how });
    print(out, &crate::query::answer::to_text(&value, format), format)?;
    Ok(0)
}

fn run(engine: &Engine, name: &str, args: serde_json::Map<String, Value>, out: &mut impl Write) -> Result<u8, Failure> {
    match engine.call_blocking(&engine.session(), name, args)? {
        Output::Text { text, format } => print(out, &text, format)?,
        Output::Downstream(_) => return Err(Error::Usage(format!("{name} runs through `registry call`")).into()),
    }
    Ok(0)
}

/// A typed reply as a table, or as the tool's text.
fn table_or_text<T: Answer>(
    reply: Reply<T>,
    table: impl Fn(&mut dyn Write, &T) -> io::Result<()>,
    format: TableFormat,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    match format {
        TableFormat::Table => {
            let mut buf = Vec::new();
            table(&mut buf, &reply.answer)?;
            out.write_all(&buf)?;
        }
        TableFormat::Yaml | TableFormat::Json => print(out, &reply.text(), reply.format)?,
    }
    Ok(0)
}

fn as_format(f: TableFormat) -> Format {
    if f == TableFormat::Json { Format::Json } else { Format::Yaml }
}

pub(super) fn search(
    cli: &Cli,
    params: &ToolArgs<SearchRequest>,
    format: Option<super::TableFormat>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let format = cli.table_format(format);
    let req = SearchRequest::from_args(arguments(params, as_format(format))?)?;
    let reply = engine(cli)?.search(&req)?;
    let paint = cli.paint();
    table_or_text(reply, |w, a| render::search_table(&mut &mut *w, a, paint), format, out)
}

/// `tmws new`: `entry_write`, with `--body -` read from stdin.
pub(super) fn new_entry(
    cli: &Cli,
    tool: &Tool<crate::query::api::EntryWriteRequest>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let mut args = arguments(&tool.params, cli.answer_format(tool.format))?;
    if args.get("body").and_then(Value::as_str) == Some("-") {
        let mut text = String::new();
        io::stdin().read_to_string(&mut text).map_err(|e| Error::io(Path::new("<stdin>"), e))?;
        args.insert("body".into(), Value::String(text));
    }
    run(&engine(cli)?, "entry_write", args, out)
}

pub(super) fn memory(cli: &Cli, cmd: &MemoryCommand, out: &mut impl Write) -> Result<u8, Failure> {
    match cmd {
        MemoryCommand::Add(t) => tool(cli, "memory_add", t, out),
        MemoryCommand::Search(t) => tool(cli, "memory_search", t, out),
        MemoryCommand::List(t) => tool(cli, "memory_list", t, out),
        MemoryCommand::Get(t) => tool(cli, "memory_get", t, out),
        MemoryCommand::Delete(t) => tool(cli, "memory_delete", t, out),
        MemoryCommand::Stats(t) => tool(cli, "memory_stats", t, out),
        MemoryCommand::Cleanup(t) => tool(cli, "memory_cleanup", t, out),
        MemoryCommand::Clear(t) => tool(cli, "memory_clear", t, out),
        MemoryCommand::Prune { below } => answer(cli, &engine(cli)?.memory_prune(*below)?, out),
        MemoryCommand::LinkCommit => answer(cli, &engine(cli)?.memory_link_commit()?, out),
        MemoryCommand::GcBranches => answer(cli, &engine(cli)?.memory_gc_branches()?, out),
    }
}

/// The answer of a command that is not a tool: YAML, or JSON with `--json`.
fn answer<T: serde::Serialize>(cli: &Cli, value: &T, out: &mut impl Write) -> Result<u8, Failure> {
    let format = cli.answer_format(None);
    print(out, &crate::query::answer::to_text(value, format), format)?;
    Ok(0)
}

pub(super) fn registry(cli: &Cli, cmd: &RegistryCommand, out: &mut impl Write) -> Result<u8, Failure> {
    match cmd {
        RegistryCommand::Build { force, timeout_ms, yes } => build(cli, *force, *timeout_ms, *yes, out),
        RegistryCommand::List => list(cli, out),
        RegistryCommand::Approve { servers, all, yes } => approve(cli, servers, *all, *yes, out),
        RegistryCommand::Search { params, format } => {
            let format = cli.table_format(*format);
            let req = ToolSearchRequest::from_args(arguments(params, as_format(format))?)?;
            let reply = engine(cli)?.tool_search(&req)?;
            let paint = cli.paint();
            table_or_text(reply, |w, a| render::tool_table(&mut &mut *w, a, paint), format, out)
        }
        RegistryCommand::Describe(t) => tool(cli, "tool_describe", t, out),
        RegistryCommand::Call { params } => call(cli, params, out),
    }
}

/// What the user said to the servers awaiting approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Yes,
    No,
    /// Nobody to ask: no terminal, and no `--yes`.
    NotAsked,
}

/// Shows the servers awaiting approval on stderr and asks, on a terminal, whether to
/// approve them; `yes` approves them without asking.
fn ask(pending: &[Pending], yes: bool) -> io::Result<Said> {
    use std::io::IsTerminal;
    if pending.is_empty() {
        return Ok(Said::Yes);
    }
    let mut err = io::stderr().lock();
    render::pending(&mut err, pending)?;
    if yes {
        return Ok(Said::Yes);
    }
    // A person must see what they approve: both ends of the question are a terminal.
    if !(io::stdin().is_terminal() && io::stderr().is_terminal()) {
        return Ok(Said::NotAsked);
    }
    let them = if pending.len() == 1 { "it" } else { "them" };
    write!(err, "Approve {them} and let tmws start {them}? [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    io::stdin().read_line(&mut answer)?;
    Ok(if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") { Said::Yes } else { Said::No })
}

/// The line that says how to approve what was not.
fn how_to_approve(pending: &[Pending], said: Said, yes_command: &str) -> String {
    let names: Vec<String> = pending.iter().map(|p| esc(&p.server)).collect();
    let why = if said == Said::No { "not approved" } else { "not approved (no terminal to ask on)" };
    format!(
        "tmws: {why}, so not started: {}; run `tmws registry approve {}` on a terminal to review them, or `{yes_command}` \
to approve them as shown",
        names.join(", "),
        names.join(" ")
    )
}

fn build(cli: &Cli, force: bool, timeout_ms: u64, yes: bool, out: &mut impl Write) -> Result<u8, Failure> {
    use crate::query::registry::Outcome;
    let engine = engine(cli)?;
    let review = engine.registry_review(&[])?;
    let said = ask(&review.pending, yes)?;
    if said == Said::Yes {
        engine.registry_grant(&review.pending)?;
    } else {
        eprintln!("{}", how_to_approve(&review.pending, said, "tmws registry build --yes"));
    }
    let built = engine.registry_build(force, std::time::Duration::from_millis(timeout_ms))?;
    for p in &built.problems {
        eprintln!("tmws: {}", esc(p));
    }
    let failed =
        built.outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Failed(_) | Outcome::AwaitingApproval)).count();
    if cli.json {
        let rows: Vec<Value> = built
            .outcomes
            .iter()
            .map(|(name, o)| match o {
                Outcome::Introspected { tools, cold_start_ms } => serde_json::json!({"server": name, "status": "introspected", "tools": tools, "cold_start_ms": cold_start_ms}),
                Outcome::Unchanged { tools } => serde_json::json!({"server": name, "status": "unchanged", "tools": tools}),
                Outcome::Failed(why) => serde_json::json!({"server": name, "status": "failed", "error": why}),
                Outcome::AwaitingApproval => serde_json::json!({"server": name, "status": "awaiting approval"}),
            })
            .collect();
        writeln!(out, "{}", to_json(&rows))?;
    } else {
        for (name, o) in &built.outcomes {
            match o {
                Outcome::Introspected { tools, cold_start_ms } => {
                    writeln!(out, "{}: {tools} tools, cold start {cold_start_ms} ms", esc(name))?;
                }
                Outcome::Unchanged { tools } => writeln!(out, "{}: unchanged ({tools} tools)", esc(name))?,
                Outcome::Failed(why) => writeln!(out, "{}: failed: {}", esc(name), esc(why))?,
                Outcome::AwaitingApproval => writeln!(out, "{}: awaiting approval (not started)", esc(name))?,
            }
        }
        if built.outcomes.is_empty() {
            writeln!(out, "no servers in {}", engine.config().registry.sources.join(", "))?;
        }
    }
    Ok(if failed > 0 || !built.problems.is_empty() { 1 } else { 0 })
}

fn list(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    let rows = engine(cli)?.registry_list()?;
    if cli.json {
        writeln!(out, "{}", to_json(&rows))?;
        return Ok(0);
    }
    let w = rows.iter().map(|r| r.server.chars().count()).max().unwrap_or(6).max(6);
    writeln!(out, "{:<w$}  tools  cold start  popularity  {:<17}  last error", "server", "approval")?;
    for r in &rows {
        let cold = r.cold_start_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
        writeln!(
            out,
            "{:<w$}  {:>5}  {:>10}  {:>10.2}  {:<17}  {}",
            esc(&r.server),
            r.tools,
            cold,
            r.popularity,
            r.approval,
            esc(r.error.as_deref().unwrap_or("-"))
        )?;
    }
    Ok(0)
}

/// `registry approve`: shows what each server runs, asks, approves; then one line per
/// server with what it runs.
fn approve(cli: &Cli, servers: &[String], all: bool, yes: bool, out: &mut impl Write) -> Result<u8, Failure> {
    use crate::query::registry::Outcome;
    if servers.is_empty() && !all {
        return Err(
            Error::Usage("name the servers to approve, or pass --all for every one awaiting approval".into()).into()
        );
    }
    let engine = engine(cli)?;
    let review = engine.registry_review(servers)?;
    // A server named on the command line that cannot start is the command's error.
    if !servers.is_empty()
        && let Some((_, why)) = review.unusable.first()
    {
        return Err(Error::Usage(why.clone()).into());
    }
    for (name, why) in &review.unusable {
        eprintln!("tmws: {}: cannot be approved: {}", esc(name), esc(why));
    }
    let said = ask(&review.pending, yes)?;
    if said != Said::Yes {
        let again = if all {
            "tmws registry approve --all --yes".to_owned()
        } else {
            format!("tmws registry approve {} --yes", servers.join(" "))
        };
        eprintln!("{}", how_to_approve(&review.pending, said, &esc(&again)));
        return Ok(1);
    }
    engine.registry_grant(&review.pending)?;
    let built = engine.registry_build(false, crate::query::registry::APPROVE_TIMEOUT)?;
    let failed: Vec<(&String, &String)> = built
        .outcomes
        .iter()
        .filter(|(n, _)| review.pending.iter().any(|p| p.server == **n))
        .filter_map(|(n, o)| if let Outcome::Failed(why) = o { Some((n, why)) } else { None })
        .collect();
    let rows: Vec<(&str, &str, bool)> = review
        .pending
        .iter()
        .map(|p| (p.server.as_str(), p.command.as_deref().or(p.url.as_deref()).unwrap_or_default(), false))
        .chain(review.approved.iter().map(|(n, runs)| (n.as_str(), runs.as_str(), true)))
        .collect();
    if cli.json {
        let v: Vec<Value> = rows
            .iter()
            .map(|(server, runs, already)| serde_json::json!({"server": server, "runs": runs, "already": already}))
            .collect();
        writeln!(out, "{}", to_json(&v))?;
    } else {
        for (server, runs, already) in &rows {
            let how = if *already { "already approved" } else { "approved" };
            writeln!(out, "{}: {how}: runs {}", esc(server), esc(runs))?;
        }
        if rows.is_empty() {
            writeln!(out, "nothing awaits approval")?;
        }
    }
    for (name, why) in &failed {
        eprintln!("tmws: {}: approved, but it could not be introspected: {}", esc(name), esc(why));
    }
    Ok(if failed.is_empty() { 0 } else { 1 })
}

/// `registry call`: the tool's text result (the whole result with `--json`); exit 1 when
/// the server says the call failed.
fn call(cli: &Cli, params: &ToolArgs<ToolCallRequest>, out: &mut impl Write) -> Result<u8, Failure> {
    let req = ToolCallRequest::from_args(params.args.clone())?;
    let engine = engine(cli)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let called = runtime.block_on(async {
        let called = engine.tool_call(&req).await;
        engine.shutdown().await;
        called
    })?;
    if cli.json {
        writeln!(out, "{}", to_json(&called.result))?;
    } else {
        write!(out, "{}", called.text())?;
    }
    Ok(u8::from(called.is_error))
}

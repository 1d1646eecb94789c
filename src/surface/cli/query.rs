//! The commands that run a tool (made from the tool table, see `tools`), and the
//! `memory` and `registry` commands that are not tools. A tool's flags are its parameters;
//! the engine runs it exactly as it does for MCP and HTTP, and its text is printed as it
//! is, or its list as a table.

use std::io::{self, Read, Write};
use std::path::Path;

use serde_json::Value;

use super::render::{self, esc, to_json};
use super::tools::ToolCommand;
use super::{Cli, Failure, MemoryCommand, RegistryCommand, Shown, engine};
use crate::error::Error;
use crate::query::api::Format;
use crate::query::catalog::{Answered, Output, Table};
use crate::query::registry::Pending;
use crate::query::tools::{ToolCallAnswer, ToolResults};
use crate::query::trust::TrustList;
use crate::query::{Engine, SearchAnswer};

/// Reads stdin whole.
fn read_stdin() -> Result<String, Failure> {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text).map_err(|e| Error::io(Path::new("<stdin>"), e))?;
    Ok(text)
}

/// Prints a tool's text (JSON ends with a newline too).
fn print(out: &mut impl Write, text: &str, format: Format) -> io::Result<()> {
    write!(out, "{text}")?;
    if format == Format::Json {
        writeln!(out)?;
    }
    Ok(())
}

/// Runs a tool's command: its flags (and stdin where the command takes it) as the tool's
/// arguments, its answer printed as the command shows it.
pub(super) fn tool<G>(cli: &Cli, cmd: &ToolCommand<G>, out: &mut impl Write) -> Result<u8, Failure> {
    let spec = cmd.tool.spec();
    let Some(command) = spec.cli else {
        return Err(Error::Usage(format!("{} has no command", spec.name)).into());
    };
    let shown = cli.shown_as(command.shape, cmd.format.as_deref());
    if let Some(optional) = command.optional
        && !cmd.args.contains_key(optional.param)
    {
        return scopes(cli, cmd.format.is_some().then_some(shown), out);
    }
    let mut args = cmd.args.clone();
    if let Some(param) = cmd.stdin {
        args.insert(param.to_owned(), Value::String(read_stdin()?));
    }
    if let Some(param) = command.dash_is_stdin
        && args.get(param).and_then(Value::as_str) == Some("-")
    {
        args.insert(param.to_owned(), Value::String(read_stdin()?));
    }
    let engine = engine(cli)?;
    if let Some(asks) = command.asks
        && args.get(asks.param).is_some_and(|v| v == &Value::Bool(true) || v.as_str() == Some("true"))
        && !cmd.yes
    {
        confirm(&engine, asks, &args)?;
    }
    if spec.hints.open_world {
        return downstream(cli, &engine, spec.name, args, out);
    }
    let format = match shown {
        Shown::Text(f) => f,
        Shown::Table(_) => Format::Json,
    };
    args.insert("format".into(), Value::from(if format == Format::Json { "json" } else { "yaml" }));
    let answered = engine.answer(&engine.session(), cmd.tool, args).map_err(|e| super::args::cli_error(e, cmd.tool))?;
    match shown {
        Shown::Table(table) => print_table(cli, table, &answered, out)?,
        Shown::Text(_) => print(out, &answered.text(), answered.format())?,
    }
    Ok(0)
}

/// Asks a person at a terminal whether to go on with what `asks` names; an error, with
/// nothing done, when they say no or nobody can be asked.
fn confirm(
    engine: &Engine,
    asks: crate::query::catalog::Asks,
    args: &serde_json::Map<String, Value>,
) -> Result<(), Failure> {
    use std::io::IsTerminal;
    let question = engine.question(asks.about, args)?;
    let flag = format!("--{}", asks.param.replace('_', "-"));
    // A person must see what they confirm: both ends of the question are a terminal.
    if !(io::stdin().is_terminal() && io::stderr().is_terminal()) {
        return Err(Error::Usage(format!(
            "{flag} asks first, and there is no terminal to ask on, so nothing was done: pass --yes to confirm it"
        ))
        .into());
    }
    let mut err = io::stderr().lock();
    write!(err, "{question} [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    io::stdin().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(());
    }
    Err(Error::Usage(format!("not confirmed, so nothing was done (run it without {flag} to skip it)")).into())
}

/// A list as aligned columns.
fn print_table(cli: &Cli, table: Table, answered: &Answered, out: &mut impl Write) -> Result<(), Failure> {
    let paint = cli.paint();
    let mut buf = Vec::new();
    let shown = match table {
        Table::Hits => answered.answer::<SearchAnswer>().map(|a| render::search_table(&mut buf, a, paint)),
        Table::Tools => answered.answer::<ToolResults>().map(|a| render::tool_table(&mut buf, a, paint)),
        Table::Trust => answered.answer::<TrustList>().map(|a| render::trust_table(&mut buf, a)),
    };
    match shown {
        Some(written) => written?,
        None => return Err(Error::Environment("the answer is not the list its table shows".into()).into()),
    }
    out.write_all(&buf)?;
    Ok(())
}

/// A tool another server answers: its text result (the whole result with `--json`); exit
/// 1 when the server says the call failed.
fn downstream(
    cli: &Cli,
    engine: &Engine,
    name: &str,
    args: serde_json::Map<String, Value>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::environment("cannot start the async runtime", e))?;
    let called = runtime.block_on(async {
        let called = engine.call(&engine.session(), name, args).await;
        engine.shutdown().await;
        called
    })?;
    let called: ToolCallAnswer = match called {
        Output::Downstream(called) => called,
        Output::Text { text, format, .. } => {
            print(out, &text, format)?;
            return Ok(0);
        }
    };
    if cli.json {
        writeln!(out, "{}", to_json(&called.result))?;
    } else {
        write!(out, "{}", called.text())?;
    }
    Ok(u8::from(called.is_error))
}

/// `tmws context` without a workspace: the scopes there are and how to make one, as a
/// list for a person, or as the text `--format` (or `--json`) asks for.
fn scopes(cli: &Cli, asked: Option<Shown>, out: &mut impl Write) -> Result<u8, Failure> {
    let engine = engine(cli)?;
    let scopes = engine.scopes()?;
    let how = format!(
        "to create a workspace, run `tmws new overview NAME -w NAME --description TEXT`, or write \
{}/NAME/OVERVIEW.md with `name` and `description` in its front-matter",
        crate::layout::WORKSPACES_DIR
    );
    let format = match asked {
        Some(Shown::Text(f)) => f,
        _ if cli.json => Format::Json,
        _ => {
            render::scopes(out, &scopes, &how, cli.paint())?;
            return Ok(0);
        }
    };
    let value = serde_json::json!({ "scopes": scopes, "hint": how });
    print(out, &crate::query::answer::to_text(&value, format), format)?;
    Ok(0)
}

pub(super) fn memory(cli: &Cli, cmd: &MemoryCommand, out: &mut impl Write) -> Result<u8, Failure> {
    match cmd {
        MemoryCommand::Tool(t) => tool(cli, t, out),
        MemoryCommand::Prune { below } => answer(cli, &engine(cli)?.memory_prune(*below)?, out),
        MemoryCommand::LinkCommit => answer(cli, &engine(cli)?.memory_link_commit()?, out),
        MemoryCommand::GcBranches => answer(cli, &engine(cli)?.memory_gc_branches()?, out),
    }
}

/// The answer of a command that is not a tool: YAML, or JSON with `--json`.
fn answer<T: serde::Serialize>(cli: &Cli, value: &T, out: &mut impl Write) -> Result<u8, Failure> {
    let format = if cli.json { Format::Json } else { Format::Yaml };
    print(out, &crate::query::answer::to_text(value, format), format)?;
    Ok(0)
}

pub(super) fn registry(cli: &Cli, cmd: &RegistryCommand, out: &mut impl Write) -> Result<u8, Failure> {
    match cmd {
        RegistryCommand::Build { force, timeout_ms, yes } => build(cli, *force, *timeout_ms, *yes, out),
        RegistryCommand::List => list(cli, out),
        RegistryCommand::Approve { servers, all, yes } => approve(cli, servers, *all, *yes, out),
        RegistryCommand::Tool(t) => tool(cli, t, out),
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

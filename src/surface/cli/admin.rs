//! The commands that run or tend tmws itself: `trust`, `review`, `hooks`, `git-hook install` and
//! `serve` (`tmws mcp` goes straight to the MCP surface).

use std::io::Write;

use super::render::{esc, to_json};
use super::{Cli, Failure, HooksCommand, ReviewCommand, TrustCommand, engine, root};
use crate::error::Error;
use crate::layout::TOKEN_FILE;
use crate::surface::http::{self, TokenSource};

pub(super) fn trust(cli: &Cli, cmd: &TrustCommand, out: &mut impl Write) -> Result<u8, Failure> {
    let engine = engine(cli)?;
    match cmd {
        // `--verifier` takes only `human`, which is who the command line verifies as.
        TrustCommand::Verify { agent, verifier: _, success, failure: _, evidence } => {
            let t = engine.trust_verify(agent, *success, evidence)?;
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
        TrustCommand::Tool(t) => return super::query::tool(cli, t, out),
    }
    Ok(0)
}

/// `tmws review [list|approve|reject]`: the proposals agents wrote, settled by the person at
/// this command line (`human`).
pub(super) fn review(cli: &Cli, cmd: Option<&ReviewCommand>, out: &mut impl Write) -> Result<u8, Failure> {
    use crate::query::review::{self, Reviewer, Supersede};
    let by = Reviewer::person("cli");
    let settled = match cmd {
        Some(ReviewCommand::Tool(t)) => return super::query::tool(cli, t, out),
        None => match super::tools::ToolCommand::<super::tools::Review>::first() {
            Some(t) => return super::query::tool(cli, &t, out),
            None => return Err(Error::Usage("no command lists proposals".into()).into()),
        },
        Some(ReviewCommand::Approve { ids, supersede, supersede_similar }) => {
            let also = Supersede { ids: supersede.clone(), similar: *supersede_similar };
            review::approve(&engine(cli)?, ids, &also, &by)?
        }
        Some(ReviewCommand::Reject { ids }) => review::reject(&engine(cli)?, ids, &by)?,
    };
    if cli.json {
        writeln!(out, "{}", to_json(&settled))?;
    } else {
        for s in &settled.settled {
            let verb = if s.decision == "approve" { "approved" } else { "rejected" };
            let also = if s.superseded.is_empty() {
                String::new()
            } else {
                format!(" (superseded {})", s.superseded.join(", "))
            };
            writeln!(out, "{verb} {}{also}", esc(&s.id))?;
        }
    }
    Ok(0)
}

/// `tmws hooks install|check|uninstall CLIENT…`: exit 1 when a check finds hooks missing
/// or different.
pub(super) fn hooks(cli: &Cli, cmd: &HooksCommand, out: &mut impl Write) -> Result<u8, Failure> {
    use crate::agent_hooks::HooksAction;
    let (clients, action) = match cmd {
        HooksCommand::Install { clients, check: false } => (clients, HooksAction::Install),
        HooksCommand::Install { clients, check: true } | HooksCommand::Check { clients } => {
            (clients, HooksAction::Check)
        }
        HooksCommand::Uninstall { clients } => (clients, HooksAction::Uninstall),
    };
    let clients: Vec<_> = clients.iter().map(|c| c.client()).collect();
    let exe = std::env::current_exe().ok();
    let report = crate::query::Engine::hooks(&root(cli)?, &clients, action, exe.as_deref())?;
    if cli.json {
        writeln!(out, "{}", to_json(&report))?;
    } else {
        for f in &report.files {
            let state = serde_json::to_value(f.state).ok().and_then(|v| v.as_str().map(str::to_owned));
            let state = state.unwrap_or_default();
            writeln!(out, "{state:<9}  {:<24}  {}", f.path, f.client.name())?;
            for d in &f.details {
                writeln!(out, "  {}", esc(d))?;
            }
        }
    }
    Ok(u8::from(report.stale()))
}

/// `tmws hook install`, the old name of `tmws git-hook install`, says so on stderr.
pub(super) fn old_hook_install(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    eprintln!("tmws: `tmws hook install` is now `tmws git-hook install`");
    hook_install(cli, out)
}

pub(super) fn hook_install(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    let exe = std::env::current_exe().map_err(|e| Error::environment("cannot find the tmws binary", e))?;
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

/// `tmws brief`: the briefing of a hook's payload (stdin), printed as its client takes
/// it; always exit 0.
pub(super) fn brief(
    cli: &Cli,
    event: &str,
    client: &str,
    timeout_ms: u64,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    use crate::query::brief::{self, Client, Event};
    let (Some(event), Some(client)) = (Event::parse(event), Client::parse(client)) else { return Ok(0) };
    let mut stdin = Vec::new();
    let cap = crate::parse::payload::MAX_PAYLOAD_BYTES as u64 + 1;
    if let Err(e) = std::io::Read::read_to_end(&mut std::io::Read::take(std::io::stdin().lock(), cap), &mut stdin) {
        tracing::warn!("cannot read the hook's payload: {e}");
        return Ok(0);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::Builder::new().name("tmws-brief".into()).spawn(move || {
        let _ = tx.send(brief::brief(event, client, &stdin));
    });
    if worker.is_err() {
        return Ok(0);
    }
    let Ok(briefed) = rx.recv_timeout(std::time::Duration::from_millis(timeout_ms)) else {
        tracing::warn!("the briefing took over {timeout_ms} ms: nothing printed");
        return Ok(0);
    };
    if cli.json {
        writeln!(out, "{}", to_json(&briefed))?;
    } else {
        write!(out, "{}", briefed.stdout)?;
    }
    Ok(0)
}

pub(super) fn model(cli: &Cli, out: &mut impl Write) -> Result<u8, Failure> {
    let s = engine(cli)?.model_status()?;
    if cli.json {
        writeln!(out, "{}", to_json(&s))?;
        return Ok(0);
    }
    if !s.active {
        writeln!(out, "model: {} (recall is by words only)", s.model)?;
    } else {
        writeln!(out, "model: {}", s.model)?;
        for (label, value) in [
            ("about", s.about.clone()),
            ("licence", s.licence.clone()),
            ("dimensions", s.dimensions.map(|d| d.to_string())),
            ("vocabulary", s.vocabulary.map(|v| format!("{v} tokens"))),
            ("sha256", s.sha256.clone().or_else(|| s.fingerprint.clone().map(|f| format!("{f}…")))),
        ] {
            if let Some(value) = value {
                writeln!(out, "{label}: {value}")?;
            }
        }
    }
    if let Some(m) = &s.memories {
        match (m.active, m.dimensions, m.max_tokens, &m.fingerprint) {
            (true, Some(dim), Some(tokens), Some(fp)) => {
                writeln!(out, "memories: encoder of {} ({dim} dimensions, the first {tokens} tokens, {fp})", m.folder)?
            }
            _ => writeln!(out, "memories: {} is not an encoder tmws runs (the log says why)", m.folder)?,
        }
    }
    let state = if s.current { "" } else { " (made by another model: the next sync makes them again)" };
    writeln!(out, "vectors: {} of {} items{state}", s.vectors, s.items)?;
    Ok(0)
}

pub(super) fn serve(cli: &Cli, addr: &str, agent: Option<&str>, out: &mut impl Write) -> Result<u8, Failure> {
    let root = root(cli)?;
    let addr = http::parse_addr(addr)?;
    let mut written = Ok(());
    http::serve(&root, addr, agent, |l| {
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

/// `tmws completions SHELL`: the completion script for the whole command tree.
pub(super) fn completions(shell: clap_complete::Shell, out: &mut impl Write) -> Result<u8, Failure> {
    let mut cmd = super::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tmws", &mut script);
    out.write_all(&script)?;
    Ok(0)
}

/// `tmws man`: one manual page (roff) for every command: the top page's name, synopsis,
/// description and options as clap_mangen renders them, then a subsection per command with
/// its synopsis, description, options and examples, then the environment and exit status.
pub(super) fn man(out: &mut impl Write) -> Result<u8, Failure> {
    use clap_mangen::Man;
    use clap_mangen::roff::{Roff, bold, roman};

    let mut cmd = super::command();
    cmd.build();
    let mut page = Vec::new();
    let top = Man::new(cmd.clone());
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;
    let mut roff = Roff::new();
    roff.control("SH", ["COMMANDS"]);
    page.extend(roff.to_roff().into_bytes());
    let mut stack: Vec<clap::Command> = cmd.get_subcommands().cloned().collect();
    stack.reverse();
    while let Some(sub) = stack.pop() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        let name = sub.get_bin_name().unwrap_or_else(|| sub.get_name()).to_owned();
        let mut heading = Roff::new();
        heading.control("SS", [name.as_str()]);
        page.extend(heading.to_roff().into_bytes());
        // The flags every command takes are on the top page; here only the command's own.
        let mut own = sub.clone();
        for id in ["root", "json", "color", "help", "version"] {
            if own.get_arguments().any(|a| a.get_id() == id) {
                own = own.mut_arg(id, |a| a.hide(true));
            }
        }
        let man = Man::new(own.clone());
        let mut parts = Vec::new();
        man.render_synopsis_section(&mut parts)?;
        man.render_description_section(&mut parts)?;
        if own.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut parts)?;
        }
        // The sections of a command's own page are paragraphs of its subsection here.
        let text = String::from_utf8_lossy(&parts).into_owned();
        for line in text.lines() {
            if line.starts_with(".SH") {
                page.extend(b".PP\n");
            } else if !line.starts_with(".ie ") && !line.starts_with(".el ") {
                page.extend(line.as_bytes());
                page.push(b'\n');
            }
        }
        if let Some(after) = sub.get_after_help() {
            page.extend(preformatted(&after.to_string()).into_bytes());
        }
        let at = stack.len();
        stack.extend(sub.get_subcommands().cloned());
        stack[at..].reverse();
    }
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    page.extend(roff.to_roff().into_bytes());
    if let Some(after) = cmd.get_after_help() {
        page.extend(preformatted(after.to_string().trim_start_matches("Examples:\n")).into_bytes());
    }
    let mut roff = Roff::new();
    roff.control("SH", ["ENVIRONMENT"]);
    for (var, what) in [
        ("TMWS_LOG", "the level of the logs on stderr (error, warn, info, debug, trace); warn by default"),
        ("TMWS_TOKEN", "the bearer token of tmws serve; else .tmws/cache/token"),
        ("NO_COLOR", "no colour with --color auto (the default) when set to a value that is not empty"),
        ("TMWS_PROGRESS_DELAY_MS", "how long a run goes before its progress line appears; 1000 by default"),
    ] {
        roff.control("TP", []).text([bold(var)]).text([roman(what)]);
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, what) in [
        ("0", "success"),
        ("1", "the command ran and found problems: check findings, no such scope or id, a failed server"),
        ("2", "a usage or environment error: a bad flag or value, no root, an unreadable config"),
    ] {
        roff.control("TP", []).text([bold(code)]).text([roman(what)]);
    }
    page.extend(roff.to_roff().into_bytes());
    top.render_version_section(&mut page)?;
    out.write_all(&page)?;
    Ok(0)
}

/// Text shown line for line (no filling), escaped for roff.
fn preformatted(text: &str) -> String {
    use clap_mangen::roff::{Roff, roman};
    let mut roff = Roff::new();
    roff.control("PP", []).control("nf", []);
    for line in text.lines() {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
    roff.to_roff()
}

/// `tmws verify`: the memories whose citations no longer hold; exit 1 when any is stale
/// (changed or missing).
pub(super) fn verify(
    cli: &Cli,
    options: crate::query::verify::Options,
    format: Option<super::CheckFormat>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    use super::CheckFormat;
    let fix = options.fix;
    let report = crate::query::verify::verify_with(&root(cli)?, options)?;
    match format.unwrap_or(if cli.json { CheckFormat::Json } else { CheckFormat::Human }) {
        CheckFormat::Json => writeln!(out, "{}", to_json(&report))?,
        CheckFormat::Human => {
            for f in &report.findings {
                for c in &f.cites {
                    writeln!(out, "{}:{}  {}  {}  {}", f.file, f.line, f.id, esc(&c.cite), esc(&c.state.describe()))?;
                }
            }
            let fixed = if fix { format!(", {} moved fixed", report.fixed) } else { String::new() };
            let stamped = if options.stamp { format!(", {} stamped with HEAD", report.stamped) } else { String::new() };
            writeln!(out, "{} citations checked, {} stale{fixed}{stamped}", report.checked, report.stale)?;
        }
        CheckFormat::Github => {
            // A workflow command's message ends at a line end; `%` starts an escape.
            let data = |s: &str| s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A");
            for f in &report.findings {
                for c in &f.cites {
                    let text = format!("{}: {} {}", f.id, esc(&c.cite), esc(&c.state.describe()));
                    writeln!(out, "::warning file={},line={}::{}", f.file, f.line, data(&text))?;
                }
            }
        }
    }
    Ok(u8::from(report.failed()))
}

//! The commands about the files themselves: `init`, `check`, `index`, `watch` and
//! `build-rules`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::render::{self, Paint, to_json};
use super::{CheckFormat, Cli, ClientArg, Failure, HookClientArg, cwd, engine};
use crate::check::CheckOptions;
use crate::error::Error;
use crate::init::{Action, McpClient};
use crate::query::{Engine, SyncOptions, SyncProgress, WatchUpdate};
use crate::store;
use crate::surface::progress::Progress;

pub(super) fn init(
    cli: &Cli,
    clients: &[ClientArg],
    hooks: &[HookClientArg],
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let cwd = cwd()?;
    let root = match &cli.root {
        Some(r) => cwd.join(r),
        None => store::init_root(&cwd).unwrap_or(cwd),
    };
    let clients: Vec<McpClient> = clients
        .iter()
        .map(|c| match c {
            ClientArg::Claude => McpClient::Claude,
            ClientArg::Cursor => McpClient::Cursor,
            ClientArg::Vscode => McpClient::Vscode,
            ClientArg::Codex => McpClient::Codex,
            ClientArg::Gemini => McpClient::Gemini,
        })
        .collect();
    let exe = std::env::current_exe().ok();
    let hooks: Vec<_> = hooks.iter().map(|h| h.client()).collect();
    let report = Engine::init(&root, &clients, &hooks, exe.as_deref())?;
    if cli.json {
        writeln!(out, "{}", to_json(&report))?;
        return Ok(0);
    }
    writeln!(out, "tmws root: {}", report.root.display())?;
    if let Some(main) = &report.joins {
        writeln!(
            out,
            "linked git worktree: joins the project of {} (approvals, usage and commit links are shared with it)",
            main.display()
        )?;
    }
    for c in &report.changes {
        let verb = match c.action {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
        };
        writeln!(out, "  {verb:<9}  {:<22}  {}", c.path, c.detail)?;
    }
    if !report.changed() {
        writeln!(out, "already initialised: nothing changed")?;
    }
    next_steps(out, &report, cli.paint())?;
    Ok(0)
}

/// What to do after `tmws init`, for a person: make a workspace unless there is one,
/// check, search, register an MCP client unless one was named, keep the index fresh.
fn next_steps(out: &mut impl Write, report: &crate::init::InitReport, paint: Paint) -> std::io::Result<()> {
    let root = &report.root;
    let workspaces = root.join(crate::layout::WORKSPACES_DIR);
    let has_workspace = store::list_subdirs(root, &workspaces).is_ok_and(|names| !names.is_empty());
    let has_client =
        report.changes.iter().any(|c| c.path.contains("mcp") || c.path.contains("codex") || c.path.contains(".gemini"));
    let mut steps: Vec<(String, &str)> = Vec::new();
    if !has_workspace {
        steps.push((
            "tmws new overview Acme -w acme --description TEXT".into(),
            "a workspace; then decisions, lessons, plans (tmws new --help)",
        ));
    }
    steps.push(("tmws check".into(), "validate what tmws owns (exit 1 on problems)"));
    steps.push(("tmws context".into(), "list the workspaces; `tmws context -w NAME` orients in one"));
    steps.push(("tmws search WORDS".into(), "search everything, memories and tools included"));
    if !has_client {
        steps.push(("tmws init --mcp-client claude".into(), "let an agent use tmws (or cursor, vscode)"));
    }
    steps.push(("tmws completions bash".into(), "shell completions (zsh, fish, powershell too)"));
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("next steps:"))?;
    let width = steps.iter().map(|(c, _)| c.chars().count()).max().unwrap_or(0);
    for (command, why) in &steps {
        writeln!(out, "  {}  {why}", paint.cyan(&format!("{command:<width$}")))?;
    }
    Ok(())
}

pub(super) fn check(
    cli: &Cli,
    paths: &[PathBuf],
    format: Option<CheckFormat>,
    strict: bool,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let counter = Arc::new(AtomicUsize::new(0));
    let opts =
        CheckOptions { root: cli.root.clone(), paths: paths.to_vec(), cwd: cwd()?, progress: Some(counter.clone()) };
    let progress = Progress::start(counter, "files checked");
    let report = Engine::check(&opts);
    progress.finish();
    let report = report?;
    match format.unwrap_or(if cli.json { CheckFormat::Json } else { CheckFormat::Human }) {
        CheckFormat::Human => render::human(out, &report, cli.paint())?,
        CheckFormat::Json => writeln!(out, "{}", to_json(&render::json_diagnostics(&report.diagnostics)))?,
        CheckFormat::Github => render::github(out, &report)?,
    }
    Ok(u8::from(report.failed(strict)))
}

pub(super) fn index(cli: &Cli, rebuild: bool, include: &[String], out: &mut impl Write) -> Result<u8, Failure> {
    if let Some(dir) = include.first() {
        let list = include.iter().map(|d| format!("\"{d}\"")).collect::<Vec<_>>().join(", ");
        return Err(Error::Usage(format!("--include {dir}: the flag is gone (the next sync dropped what it added)"))
            .with_hint(format!("add the folders to .tmws/config.toml for good: [index] include = [{list}]"))
            .into());
    }
    let engine = engine(cli)?;
    if let Some(why) = engine.open_index()? {
        eprintln!("tmws: rebuilt the index from the files: {why}");
    }
    let phases = Arc::new(SyncProgress::default());
    let progress = Progress::sync(phases.clone());
    let report = engine.sync_or_ask(&SyncOptions { rebuild, progress: Some(phases) });
    progress.finish();
    let report = report?;
    if cli.json {
        writeln!(out, "{}", to_json(&report))?;
    } else {
        let rebuilt = if report.rebuilt { " (rebuilt)" } else { "" };
        let by = report.by_pid.map(|p| format!(" by the tmws process {p} that keeps the index")).unwrap_or_default();
        writeln!(
            out,
            "indexed {} new, {} changed, {} removed in {} ms{rebuilt}{by}",
            report.new, report.changed, report.removed, report.millis
        )?;
    }
    Ok(0)
}

pub(super) fn watch(cli: &Cli, idle_exit: Option<u64>, out: &mut impl Write) -> Result<u8, Failure> {
    let engine = engine(cli)?;
    if let Some(why) = engine.open_index()? {
        eprintln!("tmws: rebuilt the index from the files: {why}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .map_err(|e| Error::environment("cannot handle Ctrl-C", e))?;
    eprintln!("watching {} (Ctrl-C to stop)", engine.root().display());
    let following = Arc::new(Mutex::new(None));
    let _idle = idle_exit.map(|secs| idle_watch(engine.root(), Duration::from_secs(secs), &stop, &following));
    let mut write_err = None;
    let paint = cli.paint();
    engine.watch(&stop, |update| {
        match update {
            WatchUpdate::Following => *lock(&following) = Some(Instant::now()),
            WatchUpdate::TookOver => *lock(&following) = None,
            _ => {}
        }
        let found = match &update {
            WatchUpdate::Applied(r) => checked(&engine, &r.changes),
            _ => None,
        };
        let r = render::watch_update(out, &update, found.as_deref(), cli.json, paint);
        if let Err(e) = r.and_then(|()| out.flush()) {
            write_err.get_or_insert(e);
            stop.store(true, Ordering::Relaxed);
        }
    })?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    Ok(0)
}

/// What `tmws check` finds in the files of a batch that are there (not removed), or None
/// when it could not run (it is logged).
fn checked(engine: &Engine, changes: &[(String, &'static str)]) -> Option<Vec<crate::model::Diagnostic>> {
    let root = engine.root();
    let paths: Vec<PathBuf> =
        changes.iter().filter(|(_, what)| *what != "removed").map(|(rel, _)| root.join(rel)).collect();
    if paths.is_empty() {
        return Some(Vec::new());
    }
    let opts = CheckOptions { root: Some(root.to_path_buf()), paths, cwd: root.to_path_buf(), progress: None };
    match Engine::check(&opts) {
        Ok(report) => Some(report.diagnostics),
        // A file removed again since the batch was applied: its syntax errors are said.
        Err(e) => {
            tracing::debug!("watch: cannot check the changed files: {e}");
            None
        }
    }
}

/// How long a `watch --idle-exit` that follows another process's commits stays: long
/// enough for the query that started it to exit and leave it the writer role.
const FOLLOW_GRACE: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A thread that stops the watch once no query from the command line asked for `idle`
/// (see `tmws::query::autowatch`), once it has followed another process (the keeper of
/// the index) for `FOLLOW_GRACE`, once the root is gone, or once its own binary was
/// replaced by an upgrade. It ends with the watch.
fn idle_watch(
    root: &Path,
    idle: Duration,
    stop: &Arc<AtomicBool>,
    following: &Arc<Mutex<Option<Instant>>>,
) -> std::thread::JoinHandle<()> {
    let (root, stop, following) = (root.to_path_buf(), stop.clone(), following.clone());
    let started = SystemTime::now();
    let exe = crate::query::autowatch::ExeStamp::of_current_exe();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(500));
            let asked = crate::query::autowatch::last_queried(&root).map_or(started, |t| t.max(started));
            let quiet = SystemTime::now().duration_since(asked).unwrap_or_default();
            let why = if !root.join(crate::layout::TMWS_DIR).is_dir() {
                "the root is gone".to_owned()
            } else if exe.as_ref().is_some_and(crate::query::autowatch::ExeStamp::replaced) {
                "its binary was replaced (an upgrade; the next query starts the new one)".to_owned()
            } else if quiet >= idle {
                format!("no query for {} s", idle.as_secs())
            } else if lock(&following).is_some_and(|since| since.elapsed() >= FOLLOW_GRACE) {
                "another tmws process keeps the index".to_owned()
            } else {
                continue;
            };
            eprintln!("tmws: {why}: watch stops");
            stop.store(true, Ordering::Relaxed);
        }
    })
}

pub(super) fn build_rules(cli: &Cli, check: bool, force: bool, out: &mut impl Write) -> Result<u8, Failure> {
    let report = engine(cli)?.build_rules(check, force)?;
    if cli.json {
        writeln!(out, "{}", to_json(&report))?;
    } else if report.up_to_date() {
        writeln!(
            out,
            "AGENTS.md and {} are up to date ({} rule files, {} lines)",
            crate::layout::LINKS_DIR,
            report.sources.len(),
            report.lines
        )?;
    } else {
        writeln!(out, "{}", if check { "stale:" } else { "done:" })?;
        let width = report.steps.iter().map(|s| s.path.chars().count()).max().unwrap_or(0);
        for s in &report.steps {
            let verb = if check { format!("would {}", s.action) } else { s.action.to_owned() };
            writeln!(out, "  {verb:<12}  {:<width$}  {}", s.path, s.detail)?;
        }
        if check {
            writeln!(out, "run `tmws build-rules` to bring them up to date")?;
        }
    }
    let stale = report.steps.iter().any(|s| s.action != "skip");
    Ok(u8::from(check && stale))
}

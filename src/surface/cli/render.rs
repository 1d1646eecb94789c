//! What a person sees: compiler-style findings, GitHub annotations, aligned result tables,
//! one line per watcher change; and JSON for scripts.
//!
//! Colour is decided once per command (`--color`, a terminal, `NO_COLOR`) and handed in
//! as a [`Paint`]; columns are padded before they are painted, so that escapes never
//! move them.

use std::io::{self, Write};

use crate::check::Report;
use crate::model::{Diagnostic, Severity};
use crate::parse::text::{cut, escape_controls};
use crate::query::context::ScopeSummary;
use crate::query::tools::ToolResults;
use crate::query::{SearchAnswer, WatchUpdate};

/// A text as a person may see it: secrets redacted, control characters escaped.
pub(super) fn esc(text: &str) -> String {
    escape_controls(&crate::redact::redact(text).text).into_owned()
}

/// A value as pretty JSON for scripts, its strings redacted.
pub(super) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut value = serde_json::to_value(value).unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}));
    crate::redact::redact_value(&mut value);
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// The JSON shape of diagnostics: exactly the fields docs/surfaces.md lists.
pub(super) fn json_diagnostics(diags: &[Diagnostic]) -> Vec<serde_json::Value> {
    diags
        .iter()
        .map(|d| {
            serde_json::json!({
                "path": d.path,
                "line": d.line,
                "column": d.column,
                "severity": d.severity.as_str(),
                "rule": d.rule.as_str(),
                "message": d.message,
            })
        })
        .collect()
}

/// Whether text is coloured, and the colours: SGR escapes, reset after each piece.
#[derive(Debug, Clone, Copy)]
pub(super) struct Paint {
    on: bool,
}

impl Paint {
    pub(super) fn new(on: bool) -> Paint {
        Paint { on }
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.on && !text.is_empty() { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    pub(super) fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }

    pub(super) fn red(self, text: &str) -> String {
        self.wrap("1;31", text)
    }

    pub(super) fn yellow(self, text: &str) -> String {
        self.wrap("1;33", text)
    }

    pub(super) fn green(self, text: &str) -> String {
        self.wrap("32", text)
    }

    pub(super) fn cyan(self, text: &str) -> String {
        self.wrap("36", text)
    }

    pub(super) fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
}

/// `text` padded with spaces to `width` characters.
fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

/// The servers that await the user's approval, as a person reads them before saying yes:
/// what each runs and where, the names (never the values) of its env, headers and the
/// user's variables it takes, and the files of the root it runs.
pub(super) fn pending(out: &mut impl Write, pending: &[crate::query::registry::Pending]) -> io::Result<()> {
    let n = pending.len();
    writeln!(
        out,
        "tmws: {n} server{} of the client configs {} new or changed since approved on this machine; nothing starts \
{} before you approve:",
        if n == 1 { "" } else { "s" },
        if n == 1 { "is" } else { "are" },
        if n == 1 { "it" } else { "them" }
    )?;
    for p in pending {
        let state = if p.new { "new".to_owned() } else { format!("changed: {}", p.changed.join(", ")) };
        writeln!(out, "  {} ({})", esc(&p.server), esc(&state))?;
        let list = |v: &[String]| esc(&v.join(", "));
        let rows = [
            ("runs", p.command.as_deref().map(esc)),
            ("in", p.cwd.as_deref().map(esc)),
            ("url", p.url.as_deref().map(esc)),
            ("env", (!p.env.is_empty()).then(|| list(&p.env))),
            ("headers", (!p.headers.is_empty()).then(|| list(&p.headers))),
            ("takes from your environment", (!p.uses_env.is_empty()).then(|| list(&p.uses_env))),
            ("files it runs", (!p.files.is_empty()).then(|| list(&p.files))),
        ];
        for (label, value) in rows {
            if let Some(v) = value {
                writeln!(out, "    {label}: {v}")?;
            }
        }
    }
    Ok(())
}

/// Compiler-style diagnostics: location, severity and rule, message, the line, a caret, a hint.
pub(super) fn human(out: &mut impl Write, report: &Report, paint: Paint) -> io::Result<()> {
    for d in &report.diagnostics {
        let sev = match d.severity {
            Severity::Error => paint.red(&format!("error[{}]", d.rule)),
            Severity::Warning => paint.yellow(&format!("warning[{}]", d.rule)),
        };
        let place = paint.bold(&format!("{}:{}:{}", esc(&d.path), d.line, d.column));
        writeln!(out, "{place}: {sev}: {}", paint.bold(&esc(&d.message)))?;
        if let Some(src) = &d.source {
            let num = d.line.to_string();
            let pad = " ".repeat(num.len());
            // A tab is one column; other control characters are escaped, which moves the
            // caret as much as the escape is wide.
            let raw: String = src.chars().take(200).collect::<String>().replace('\t', " ");
            let shown = esc(&raw);
            let col = raw
                .chars()
                .take(d.column.saturating_sub(1))
                .map(|c| esc(c.encode_utf8(&mut [0; 4])).chars().count())
                .sum::<usize>()
                + 1;
            let width = shown.chars().count();
            let col = (col - 1).min(width);
            let len = d.len.min(width.saturating_sub(col)).max(1);
            let caret = match d.severity {
                Severity::Error => paint.red(&"^".repeat(len)),
                Severity::Warning => paint.yellow(&"^".repeat(len)),
            };
            writeln!(out, "{pad} {}", paint.cyan("|"))?;
            writeln!(out, "{} {shown}", paint.cyan(&format!("{num} |")))?;
            writeln!(out, "{pad} {} {}{caret}", paint.cyan("|"), " ".repeat(col))?;
        }
        if let Some(hint) = &d.hint {
            let pad = " ".repeat(d.line.to_string().len());
            writeln!(out, "{pad} {} {}", paint.cyan("= hint:"), esc(hint))?;
        }
        writeln!(out)?;
    }
    if !report.diagnostics.is_empty() {
        let (e, w) = (report.errors(), report.warnings());
        let s = |n: usize| if n == 1 { "" } else { "s" };
        let errors = format!("{e} error{}", s(e));
        let errors = if e > 0 { paint.red(&errors) } else { errors };
        let warnings = format!("{w} warning{}", s(w));
        let warnings = if w > 0 { paint.yellow(&warnings) } else { warnings };
        writeln!(out, "{errors}, {warnings} in {} file{} checked", report.files, s(report.files))?;
    }
    Ok(())
}

/// GitHub Actions workflow commands, escaped as GitHub requires.
pub(super) fn github(out: &mut impl Write, report: &Report) -> io::Result<()> {
    fn data(s: &str) -> String {
        s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
    }
    fn prop(s: &str) -> String {
        data(s).replace(':', "%3A").replace(',', "%2C")
    }
    for d in &report.diagnostics {
        let level = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        writeln!(
            out,
            "::{level} file={},line={},col={}::[{}] {}",
            prop(&d.path),
            d.line,
            d.column,
            d.rule,
            data(&d.message)
        )?;
    }
    Ok(())
}

/// One result per line in aligned columns: score, kind, scope (a memory's namespace), refId,
/// then name and summary.
pub(super) fn search_table(out: &mut impl Write, results: &SearchAnswer, paint: Paint) -> io::Result<()> {
    for (from, to) in &results.corrected {
        writeln!(out, "{}", paint.dim(&format!("`{}` matches nothing: searched `{}`", esc(from), esc(to))))?;
    }
    for (from, to) in &results.did_you_mean {
        writeln!(out, "{}", paint.dim(&format!("`{}` matches nothing: did you mean `{}`?", esc(from), esc(to))))?;
    }
    if results.results.is_empty() {
        return writeln!(out, "no results for `{}`", esc(&results.query));
    }
    let kind_w = results.results.iter().map(|h| h.kind.len()).max().unwrap_or(0);
    let place = |h: &crate::query::SearchHit| h.scope.clone().or(h.namespace.clone()).unwrap_or_else(|| "-".into());
    let scope_w = results.results.iter().map(|h| esc(&place(h)).chars().count()).max().unwrap_or(0);
    let ref_w = results.results.iter().map(|h| esc(&h.ref_id).chars().count()).max().unwrap_or(0);
    for h in &results.results {
        let summary = esc(&cut(&h.summary.replace('\n', " "), 80));
        let name = paint.bold(&esc(&h.name));
        let text = match (h.name.is_empty(), summary.is_empty()) {
            (true, _) => summary,
            (false, true) => name,
            (false, false) => format!("{name}: {summary}"),
        };
        let score = paint.bold(&format!("{:>4}%", h.score));
        let kind = paint.cyan(&pad(&h.kind, kind_w));
        let place = paint.dim(&pad(&esc(&place(h)), scope_w));
        writeln!(out, "{score}  {kind}  {place}  {}  {text}", pad(&esc(&h.ref_id), ref_w))?;
    }
    Ok(())
}

/// One agent per line: name, score, successes, failures, when last verified.
pub(super) fn trust_table(out: &mut impl Write, list: &crate::query::trust::TrustList) -> io::Result<()> {
    let all = &list.agents;
    if all.is_empty() {
        return writeln!(out, "no verifications yet (tmws trust verify --agent A --success --evidence E)");
    }
    let w = all.iter().map(|t| esc(&t.agent).chars().count()).max().unwrap_or(5).max(5);
    writeln!(out, "{:<w$}  score  successes  failures  last verified", "agent")?;
    for t in all {
        writeln!(out, "{:<w$}  {:>5.2}  {:>9}  {:>8}  {}", esc(&t.agent), t.score, t.successes, t.failures, t.last)?;
    }
    Ok(())
}

/// One tool per line: score, server/tool, category, summary.
pub(super) fn tool_table(out: &mut impl Write, results: &ToolResults, paint: Paint) -> io::Result<()> {
    if results.results.is_empty() {
        return writeln!(out, "no tools for `{}`", esc(&results.query));
    }
    let name = |h: &crate::query::tools::ToolHit| format!("{}/{}", h.server, h.tool);
    let name_w = results.results.iter().map(|h| esc(&name(h)).chars().count()).max().unwrap_or(0);
    let cat_w =
        results.results.iter().map(|h| esc(h.category.as_deref().unwrap_or("-")).chars().count()).max().unwrap_or(0);
    for h in &results.results {
        let summary = cut(&h.summary.replace('\n', " "), 80);
        let category = h.category.as_deref().unwrap_or("-");
        let score = paint.bold(&format!("{:>4}%", h.score));
        let tool = paint.cyan(&pad(&esc(&name(h)), name_w));
        writeln!(out, "{score}  {tool}  {}  {}", paint.dim(&pad(&esc(category), cat_w)), esc(&summary))?;
    }
    Ok(())
}

/// One line per applied change; problems of changed files on stderr. With `json`, one
/// JSON object per line instead, problems on stdout too (they are data to a script) and a
/// failed sync as an error object on stderr.
/// What `watch` says of an update; `found` is what `tmws check` finds in the files an applied
/// batch changed (None for other updates, or when the check could not run: then the
/// batch's syntax errors are said instead).
pub(super) fn watch_update(
    out: &mut impl Write,
    update: &WatchUpdate<'_>,
    found: Option<&[Diagnostic]>,
    json: bool,
    paint: Paint,
) -> io::Result<()> {
    if json {
        return watch_json(out, update, found);
    }
    let report = match update {
        WatchUpdate::Synced(r) => {
            let rebuilt = if r.rebuilt { " (rebuilt)" } else { "" };
            writeln!(
                out,
                "{} {} new, {} changed, {} removed in {} ms; {} items{rebuilt}",
                paint.bold("synced:"),
                r.new,
                r.changed,
                r.removed,
                r.millis,
                r.items
            )?;
            r
        }
        WatchUpdate::Applied(r) => {
            for (path, what) in &r.changes {
                let verb = pad(what, 8);
                let verb = match *what {
                    "new" => paint.green(&verb),
                    "removed" => paint.red(&verb),
                    _ => paint.yellow(&verb),
                };
                writeln!(out, "{verb} {}", esc(path))?;
            }
            r
        }
        WatchUpdate::Syncing => return Ok(()),
        WatchUpdate::Following => return writeln!(out, "another tmws process holds the index: following its commits"),
        WatchUpdate::TookOver => return writeln!(out, "the index writer went away: this process took over"),
        WatchUpdate::ClientConfigs => {
            return writeln!(out, "client config changed: introspecting changed servers in the background");
        }
        WatchUpdate::Failed(e) => {
            eprintln!("tmws: sync failed: {} (the whole root is synced again shortly)", esc(&e.to_string()));
            return Ok(());
        }
    };
    for d in said(report, found) {
        eprintln!("{}:{}:{}: {}[{}]: {}", esc(&d.path), d.line, d.column, d.severity.as_str(), d.rule, esc(&d.message));
    }
    Ok(())
}

/// The findings `watch` says after a sync: every finding of `tmws check` for the changed
/// files when it ran, else the sync's own syntax errors.
fn said<'a>(report: &'a crate::query::SyncReport, found: Option<&'a [Diagnostic]>) -> Vec<&'a Diagnostic> {
    match found {
        Some(found) => found.iter().collect(),
        None => report.problems.iter().filter(|d| d.severity == Severity::Error).collect(),
    }
}

/// `watch --json`: what happened as one compact JSON object per line.
fn watch_json(out: &mut impl Write, update: &WatchUpdate<'_>, found: Option<&[Diagnostic]>) -> io::Result<()> {
    use serde_json::json;
    let line = |out: &mut dyn Write, mut v: serde_json::Value| {
        crate::redact::redact_value(&mut v);
        writeln!(out, "{v}")
    };
    let report = match update {
        WatchUpdate::Synced(r) => {
            line(
                out,
                json!({"event": "synced", "new": r.new, "changed": r.changed, "removed": r.removed,
                       "millis": r.millis, "items": r.items, "rebuilt": r.rebuilt}),
            )?;
            r
        }
        WatchUpdate::Applied(r) => {
            for (path, what) in &r.changes {
                line(out, json!({"event": "change", "change": what, "path": path}))?;
            }
            r
        }
        WatchUpdate::Syncing => return Ok(()),
        WatchUpdate::Following => return line(out, json!({"event": "following"})),
        WatchUpdate::TookOver => return line(out, json!({"event": "took_over"})),
        WatchUpdate::ClientConfigs => return line(out, json!({"event": "client_configs_changed"})),
        WatchUpdate::Failed(e) => {
            let answer = crate::error::ErrorAnswer::new(e, None);
            eprintln!("{}", serde_json::to_string(&answer).unwrap_or_default());
            return Ok(());
        }
    };
    for d in said(report, found) {
        let mut v = json!({"event": "problem"});
        if let (serde_json::Value::Object(m), Some(serde_json::Value::Object(d))) =
            (&mut v, json_diagnostics(std::slice::from_ref(d)).pop())
        {
            m.extend(d);
        }
        line(out, v)?;
    }
    Ok(())
}

/// The scopes of a root for `tmws context` without a workspace: one per line with its
/// overview's name and description, then how to make a workspace.
pub(super) fn scopes(out: &mut impl Write, scopes: &[ScopeSummary], how: &str, paint: Paint) -> io::Result<()> {
    if scopes.is_empty() {
        writeln!(out, "no workspaces yet")?;
    } else {
        writeln!(out, "{} (tmws context -w WORKSPACE [-d DOMAIN [-r REPOSITORY]]):", paint.bold("scopes"))?;
        let width = scopes.iter().map(|s| esc(&s.scope).chars().count()).max().unwrap_or(0);
        for s in scopes {
            let text = match (s.name.is_empty(), s.description.is_empty()) {
                (true, true) => paint.dim("(no OVERVIEW.md)"),
                (false, true) => paint.bold(&esc(&s.name)),
                (true, false) => esc(&cut(&s.description.replace('\n', " "), 100)),
                (false, false) => {
                    format!("{}: {}", paint.bold(&esc(&s.name)), esc(&cut(&s.description.replace('\n', " "), 100)))
                }
            };
            writeln!(out, "  {}  {text}", paint.cyan(&pad(&esc(&s.scope), width)))?;
        }
    }
    let mut how = how.to_owned();
    if let Some(first) = how.get(..1) {
        how.replace_range(..1, &first.to_uppercase());
    }
    writeln!(out, "{}.", esc(&how))
}

/// What the CLI prints of a message about its input: the one redaction every error it
/// writes goes through, clap's included, so that an argument holding a key or a token is
/// never echoed.
pub(super) fn shown(text: &str) -> String {
    crate::redact::redact(text).text
}

/// Writes an error to stderr: `tmws: what: why` and a hint line, or with `--json` one line
/// of `{"error", "category", "hint"}` as MCP and HTTP answer errors.
pub(super) fn report(answer: &crate::error::ErrorAnswer, json: bool) {
    let answer = crate::error::ErrorAnswer {
        error: shown(&answer.error),
        category: answer.category,
        hint: answer.hint.as_deref().map(shown),
    };
    if json {
        eprintln!("{}", serde_json::to_string(&answer).unwrap_or_default());
        return;
    }
    let esc = crate::parse::text::escape_controls;
    eprintln!("tmws: {}", esc(&answer.error));
    if let Some(hint) = &answer.hint {
        eprintln!("  hint: {}", esc(hint));
    }
}

/// Prints a parse error of clap's as clap does (in colour on a terminal), unless it echoes
/// a secret the command line was given (`--bogus "$(cat key.pem)"`, a key as a flag's
/// value): then as plain text with the secret redacted. Help and version are printed as
/// they are.
pub(super) fn print_parse_error(e: &clap::Error) {
    if e.use_stderr() {
        let text = e.render().to_string();
        let redacted = shown(&text);
        if redacted != text {
            eprint!("{redacted}");
            return;
        }
    }
    let _ = e.print();
}

/// A parse error of clap's as an error answer: its first paragraph is the error; its
/// tips, or else the usage line, the hint; both redacted (by [`report`]).
pub(super) fn usage_answer(e: &clap::Error) -> crate::error::ErrorAnswer {
    let text = shown(&e.render().to_string());
    let mut paragraphs = text.split("\n\n").map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "));
    let first = paragraphs.next().unwrap_or_default();
    let error = first.strip_prefix("error: ").unwrap_or(&first).to_owned();
    let rest: Vec<String> = paragraphs.collect();
    let tips: Vec<&str> = rest.iter().filter_map(|p| p.strip_prefix("tip: ")).collect();
    let hint = if tips.is_empty() {
        rest.iter().find_map(|p| p.strip_prefix("Usage: ")).map(|u| format!("usage: {u}; see --help"))
    } else {
        Some(tips.join("; "))
    };
    crate::error::ErrorAnswer { error, category: crate::error::Category::Usage, hint }
}

//! What a person sees: compiler-style findings, GitHub annotations, aligned result tables,
//! one line per watcher change; and JSON for scripts.

use std::io::{self, IsTerminal, Write};

use crate::check::Report;
use crate::model::{Diagnostic, Severity};
use crate::parse::text::{cut, escape_controls};
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

/// The JSON shape of diagnostics: exactly the fields of DESIGN §7.1.
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

struct Paint {
    on: bool,
}

impl Paint {
    fn stdout() -> Paint {
        Paint { on: io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() }
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
}

/// Compiler-style diagnostics: location, severity and rule, message, the line, a caret, a hint.
pub(super) fn human(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let paint = Paint::stdout();
    for d in &report.diagnostics {
        let sev = match d.severity {
            Severity::Error => paint.wrap("1;31", &format!("error[{}]", d.rule)),
            Severity::Warning => paint.wrap("1;33", &format!("warning[{}]", d.rule)),
        };
        writeln!(out, "{}:{}:{}: {sev}: {}", esc(&d.path), d.line, d.column, paint.wrap("1", &esc(&d.message)))?;
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
            writeln!(out, "{pad} |")?;
            writeln!(out, "{num} | {shown}")?;
            writeln!(out, "{pad} | {}{}", " ".repeat(col), paint.wrap("1;31", &"^".repeat(len)))?;
        }
        if let Some(hint) = &d.hint {
            let pad = " ".repeat(d.line.to_string().len());
            writeln!(out, "{pad} = hint: {}", esc(hint))?;
        }
        writeln!(out)?;
    }
    if !report.diagnostics.is_empty() {
        let (e, w) = (report.errors(), report.warnings());
        let s = |n: usize| if n == 1 { "" } else { "s" };
        writeln!(out, "{e} error{}, {w} warning{} in {} file{} checked", s(e), s(w), report.files, s(report.files))?;
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
pub(super) fn search_table(out: &mut impl Write, results: &SearchAnswer) -> io::Result<()> {
    if results.results.is_empty() {
        return writeln!(out, "no results for `{}`", esc(&results.query));
    }
    let kind_w = results.results.iter().map(|h| h.kind.len()).max().unwrap_or(0);
    let place = |h: &crate::query::SearchHit| h.scope.clone().or(h.namespace.clone()).unwrap_or_else(|| "-".into());
    let scope_w = results.results.iter().map(|h| place(h).chars().count()).max().unwrap_or(0);
    let ref_w = results.results.iter().map(|h| h.ref_id.chars().count()).max().unwrap_or(0);
    for h in &results.results {
        let summary = cut(&h.summary.replace('\n', " "), 80);
        let text = match (h.name.is_empty(), summary.is_empty()) {
            (true, _) => summary,
            (false, true) => h.name.clone(),
            (false, false) => format!("{}: {summary}", h.name),
        };
        let (place, ref_id) = (place(h), esc(&h.ref_id));
        writeln!(
            out,
            "{:>4}%  {:<kind_w$}  {:<scope_w$}  {ref_id:<ref_w$}  {}",
            h.score,
            h.kind,
            esc(&place),
            esc(&text)
        )?;
    }
    Ok(())
}

/// One tool per line: score, server/tool, category, summary.
pub(super) fn tool_table(out: &mut impl Write, results: &ToolResults) -> io::Result<()> {
    if results.results.is_empty() {
        return writeln!(out, "no tools for `{}`", esc(&results.query));
    }
    let name = |h: &crate::query::tools::ToolHit| format!("{}/{}", h.server, h.tool);
    let name_w = results.results.iter().map(|h| name(h).chars().count()).max().unwrap_or(0);
    let cat_w = results.results.iter().map(|h| h.category.as_deref().unwrap_or("-").chars().count()).max().unwrap_or(0);
    for h in &results.results {
        let summary = cut(&h.summary.replace('\n', " "), 80);
        let category = h.category.as_deref().unwrap_or("-");
        writeln!(out, "{:>4}%  {:<name_w$}  {:<cat_w$}  {}", h.score, esc(&name(h)), esc(category), esc(&summary))?;
    }
    Ok(())
}

/// One line per applied change; problems of changed files on stderr.
pub(super) fn watch_update(out: &mut impl Write, update: &WatchUpdate<'_>) -> io::Result<()> {
    let report = match update {
        WatchUpdate::Synced(r) => {
            let rebuilt = if r.rebuilt { " (rebuilt)" } else { "" };
            writeln!(
                out,
                "synced: {} new, {} changed, {} removed in {} ms; {} items{rebuilt}",
                r.new, r.changed, r.removed, r.millis, r.items
            )?;
            r
        }
        WatchUpdate::Applied(r) => {
            for (path, what) in &r.changes {
                writeln!(out, "{what:<8} {}", esc(path))?;
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
    for d in report.problems.iter().filter(|d| d.severity == Severity::Error) {
        eprintln!("{}:{}:{}: {}[{}]: {}", esc(&d.path), d.line, d.column, d.severity.as_str(), d.rule, esc(&d.message));
    }
    Ok(())
}

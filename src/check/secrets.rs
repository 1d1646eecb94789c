//! The `secret` finding (docs/trust-boundary.md#secrets): a secret in a file tmws owns — the
//! front-matter or body of a workspace document or rule, a line of a log, the registry, the config
//! — with its line and column, named by what it is and never shown.
//!
//! Markdown and TOML are searched as they are. JSON (a log line, the registry) is searched
//! string by string, as its values read once unescaped (`"password=\"x\""` holds
//! `password="x"`), and each secret is placed where its escaped form is in the file.

use serde_json::Value;

use crate::layout::FileKind;
use crate::model::{Diagnostic, Rule};
use crate::redact;

/// A secret in a file: its byte range and the rule that found it.
pub(super) type Span = (usize, usize, &'static str);

/// The secrets in a file of `kind`, as findings.
pub(super) fn in_file(kind: &FileKind, bytes: &[u8]) -> Vec<Diagnostic> {
    let text = String::from_utf8_lossy(bytes);
    spans(kind, &text)
        .into_iter()
        .map(|(offset, _, rule)| {
            let (line, column) = line_column(&text, offset);
            let title = redact::rule(rule).map_or("a secret", |r| r.title);
            Diagnostic::error(Rule::Secret, line, column, format!("{title} ({rule}) is written here"))
                .with_hint(hint(kind))
        })
        .collect()
}

/// Where the secrets of a file of `kind` are in its `text`.
pub(super) fn spans(kind: &FileKind, text: &str) -> Vec<Span> {
    match kind {
        FileKind::ScopeOverview { .. }
        | FileKind::TopicOverview { .. }
        | FileKind::Entry { .. }
        | FileKind::BadScope { .. }
        | FileKind::Rule
        | FileKind::Config
        | FileKind::Skills => plain(text),
        FileKind::MemoryLog { .. } | FileKind::Log | FileKind::OldUsage => {
            let mut out = Vec::new();
            let mut start = 0;
            for line in text.split_inclusive('\n') {
                out.extend(in_json(line).into_iter().map(|(a, b, rule)| (start + a, start + b, rule)));
                start += line.len();
            }
            out
        }
        FileKind::Registry | FileKind::SchemaOverride { .. } => in_json(text),
        FileKind::Markdown | FileKind::Other => Vec::new(),
    }
}

/// `line` (which starts at byte `start` of the file) with the secrets of `spans` on it
/// replaced by their marks, then redacted as any text is.
pub(super) fn shown_line(line: &str, start: usize, spans: &[Span]) -> String {
    let end = start + line.len();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for &(a, b, rule) in spans.iter().filter(|(a, b, _)| *a < end && *b > start) {
        let (a, b) = (a.max(start) - start, b.min(end) - start);
        if a < at || !line.is_char_boundary(a) || !line.is_char_boundary(b) {
            continue;
        }
        out.push_str(&line[at..a]);
        out.push_str(&redact::mark(rule));
        at = b;
    }
    out.push_str(&line[at..]);
    redact::redact(&out).text
}

fn plain(text: &str) -> Vec<Span> {
    redact::find(text).into_iter().map(|f| (f.start, f.end, f.rule)).collect()
}

/// What to do about a secret in a file of `kind`.
fn hint(kind: &FileKind) -> &'static str {
    match kind {
        FileKind::MemoryLog { .. } => {
            "delete the entry (tmws memory delete ID, then tmws memory cleanup) and rotate the secret: git history keeps it"
        }
        FileKind::Registry => {
            "run tmws registry build again (it stores secrets as ${VAR} or redacted) and rotate the secret"
        }
        _ => "remove it (refer to it as ${VAR} instead) and rotate it: git history keeps it",
    }
}

/// The secrets of a JSON text: each string value (and key) searched on its own, placed at
/// its escaped form in `text`; a text that is not JSON is searched as it is.
fn in_json(text: &str) -> Vec<Span> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_str::<Value>(trimmed) else {
        return plain(text);
    };
    let mut strings = Vec::new();
    collect(&value, &mut strings);
    let mut out = Vec::new();
    // Strings come in the order of the text (the JSON reader keeps it): each is looked for
    // after the one before.
    let mut cursor = 0;
    for s in strings {
        let found = redact::find(s);
        if found.is_empty() {
            continue;
        }
        let escaped = escape(s);
        let base = text[cursor..].find(&escaped).map(|i| cursor + i);
        for f in found {
            let secret = escape(&s[f.start..f.end]);
            let span = match base {
                Some(b) => match text[b..b + escaped.len()].find(&secret) {
                    Some(i) => (b + i, b + i + secret.len()),
                    None => (b, b + escaped.len()),
                },
                // Not found as written (an unusual escape): the rest of the line is marked.
                None => (cursor, text[cursor..].find('\n').map_or(text.len(), |i| cursor + i)),
            };
            out.push((span.0, span.1, f.rule));
        }
        if let Some(b) = base {
            cursor = b + escaped.len();
        }
    }
    out
}

/// `s` as it is written inside a JSON string.
fn escape(s: &str) -> String {
    let quoted = Value::String(s.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

fn collect<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|v| collect(v, out)),
        Value::Object(m) => {
            for (k, v) in m {
                out.push(k);
                collect(v, out);
            }
        }
        _ => {}
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(kind: FileKind, text: &str) -> Vec<(usize, usize, String)> {
        in_file(&kind, text.as_bytes()).into_iter().map(|d| (d.line, d.column, d.message)).collect()
    }

    #[test]
    fn a_secret_is_placed_at_its_line_and_column_and_never_shown() {
        let token = format!("ghp_{}", "Zq3Xv9Lm2Np8Rt5Wy7Bc4Df6Gh1Jk0Ab2Cd4");
        let md = format!("---\nname: Deploy\ntoken: {token}\n---\n\nUse é {token} here.\n");
        let got = findings(FileKind::Rule, &md);
        assert_eq!(
            got,
            vec![
                (3, 8, "a GitHub personal access token (github-pat) is written here".to_owned()),
                (6, 7, "a GitHub personal access token (github-pat) is written here".to_owned()),
            ]
        );
        assert!(got.iter().all(|(_, _, m)| !m.contains(&token)));
    }

    #[test]
    fn json_strings_are_searched_unescaped_and_placed_escaped() {
        let log = concat!(
            "{\"op\":\"add\",\"id\":\"m_000000000001\",\"content\":\"ok\"}\n",
            "{\"op\":\"add\",\"id\":\"m_000000000002\",\"content\":\"db \\\"password\\\": \\\"Tr0ub4dor&3\\\"\"}\n",
        );
        let got = findings(FileKind::MemoryLog { namespace: "long-term".into() }, log);
        assert_eq!(got.len(), 1, "{got:?}");
        let column = log.lines().nth(1).unwrap().find("Tr0ub4dor").unwrap() + 1;
        assert_eq!((got[0].0, got[0].1), (2, column));
        assert_eq!(got[0].2, "a value assigned to a secret-looking name (secret-assignment) is written here");
    }

    #[test]
    fn files_tmws_does_not_own_are_not_searched() {
        assert!(findings(FileKind::Markdown, "password = hunter2").is_empty());
    }
}

//! Secret redaction (DESIGN §2.3, §2.4): what tmws never writes to a file, an answer, an
//! error or a log.
//!
//! A secret is found by a rule of [`rules::RULES`]: a regular expression over a family of
//! formats (provider tokens with fixed prefixes, key blocks, JWTs, credentials in URLs and
//! connection strings, auth headers, values assigned to secret-looking names in code, env,
//! YAML, JSON and command-line forms), and a check on what it matched (a checksum, the
//! entropy, whether it is a placeholder or a reference such as `${TOKEN}`).
//!
//! Most text holds no secret, so a rule runs only when one of its keywords is in the text:
//! one Aho-Corasick pass over the text decides which of the expressions run at all. A
//! found secret is replaced by `[REDACTED:{rule}]`, which keeps the text readable and says
//! what was there; redacting twice changes nothing more.
//!
//! Documented examples are not secrets: a value that calls itself an example (AWS'
//! `AKIAIOSFODNN7EXAMPLE`, anything with `example` in it), a template (`<token>`,
//! `${TOKEN}`, `{{ secrets.X }}`) or a run of one character (`xxxx…`, `****`) is left as it
//! is. Other published samples (a JWT from a tutorial) are redacted like any other: their
//! shape alone cannot tell them apart, and redacting a sample costs a reader little.

pub(crate) mod rules;
#[cfg(test)]
mod suite;

use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde_json::Value;

pub(crate) use self::rules::secret_named;
use self::rules::{RULES, Rule};

/// The start of every mark: `[REDACTED:github-pat]`.
pub const MARK_PREFIX: &str = "[REDACTED";

/// What replaces a secret found by `rule`.
pub fn mark(rule: &str) -> String {
    format!("{MARK_PREFIX}:{rule}]")
}

/// One secret in a text: the rule that found it and its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub rule: &'static str,
    pub start: usize,
    pub end: usize,
}

/// The keyword automaton that picks the rules, and each rule's expression, compiled the
/// first time a text wakes it (a command that shows no candidate never pays for the rest).
struct Engine {
    regexes: Vec<OnceLock<Regex>>,
    keywords: AhoCorasick,
    /// For each keyword of the automaton, the rules it wakes.
    wakes: Vec<Vec<usize>>,
    /// Rules without keywords: they always run.
    always: Vec<usize>,
}

static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    let regexes = RULES.iter().map(|_| OnceLock::new()).collect();
    let mut words: Vec<String> = Vec::new();
    let mut wakes: Vec<Vec<usize>> = Vec::new();
    let mut always = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if rule.keywords.is_empty() {
            always.push(i);
        }
        for k in rule.keywords {
            let k = k.to_ascii_lowercase();
            match words.iter().position(|w| *w == k) {
                Some(at) => wakes[at].push(i),
                None => {
                    words.push(k);
                    wakes.push(vec![i]);
                }
            }
        }
    }
    let keywords = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&words)
        .unwrap_or_else(|e| panic!("redaction keywords: {e}"));
    Engine { regexes, keywords, wakes, always }
});

/// Every secret in `text`, in order, none overlapping another.
pub fn find(text: &str) -> Vec<Found> {
    let engine = &*ENGINE;
    let mut wanted = vec![false; RULES.len()];
    for &i in &engine.always {
        wanted[i] = true;
    }
    for m in engine.keywords.find_overlapping_iter(text) {
        for &i in &engine.wakes[m.pattern().as_usize()] {
            wanted[i] = true;
        }
    }
    let mut found: Vec<(usize, Found)> = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if !wanted[i] {
            continue;
        }
        let regex = engine.regexes[i]
            .get_or_init(|| Regex::new(rule.pattern).unwrap_or_else(|e| panic!("redaction rule {}: {e}", rule.id)));
        for caps in regex.captures_iter(text) {
            let Some(secret) = rules::secret_of(&caps) else { continue };
            // A value runs to the next parameter of a query string at most (`…&mode=x`).
            let value = rules::to_next_parameter(secret.as_str());
            if value.is_empty() || rules::ignored(value) || !(rule.check)(&caps, value) {
                continue;
            }
            found.push((i, Found { rule: rule.id, start: secret.start(), end: secret.start() + value.len() }));
        }
    }
    // A mark already in the text is not a secret, nor part of one (`https://[REDACTED:…]@`).
    let marks: Vec<(usize, usize)> = text
        .match_indices(MARK_PREFIX)
        .filter_map(|(at, _)| text[at..].find(']').map(|end| (at, at + end + 1)))
        .collect();
    if !marks.is_empty() {
        found.retain(|(_, f)| !marks.iter().any(|&(a, b)| f.start < b && a < f.end));
    }
    merge(found)
}

/// Overlapping finds as one, named by the first rule of the table among them (the most
/// specific: providers come before the generic rules).
fn merge(mut found: Vec<(usize, Found)>) -> Vec<Found> {
    found.sort_by(|a, b| a.1.start.cmp(&b.1.start).then(b.1.end.cmp(&a.1.end)).then(a.0.cmp(&b.0)));
    let mut out: Vec<(usize, Found)> = Vec::with_capacity(found.len());
    for (i, f) in found {
        match out.last_mut() {
            Some((j, last)) if f.start < last.end => {
                last.end = last.end.max(f.end);
                if i < *j {
                    *j = i;
                    last.rule = f.rule;
                }
            }
            _ => out.push((i, f)),
        }
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// `text` with its secrets replaced by marks, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub count: usize,
}

/// Redacts `text`.
pub fn redact(text: &str) -> Redacted {
    let found = find(text);
    if found.is_empty() {
        return Redacted { text: text.to_owned(), count: 0 };
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.start]);
        out.push_str(&mark(f.rule));
        at = f.end;
    }
    out.push_str(&text[at..]);
    Redacted { text: out, count: found.len() }
}

/// Redacts `text` in place; returns how many secrets were in it.
pub fn redact_in_place(text: &mut String) -> usize {
    let r = redact(text);
    if r.count > 0 {
        *text = r.text;
    }
    r.count
}

/// Redacts every string of `value` (object keys included) in place; returns how many
/// secrets there were.
pub fn redact_value(value: &mut Value) -> usize {
    match value {
        Value::String(s) => redact_in_place(s),
        Value::Array(a) => a.iter_mut().map(redact_value).sum(),
        Value::Object(m) => {
            let mut n = 0;
            if m.keys().any(|k| !find(k).is_empty()) {
                let old = std::mem::take(m);
                for (mut k, v) in old {
                    n += redact_in_place(&mut k);
                    m.insert(k, v);
                }
            }
            n + m.values_mut().map(redact_value).sum::<usize>()
        }
        _ => 0,
    }
}

/// The rule with id `id`.
pub(crate) fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, expected: &str) {
        let r = redact(input);
        assert_eq!(r.text, expected, "{input}");
        assert_eq!(redact(&r.text).text, r.text, "redacting twice changes nothing: {input}");
    }

    #[test]
    fn a_secret_becomes_a_mark_naming_its_rule() {
        check("gh ghp_0123456789abcdefghijABCDEFGHIJ012345 end", "gh [REDACTED:github-pat] end");
        check(
            "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "export GITHUB_TOKEN=[REDACTED:github-pat]",
        );
        check("password = hunter2", "password = [REDACTED:secret-assignment]");
        assert_eq!(redact("a ghp_0123456789abcdefghijABCDEFGHIJ012345 b xoxb-1234-5678-abcdefghij").count, 2);
    }

    #[test]
    fn every_rule_compiles() {
        for rule in RULES {
            assert!(Regex::new(rule.pattern).is_ok(), "{}", rule.id);
        }
    }

    #[test]
    fn text_without_keywords_is_returned_as_it_is() {
        for text in ["", "The token bucket refills every second.", "password reset flow", "Ask-me-anything sk-short"] {
            assert_eq!(redact(text), Redacted { text: text.to_owned(), count: 0 }, "{text}");
        }
    }

    #[test]
    fn every_string_of_a_value_is_redacted_keys_too() {
        let mut v = serde_json::json!({"a": ["password=hunter2"], "ghp_0123456789abcdefghijABCDEFGHIJ012345": 1});
        assert_eq!(redact_value(&mut v), 2);
        assert_eq!(v, serde_json::json!({"a": ["password=[REDACTED:secret-assignment]"], "[REDACTED:github-pat]": 1}));
    }
}

#[cfg(test)]
mod corpora {
    use std::collections::BTreeMap;

    use super::find;

    /// Documentation nobody here wrote holds secrets only where it shows one on purpose.
    /// Every find in the full corpora was read by a person: eleven are credentials printed
    /// in the docs (an APISIX admin key, EIP-8's test-vector secrets, ODBC passwords, a
    /// Basic header, a compose file's root password); one is not (`Whitetoken = White`, the
    /// output of a C example). A new find anywhere else fails the test.
    #[test]
    #[allow(clippy::print_stdout, reason = "the finds are printed for a person to judge with --nocapture")]
    fn the_corpora_hold_only_the_secrets_they_show_on_purpose() {
        let (dir, full) = crate::testing::corpora();
        let mut found: BTreeMap<String, usize> = BTreeMap::new();
        let mut files = 0;
        for f in crate::testing::markdown_files(&dir) {
            let Ok(text) = std::fs::read_to_string(&f) else { continue };
            files += 1;
            for secret in find(&text) {
                let rel = f.strip_prefix(&dir).unwrap_or(&f).display().to_string();
                println!("{rel}: {}: {:?}", secret.rule, &text[secret.start..secret.end]);
                *found.entry(format!("{rel} {}", secret.rule)).or_default() += 1;
            }
        }
        let total: usize = found.values().sum();
        println!("{total} finds in {files} files");
        let expected: BTreeMap<String, usize> = if full {
            [
                ("cpp-docs/docs/c-runtime-library/reference/ungetch-ungetwch-ungetch-nolock-ungetwch-nolock.md", 1),
                ("cpp-docs/docs/linux/connectionmanager-reference.md", 1),
                ("cpp-docs/docs/mfc/reference/cdaoworkspace-class.md", 1),
                ("cpp-docs/docs/mfc/reference/cdatabase-class.md", 1),
                ("eips/EIPS/eip-8.md", 2),
                ("ja-otel/blog/2022/apisix/index.md", 4),
                ("ja-otel/blog/2024/getting-started-with-otelsql/index.md", 1),
            ]
            .into_iter()
            .map(|(p, n)| (format!("{p} secret-assignment"), n))
            .chain([("ja-otel/blog/2022/k8s-otel-expose/index.md auth-header".to_owned(), 1)])
            .collect()
        } else {
            BTreeMap::new()
        };
        assert_eq!(found, expected, "finds in {files} files of {}", dir.display());
    }
}

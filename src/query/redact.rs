//! Secret redaction (DESIGN §2.3): what a memory must never store.
//!
//! Applied to content and summary before anything is written: API keys (`sk-…`, `AKIA…`,
//! `ghp_…`, `github_pat_…`, `xox[bp]-…`), private key blocks, and the values of
//! `password|token|secret|api_key = value` pairs. Each is replaced by `[REDACTED]`; the
//! caller learns how many.

use std::sync::LazyLock;

use regex::Regex;

/// What replaces a secret.
pub const MARK: &str = "[REDACTED]";

static PATTERNS: LazyLock<Vec<(Regex, bool)>> = LazyLock::new(|| {
    // (pattern, whether only its `value` group is replaced)
    [
        (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)", false),
        (r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}", false),
        (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", false),
        (r"\bghp_[A-Za-z0-9]{20,}", false),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", false),
        (r"\bxox[bp]-[A-Za-z0-9\-]{10,}", false),
        (
            r#"(?i)(?:\b|_)(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key)\b["']?\s*[:=]\s*(?P<value>"[^"\n]*"|'[^'\n]*'|[^\s,;]+)"#,
            true,
        ),
    ]
    .into_iter()
    .map(|(p, group)| (Regex::new(p).unwrap_or_else(|e| panic!("redaction pattern {p}: {e}")), group))
    .collect()
});

/// `text` with every secret replaced by `[REDACTED]`, and how many were.
pub fn redact(text: &str) -> (String, usize) {
    let mut out = text.to_owned();
    let mut count = 0;
    for (re, value_only) in PATTERNS.iter() {
        if !re.is_match(&out) {
            continue;
        }
        let replaced = re.replace_all(&out, |caps: &regex::Captures<'_>| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            if *value_only {
                let Some(v) = caps.name("value") else { return whole.to_owned() };
                if v.as_str().trim_matches(['"', '\'']) == MARK {
                    return whole.to_owned();
                }
                count += 1;
                let start = v.start() - caps.get(0).map_or(0, |m| m.start());
                format!("{}{MARK}", &whole[..start])
            } else {
                count += 1;
                MARK.to_owned()
            }
        });
        out = replaced.into_owned();
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_is_redacted_and_counted() {
        let cases = [
            ("key sk-abcdefghijklmnop1234 here", "key [REDACTED] here"),
            ("key sk-proj-AbCdEfGhIjKlMnOpQrStUv here", "key [REDACTED] here"),
            ("aws AKIAIOSFODNN7EXAMPLE end", "aws [REDACTED] end"),
            ("gh ghp_0123456789abcdefghijABCDEFGHIJ012345", "gh [REDACTED]"),
            ("pat github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "pat [REDACTED]"),
            ("slack xoxb-1234-5678-abcdefghij and xoxp-9999999999-x", "slack [REDACTED] and [REDACTED]"),
            (
                "pem:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nafter",
                "pem:\n[REDACTED]\nafter",
            ),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\ncut off", "[REDACTED]"),
            ("password = hunter2", "password = [REDACTED]"),
            ("DB_PASSWORD=hunter2 next", "DB_PASSWORD=[REDACTED] next"),
            ("token: abc.def.ghi", "token: [REDACTED]"),
            ("api_key=\"quoted value\"", "api_key=[REDACTED]"),
            ("\"secret\": \"s3cr3t\", \"x\": 1", "\"secret\": [REDACTED], \"x\": 1"),
            ("API-KEY: 12345", "API-KEY: [REDACTED]"),
            ("export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=[REDACTED]"),
        ];
        for (input, expected) in cases {
            let (out, n) = redact(input);
            assert_eq!(out, expected, "{input}");
            assert!(n >= 1, "{input}");
            assert!(!out.contains("hunter2") && !out.contains("s3cr3t"));
        }
        assert_eq!(redact("slack xoxb-1234-5678-abcdefghij and xoxp-9999999999-x").1, 2);
    }

    #[test]
    fn ordinary_text_is_left_alone_and_redaction_is_idempotent() {
        for text in ["The token bucket refills every second.", "Ask-me-anything sk-short", "password reset flow", ""] {
            assert_eq!(redact(text), (text.to_owned(), 0), "{text}");
        }
        let (once, _) = redact("password = hunter2 and sk-abcdefghijklmnop1234");
        assert_eq!(redact(&once), (once.clone(), 0));
    }
}

//! Issue references: which issue a branch name or a commit message speaks of.
//!
//! Three forms name an issue. A number of the project's own tracker (`#123`, `GH-123`,
//! a branch `feature/123-login`), a number of another repository (`owner/repo#12`,
//! `group/sub/project#12`), and a key of a Jira-style tracker (`PROJ-123`). Each has one
//! written form, its `Display`, which is what records and the index store, and a set of
//! search terms (`terms`): a reference to `owner/repo#12` is also found by `#12`.
//!
//! The parsers are strict on purpose: a word is a reference only when the whole word is
//! one (after its surrounding punctuation), so `C#`, a hex sha, `v1.2-3`, a URL's
//! fragment and HTML's `&#123;` are not; and names that look like keys but are standards
//! or encodings (`UTF-8`, `SHA-256`, `ISO-8601`) are never keys. Nothing here fails or
//! panics, whatever the text.

use std::fmt;

/// The largest issue number read: larger numbers are ids, dates or hashes, not issues.
const MAX_NUMBER: u64 = 999_999_999;

/// Words shaped like a Jira key (`UTF-8`) that name a standard, an encoding, a licence or
/// an architecture, never an issue.
const NOT_KEYS: &[&str] = &[
    "AES", "AGPL", "GH", "ANSI", "ARM", "ASCII", "BASE", "BIP", "BLAKE", "BSD", "CC", "CP", "CRC", "CVE", "CWE", "DES",
    "EAN", "ECMA", "EIP", "ES", "GHSA", "GPL", "GPLV", "HTTP", "IEC", "IEEE", "ISO", "LGPL", "MD", "MPL", "OAUTH",
    "PEP", "PKCS", "RFC", "RSA", "SHA", "SSL", "TLS", "UCS", "UTC", "UTF", "WIN", "X86", "SEC", "TOP", "COVID",
];

/// What an issue reference names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IssueRef {
    /// A number of an issue: of the configured repository when `repo` is `None`, else of
    /// `repo` (`owner/name`, or a GitLab path `group/sub/name`).
    Number { repo: Option<String>, number: u64 },
    /// A key of a Jira-style tracker: the project (upper case) and the number.
    Key { project: String, number: u64 },
}

impl IssueRef {
    /// The number of the issue, whatever its form.
    pub fn number(&self) -> u64 {
        match self {
            IssueRef::Number { number, .. } | IssueRef::Key { number, .. } => *number,
        }
    }

    /// The terms a search for this reference matches, its written form first: `#12` for
    /// `owner/repo#12` too, so that "what was done for #12" finds it.
    pub fn terms(&self) -> Vec<String> {
        match self {
            IssueRef::Number { repo: Some(_), number } => vec![self.to_string(), format!("#{number}")],
            _ => vec![self.to_string()],
        }
    }
}

impl fmt::Display for IssueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueRef::Number { repo: None, number } => write!(f, "#{number}"),
            IssueRef::Number { repo: Some(repo), number } => write!(f, "{repo}#{number}"),
            IssueRef::Key { project, number } => write!(f, "{project}-{number}"),
        }
    }
}

/// The search terms of `refs`, each once, in order: what an index item of them holds.
pub fn terms_of<'a>(refs: impl IntoIterator<Item = &'a IssueRef>) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in refs.into_iter().flat_map(IssueRef::terms) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// A reference as a person types it: `123`, `#123`, `GH-123`, `owner/repo#12`,
/// `PROJ-123` (any case), or an issue's web address on GitHub, GitLab or Jira. `None` when
/// the text is none of these.
pub fn parse(text: &str) -> Option<IssueRef> {
    let t = text.trim();
    if t.len() > 512 {
        return None;
    }
    if let Some(r) = from_url(t) {
        return Some(r);
    }
    if let Some(n) = number(t) {
        return Some(IssueRef::Number { repo: None, number: n });
    }
    if let Some(rest) = t.strip_prefix("#") {
        return number(rest).map(|n| IssueRef::Number { repo: None, number: n });
    }
    if let Some((repo, n)) = t.rsplit_once('#') {
        return repo_ref(repo, n);
    }
    let (project, n) = t.rsplit_once('-')?;
    let n = number(n)?;
    if project.eq_ignore_ascii_case("gh") {
        return Some(IssueRef::Number { repo: None, number: n });
    }
    let project = project.to_ascii_uppercase();
    is_key_project(&project).then_some(IssueRef::Key { project, number: n })
}

/// The issue a branch name names, from its last segment: `feature/123-login` and
/// `123-login` give `#123`, `fix/gh-7-x` and `issue-7` give `#7`, `PROJ-123-login` gives
/// `PROJ-123`. A version (`v1.2-3`, `release/2024-01`) names none.
pub fn from_branch(name: &str) -> Option<IssueRef> {
    let name = name.strip_prefix("refs/heads/").unwrap_or(name);
    let last = name.rsplit('/').next()?;
    // `123`, `123-login`, `123_login`: a number that starts the segment and ends it or is
    // followed by a word.
    let digits = last.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let rest = &last[digits..];
        let worded = rest.is_empty()
            || (rest.starts_with(['-', '_']) && rest[1..].starts_with(|c: char| c.is_ascii_alphabetic()));
        return if worded { number(&last[..digits]).map(|n| IssueRef::Number { repo: None, number: n }) } else { None };
    }
    // `gh-7`, `issue-7`, `issues-7`, `PROJ-123`, each followed by the end or `-`/`_`.
    let mut parts = last.splitn(3, ['-', '_']);
    let head = parts.next()?;
    let n = parts.next().and_then(number)?;
    if head.eq_ignore_ascii_case("gh") || head.eq_ignore_ascii_case("issue") || head.eq_ignore_ascii_case("issues") {
        return Some(IssueRef::Number { repo: None, number: n });
    }
    // A key is upper case in a branch name: `fix-12-crash` is not the project `FIX`.
    (head.bytes().all(|b| !b.is_ascii_lowercase()) && is_key_project(head))
        .then(|| IssueRef::Key { project: head.to_string(), number: n })
}

/// Every reference a commit message (or any prose) makes, each once, in the order they
/// first appear: `#123`, `GH-123`, `owner/repo#12`, `Fixes #123`, `PROJ-123`.
pub fn from_message(text: &str) -> Vec<IssueRef> {
    let mut found: Vec<IssueRef> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
        if word.len() > 256 || word.contains("://") || word.starts_with("www.") {
            continue;
        }
        let word = word.trim_start_matches(['(', '[', '{', '<', '"', '\'', '`', '*', '_']);
        let word = word.trim_end_matches([')', ']', '}', '>', '"', '\'', '`', '*', '_', '.', ':', '!', '?']);
        if let Some(r) = from_word(word)
            && !found.contains(&r)
        {
            found.push(r);
        }
    }
    found
}

/// A whole word as a reference in prose: stricter than `parse` (a bare number is not one;
/// a key must be upper case).
fn from_word(word: &str) -> Option<IssueRef> {
    if let Some(rest) = word.strip_prefix('#') {
        return number(rest).map(|n| IssueRef::Number { repo: None, number: n });
    }
    if let Some((repo, n)) = word.rsplit_once('#') {
        return repo_ref(repo, n);
    }
    let (head, n) = word.split_once('-')?;
    let n = number(n)?;
    if head == "GH" || head == "gh" {
        return Some(IssueRef::Number { repo: None, number: n });
    }
    (head.bytes().all(|b| !b.is_ascii_lowercase()) && is_key_project(head))
        .then(|| IssueRef::Key { project: head.to_string(), number: n })
}

/// `owner/repo` and a number, when `repo` is a repository path: two to five segments of
/// letters, digits, `-`, `_` and `.`, none empty, none starting with a dot.
fn repo_ref(repo: &str, n: &str) -> Option<IssueRef> {
    let n = number(n)?;
    let segments: Vec<&str> = repo.split('/').collect();
    let valid = (2..=5).contains(&segments.len())
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.len() <= 100
                && !s.starts_with('.')
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        });
    valid.then(|| IssueRef::Number { repo: Some(repo.to_string()), number: n })
}

/// An issue's web address: `https://github.com/o/r/issues/12` (or `/pull/12`),
/// `https://gitlab.example/g/p/-/issues/12`, `https://x.atlassian.net/browse/PROJ-12`.
fn from_url(t: &str) -> Option<IssueRef> {
    let rest = t.strip_prefix("https://").or_else(|| t.strip_prefix("http://"))?;
    let (_, path) = rest.split_once('/')?;
    let path = path.split(['?', '#']).next()?.trim_end_matches('/');
    if let Some((_, key)) = path.rsplit_once("browse/") {
        return parse(key).filter(|r| matches!(r, IssueRef::Key { .. }));
    }
    let (repo, n) = path.rsplit_once("/issues/").or_else(|| path.rsplit_once("/pull/"))?;
    repo_ref(repo.trim_end_matches("/-"), n)
}

/// A Jira project key: a letter, then one to nine letters, digits or `_`, upper case, and
/// not a standard's name.
fn is_key_project(head: &str) -> bool {
    let b = head.as_bytes();
    (2..=10).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
        && !NOT_KEYS.contains(&head)
}

/// A positive decimal number without a leading zero, at most `MAX_NUMBER`.
fn number(text: &str) -> Option<u64> {
    let valid =
        !text.is_empty() && text.len() <= 9 && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
    valid.then(|| text.parse::<u64>().ok()).flatten().filter(|n| *n <= MAX_NUMBER)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::parse::fuzz::check;

    fn n(number: u64) -> IssueRef {
        IssueRef::Number { repo: None, number }
    }

    fn key(project: &str, number: u64) -> IssueRef {
        IssueRef::Key { project: project.to_string(), number }
    }

    fn written(refs: &[IssueRef]) -> Vec<String> {
        refs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn branch_names_name_their_issue() {
        let cases: &[(&str, Option<&str>)] = &[
            ("feature/123-login", Some("#123")),
            ("123-login", Some("#123")),
            ("123", Some("#123")),
            ("refs/heads/fix/45_crash", Some("#45")),
            ("PROJ-123-login", Some("PROJ-123")),
            ("feature/PROJ-123", Some("PROJ-123")),
            ("user/ABC2-7_x", Some("ABC2-7")),
            ("fix/gh-7-x", Some("#7")),
            ("issue-88", Some("#88")),
            ("issues_9-thing", Some("#9")),
            ("main", None),
            ("v1.2-3", None),
            ("release/1.2-3", None),
            ("release/2024-01", None),
            ("fix-12-crash", None),
            ("feature/login", None),
            ("UTF-8-fix", None),
            ("0-start", None),
            ("12abc", None),
            ("", None),
        ];
        for (branch, want) in cases {
            assert_eq!(from_branch(branch).map(|r| r.to_string()).as_deref(), *want, "{branch}");
        }
    }

    #[test]
    fn commit_messages_give_every_reference_once_in_order() {
        let cases: &[(&str, &[&str])] = &[
            ("Fixes #123", &["#123"]),
            ("Fix login (#12), see GH-34 and #12 again.", &["#12", "#34"]),
            ("Closes owner/repo#12; refs group/sub/proj#3", &["owner/repo#12", "group/sub/proj#3"]),
            ("PROJ-123: make the build green", &["PROJ-123"]),
            ("Refs [ABC-9], #1,#2", &["ABC-9", "#1", "#2"]),
            ("**#77** done", &["#77"]),
        ];
        for (message, want) in cases {
            assert_eq!(written(&from_message(message)), *want, "{message}");
        }
    }

    #[test]
    fn look_alikes_are_not_references() {
        for message in [
            "Rewrite the parser in C#",
            "C#7 pattern matching",
            "bump to deadbeefcafe1234567890abcdef12345678",
            "release v1.2-3",
            "read it as UTF-8, hash with SHA-256, date in ISO-8601",
            "see https://example.com/page#123 and https://x.org/#12",
            "www.example.com/#5",
            "escape &#123; in HTML",
            "CVE-2024-1234 patched",
            "x86 and X86-64 builds",
            "issue #0 and #0123",
            "the 2024-01-02 release",
            "proj-12 in lower case",
            "path/with/../dots#4",
            "a#1 b#2",
            "# A heading",
            "#1234567890 is too large",
        ] {
            assert_eq!(written(&from_message(message)), Vec::<String>::new(), "{message}");
        }
    }

    #[test]
    fn typed_references_are_read_in_every_usual_form() {
        let cases: &[(&str, Option<IssueRef>)] = &[
            ("123", Some(n(123))),
            (" #123 ", Some(n(123))),
            ("GH-123", Some(n(123))),
            ("gh-123", Some(n(123))),
            ("PROJ-123", Some(key("PROJ", 123))),
            ("proj-123", Some(key("PROJ", 123))),
            ("owner/repo#12", Some(IssueRef::Number { repo: Some("owner/repo".into()), number: 12 })),
            ("https://github.com/o/r/issues/5", Some(IssueRef::Number { repo: Some("o/r".into()), number: 5 })),
            (
                "https://gitlab.example/g/s/p/-/issues/6",
                Some(IssueRef::Number { repo: Some("g/s/p".into()), number: 6 }),
            ),
            ("https://x.atlassian.net/browse/AB-7?focused=1", Some(key("AB", 7))),
            ("utf-8", None),
            ("#", None),
            ("abc", None),
            ("0", None),
            ("owner#12", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), *want, "{text}");
        }
    }

    #[test]
    fn a_repository_reference_is_also_found_by_its_number() {
        let r = IssueRef::Number { repo: Some("o/r".into()), number: 12 };
        assert_eq!(r.terms(), ["o/r#12", "#12"]);
        assert_eq!(key("P", 1).terms(), ["P-1"]);
    }

    #[test]
    fn the_parsers_hold_on_any_text_and_written_forms_read_back() {
        let text = prop_oneof![
            any::<String>(),
            proptest::collection::vec(
                proptest::sample::select(vec![
                    "#", "-", "/", "GH", "PROJ", "UTF", "1", "12", "0", "a", " ", "(", ")", "://", "&", ",", "C", "x"
                ]),
                0..24
            )
            .prop_map(|parts| parts.concat()),
        ];
        check("issue_ref_holds", 2048, text, |text| {
            for r in from_message(&text) {
                // Every reference found in prose is typed back as itself.
                prop_assert_eq!(parse(&r.to_string()), Some(r.clone()));
                prop_assert!(r.number() > 0 && r.number() <= MAX_NUMBER);
            }
            if let Some(r) = from_branch(&text) {
                prop_assert_eq!(parse(&r.to_string()), Some(r));
            }
            let _ = parse(&text);
            Ok(())
        });
    }

    #[test]
    fn a_reference_written_into_a_message_is_found_again() {
        let reference = prop_oneof![
            (1u64..MAX_NUMBER).prop_map(n),
            ("[A-Z][A-Z0-9]{1,6}", 1u64..100_000)
                .prop_filter_map("not a standard", |(p, num)| { is_key_project(&p).then(|| key(&p, num)) }),
            ("[a-z][a-z0-9-]{0,8}/[a-z][a-z0-9_.-]{0,8}", 1u64..100_000)
                .prop_map(|(repo, number)| IssueRef::Number { repo: Some(repo), number }),
        ];
        let around =
            proptest::sample::select(vec![("", ""), ("Fixes ", "."), ("(", ")"), ("see ", ", thanks"), ("[", "]: x")]);
        check("issue_ref_found_again", 1024, (reference, around), |(r, (before, after))| {
            let message = format!("{before}{r}{after}");
            prop_assert_eq!(from_message(&message), vec![r.clone()], "{}", message);
            Ok(())
        });
    }
}

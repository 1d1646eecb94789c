//! Secret redaction (docs/trust-boundary.md#secrets): what tmws never writes to a file, an answer,
//! an error or a log.
//!
//! A secret is found by a rule of [`rules::RULES`]: a regular expression over a family of
//! formats (provider tokens with fixed prefixes, key blocks, JWTs, credentials in URLs and
//! connection strings, auth headers, values assigned to secret-looking names in code, env,
//! YAML, JSON and command-line forms), and a check on what it matched (a checksum, the
//! entropy, whether it is a placeholder or a reference such as `${TOKEN}`).
//!
//! Most text holds no secret, so a rule runs only where something woke it (see [`find`]):
//! a rarer word of its own, a name given a value that holds one of its words, a run of
//! token characters that holds a provider's prefix; and then only over a window around
//! that place, once its gate lets it. A found secret is replaced by `[REDACTED:{rule}]`,
//! which keeps the text readable and says what was there; redacting twice changes nothing
//! more. Expressions use ASCII classes: secrets and the names around them are ASCII.
//!
//! Documented examples are not secrets: a value that calls itself an example (AWS'
//! `AKIAIOSFODNN7EXAMPLE`, anything with `example` in it), a template (`<token>`,
//! `${TOKEN}`, `{{ secrets.X }}`) or a run of one character (`xxxx…`, `****`) is left as it
//! is. Other published samples (a JWT from a tutorial) are redacted like any other: their
//! shape alone cannot tell them apart, and redacting a sample costs a reader little.

mod decode;
mod prose;
pub(crate) mod rules;

use std::sync::{LazyLock, OnceLock};

use aho_corasick::Span;
use aho_corasick::packed;
use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;

pub(crate) use self::rules::secret_named;
use self::rules::{RULES, Rule, Scope, Window};

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

/// The shortest run of token characters that can hold a provider's token: every
/// [`Scope::Token`] and [`Scope::Runs`] expression matches at least this many (a test holds
/// the table to it).
pub(crate) const RUN_MIN: usize = 15;

/// The bytes of a run: what tokens, URLs and key material are written with. Quotes,
/// brackets, commas, spaces and anything outside ASCII end a run.
const RUN: [bool; 256] = {
    let mut class = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        class[b] = c.is_ascii_graphic()
            && !matches!(c, b'"' | b'\'' | b'`' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' | b',' | b'\\');
        b += 1;
    }
    class
};

/// The keyword searchers that pick the rules and the windows they run over, and each
/// rule's expression, compiled the first time a text wakes it (a command that shows no
/// candidate never pays for the rest).
struct Engine {
    regexes: Vec<OnceLock<Regex>>,
    /// The words (the keywords of [`Scope::Lines`], [`Scope::Text`] and [`Scope::Runs`]
    /// rules), lowercase, and the rules each wakes.
    words: Vec<(String, Vec<usize>)>,
    /// The fewest words that hold every word: what the text is searched for, by SIMD
    /// searchers over its lowercase copy. A packed searcher slows down more than its share
    /// as words are added (one of 52 words took twice as long as two of 34 and 18 on
    /// documentation: more false candidates in each of its buckets), so the ASCII words are
    /// in two: those of [`LATER_RULES`] in the second. The words of other scripts
    /// (`パスワード`, `ароль`) are in a third, searched only in a text that is not all ASCII.
    anchors: Anchors,
    later: Anchors,
    wide: Anchors,
    /// The keywords of [`Scope::Named`] rules, searched in names only, and the rules each
    /// wakes.
    names: Keywords,
    name_wakes: Vec<Vec<usize>>,
    /// Keywords that are whole flags (`--user`), lowercase, and the rule each wakes.
    flags: Vec<(String, usize)>,
    /// The keywords of [`Scope::Token`] rules, searched in the runs alone, and the rules
    /// each wakes.
    tokens: Keywords,
    token_wakes: Vec<Vec<Prefix>>,
    /// [`Scope::Runs`] rules without keywords: they run over every run.
    always: Vec<usize>,
    /// [`Scope::UserInfo`] rules.
    user_info: Vec<usize>,
}

/// Anchors: words that hold no other word, searched for at once; for each, the words
/// (indices into [`Engine::words`]) that hold it and where.
struct Anchors {
    /// None when there are no words to search for.
    searcher: Option<packed::Searcher>,
    anchored: Vec<Vec<(usize, usize)>>,
}

/// The rules whose ASCII words are searched for by the second searcher (see
/// [`Engine::anchors`]): passwords told in sentences, and rules for formats that
/// documentation seldom holds. A word that wakes only such rules goes there.
const LATER_RULES: &[&str] = &[
    "password-in-prose",
    "jwk-private-key",
    "sql-password",
    "powershell-password",
    "config-password",
    "session-cookie",
    "openvpn-static-key",
    "command-password",
];

/// The most words a packed searcher takes at SIMD speed (Teddy's limit; past it the
/// searcher falls back to a slower one).
const ANCHORS_MAX: usize = 64;

/// The bytes of a word as 64 bits (a byte's low six bits pick one): a word can hold another
/// only if it has every bit the other has, which rules out most pairs of words before they
/// are compared.
fn byte_bits(word: &[u8]) -> u64 {
    word.iter().fold(0, |bits, &b| bits | 1 << (b & 63))
}

/// Where `part` is in `word`, if `word` has every byte bit of `part` (`bits` and
/// `part_bits`).
fn held(word: &[u8], bits: u64, part: &[u8], part_bits: u64) -> Option<usize> {
    (part.len() <= word.len() && bits & part_bits == part_bits).then(|| position(word, part)).flatten()
}

impl Anchors {
    /// The anchors among `words` that `take` picks (by index), and the words that hold each.
    fn new(words: &[(String, Vec<usize>)], bits: &[u64], take: impl Fn(usize) -> bool) -> Anchors {
        // An anchor is a word that holds no other word: `accesskey=` finds `sharedaccesskey=`.
        // (Merging anchors into shared prefixes to fit a slim searcher's 32, `private` for
        // `private key` and `privatekey`, doubled the search's time on prose: more false
        // candidates per bucket.) Words are compared byte by byte: `str::find` sets up a
        // searcher per call, and its ~3,000 calls here took ~0.15 ms of every process; and
        // only when one has every byte of the other, since ~14,000 pairs of 90 words took
        // ~0.2 ms more.
        let mut anchors: Vec<(&str, u64)> = Vec::new();
        for (k, (w, _)) in words.iter().enumerate().filter(|&(k, _)| take(k)) {
            let holds_another = words.iter().enumerate().any(|(j, (other, _))| {
                j != k && other != w && held(w.as_bytes(), bits[k], other.as_bytes(), bits[j]).is_some()
            });
            if !holds_another {
                anchors.push((w, bits[k]));
            }
        }
        let anchored = anchors
            .iter()
            .map(|&(a, a_bits)| {
                let holding = words.iter().enumerate();
                holding
                    .filter_map(|(k, (w, _))| held(w.as_bytes(), bits[k], a.as_bytes(), a_bits).map(|at| (k, at)))
                    .collect()
            })
            .collect();
        let anchors: Vec<&str> = anchors.into_iter().map(|(a, _)| a).collect();
        let mut searcher = packed::Config::new().builder();
        for a in &anchors {
            searcher.add(a);
        }
        let n = anchors.len();
        let searcher = (n > 0).then(|| {
            searcher
                .build()
                .filter(|_| n <= ANCHORS_MAX)
                .unwrap_or_else(|| panic!("redaction words: {n} cannot be searched at once"))
        });
        Anchors { searcher, anchored }
    }
}

/// Keywords (ASCII lowercase, two bytes or more) found by their first two bytes: a bit per
/// pair of bytes says whether a keyword starts with it. Names and runs of token characters,
/// the haystacks searched for them, are short; building the table takes microseconds where
/// the Aho-Corasick automata it replaces (131 provider prefixes, 11 words of names) took
/// ~0.3 ms of every process that redacts anything, which every CLI command does.
struct Keywords {
    /// 65,536 bits, one per pair of bytes.
    pairs: Vec<u64>,
    /// For each word of `pairs`, how many bits the words before it have set: with the
    /// bits before a pair's in its own word, the rank of the pair among those that start a
    /// keyword, found in constant time. (A binary search over the keywords at each pair
    /// that starts one was a sixth of the time on documentation once there were 230.)
    ranks: Vec<u16>,
    /// For each pair that starts a keyword, in order, where its keywords start in
    /// `starts`; and the length of `starts` last.
    firsts: Vec<u16>,
    /// (first two bytes, keyword), sorted.
    starts: Vec<(u16, usize)>,
    words: Vec<Vec<u8>>,
}

/// Two bytes as one index.
fn pair(a: u8, b: u8) -> u16 {
    (u16::from(a) << 8) | u16::from(b)
}

impl Keywords {
    fn new<'k>(words: impl IntoIterator<Item = &'k str>) -> Keywords {
        let words: Vec<Vec<u8>> = words.into_iter().map(|w| w.as_bytes().to_ascii_lowercase()).collect();
        let mut pairs = vec![0u64; 1024];
        let mut starts = Vec::with_capacity(words.len());
        for (k, w) in words.iter().enumerate() {
            let [a, b, ..] = w[..] else {
                panic!("redaction keyword {:?}: two bytes at least", String::from_utf8_lossy(w))
            };
            let p = pair(a, b);
            pairs[usize::from(p >> 6)] |= 1 << (p & 63);
            starts.push((p, k));
        }
        starts.sort_unstable();
        let mut ranks = Vec::with_capacity(pairs.len());
        let mut set = 0u16;
        for word in &pairs {
            ranks.push(set);
            set += word.count_ones() as u16;
        }
        let mut firsts: Vec<u16> = Vec::with_capacity(usize::from(set) + 1);
        for (at, &(p, _)) in starts.iter().enumerate() {
            if at == 0 || starts[at - 1].0 != p {
                firsts.push(at as u16);
            }
        }
        firsts.push(starts.len() as u16);
        Keywords { pairs, ranks, firsts, starts, words }
    }

    /// Every keyword in `hay` (ASCII lowercase), overlapping ones too, as (keyword, start),
    /// in the order of their starts.
    fn find(&self, hay: &[u8], mut each: impl FnMut(usize, usize)) {
        for (i, w) in hay.windows(2).enumerate() {
            let p = pair(w[0], w[1]);
            let (word, bit) = (usize::from(p >> 6), p & 63);
            let bits = self.pairs[word];
            if bits & (1 << bit) == 0 {
                continue;
            }
            let rank = usize::from(self.ranks[word]) + (bits & ((1 << bit) - 1)).count_ones() as usize;
            let (from, to) = (usize::from(self.firsts[rank]), usize::from(self.firsts[rank + 1]));
            for &(_, k) in &self.starts[from..to] {
                if hay[i..].starts_with(&self.words[k]) {
                    each(k, i);
                }
            }
        }
    }
}

/// A rule that a keyword wakes in a run, and what must hold where the keyword is found:
/// worked out from the rule's expression the first time the keyword is found. Most
/// processes find none, and working out all 131 in advance took a tenth of a millisecond
/// of every one.
#[derive(Debug)]
struct Prefix {
    rule: usize,
    keyword: &'static str,
    holds: OnceLock<Holds>,
}

/// What must hold where a [`Prefix`]'s keyword is found.
#[derive(Debug, Clone, Copy)]
struct Holds {
    /// The keyword as the expression writes it, when the expression is case-sensitive:
    /// `SK` for a Twilio key is not the `sk` of `task` or the `Sk` of `Skip`.
    exact: Option<&'static str>,
    /// The expression starts with a word boundary before the keyword (`\bghp_`): the
    /// keyword is no prefix after a letter, a digit or `_` (`…_SKIP`).
    at_boundary: bool,
}

impl Prefix {
    fn new(rule: usize, keyword: &'static str) -> Prefix {
        Prefix { rule, keyword, holds: OnceLock::new() }
    }

    /// Whether the keyword found at `at` in `bytes` wakes the rule.
    fn holds(&self, bytes: &[u8], at: usize) -> bool {
        let holds = self.holds.get_or_init(|| {
            let (pattern, keyword) = (RULES[self.rule].pattern, self.keyword);
            let case_sensitive = !pattern.starts_with("(?i)");
            Holds {
                exact: (case_sensitive && unescaped(pattern).contains(keyword)).then_some(keyword),
                at_boundary: keyword.as_bytes().first().is_some_and(|&b| is_word(b))
                    && pattern.strip_prefix(r"\b").is_some_and(|rest| starts_with_literal(rest, keyword)),
            }
        });
        holds.exact.is_none_or(|k| bytes[at..].starts_with(k.as_bytes()))
            && !(holds.at_boundary && at > 0 && is_word(bytes[at - 1]))
    }
}

/// Whether every match of `pattern` starts with `keyword` when it starts with one of its
/// alternatives: `ghp_…`, or `(?:glpat|gldt)-…` for `glpat-`.
fn starts_with_literal(pattern: &str, keyword: &str) -> bool {
    let Some(group) = pattern.strip_prefix("(?:") else { return unescaped(pattern).starts_with(keyword) };
    // The group's alternatives, up to its `)`; each is tried with what follows the group.
    let (mut depth, mut from) = (0usize, 0);
    let mut alternatives = Vec::new();
    for (i, c) in group.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            '|' if depth == 0 => {
                alternatives.push(&group[from..i]);
                from = i + 1;
            }
            ')' => {
                alternatives.push(&group[from..i]);
                let rest = &group[i + 1..];
                return alternatives.iter().any(|a| unescaped(&format!("{a}{rest}")).starts_with(keyword));
            }
            _ => {}
        }
    }
    false
}

/// `pattern` without the backslashes that escape punctuation: the text its literals match.
fn unescaped(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => out.push(e),
                // A class (`\d`) or an assertion (`\b`) matches no literal text.
                Some(_) => out.push('\0'),
                None => {}
            },
            c => out.push(c),
        }
    }
    out
}

/// Where `needle` first is in `hay`: both are a few bytes long.
fn position(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    hay.windows(needle.len()).position(|w| w[0] == first && w == needle)
}

/// A byte of a word, for `\b`.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Adds `rule` to the rules that keyword `k` wakes in `list`.
fn wakes(list: &mut Vec<(String, Vec<usize>)>, k: String, rule: usize) {
    match list.iter_mut().find(|(w, _)| *w == k) {
        Some((_, rules)) => rules.push(rule),
        None => list.push((k, vec![rule])),
    }
}

static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    let regexes = RULES.iter().map(|_| OnceLock::new()).collect();
    let mut words: Vec<(String, Vec<usize>)> = Vec::new();
    let mut names: Vec<(String, Vec<usize>)> = Vec::new();
    // Sized in advance, and kept small (a keyword as written, not a lowercase copy): a list
    // of 131 prefixes grown by doubling, a stable sort's scratch, and later lists of 218
    // (String, …) past 10 KB were the allocations of the set-up that the allocator puts in
    // pages of their own (a one-shot command faulted in one huge page more for them, a
    // fifth of a millisecond).
    let tokens_at_most = RULES.iter().filter(|r| r.scope == Scope::Token).map(|r| r.keywords.len()).sum();
    let mut prefixes: Vec<(&'static str, usize)> = Vec::with_capacity(tokens_at_most);
    let mut flags = Vec::new();
    let mut always = Vec::new();
    let mut user_info = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        match rule.scope {
            Scope::Runs if rule.keywords.is_empty() => always.push(i),
            Scope::UserInfo => user_info.push(i),
            _ => {}
        }
        for &keyword in rule.keywords {
            if rule.scope == Scope::Token && !keyword.starts_with('-') {
                prefixes.push((keyword, i));
                continue;
            }
            let k = keyword.to_ascii_lowercase();
            match rule.scope {
                _ if k.starts_with('-') => flags.push((k, i)),
                Scope::Token => {}
                Scope::Named(..) => wakes(&mut names, k, i),
                Scope::Lines(..) | Scope::Text | Scope::Runs => wakes(&mut words, k, i),
                Scope::UserInfo => {}
            }
        }
    }
    // The rules each provider prefix wakes, grouped by sorting: 131 prefixes looked up one
    // by one in a list took ~0.05 ms of every process.
    prefixes.sort_unstable_by(|a, b| {
        let (x, y) = (a.0.bytes().map(|c| c.to_ascii_lowercase()), b.0.bytes().map(|c| c.to_ascii_lowercase()));
        x.cmp(y).then(a.1.cmp(&b.1))
    });
    let mut tokens: Vec<(&str, Vec<Prefix>)> = Vec::with_capacity(prefixes.len());
    for (keyword, i) in prefixes {
        let prefix = Prefix::new(i, keyword);
        match tokens.last_mut() {
            Some((last, list)) if last.eq_ignore_ascii_case(keyword) => list.push(prefix),
            _ => tokens.push((keyword, vec![prefix])),
        }
    }
    let bits: Vec<u64> = words.iter().map(|(w, _)| byte_bits(w.as_bytes())).collect();
    let later: Vec<bool> =
        words.iter().map(|(_, rules)| rules.iter().all(|&i| LATER_RULES.contains(&RULES[i].id))).collect();
    let ascii = |k: usize| words[k].0.is_ascii();
    let anchors = Anchors::new(&words, &bits, |k| ascii(k) && !later[k]);
    let later = Anchors::new(&words, &bits, |k| ascii(k) && later[k]);
    // A word outside ASCII is searched for in its own searcher: a word of another script
    // held by an ASCII one (or the reverse) is no case to plan for.
    let wide = Anchors::new(&words, &bits, |k| !ascii(k));
    Engine {
        regexes,
        names: Keywords::new(names.iter().map(|(k, _)| k.as_str())),
        name_wakes: names.into_iter().map(|(_, rules)| rules).collect(),
        tokens: Keywords::new(tokens.iter().map(|(k, _)| *k)),
        token_wakes: tokens.into_iter().map(|(_, prefixes)| prefixes).collect(),
        words,
        anchors,
        later,
        wide,
        flags,
        always,
        user_info,
    }
});

/// The longest name looked at before a value: longer runs are data, not names.
const NAME_MAX: usize = 96;

/// Whether `b` can be part of a name (`DB_PASSWORD`, `api-key`, `spring.datasource.password`).
fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// The name that ends right before `end` (after blanks and one quote), if any.
fn name_before(bytes: &[u8], end: usize) -> Option<(usize, usize)> {
    let mut i = end;
    while i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    // A key of a dictionary or a map: `config["SECRET_KEY"] = …`.
    if i > 1 && bytes[i - 1] == b']' && matches!(bytes[i - 2], b'"' | b'\'') {
        i -= 1;
    }
    if i > 0 && matches!(bytes[i - 1], b'"' | b'\'') {
        i -= 1;
    }
    let last = i;
    while i > 0 && last - i < NAME_MAX && is_name(bytes[i - 1]) {
        i -= 1;
    }
    (i < last).then_some((i, last))
}

/// What [`named`] finds.
#[derive(Debug, Clone, Copy)]
enum Hit {
    /// A name (`start..end`) given a value by the byte at `at` (`=` for `:=`), or a flag (its
    /// `-` at `start`).
    Name(usize, usize, usize),
    /// The `:` after a URL's user name (`https://user:`).
    UserInfo(usize),
}

/// The bytes of a URL's user name.
fn is_user(b: u8) -> bool {
    !b.is_ascii_whitespace() && !matches!(b, b':' | b'/' | b'@' | b'"' | b'\'' | b'<' | b'>')
}

/// Whether `after`, what follows a URL's `user:`, starts with a password, an `@` and a
/// host (`pw@db`): `http://localhost:9090/` has none.
fn password_then_host(after: &[u8]) -> bool {
    let ends = |b: u8| b.is_ascii_whitespace() || matches!(b, b'/' | b'@' | b'"' | b'\'' | b'<' | b'>');
    let password = after.iter().take_while(|&&b| !ends(b)).count();
    password > 0 && after.get(password) == Some(&b'@') && after.get(password + 1).is_some_and(|&b| !ends(b))
}

/// Where the names given a value are in `bytes`, and the user info of URLs. Searched for
/// by the bytes that give a value (`=`, `:`, `,`, `>`, and a `-` that starts a flag),
/// which prose has few of.
fn named(bytes: &[u8], mut each: impl FnMut(Hit)) {
    for at in memchr::memchr3_iter(b'=', b':', b',', bytes) {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + 1).copied();
        let name = match bytes[at] {
            // `==`, `!=`, `<=`, `>=` compare; `:=` is found at its `:`.
            b'=' if matches!(before, Some(b'=' | b'!' | b'<' | b'>' | b':')) || after == Some(b'=') => None,
            // Make's `PASSWORD ?= …` gives a value as `=` does.
            b'=' if before == Some(b'?') => name_before(bytes, at - 1),
            b'=' => name_before(bytes, at),
            // `::` is a path, `://` a URL's scheme.
            b':' if before == Some(b':') || matches!(after, Some(b':' | b'/')) => None,
            b':' => {
                let mut i = at;
                while i > 0 && at - i < NAME_MAX && is_user(bytes[i - 1]) {
                    i -= 1;
                }
                if i >= 2 && &bytes[i - 2..i] == b"//" && password_then_host(&bytes[at + 1..]) {
                    each(Hit::UserInfo(at));
                }
                name_before(bytes, at)
            }
            // A quoted pair: `"password", "…"`.
            _ => {
                let mut i = at;
                while i > 0 && bytes[i - 1].is_ascii_whitespace() {
                    i -= 1;
                }
                if i > 0 && matches!(bytes[i - 1], b'"' | b'\'') {
                    name_before(bytes, i).filter(|&(s, _)| s > 0 && matches!(bytes[s - 1], b'"' | b'\''))
                } else {
                    None
                }
            }
        };
        if let Some((s, e)) = name {
            // `:=` gives a value as `=` does.
            let given = if bytes[at] == b':' && after == Some(b'=') { at + 1 } else { at };
            each(Hit::Name(s, e, given));
        }
    }
    for at in memchr::memchr2_iter(b'>', b'-', bytes) {
        if bytes[at] == b'>' {
            // An XML element: `<db:password>`.
            let mut i = at;
            while i > 0 && at - i < NAME_MAX && (is_name(bytes[i - 1]) || bytes[i - 1] == b':') {
                i -= 1;
            }
            if i < at && i > 0 && bytes[i - 1] == b'<' {
                each(Hit::Name(i, at, at));
            }
            continue;
        }
        // A flag: `-` at a line's start or after a blank, then a name.
        if at > 0 && !matches!(bytes[at - 1], b' ' | b'\t' | b'\n') {
            continue;
        }
        let mut e = at + 1;
        if bytes.get(e) == Some(&b'-') {
            e += 1;
        }
        if !bytes.get(e).is_some_and(u8::is_ascii_alphanumeric) {
            continue;
        }
        while e < bytes.len() && e - at < NAME_MAX && is_name(bytes[e]) {
            e += 1;
        }
        each(Hit::Name(at, e, at));
    }
}

/// Every secret in `text`, in order, none overlapping another.
///
/// The text is searched three times, cheaply: for the rarer words of the rules
/// (`authorization`, `bearer`, `mysql`…) in its lowercase copy; for names given a value
/// (`DB_PASSWORD=`, `"apiKey":`, `--token`), whose words (`key`, `token`, `pass`) are
/// looked for in the name alone; and for runs of token characters at least [`RUN_MIN`]
/// long, which alone can hold a provider's token. A word or a name wakes its rules over
/// the lines around it; a run wakes the rules whose keywords it holds, over itself. Only
/// then do expressions run, and only over those windows, once a rule's gate lets them.
pub fn find(text: &str) -> Vec<Found> {
    let bytes = text.as_bytes();
    LOWER.with_borrow_mut(|lower| {
        lower.clear();
        lower.extend(bytes.iter().map(u8::to_ascii_lowercase));
        let found = find_in(text, lower);
        if lower.capacity() > KEEP_LOWER {
            *lower = Vec::new();
        }
        found
    })
}

/// Every rule whose keyword is anywhere in the text (or that has none) run over the whole
/// text, with no name, run, window or gate to pick it: what the searches of [`find`] must
/// not lose. For the tests of that (`tests/it/redaction.rs`); it compiles every rule the
/// text names, so it is slow, and no command calls it.
#[doc(hidden)]
pub fn find_everywhere(text: &str) -> Vec<Found> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for (i, rule) in RULES.iter().enumerate() {
        if rule.keywords.is_empty() || rule.keywords.iter().any(|k| lower.contains(&k.to_ascii_lowercase())) {
            matches_in(i, text, 0, text.len(), &mut found);
        }
    }
    finish(text, found)
}

/// The largest lowercase copy kept for the next call.
const KEEP_LOWER: usize = 1 << 20;

thread_local! {
    /// The lowercase copy of the text being searched, kept between calls: a fresh one of
    /// 100 KB costs more in page faults than in copying.
    static LOWER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The windows of the rules a text wakes, and the text they are cut from.
struct Windows<'t> {
    bytes: &'t [u8],
    lower: &'t [u8],
    /// (rule, start, end).
    list: Vec<(usize, usize, usize)>,
}

impl Windows<'_> {
    /// Adds rule `i`'s window `a..b`, unless the rule's gate shuts it. `named` is the name
    /// that woke a [`Scope::Named`] rule and the byte that gives its value.
    fn push(&mut self, i: usize, a: usize, b: usize, named: Option<(usize, usize, usize)>) {
        let open = RULES[i].gate.is_none_or(|gate| {
            gate(&Window {
                text: &self.bytes[a..b],
                lower: &self.lower[a..b],
                named: named.map(|(s, e, at)| (s - a, e - a, at - a)),
            })
        });
        if open {
            self.list.push((i, a, b));
        }
    }
}

/// [`find`] with `lower`, the ASCII lowercase copy of `text`.
fn find_in(text: &str, lower: &[u8]) -> Vec<Found> {
    let mut found: Vec<(usize, Found)> = Vec::new();
    let breaks = collect(text, lower, &mut found);
    if !breaks.is_empty() || memchr::memchr(b'\\', text.as_bytes()).is_some() {
        in_views(text, &breaks, 0, &mut found);
    }
    finish(text, found)
}

/// How many times a view is decoded again: a JSON string in a JSON string in a JSON
/// string (`\\\"` for a quote) is the deepest a text written by hand or by a tool holds.
const VIEW_DEPTH: usize = 3;

/// The secrets of [`decode::views`] of `text` (escapes decoded, broken tokens joined at
/// `breaks`), where their bytes are in `text`, added to `found`; and those of views of
/// views, `depth` levels down.
fn in_views(text: &str, breaks: &[usize], depth: usize, found: &mut Vec<(usize, Found)>) {
    for view in decode::views(text, breaks) {
        let lower = view.text.to_ascii_lowercase();
        let mut inner: Vec<(usize, Found)> = Vec::new();
        let breaks = collect(&view.text, lower.as_bytes(), &mut inner);
        if depth + 1 < VIEW_DEPTH && (!breaks.is_empty() || memchr::memchr(b'\\', view.text.as_bytes()).is_some()) {
            in_views(&view.text, &breaks, depth + 1, &mut inner);
        }
        for (i, f) in inner {
            let (start, end) = view.source(text, f.start, f.end);
            found.push((i, Found { rule: f.rule, start, end }));
        }
    }
}

/// The secrets the rules find in `text`, added to `found` as they are (not yet merged);
/// returns the line ends that split a provider's token, for a view that joins them.
fn collect(text: &str, lower: &[u8], found: &mut Vec<(usize, Found)>) -> Vec<usize> {
    let (windows, breaks) = windows_and_breaks(text, lower);
    let mut w = 0;
    while w < windows.len() {
        // One window of each overlapping lot.
        let (i, a, mut b) = windows[w];
        w += 1;
        while w < windows.len() && windows[w].0 == i && windows[w].1 <= b {
            b = b.max(windows[w].2);
            w += 1;
        }
        matches_in(i, text, a, b, found);
    }
    breaks
}

/// Where each rule that `text` (and its lowercase copy) wakes runs: (rule, start, end),
/// sorted.
#[cfg(test)]
fn windows(text: &str, lower: &[u8]) -> Vec<(usize, usize, usize)> {
    windows_and_breaks(text, lower).0
}

/// [`windows`], and the line ends right after a run that holds a provider's prefix when
/// the next line starts with token characters: where a token may go on (a terminal or an
/// editor wrapped it).
fn windows_and_breaks(text: &str, lower: &[u8]) -> (Vec<(usize, usize, usize)>, Vec<usize>) {
    let engine = &*ENGINE;
    let mut breaks = Vec::new();
    let bytes = text.as_bytes();
    let mut windows = Windows { bytes, lower, list: Vec::new() };
    let mut on_runs: Vec<usize> = engine.always.clone();
    let mut whole: Vec<usize> = Vec::new();
    let wide = !lower.is_ascii();
    for anchors in [&engine.anchors, &engine.later, &engine.wide].into_iter().take(if wide { 3 } else { 2 }) {
        let Some(searcher) = &anchors.searcher else { continue };
        let mut at = 0;
        while let Some(m) = searcher.find_in(lower, Span { start: at, end: lower.len() }) {
            for &(k, offset) in &anchors.anchored[m.pattern().as_usize()] {
                let (word, rules) = &engine.words[k];
                let Some(start) = m.start().checked_sub(offset) else { continue };
                if !lower[start..].starts_with(word.as_bytes()) {
                    continue;
                }
                for &i in rules {
                    match RULES[i].scope {
                        Scope::Lines(before, after) | Scope::Named(before, after, _) => {
                            let (a, b) = lines(bytes, start, before, after);
                            windows.push(i, a, b, None);
                        }
                        Scope::Text => whole.push(i),
                        Scope::Runs => on_runs.push(i),
                        Scope::Token | Scope::UserInfo => {}
                    }
                }
            }
            at = m.start() + 1;
        }
    }
    named(bytes, |hit| {
        let (start, end, at) = match hit {
            Hit::Name(start, end, at) => (start, end, at),
            Hit::UserInfo(at) => {
                let (a, b) = lines(bytes, at, 0, 0);
                for &i in &engine.user_info {
                    windows.push(i, a, b, None);
                }
                return;
            }
        };
        let name = &lower[start..end];
        if bytes[start] == b'-' {
            for (flag, i) in &engine.flags {
                if name == flag.as_bytes() {
                    let (a, b) = lines(bytes, at, 0, 0);
                    windows.push(*i, a, b, None);
                }
            }
        }
        engine.names.find(name, |k, _| {
            for &i in &engine.name_wakes[k] {
                if let Scope::Named(before, after, given) = RULES[i].scope
                    && given.contains(&bytes[at])
                {
                    let (a, b) = lines(bytes, at, before, after);
                    windows.push(i, a, b, Some((start, end, at)));
                }
            }
        });
    });
    on_runs.sort_unstable();
    on_runs.dedup();
    for (start, end) in runs(bytes) {
        let window = widened(text, start, end);
        let mut woke = false;
        engine.tokens.find(&lower[start..end], |k, at| {
            for prefix in &engine.token_wakes[k] {
                if prefix.holds(bytes, start + at) {
                    windows.push(prefix.rule, window.0, window.1, None);
                    woke = true;
                }
            }
        });
        if woke && goes_on(bytes, end) {
            breaks.push(end);
        }
        for &i in &on_runs {
            windows.push(i, window.0, window.1, None);
        }
    }
    whole.sort_unstable();
    whole.dedup();
    for &i in &whole {
        windows.push(i, 0, text.len(), None);
    }
    windows.list.sort_unstable();
    (windows.list, breaks)
}

/// Whether a line end is at `at` (`\n` or `\r\n`) and the next line starts with a byte of
/// a run.
fn goes_on(bytes: &[u8], at: usize) -> bool {
    let next = match bytes.get(at) {
        Some(b'\n') => at + 1,
        Some(b'\r') if bytes.get(at + 1) == Some(&b'\n') => at + 2,
        _ => return false,
    };
    bytes.get(next).is_some_and(|&b| RUN[usize::from(b)])
}

/// A rule's expression, with ASCII classes for `\w`, `\s`, `\d` and `\b` ([`ascii_classes`]).
///
/// It runs over bytes, without Unicode: case folding and every class are ASCII (a secret,
/// and the names and separators around it, are), which took compiling every rule from
/// 65 to 20 ms; a negated class matches the bytes of other characters as it matched them.
fn compile(rule: &Rule) -> Regex {
    RegexBuilder::new(&ascii_classes(rule.pattern))
        .unicode(false)
        .build()
        .unwrap_or_else(|e| panic!("redaction rule {}: {e}", rule.id))
}

/// `pattern` with its Perl classes (`\w`, `\s`, `\d`, their negations) and word boundaries
/// ASCII, in and out of brackets. Secrets and the names and separators around them are
/// ASCII; Unicode classes made each expression take up to 10 ms to compile (`okta…[\w.]{0,30}`),
/// which a one-shot command pays for every rule its text wakes.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut chars = pattern.chars().peekable();
    // How deep inside brackets; a `]` right after the opening `[` or `[^` is a literal.
    let mut depth = 0usize;
    let mut just_opened = false;
    while let Some(c) = chars.next() {
        let opened = std::mem::take(&mut just_opened);
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push(c);
                    break;
                };
                let inside = depth > 0;
                let class = match (e, inside) {
                    ('w', false) => "[[:word:]]",
                    ('w', true) => "[:word:]",
                    ('W', _) => "[^[:word:]]",
                    ('s', false) => "[[:space:]]",
                    ('s', true) => "[:space:]",
                    ('S', _) => "[^[:space:]]",
                    ('d', false) => "[0-9]",
                    ('d', true) => "0-9",
                    ('D', _) => "[^0-9]",
                    ('b', false) => "(?-u:\\b)",
                    ('B', false) => "(?-u:\\B)",
                    _ => {
                        out.push(c);
                        out.push(e);
                        continue;
                    }
                };
                out.push_str(class);
            }
            '[' if depth == 0 || chars.peek() == Some(&':') || !opened => {
                // `[:word:]` inside brackets is a POSIX class, not a nested bracket.
                if depth > 0 && chars.peek() == Some(&':') {
                    out.push(c);
                    for d in chars.by_ref() {
                        out.push(d);
                        if d == ']' {
                            break;
                        }
                    }
                    continue;
                }
                depth += 1;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                just_opened = true;
            }
            ']' if depth > 0 && !opened => {
                depth -= 1;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The secrets rule `i` finds in `text[a..b]`, added to `found`.
fn matches_in(i: usize, text: &str, a: usize, b: usize, found: &mut Vec<(usize, Found)>) {
    let rule = &RULES[i];
    let regex = ENGINE.regexes[i].get_or_init(|| compile(rule));
    // The window's end is the haystack's, its start only where the search begins: `^`
    // and `\b` still see the text before the window, as over the whole text. The search
    // begins a character early, for expressions that take the character before a name
    // (`(?:^|[^a-z0-9_])password=`).
    let hay = &text.as_bytes()[..b];
    let mut from = text[..a].char_indices().next_back().map_or(a, |(i, _)| i);
    while from <= b {
        let Some(caps) = regex.captures_at(hay, from) else { break };
        let whole = caps.get(0).map_or(from..from, |m| m.range());
        from = if whole.is_empty() { whole.end + 1 } else { whole.end };
        let caps = rules::Caps::new(text, caps);
        let Some((start, secret)) = rules::secret_of(&caps) else { continue };
        // A value runs to the next parameter of a query string at most (`…&mode=x`).
        let value = rules::to_next_parameter(secret);
        // A value with escapes in it is judged as it reads (`\u002a\u002a…` is `**…`, a
        // placeholder).
        let judged = decode::unescaped(value);
        if value.is_empty() || rules::ignored(value) || !(rule.check)(&caps, &judged) {
            continue;
        }
        found.push((i, Found { rule: rule.id, start, end: start + value.len() }));
    }
}

/// The finds of the rules as one list: each once, none inside a mark already in the text,
/// overlapping ones merged.
fn finish(text: &str, mut found: Vec<(usize, Found)>) -> Vec<Found> {
    // The same secret found from two windows is one.
    found.sort_unstable_by_key(|(i, f)| (*i, f.start, f.end));
    found.dedup_by(|x, y| x.0 == y.0 && x.1 == y.1);
    // A mark already in the text is not a secret, nor part of one (`https://[REDACTED:…]@`).
    let marks: Vec<(usize, usize)> = memchr::memmem::find_iter(text.as_bytes(), MARK_PREFIX.as_bytes())
        .filter_map(|at| text[at..].find(']').map(|end| (at, at + end + 1)))
        .collect();
    if !marks.is_empty() {
        found.retain(|(_, f)| !marks.iter().any(|&(a, b)| f.start < b && a < f.end));
    }
    merge(found)
}

/// The byte range of the line holding `at`, `before` lines before it and `after` after it,
/// without the line ends that bound it.
fn lines(bytes: &[u8], at: usize, before: u8, after: u8) -> (usize, usize) {
    let mut start = line_start(bytes, at);
    for _ in 0..before {
        if start == 0 {
            break;
        }
        start = line_start(bytes, start - 1);
    }
    let mut end = line_end(bytes, at);
    for _ in 0..after {
        if end >= bytes.len() {
            break;
        }
        end = line_end(bytes, end + 1);
    }
    (start, end)
}

fn line_start(bytes: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |nl| nl + 1)
}

fn line_end(bytes: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |nl| at + nl)
}

/// Every run of [`RUN`] bytes at least [`RUN_MIN`] long, in order.
///
/// Prose is mostly short words: the text is first read 8 bytes at a time for runs of ASCII
/// graphic bytes (a superset of [`RUN`]'s) at least [`RUN_MIN`] long, 64 bytes to a mask,
/// and only those are looked at byte by byte. On 100 KB of documentation this took the
/// search for runs from ~90 µs to ~15 µs (the byte-by-byte probe it replaces mispredicted
/// a branch at nearly every word). Text in other scripts is no run: Japanese sentences
/// without spaces, taken as runs when bytes above ASCII counted, were a tenth of the search.
fn runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (start, end) in graphic_runs(bytes) {
        let mut from = start;
        for at in start..end {
            if !RUN[usize::from(bytes[at])] {
                if at - from >= RUN_MIN {
                    out.push((from, at));
                }
                from = at + 1;
            }
        }
        if end - from >= RUN_MIN {
            out.push((from, end));
        }
    }
    out
}

/// For 8 bytes (little-endian in `x`), bit k set where byte k is ASCII graphic (0x21 to
/// 0x7E). No carry crosses a byte: `(b & 0x7F) + 0x5F` is at most 0xDE.
fn graphic8(x: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ADD: u64 = 0x5F5F_5F5F_5F5F_5F5F;
    const ONE: u64 = 0x0101_0101_0101_0101;
    let low = x & LOW7;
    // 0x21 and up, below 0x7F, and below 0x80.
    let high = (low + ADD) & !(low + ONE) & !x & HIGH;
    // Gathers the 8 high bits into the top byte (bit 8k + 7 lands on 56 + k).
    high.wrapping_mul(0x0002_0408_1020_4081) >> 56
}

/// The mask of up to 64 bytes: bit j set where byte j is ASCII graphic.
fn graphic64(block: &[u8]) -> u64 {
    let mut mask = 0;
    let mut words = block.chunks_exact(8);
    for (k, w) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        mask |= graphic8(x) << (8 * k);
    }
    let done = block.len() - words.remainder().len();
    for (j, &b) in words.remainder().iter().enumerate() {
        mask |= u64::from(b.is_ascii_graphic()) << (done + j);
    }
    mask
}

/// Every run of ASCII graphic bytes at least [`RUN_MIN`] long, in order: a block of 64
/// bytes is looked at bit by bit only when it holds such a run or ends one.
fn graphic_runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // The length of the run that ends where the block starts.
    let mut open = 0usize;
    for (b, block) in bytes.chunks(64).enumerate() {
        let base = b * 64;
        let m = graphic64(block);
        if block.len() == 64 {
            if m == u64::MAX {
                open += 64;
                continue;
            }
            // Bit j of `w` set where the 15 bytes from j on are all above the space.
            let mut w = m & (m >> 1);
            w &= w >> 2;
            w &= w >> 4;
            w &= w >> 7;
            if w == 0 && open + (m.trailing_ones() as usize) < RUN_MIN {
                open = m.leading_ones() as usize;
                continue;
            }
        }
        // Each byte that is not ASCII graphic ends the open run.
        let mut ends = !m & (u64::MAX >> (64 - block.len()));
        let mut next = 0;
        while ends != 0 {
            let j = ends.trailing_zeros() as usize;
            open += j - next;
            if open >= RUN_MIN {
                out.push((base + j - open, base + j));
            }
            open = 0;
            next = j + 1;
            ends &= ends - 1;
        }
        open += block.len() - next;
    }
    if open >= RUN_MIN {
        out.push((bytes.len() - open, bytes.len()));
    }
    out
}

/// `start..end` with the character on either side: what tells a token's edge (`"ghp_…"`).
fn widened(text: &str, start: usize, end: usize) -> (usize, usize) {
    let before = text[..start].chars().next_back().map_or(0, char::len_utf8);
    let after = text[end..].chars().next().map_or(0, char::len_utf8);
    (start - before, end + after)
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
///
/// The lowercase copy that the search needs becomes the copy returned when the text holds
/// no secret: a one-shot `memory add` of 100 KB made one large allocation more than it
/// stores without this.
pub fn redact(text: &str) -> Redacted {
    let mut copy = text.as_bytes().to_ascii_lowercase();
    let found = find_in(text, &copy);
    if found.is_empty() {
        copy.copy_from_slice(text.as_bytes());
        let text = String::from_utf8(copy).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        return Redacted { text, count: 0 };
    }
    Redacted { text: replaced(text, &found), count: found.len() }
}

/// `text` with each of `found` replaced by its mark.
fn replaced(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        out.push_str(&mark(f.rule));
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Redacts `text` in place; returns how many secrets were in it. A text without one is
/// not copied.
pub fn redact_in_place(text: &mut String) -> usize {
    let found = find(text);
    if !found.is_empty() {
        *text = replaced(text, &found);
    }
    found.len()
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
            assert!(regex::Regex::new(rule.pattern).is_ok(), "{}", rule.id);
            compile(rule);
        }
    }

    #[test]
    fn perl_classes_become_ascii_in_and_out_of_brackets() {
        for (pattern, expected) in [
            (r"\w+\s\d", "[[:word:]]+[[:space:]][0-9]"),
            (r"[\w.\-]{0,30}\W", r"[[:word:].\-]{0,30}[^[:word:]]"),
            (r#"[^\s"']+"#, r#"[^[:space:]"']+"#),
            (r"\bkey\b", r"(?-u:\b)key(?-u:\b)"),
            (r"[]\s]x[^]a]", r"[][:space:]]x[^]a]"),
            (r"\.\[\\", r"\.\[\\"),
        ] {
            assert_eq!(ascii_classes(pattern), expected, "{pattern}");
        }
        let r = RegexBuilder::new(&ascii_classes(r"\bpass\s*=\s*(\w+)")).unicode(false).build().unwrap();
        assert_eq!(&r.captures("x pass = héllo".as_bytes()).unwrap()[1], b"h");
    }

    /// Each searcher of words holds at most what one SIMD search takes, with room to add.
    #[test]
    fn the_words_fit_a_simd_search_each() {
        let engine = &*ENGINE;
        for (anchors, name) in
            [(&engine.anchors, "ASCII"), (&engine.later, "later ASCII"), (&engine.wide, "other scripts")]
        {
            let n = anchors.anchored.len();
            assert!(n + 4 <= ANCHORS_MAX, "{n} {name} words to search for; at most {ANCHORS_MAX}");
        }
        // No list of the set-up is past 10 KB (see `ENGINE`): the longest are the provider
        // prefixes and the list that groups them.
        let prefixes = RULES.iter().filter(|r| r.scope == Scope::Token).map(|r| r.keywords.len()).sum::<usize>();
        let largest = prefixes * std::mem::size_of::<(&str, Vec<Prefix>)>();
        assert!(largest <= 10 * 1024, "{prefixes} provider prefixes take {largest} bytes");
        // Within the range where a packed searcher is fast (see `Engine::anchors`).
        assert!(engine.anchors.anchored.len() <= 40, "{}", engine.anchors.anchored.len());
        for id in LATER_RULES {
            assert!(rule(id).is_some(), "{id} names no rule");
        }
    }

    /// A name wakes only the rules for the byte that gives it its value: documentation full
    /// of `token:` in YAML examples compiles the YAML rule, not every rule for `token`.
    #[test]
    fn a_name_wakes_the_rules_of_its_separator_only() {
        let woken = |text: &str| -> Vec<(&str, &[u8])> {
            let lower = text.to_ascii_lowercase();
            let mut rules: Vec<(&str, &[u8])> = windows(text, lower.as_bytes())
                .into_iter()
                .filter_map(|(i, _, _)| match RULES[i].scope {
                    Scope::Named(_, _, given) => Some((RULES[i].id, given)),
                    _ => None,
                })
                .collect();
            rules.dedup();
            rules
        };
        assert_eq!(woken("bearer_token: abc\n"), [("secret-assignment", &b":"[..])]);
        assert_eq!(woken("token = x\n"), [("secret-assignment", &b"="[..])]);
        assert_eq!(woken("token := x\n"), [("secret-assignment", &b"="[..])]);
        assert_eq!(woken("/x?token=abcd\n"), [("url-secret-parameter", &b"="[..]), ("secret-assignment", &b"="[..])]);
        assert_eq!(woken("run --token abc\n"), [("secret-flag", &b"-"[..])]);
        assert_eq!(woken("<password>x</password>\n"), [("secret-xml-element", &b">"[..])]);
    }

    /// The keyword table finds every keyword at every place, overlapping ones too: what a
    /// search byte by byte finds, for the engine's own keywords, on texts made of them: each
    /// keyword between other bytes, all of a table's keywords in a row (with and without
    /// spaces), and every two keywords where the end of one is the start of the other.
    #[test]
    fn keywords_are_found_wherever_they_start() {
        let engine = &*ENGINE;
        let naive = |table: &Keywords, hay: &[u8]| -> Vec<(usize, usize)> {
            let mut out = Vec::new();
            for i in 0..hay.len() {
                for (k, w) in table.words.iter().enumerate() {
                    if hay[i..].starts_with(w) {
                        out.push((i, k));
                    }
                }
            }
            out
        };
        let mut texts = vec!["ghp_ghs_xoxb-sk_live_ a passpasswordtoken key-".to_owned()];
        for table in [&engine.tokens, &engine.names] {
            let words: Vec<String> = table.words.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect();
            texts.push(words.concat());
            texts.push(words.join(" "));
            for w in &words {
                texts.push(format!("x{w}{w}_{w}-{w}.{w}"));
                for v in &words {
                    if let Some(overlap) = (1..w.len().min(v.len())).rev().find(|&n| w.ends_with(&v[..n])) {
                        texts.push(format!("{w}{}", &v[overlap..]));
                    }
                }
            }
        }
        let mut found = 0;
        for text in &texts {
            let lower = text.to_ascii_lowercase();
            for table in [&engine.tokens, &engine.names] {
                let mut got = Vec::new();
                table.find(lower.as_bytes(), |k, at| got.push((at, k)));
                got.sort_unstable();
                assert_eq!(got, naive(table, lower.as_bytes()), "{text:?}");
                found += got.len();
            }
        }
        assert!(found > 1_000, "{found}");
    }

    /// A name wakes its rules only where a secret can follow: a value, not empty, and under
    /// a weak name (`key`, `auth`) 16 token characters.
    #[test]
    fn a_name_without_a_value_that_can_be_a_secret_wakes_nothing() {
        let woken = |text: &str| windows(text, text.to_ascii_lowercase().as_bytes()).len();
        for text in [
            "  secret_key: \"\"\n",
            "password:\n  nested: 1\n",
            "aws_sdk_auth: false\n",
            "cache_key = build.id\n",
            "--tls-key /etc/tls/key.pem\n",
            "<token></token>\n",
            "\"password\", \"\"\n",
            "token = ''\n",
            "see http://localhost:9090/graph\n",
            "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n",
        ] {
            assert_eq!(woken(text), 0, "{text:?}");
        }
        for text in [
            "  secret_key: \"s3cr3t\"\n",
            "password: a b c\n",
            "aws_sdk_auth: AbCdEfGh12345678xyz\n",
            "cache_key = \" AbCdEfGh12345678\"\n",
            "--api-key AbCdEfGh12345678\n",
            "<token>t</token>\n",
            "\"password\", \"p\"\n",
            "db: postgres://app:pw@db/x\n",
        ] {
            assert!(woken(text) > 0, "{text:?}");
        }
    }

    /// Expressions run over bytes: a value with other characters in it is cut at character
    /// boundaries, and case folds as ASCII does.
    #[test]
    fn values_beside_other_scripts_are_redacted_whole() {
        check("パスワード password=hunter2é で", "パスワード password=[REDACTED:secret-assignment] で");
        check("DB_PASSWORD: «sécret-vålue»\nnext", "DB_PASSWORD: [REDACTED:secret-assignment]\nnext");
        check("PASSWORD=Hunter2", "PASSWORD=[REDACTED:secret-assignment]");
        check("x Ωpassword=日本語の秘密", "x Ωpassword=[REDACTED:secret-assignment]");
    }

    /// The runs, byte by byte: what [`runs`] must find however its blocks fall.
    fn runs_one_by_one(bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut from = 0;
        for at in 0..=bytes.len() {
            if at == bytes.len() || !RUN[usize::from(bytes[at])] {
                if at - from >= RUN_MIN {
                    out.push((from, at));
                }
                from = at + 1;
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]
        /// Runs of every length around `RUN_MIN` and 64, across block edges, broken by
        /// spaces (half the time: blocks without a long run are skipped whole), quotes,
        /// brackets, non-ASCII text and control bytes.
        #[test]
        fn runs_are_found_as_byte_by_byte(
            parts in proptest::collection::vec((0usize..24, proptest::prop_oneof![8 => 0usize..20, 1 => 0usize..140]), 0..60)
        ) {
            const BREAKS: [&str; 12] = [" ", "\n", "\"", "'", "(", "]", "é", "日本", "\t", ",", "\u{7f}", "<"];
            let mut text = String::new();
            for (brk, len) in parts {
                text.push_str(BREAKS.get(brk).unwrap_or(&" "));
                text.extend(std::iter::repeat_n('a', len / 2).chain(std::iter::repeat_n('_', len - len / 2)));
            }
            proptest::prop_assert_eq!(runs(text.as_bytes()), runs_one_by_one(text.as_bytes()));
        }
    }

    #[test]
    fn runs_at_the_edges_of_blocks() {
        for len in [14, 15, 16, 63, 64, 65, 127, 128, 129] {
            for lead in [0, 1, 49, 50, 63, 64] {
                let text = format!("{}{}", " ".repeat(lead), "x".repeat(len));
                let want = if len >= RUN_MIN { vec![(lead, lead + len)] } else { vec![] };
                assert_eq!(runs(text.as_bytes()), want, "{lead} + {len}");
                // Within whole blocks, which are not looked at byte by byte.
                let text = format!("{text}{}", " ".repeat(300));
                assert_eq!(runs(text.as_bytes()), want, "{lead} + {len} + spaces");
            }
        }
    }

    /// A rule searched only inside runs of token characters must find its keywords and its
    /// matches there: keywords made of run characters alone, matches at least [`RUN_MIN`]
    /// long besides the character on either side that [`widened`] adds.
    #[test]
    fn rules_searched_in_runs_fit_in_runs() {
        for rule in RULES.iter().filter(|r| matches!(r.scope, Scope::Token | Scope::Runs)) {
            for k in rule.keywords {
                assert!(k.bytes().all(|b| RUN[usize::from(b)]), "{}: keyword {k:?} leaves a run", rule.id);
            }
            // A `.pgpass` line can be shorter (`*:*:*:u:pw`), but one under RUN_MIN bytes holds
            // a password of a few characters, and waking the rule on every `:` of prose
            // would cost more than all the others: such lines are left as they are.
            if rule.id == "pgpass-password" {
                continue;
            }
            let hir = regex_syntax::parse(rule.pattern).unwrap();
            let min = hir.properties().minimum_len().unwrap_or(0);
            assert!(min >= RUN_MIN, "{}: a match may be {min} bytes, under {RUN_MIN}", rule.id);
        }
    }

    #[test]
    fn a_window_sees_the_text_around_it() {
        // `^` is a line's start, not the window's: this .pgpass-shaped run is inside a line.
        assert_eq!(redact("see host:5432:db:user:s3cretPassw0rd").count, 0);
        assert_eq!(redact("host:5432:db:user:s3cretPassw0rd\n").count, 1);
        // The same secret woken by two keywords is redacted once.
        check("password=hunter2 pass", "password=[REDACTED:secret-assignment] pass");
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

    use super::{RULES, find, windows};

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

    /// Ordinary documentation compiles almost no expression: a command that redacts it
    /// pays for the searches, not for expressions (each costs ~0.05–0.5 ms to compile, the
    /// first time a process needs it). The sample corpora, in eleven texts of 100 KB, wake
    /// seven rules in all, two at most in one (before the gates that look at what follows a
    /// name or a keyword, the full corpora woke seven in each).
    #[test]
    fn documentation_wakes_almost_no_rule() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/corpora");
        let mut texts = vec![String::new()];
        for corpus in ["eips", "cpp-docs", "ja-otel", "thanos-docs", "madr"] {
            for f in crate::testing::markdown_files(&dir.join(corpus)) {
                let last = texts.last_mut().unwrap();
                last.push_str(&std::fs::read_to_string(f).unwrap());
                if last.len() >= 100_000 {
                    texts.push(String::new());
                }
            }
        }
        let woken: Vec<Vec<&str>> = texts
            .iter()
            .map(|text| {
                let mut rules: Vec<usize> =
                    windows(text, text.to_ascii_lowercase().as_bytes()).iter().map(|w| w.0).collect();
                rules.dedup();
                rules.into_iter().map(|i| RULES[i].id).collect()
            })
            .collect();
        let total: usize = woken.iter().map(Vec::len).sum();
        assert_eq!(texts.len(), 11, "{woken:?}");
        assert!(woken.iter().all(|rules| rules.len() <= 2), "{woken:?}");
        assert!(total <= 7, "{total} rules woken in {} texts: {woken:?}", texts.len());
    }
}

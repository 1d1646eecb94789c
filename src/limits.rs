//! Every number a person or an agent can set, with its bounds, in one table.
//!
//! A [`Limit`] is the least and greatest value of one setting, its default and what it
//! means. `config.rs` checks the keys of `.tmws/config.toml` against these limits when it
//! loads the file, and `query::api` checks the parameters of the tools against them and
//! publishes them in the tools' schemas. Where a config key gives a parameter its default
//! (`retrieval.top_k` is `memory_search`'s `limit` when the caller gives none), both read
//! the same limit: a config that loads can never make a tool fail on a value its caller
//! did not give, which is what happened when the two were written apart and disagreed.
//!
//! The sizes of inputs (docs/trust-boundary.md: a query's bytes, a name's characters, tags) are plain
//! maximums here too, so that the config's namespace names obey the same limit as the
//! `namespace` parameter that names them.

use std::fmt::Display;

/// The bounds of one setting: `min` to `max` (or above `min` when `min_excluded`), its default
/// and what it means, in words for errors and documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit<T> {
    pub min: T,
    pub max: T,
    /// Whether `min` itself is outside: a duration or a ratio that may be any fraction but 0.
    pub min_excluded: bool,
    pub default: T,
    pub means: &'static str,
}

/// A number a limit bounds: a count (`u64`) or a fraction (`f64`).
pub trait Number: Copy + PartialOrd + Display {
    /// Whether the values are whole counts, of which 0 is the least there is.
    const COUNT: bool;
    fn is_zero(self) -> bool;
}

impl Number for u64 {
    const COUNT: bool = true;
    fn is_zero(self) -> bool {
        self == 0
    }
}

impl Number for f64 {
    const COUNT: bool = false;
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl<T: Number> Limit<T> {
    /// The values from `min` to `max`, both included.
    pub const fn new(min: T, max: T, default: T, means: &'static str) -> Self {
        Limit { min, max, min_excluded: false, default, means }
    }

    /// The values above `min`, up to `max`.
    pub const fn above(min: T, max: T, default: T, means: &'static str) -> Self {
        Limit { min, max, min_excluded: true, default, means }
    }

    /// Whether `v` lies within the limit (a NaN never does).
    pub fn contains(&self, v: T) -> bool {
        let low = if self.min_excluded { v > self.min } else { v >= self.min };
        low && v <= self.max
    }

    /// What a value must be, as the config's errors say it: `must be between 1 and 100`.
    pub fn rule(&self) -> String {
        match (self.min_excluded, self.min.is_zero()) {
            (true, _) => format!("must be greater than {} and at most {}", self.min, self.max),
            (false, true) if T::COUNT => format!("must be at most {}", self.max),
            (false, _) => format!("must be between {} and {}", self.min, self.max),
        }
    }

    /// The values in words, as every error says them: `1 to 100`, or `more than 0, up to
    /// 1` when the least is outside.
    pub fn span(&self) -> String {
        if self.min_excluded {
            format!("more than {}, up to {}", self.min, self.max)
        } else {
            format!("{} to {}", self.min, self.max)
        }
    }

    /// `v` if it lies within the limit, else the error a request answers with, naming the
    /// parameter as its surface spells it: `limit 0 is outside 1 to 100`.
    pub fn check(&self, param: &str, v: T) -> Result<T, String> {
        if self.contains(v) { Ok(v) } else { Err(format!("{param} {v} is outside {}", self.span())) }
    }
}

/// The longest time a config may set (100 years): times past it would not fit an RFC 3339
/// year of four digits.
pub const MAX_DAYS: u64 = 36_500;
/// `MAX_DAYS` in seconds.
pub const MAX_SECS: u64 = MAX_DAYS * 86_400;
/// A day in seconds: the longest a call may wait.
const DAY_SECS: u64 = 86_400;

// Shared by the config and the tools' parameters.

/// An answer's cap in characters: the `max_chars` of every tool that answers with stored
/// text, and its default, `retrieval.answer_cap_chars`. At least room to say that the
/// answer was cut and how to get the rest.
pub const ANSWER_CHARS: Limit<u64> =
    Limit::new(100, 100_000, 24_000, "the characters of an answer, cut beyond it with a note on how to get the rest");
/// How many memories `memory_search` answers with: its `limit`, and its default,
/// `retrieval.top_k`.
pub const MEMORY_SEARCH_RESULTS: Limit<u64> = Limit::new(1, 100, 5, "how many memories a memory search answers with");
/// The least score a memory search keeps, relative to the best: `memory_search`'s
/// `min_score`, and its default, `retrieval.min_score`.
pub const MIN_SCORE: Limit<f64> =
    Limit::new(0.0, 1.0, 0.15, "the least score of a memory kept by a search, relative to the best");
/// What a stale item's score is multiplied by (`retrieval.stale_factor`).
pub const STALE_FACTOR: Limit<f64> =
    Limit::new(0.0, 1.0, 0.5, "what the score of an item whose cited code changed or is gone is multiplied by");
/// How close in meaning (cosine) a new memory must be to a live one to be named as its
/// near-duplicate (`review.duplicate_similarity`).
pub const DUPLICATE_SIMILARITY: Limit<f64> =
    Limit::new(0.5, 1.0, 0.92, "how close in meaning a new memory is to a live one to be named its near-duplicate");
/// A briefing's characters at the start of a session or after a compaction
/// (`hooks.session_start_chars`, `hooks.post_compact_chars`).
pub const BRIEF_START_CHARS: Limit<u64> =
    Limit::new(0, 100_000, 6_000, "the characters of a briefing at the start of a session or after a compaction");
/// A briefing's characters on a prompt (`hooks.prompt_chars`).
pub const BRIEF_PROMPT_CHARS: Limit<u64> = Limit::new(0, 100_000, 2_000, "the characters of a briefing on a prompt");
/// A briefing's characters before a tool call (`hooks.pre_tool_chars`).
pub const BRIEF_PRE_TOOL_CHARS: Limit<u64> =
    Limit::new(0, 100_000, 1_200, "the characters of a briefing before a tool call");
/// The least relevance of an item briefed on a prompt or before a tool call
/// (`hooks.min_score`).
pub const BRIEF_MIN_SCORE: Limit<f64> =
    Limit::new(0.0, 1.0, 0.35, "the least relevance of an item briefed on a prompt or before a tool call");
/// How much a memory matters: `memory_add`'s `importance`, and the level below which the
/// upkeep and `memory cleanup --below` prune (`memory.prune_below`).
pub const IMPORTANCE: Limit<f64> = Limit::new(0.0, 1.0, 0.5, "how much a memory matters");

// The tools' parameters.

/// `workspace_search`'s `limit`.
pub const SEARCH_RESULTS: Limit<u64> = Limit::new(1, 100, 10, "how many items a workspace search answers with");
/// `recall`'s `limit`.
pub const RECALL_RESULTS: Limit<u64> = Limit::new(1, 50, 10, "how many items a recall answers with");
/// `memory_list`'s `limit`.
pub const MEMORY_LIST_RESULTS: Limit<u64> = Limit::new(1, 100, 20, "how many memories a memory list answers with");
/// `tool_search`'s `limit`.
pub const TOOL_SEARCH_RESULTS: Limit<u64> = Limit::new(1, 50, 8, "how many tools a tool search answers with");
/// The longest query a search takes, in bytes (docs/trust-boundary.md).
pub const MAX_QUERY_BYTES: usize = 4096;
/// The longest key, agent, source, kind, namespace or name, in characters (docs/trust-boundary.md):
/// also the longest namespace name the config may define.
pub const MAX_NAME_CHARS: usize = 256;
/// The most tags one request may carry (docs/trust-boundary.md).
pub const MAX_TAGS: usize = 64;
/// At most this many citations in one memory.
pub const MAX_CITES: usize = 32;
/// The longest tag, in characters (docs/trust-boundary.md).
pub const MAX_TAG_CHARS: usize = 64;

// The config's keys. A namespace's defaults are `short-term`'s; `long-term` has its own
// (`config::NamespaceConfig::defaults_for`).

/// `namespaces.*.ttl_days`.
pub const TTL_DAYS: Limit<u64> = Limit::new(1, MAX_DAYS, 14, "days a memory lives");
/// `namespaces.*.max_entries`.
pub const MAX_ENTRIES: Limit<u64> = Limit::new(1, 1_000_000, 2000, "live memories a namespace keeps");
/// `namespaces.*.max_content_chars`: a memory's line must stay within the 16 MiB a log
/// reader takes.
pub const MAX_CONTENT_CHARS: Limit<u64> =
    Limit::new(1, 2_000_000, 200_000, "characters of a memory's content, cut beyond it");
/// `namespaces.*.max_summary_chars`.
pub const MAX_SUMMARY_CHARS: Limit<u64> = Limit::new(1, 100_000, 1200, "characters of a memory's summary");
/// `namespaces.*.half_life_days`.
pub const HALF_LIFE_DAYS: Limit<f64> =
    Limit::above(0.0, MAX_DAYS as f64, 30.0, "days after which a memory's importance has halved");
/// `memory.compact_garbage_ratio`.
pub const COMPACT_GARBAGE_RATIO: Limit<f64> =
    Limit::above(0.0, 1.0, 0.5, "the share of dead lines in a log above which it is compacted");
/// `watch.debounce_ms`.
pub const DEBOUNCE_MS: Limit<u64> =
    Limit::new(0, 60_000, 50, "milliseconds without a file event before a batch is synced");
/// `watch.auto_min_files`.
pub const AUTO_MIN_FILES: Limit<u64> =
    Limit::new(0, 100_000_000, 5_000, "files of a root from which a CLI query starts a watcher");
/// `watch.auto_idle_secs`.
pub const AUTO_IDLE_SECS: Limit<u64> =
    Limit::new(1, MAX_SECS, 600, "seconds without a query after which a started watcher exits");
/// `pool.max_size`: the pool's hard cap (docs/pool.md).
pub const POOL_SIZE: Limit<u64> = Limit::new(1, 10, 10, "downstream servers running at once");
/// `pool.default_ttl_secs`, and the most a registry entry's `ttl_secs` gives.
pub const POOL_TTL_SECS: Limit<u64> = Limit::new(0, MAX_SECS, 900, "seconds an idle downstream server is kept running");
/// `pool.grace_secs`.
pub const POOL_GRACE_SECS: Limit<u64> =
    Limit::new(0, MAX_SECS, 60, "seconds a closing downstream server is given to exit");
/// `pool.call_timeout_secs`.
pub const CALL_TIMEOUT_SECS: Limit<u64> = Limit::new(1, DAY_SECS, 120, "seconds a downstream tool call may take");
/// `pool.queue_timeout_secs`: beyond it, an `Instant` could overflow.
pub const QUEUE_TIMEOUT_SECS: Limit<u64> =
    Limit::new(0, DAY_SECS, 30, "seconds a call waits for a place when every one is busy");
/// `rules.total_budget_lines`.
pub const RULES_BUDGET_LINES: Limit<u64> =
    Limit::new(0, 1_000_000, 500, "lines all hot-memory rule files may hold together");
/// `sessions.idle_minutes`.
pub const SESSION_IDLE_MINUTES: Limit<f64> =
    Limit::above(0.0, (MAX_DAYS * 1440) as f64, 30.0, "minutes without a call after which a session is recorded");
/// `upkeep.every_secs` (0: never).
pub const UPKEEP_EVERY_SECS: Limit<u64> =
    Limit::new(0, MAX_SECS, 86_400, "seconds between two upkeeps of the memory logs");
/// `upkeep.idle_secs`.
pub const UPKEEP_IDLE_SECS: Limit<u64> = Limit::new(0, DAY_SECS, 60, "seconds without a request before an upkeep runs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_says_its_range_as_config_errors_and_requests_do() {
        assert_eq!(MEMORY_SEARCH_RESULTS.rule(), "must be between 1 and 100");
        assert_eq!(QUEUE_TIMEOUT_SECS.rule(), "must be at most 86400");
        assert_eq!(MIN_SCORE.rule(), "must be between 0 and 1");
        assert_eq!(COMPACT_GARBAGE_RATIO.rule(), "must be greater than 0 and at most 1");
        assert_eq!(SEARCH_RESULTS.check("limit", 0), Err("limit 0 is outside 1 to 100".to_owned()));
        assert_eq!(MIN_SCORE.check("min_score", -0.5), Err("min_score -0.5 is outside 0 to 1".to_owned()));
        assert_eq!(ANSWER_CHARS.check("max_chars", 100), Ok(100));
        assert_eq!(
            COMPACT_GARBAGE_RATIO.check("ratio", 0.0),
            Err("ratio 0 is outside more than 0, up to 1".to_owned())
        );
        assert!(!COMPACT_GARBAGE_RATIO.contains(0.0) && COMPACT_GARBAGE_RATIO.contains(1.0));
        assert!(!MIN_SCORE.contains(f64::NAN));
    }

    #[test]
    fn every_default_lies_within_its_limit() {
        let counts = [
            ANSWER_CHARS,
            MEMORY_SEARCH_RESULTS,
            SEARCH_RESULTS,
            RECALL_RESULTS,
            MEMORY_LIST_RESULTS,
            TOOL_SEARCH_RESULTS,
            TTL_DAYS,
            MAX_ENTRIES,
            MAX_CONTENT_CHARS,
            MAX_SUMMARY_CHARS,
            DEBOUNCE_MS,
            AUTO_MIN_FILES,
            AUTO_IDLE_SECS,
            POOL_SIZE,
            POOL_TTL_SECS,
            POOL_GRACE_SECS,
            CALL_TIMEOUT_SECS,
            QUEUE_TIMEOUT_SECS,
            RULES_BUDGET_LINES,
            UPKEEP_EVERY_SECS,
            UPKEEP_IDLE_SECS,
            BRIEF_START_CHARS,
            BRIEF_PROMPT_CHARS,
            BRIEF_PRE_TOOL_CHARS,
        ];
        for l in counts {
            assert!(l.contains(l.default) && !l.means.is_empty(), "{l:?}");
        }
        for l in [
            MIN_SCORE,
            IMPORTANCE,
            HALF_LIFE_DAYS,
            COMPACT_GARBAGE_RATIO,
            SESSION_IDLE_MINUTES,
            DUPLICATE_SIMILARITY,
            BRIEF_MIN_SCORE,
        ] {
            assert!(l.contains(l.default) && !l.means.is_empty(), "{l:?}");
        }
    }
}

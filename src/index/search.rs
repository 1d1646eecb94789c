//! Search: BM25 over the analyzed fields with boosts, filters that do not score, and
//! minimal answers (docs/ranking.md).
//!
//! User text is never handed to a query parser: it is analyzed into terms, and only double
//! quotes have a meaning (a phrase). Filters are constant-score clauses, so they narrow
//! the results without changing their order.

use serde::Serialize;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue};
use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhraseQuery, Query, RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::tokenizer::TokenStream;
use tantivy::{DocAddress, Order, Score, Searcher, SegmentReader, TantivyDocument, Term};

use super::analyzer;
use super::schema::ref_rank;
use super::stats::Stats;
use super::{Fields, Index, tantivy_err};
use crate::error::{Error, Result};
use crate::memory::fold::DEFAULT_IMPORTANCE;
use crate::model::{DocKind, Scope};

/// A text search over the index: `workspace_search`, `memory_search` and `tool_search` all
/// make one.
#[derive(Debug, Clone, Default)]
pub struct TextQuery {
    pub query: String,
    /// A scope: results at it or below it.
    pub scope: Option<String>,
    pub topics: Vec<String>,
    pub kinds: Vec<DocKind>,
    pub status: Vec<String>,
    pub tags: Vec<String>,
    /// How many results (default 10).
    pub limit: usize,
    /// Memories of these namespaces only.
    pub namespaces: Vec<String>,
    /// Memories of these kinds only (`note`, `problem`, …).
    pub categories: Vec<String>,
    /// Only memories written by one of these agents (their `agent`, as written).
    pub agents: Vec<String>,
    /// The memories that may be shown (all when None), as docs/memory-log.md says.
    pub visible: Option<Visible>,
    /// Memories ranked by BM25 × current importance × trust (docs/ranking.md).
    pub ranking: Option<Ranking>,
    /// What `recall` looks at (docs/tools.md), in place of `kinds` and `topics`.
    pub recall: Option<RecallFilter>,
    /// The query's vector of meaning: results are found by meaning as well as by words
    /// (docs/ranking.md#meaning).
    pub meaning: Option<std::sync::Arc<super::meaning::QueryMeaning>>,
    /// Items about one of these issues only (`IssueRef::terms`: `#123`, `PROJ-7`). With no
    /// words to search for, every item of the issues is listed, newest first.
    pub issues: Vec<String>,
}

/// What `recall` searches: memories but session records, the entries of every topic on
/// the scope's ladder (the scope and everything below it, and the scopes above it), the
/// indexed documents (`index.include`) and commits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecallFilter {
    pub scope: Option<String>,
}

/// Which memories a search may show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visible {
    /// Those written on one of these branches.
    Only(Vec<String>),
    /// All but those of an untracked namespace (not in `tracked`) written on a `hidden`
    /// branch, or on a `partly` branch at one of its commits. Said as what is hidden,
    /// which is usually little: with nothing hidden the search has no filter at all.
    Except { tracked: Vec<String>, hidden: Vec<String>, partly: Vec<(String, Vec<String>)> },
}

/// What ranks memories beyond their text: decay, access counts and trust (docs/ranking.md).
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    /// Now, in seconds since the epoch.
    pub now: i64,
    /// Half-lives by namespace, in days (30 for a namespace not named here).
    pub half_life_days: std::collections::BTreeMap<String, f64>,
    /// Trust scores by writer, 0–1, keyed by normalised name (`parse::trust::normalize`);
    /// 0.5 for a writer not named here or a memory that names none.
    pub trust: std::collections::BTreeMap<String, f64>,
    /// Reads of each memory (a derived count).
    pub access: std::collections::BTreeMap<String, u64>,
}

/// Up to this many expired memories are dropped from the top after a search rather than
/// excluded by the query (which would be slower for every search).
const EXPIRED_DROPPED_AFTER: usize = 256;

/// The half-life of a namespace that names none (docs/config.md).
pub const DEFAULT_HALF_LIFE_DAYS: f64 = 30.0;
/// The trust of an agent nobody has verified (docs/ranking.md).
pub const DEFAULT_TRUST: f64 = crate::parse::trust::START;

/// A memory's current importance (docs/ranking.md): `importance × exp(−ln2 × age / half_life)
/// × min(1 + 0.05 × accesses, 1.5)`, clamped to 0–1.
pub fn current_importance(importance: f64, age_days: f64, half_life_days: f64, accesses: u64) -> f64 {
    let decay = (-std::f64::consts::LN_2 * age_days.max(0.0) / half_life_days.max(f64::MIN_POSITIVE)).exp();
    let used = (1.0 + 0.05 * accesses as f64).min(1.5);
    (importance * decay * used).clamp(0.0, 1.0)
}

/// The kinds of memory whose importance fades with age: notes (the kind of a memory added
/// without one) and session records, what an agent jots down as it works. Decisions,
/// lessons, facts, problems, patterns and every other kind are kept because they stay true:
/// they do not fade (docs/ranking.md).
pub const FADING_KINDS: [&str; 2] = ["note", "session"];

/// Whether a memory of this kind fades with age (see [`FADING_KINDS`]); one without a kind
/// is a note.
pub fn fades(kind: Option<&str>) -> bool {
    kind.is_none_or(|k| k.is_empty() || FADING_KINDS.contains(&k))
}

/// The search boost of a memory written by an agent of this trust: `1 + 0.5 × trust`.
pub fn trust_boost(trust: f64) -> f64 {
    1.0 + 0.5 * trust.clamp(0.0, 1.0)
}

/// The most importance a writer of this trust gives its memories in a ranking: its trust,
/// and never less than the default importance. Importance is the writer's own word, so
/// only trust earned from other verifiers lets a writer lift its memories above the
/// default: a writer nobody verified (or one that failed) with importance 1.0 ranks below
/// a verified writer's memory of default importance and the same words, since the
/// verified one's trust boost is the larger.
pub fn importance_cap(trust: f64) -> f64 {
    trust.clamp(0.0, 1.0).max(DEFAULT_IMPORTANCE)
}

/// A memory's current importance in a ranking: [`current_importance`] of its importance
/// cut to its writer's [`importance_cap`], and cut there again after reads lifted it, so
/// that decay still orders a writer's memories and reads bring one back up to the cap, not
/// beyond.
pub fn ranked_importance(importance: f64, age_days: f64, half_life_days: f64, accesses: u64, trust: f64) -> f64 {
    let cap = importance_cap(trust);
    current_importance(importance.min(cap), age_days, half_life_days, accesses).min(cap)
}

/// One result: the refId, what it is, and a summary.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SearchHit {
    #[serde(rename = "refId")]
    pub ref_id: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// A memory's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Left out when it says the same as the summary (a memory's summary is its name).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The issues it is about (`#123`, `PROJ-7`): a commit's, from its message; a memory's,
    /// from its branch or its session's record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<String>,
    /// 0–100: the score relative to the best result.
    pub score: u32,
    /// The words of the query (as searched, after any correction) that it holds; a result
    /// that holds none of them is never returned.
    pub matched: Vec<String>,
    /// `meaning` when the result holds none of the query's words and was found by its
    /// meaning alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// A memory's writer, its trust and how it was written (docs/trust-boundary.md), which the
    /// query layer fills in: stored text is data, and answers say whose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip)]
    pub raw_score: f32,
    /// Whether it holds every word of the query (of several words): `recall`'s lifts
    /// reorder results within this and never across it.
    #[serde(skip)]
    pub every_word: bool,
    /// Stored fields that memory answers show and workspace answers do not.
    #[serde(skip)]
    pub created: Option<String>,
    #[serde(skip)]
    pub category: Option<String>,
    #[serde(skip)]
    pub body: Option<String>,
    /// A memory's writer.
    #[serde(skip)]
    pub agent: Option<String>,
    /// How a memory was written (`cli`, `mcp`, `http`), when tmws wrote it.
    #[serde(skip)]
    pub surface: Option<String>,
    /// What a memory or an entry cites in the code, which the query layer checks.
    #[serde(skip)]
    pub cites: Vec<crate::memory::cite::Cite>,
    /// The files whose cited text changed or is gone since it was written, which the query
    /// layer fills in: what it says may no longer be true (docs/citations.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_cites: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SearchResults {
    /// The words asked.
    pub query: String,
    /// The results, best first.
    pub results: Vec<SearchHit>,
    /// The index may be behind the files (a sync was under way).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// Words of the query that match nothing, and the word searched for each instead
    /// (`configuraton: configuration`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub corrected: std::collections::BTreeMap<String, String>,
    /// When no word of the query matches anything, the answer is empty, and this names
    /// the nearest word that does for each word it can (`lnit: line`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub did_you_mean: std::collections::BTreeMap<String, String>,
}

/// Field boosts: name and summary over tags over description over body. They order the
/// exact-name and phrase tiers and memories ranked by importance; the every-word tier and
/// the rest of a document search weigh the body more (see [`every_word`], [`body_first`]).
fn boosted(f: &Fields) -> [(Field, f32); 4] {
    [(f.name, 4.0), (f.tags, 2.0), (f.description, 1.5), (f.body, 1.0)]
}

/// The fields the rest of a document search sums, the body first: a query in the reader's
/// own words (`cheaper payments to block producer, no cold penalty`) is found by the
/// body's evidence. A short field scores high in BM25 (its own rare terms, its short
/// length), so a name or description holding one of the query's words outweighed a body
/// holding most of them; exact, phrase and every-word matches of a name keep their lift in
/// the tiers above. Person-written paraphrases, MRR@10 on the full corpora, against every
/// field weighed alike: EIPs 0.306 → 0.403, cpp-docs 0.295 → 0.440, ja-otel 0.423 → 0.646;
/// the other kinds kept theirs but ja-otel description words (0.952 → 0.948). Measured
/// and dropped: no name at all (a page found by its name alone would score nothing), a
/// name of 0.2–0.25 (a little less on every corpus), descriptions weighed 0.3 (ja-otel
/// description words 0.925) or 0.7–1 (paraphrases 0.35–0.39 on EIPs), and every field
/// scored with the body's document frequencies (ja-otel inflected titles 1.000 → 0.958).
fn body_first(f: &Fields) -> [(Field, f32); 4] {
    [(f.name, 0.1), (f.tags, 0.1), (f.description, 0.5), (f.body, 1.0)]
}

/// The fields the every-word tier is ordered by. Each of its pages holds every word; with
/// the boosts, a page whose name held one of them came before the page whose summary held
/// them all. A name still counts as much as a body, so that inflected title words find
/// their page first. Against the boosts, MRR@10 on the full corpora: body words EIPs
/// 0.908 → 0.933, cpp-docs 0.713 → 0.732, ja-otel 0.948 → 0.951, description words EIPs
/// 0.989 → 0.998 and ja-otel 0.948 → 0.941; the rest unchanged. A name weighed below the
/// body (0.1–0.5) did better on body words (cpp-docs 0.740–0.748) but lost an EIP's
/// inflected title.
fn every_word(f: &Fields) -> [(Field, f32); 4] {
    [(f.name, 1.0), (f.tags, 0.5), (f.description, 0.5), (f.body, 1.0)]
}

/// The text part of a query, split into free terms and quoted phrases. A free term of one
/// Latin letter (`a`, `I`) matches nearly everything and is left out, unless the query has
/// nothing else.
fn parse_text(text: &str) -> (Vec<String>, Vec<Vec<(usize, String)>>) {
    let mut free = Vec::new();
    let mut phrases = Vec::new();
    for (i, part) in text.split('"').enumerate() {
        if i % 2 == 1 && text.matches('"').count() > i {
            let toks = phrase_tokens(part);
            if !toks.is_empty() {
                phrases.push(toks);
            }
        } else {
            free.extend(analyzer::terms(part));
        }
    }
    if free.iter().any(|t| !is_single_letter(t)) || !phrases.is_empty() {
        free.retain(|t| !is_single_letter(t));
    }
    (free, phrases)
}

fn is_single_letter(term: &str) -> bool {
    term.len() == 1 && term.bytes().all(|b| b.is_ascii_alphabetic())
}

/// The terms of `text` as a phrase matches them: one per position (an identifier's parts,
/// not the whole word), with its position.
fn phrase_tokens(text: &str) -> Vec<(usize, String)> {
    let mut a = analyzer::analyzer();
    let mut stream = a.token_stream(text);
    let mut toks: Vec<(usize, String)> = Vec::new();
    while stream.advance() {
        let t = stream.token();
        match toks.last_mut() {
            Some(last) if last.0 == t.position => last.1.clone_from(&t.text),
            // A piece of an identifier, at the position of its first part: its parts are
            // the phrase's.
            Some(last) if last.0 > t.position => {}
            _ => toks.push((t.position, t.text.clone())),
        }
    }
    toks
}

/// Every term of `text` grouped by position: a word, or an identifier with its parts.
fn terms_by_position(text: &str) -> Vec<Vec<String>> {
    let mut a = analyzer::analyzer();
    let mut stream = a.token_stream(text);
    let mut out: std::collections::BTreeMap<usize, Vec<String>> = std::collections::BTreeMap::new();
    while stream.advance() {
        let t = stream.token();
        out.entry(t.position).or_default().push(t.text.clone());
    }
    let mut groups: Vec<Vec<String>> = out.into_values().collect();
    if groups.iter().any(|g| !g.iter().all(|t| is_single_letter(t))) {
        groups.retain(|g| !g.iter().all(|t| is_single_letter(t)));
    }
    groups.sort();
    groups.dedup();
    groups
}

/// How a result matched a query of several words, best first (docs/ranking.md): its whole name
/// is the query; the query is a phrase of it; it holds every word; it holds some.
/// Within a tier, results rank by their BM25 score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tier {
    ExactName,
    Phrase,
    AllTerms,
    SomeTerms,
    /// Found by meaning alone, below every result that holds a word of a query of keywords.
    Meaning,
}

/// Words of `query` (plain ASCII letters, four or more, between spaces: an identifier
/// such as `nothing-matches-this` is taken as written) none of whose terms any document
/// holds, each with the word one edit away (a letter deleted, inserted, changed or two
/// swapped) whose term the most documents hold. Runs only for a word that matches nothing.
fn corrections(searcher: &Searcher, f: &Fields, query: &str) -> Result<std::collections::BTreeMap<String, String>> {
    let fields = [f.name, f.tags, f.description, f.body];
    let df = |term: &str| -> Result<u64> {
        let mut n = 0;
        for field in fields {
            n += searcher.doc_freq(&Term::from_field_text(field, term)).map_err(tantivy_err)?;
        }
        Ok(n)
    };
    let mut out = std::collections::BTreeMap::new();
    let words = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| c.is_ascii_punctuation()))
        .filter(|w| w.len() >= 4 && w.bytes().all(|b| b.is_ascii_alphabetic()));
    for word in words {
        let terms = analyzer::terms(word);
        let mut known = terms.is_empty();
        for t in &terms {
            known |= df(t)? > 0;
        }
        if known || out.contains_key(word) {
            continue;
        }
        let mut best: Option<(u64, String)> = None;
        for candidate in one_edit_away(&word.to_ascii_lowercase()) {
            let terms = analyzer::terms(&candidate);
            let [term] = terms.as_slice() else { continue };
            let n = df(term)?;
            if n > 0 && best.as_ref().is_none_or(|(b, c)| n > *b || (n == *b && candidate < *c)) {
                best = Some((n, candidate));
            }
        }
        if let Some((_, to)) = best {
            out.insert(word.to_owned(), to);
        }
    }
    Ok(out)
}

/// Whether any document holds one of `terms` in a field a search scores.
fn any_term_held(searcher: &Searcher, f: &Fields, terms: &[String]) -> Result<bool> {
    for term in terms {
        for field in [f.name, f.tags, f.description, f.body] {
            if searcher.doc_freq(&Term::from_field_text(field, term)).map_err(tantivy_err)? > 0 {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Every word one edit from `word` (lower-case ASCII letters), without repeats.
fn one_edit_away(word: &str) -> Vec<String> {
    let b = word.as_bytes();
    let mut out = std::collections::BTreeSet::new();
    let text = |v: Vec<u8>| String::from_utf8(v).unwrap_or_default();
    for i in 0..=b.len() {
        if i < b.len() {
            out.insert(text([&b[..i], &b[i + 1..]].concat()));
        }
        if i + 1 < b.len() {
            let mut v = b.to_vec();
            v.swap(i, i + 1);
            out.insert(text(v));
        }
        for c in b'a'..=b'z' {
            out.insert(text([&b[..i], &[c], &b[i..]].concat()));
            if i < b.len() && b[i] != c {
                let mut v = b.to_vec();
                v[i] = c;
                out.insert(text(v));
            }
        }
    }
    out.remove(word);
    out.into_iter().collect()
}

/// `query` with the corrected words replaced (whole words only), if any.
fn with_corrections(query: &str, corrected: &std::collections::BTreeMap<String, String>) -> Option<String> {
    if corrected.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(query.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(corrected.get(word.as_str()).map_or(word.as_str(), String::as_str));
        word.clear();
    };
    for c in query.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    Some(out)
}

/// The words of a query's text as a person reads them (quotes and the punctuation around
/// a word aside), each with its terms as the index has them; one-letter Latin words are
/// left out as the search leaves them out, unless the query has nothing else.
fn query_words(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || c == '"') {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        let terms = analyzer::terms(word);
        if terms.is_empty() || out.iter().any(|(w, _)| w.to_lowercase() == word.to_lowercase()) {
            continue;
        }
        out.push((word.to_owned(), terms));
    }
    let letters_only = |terms: &[String]| terms.iter().all(|t| is_single_letter(t));
    if out.iter().any(|(_, t)| !letters_only(t)) {
        out.retain(|(_, t)| !letters_only(t));
    }
    out
}

/// For each of `addrs`, the words of `words` it holds: a word is held when one of its
/// terms is in the document's name, tags, description or body (the fields a search
/// scores). Each term's postings are read once per segment, the documents in order.
fn held_words(
    searcher: &Searcher,
    f: &Fields,
    words: &[(String, Vec<String>)],
    addrs: &[DocAddress],
) -> Result<Vec<Vec<String>>> {
    use tantivy::DocSet;
    let mut held = vec![vec![false; words.len()]; addrs.len()];
    let mut by_segment: std::collections::BTreeMap<u32, Vec<(tantivy::DocId, usize)>> = Default::default();
    for (i, a) in addrs.iter().enumerate() {
        by_segment.entry(a.segment_ord).or_default().push((a.doc_id, i));
    }
    for (segment, mut docs) in by_segment {
        docs.sort_unstable();
        let reader = searcher.segment_reader(segment);
        for field in [f.name, f.tags, f.description, f.body] {
            let inverted = reader.inverted_index(field).map_err(tantivy_err)?;
            for (w, (_, terms)) in words.iter().enumerate() {
                for t in terms {
                    let term = Term::from_field_text(field, t);
                    let Some(mut postings) =
                        inverted.read_postings(&term, IndexRecordOption::Basic).map_err(|e| tantivy_err(e.into()))?
                    else {
                        continue;
                    };
                    for (doc, i) in &docs {
                        // The documents come in order: a postings list already past one
                        // does not hold it.
                        let at = postings.doc();
                        if at == *doc || (at < *doc && postings.seek(*doc) == *doc) {
                            held[*i][w] = true;
                        }
                    }
                }
            }
        }
    }
    Ok(held
        .into_iter()
        .map(|h| words.iter().zip(h).filter(|(_, held)| *held).map(|((w, _), _)| w.clone()).collect())
        .collect())
}

/// What a result holding every word of `query` matches: each word (one of its terms: an
/// identifier or one of its parts) in the name, tags, description or body, and of each
/// run of CJK characters two in three of its bigrams (see [`cjk_runs`]). None for a query
/// of fewer than two words, whose every-word matches are all its matches.
fn every_word_condition(f: &Fields, query: &str) -> Option<Box<dyn Query>> {
    let groups = terms_by_position(query);
    if groups.len() < 2 {
        return None;
    }
    let any_field = |group: &[String]| -> Box<dyn Query> {
        let any: Vec<(Occur, Box<dyn Query>)> =
            group.iter().flat_map(|t| boosted(f).map(|(field, _)| (Occur::Should, term_query(field, t)))).collect();
        Box::new(BooleanQuery::new(any))
    };
    let runs = cjk_runs(query);
    let in_run = |g: &Vec<String>| runs.iter().any(|bigrams| g.len() == 1 && bigrams.contains(&g[0]));
    let mut every: Vec<(Occur, Box<dyn Query>)> =
        groups.iter().filter(|g| !in_run(g)).map(|g| (Occur::Must, any_field(g))).collect();
    for bigrams in &runs {
        let any: Vec<(Occur, Box<dyn Query>)> =
            bigrams.iter().map(|b| (Occur::Should, any_field(std::slice::from_ref(b)))).collect();
        let least = (bigrams.len() * 2).div_ceil(3);
        every.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(any, least))));
    }
    Some(Box::new(BooleanQuery::new(every)))
}

/// The bigrams of each run of three or more bigrams (four CJK characters) in `query`,
/// without repeats. Such a run is often several words typed without spaces
/// (`チェックテスト` for 「チェックとテスト」), and the bigrams across their junctions
/// (`クテ`) are in no page about them: a page holding two in three of the run's bigrams
/// holds its words.
fn cjk_runs(query: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for run in query.split(|c: char| !analyzer::is_cjk(c)).filter(|r| r.chars().count() >= 4) {
        let mut bigrams = analyzer::terms(run);
        bigrams.sort();
        bigrams.dedup();
        if bigrams.len() >= 3 {
            out.push(bigrams);
        }
    }
    out
}

/// How much a page that is mostly a list of links to other pages (`<algorithm>`, a list of
/// a class's methods) counts in the every-word tier and the rest when its name and summary
/// do not hold every word of the query: it names every member its list links to, in a
/// short page, so by BM25 it came before the member's own page (`adjacent_find function`
/// found `<algorithm>` above `<algorithm> functions`). Its own name still finds it first,
/// in the tiers above, and its summary (`EIPs included in the Hegotá upgrade`) by its words.
const LINK_LIST_WEIGHT: f32 = 0.5;

/// Whether the name and summary of `h` hold every one of `words`.
fn head_holds(h: &SearchHit, words: &[(String, Vec<String>)]) -> bool {
    let head: std::collections::HashSet<String> =
        analyzer::terms(&format!("{} {}", h.name, h.summary)).into_iter().collect();
    words.iter().all(|(_, terms)| terms.iter().any(|t| head.contains(t)))
}

/// Results of the exact-name tier are looked for among this many name-phrase matches.
const EXACT_NAME_CANDIDATES: usize = 50;

/// A phrase of `toks` (root positions kept) in `field`, or the term when there is one.
fn phrase_query(field: Field, toks: &[(usize, String)]) -> Box<dyn Query> {
    near_query(field, toks, 0)
}

/// A phrase of `toks` whose words may stand up to `slop` positions further apart than in
/// the query: `activex controls` in `ActiveX Controls`, whose identifier takes two
/// positions (`active`, `x`) in a document and one (`activex`) in the query.
fn near_query(field: Field, toks: &[(usize, String)], slop: u32) -> Box<dyn Query> {
    if toks.len() == 1 {
        return term_query(field, &toks[0].1);
    }
    let base = toks[0].0;
    let terms = toks.iter().map(|(p, t)| (p - base, Term::from_field_text(field, t))).collect();
    let mut q = PhraseQuery::new_with_offset(terms);
    q.set_slop(slop);
    Box::new(q)
}

/// How much further apart the words of a tier's phrase may stand in a name, tags or a
/// description (see `near_query`).
const TIER_SLOP: u32 = 3;

fn term_query(field: Field, text: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(Term::from_field_text(field, text), IndexRecordOption::WithFreqs))
}

/// Any of `values` in `field`, as a filter that adds nothing to the score.
fn filter(field: Field, values: &[String]) -> Box<dyn Query> {
    let any: Vec<(Occur, Box<dyn Query>)> = values.iter().map(|v| (Occur::Should, term_query(field, v))).collect();
    Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0))
}

/// Memories whose expiry has passed: invisible to every query at once (docs/memory-log.md).
pub(crate) fn expired(f: &Fields) -> Box<dyn Query> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    Box::new(RangeQuery::new(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Included(Term::from_field_text(f.expires, &now)),
    ))
}

/// What a search leaves out: expired memories, and session records unless asked for by
/// their kind (`kind: session`). A session record sums up what was searched and written,
/// in the very words of the content it names: it would outrank that content.
fn hidden(f: &Fields, req: &TextQuery) -> Box<dyn Query> {
    if req.categories.iter().any(|c| c == "session") {
        return expired(f);
    }
    Box::new(BooleanQuery::new(vec![
        (Occur::Should, expired(f)),
        (
            Occur::Should,
            Box::new(BooleanQuery::new(vec![
                (Occur::Must, term_query(f.kind, DocKind::Memory.as_str())),
                (Occur::Must, term_query(f.category, "session")),
            ])),
        ),
    ]))
}

/// `recall`'s documents (see [`RecallFilter`]), as a filter.
fn recall_filter(f: &Fields, recall: &RecallFilter) -> Result<Box<dyn Query>> {
    let kind = |k: DocKind| term_query(f.kind, k.as_str());
    let memories = BooleanQuery::new(vec![
        (Occur::Must, kind(DocKind::Memory)),
        (Occur::MustNot, term_query(f.category, "session")),
    ]);
    let mut entries: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, kind(DocKind::Entry))];
    if let Some(scope) = &recall.scope {
        let scope = Scope::parse(scope.trim_matches('/')).map_err(|e| Error::Usage(e.to_string()))?;
        let parts: Vec<&str> = scope.components().collect();
        let mut ladder: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Should, term_query(f.scope_path, &scope.to_string()))];
        for depth in 1..parts.len() {
            ladder.push((Occur::Should, term_query(f.scope, &parts[..depth].join("/"))));
        }
        entries.push((Occur::Must, Box::new(BooleanQuery::new(ladder))));
    }
    let any: Vec<(Occur, Box<dyn Query>)> = vec![
        (Occur::Should, Box::new(memories)),
        (Occur::Should, Box::new(BooleanQuery::new(entries))),
        (Occur::Should, kind(DocKind::Doc)),
        (Occur::Should, kind(DocKind::Commit)),
    ];
    Ok(Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0)))
}

/// The clauses of a query's filters: scope, topics, kinds, statuses, tags, namespaces,
/// kinds of memory and visibility across branches. They narrow; they never score.
fn filters(f: &Fields, req: &TextQuery) -> Result<Vec<(Occur, Box<dyn Query>)>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if let Some(scope) = &req.scope {
        let scope = Scope::parse(scope.trim_matches('/')).map_err(|e| Error::Usage(e.to_string()))?;
        clauses.push((Occur::Must, filter(f.scope_path, &[scope.to_string()])));
    }
    if !req.topics.is_empty() {
        let topics: Vec<String> = req.topics.iter().map(|t| crate::layout::topic_name(t)).collect();
        clauses.push((Occur::Must, filter(f.topic, &topics)));
    }
    if !req.kinds.is_empty() {
        let kinds: Vec<String> = req.kinds.iter().map(|k| k.as_str().to_owned()).collect();
        clauses.push((Occur::Must, filter(f.kind, &kinds)));
    }
    if !req.status.is_empty() {
        clauses.push((Occur::Must, filter(f.status, &req.status)));
    }
    for tag in &req.tags {
        clauses.push((Occur::Must, filter(f.tag, std::slice::from_ref(tag))));
    }
    if !req.namespaces.is_empty() {
        clauses.push((Occur::Must, filter(f.namespace, &req.namespaces)));
    }
    if !req.categories.is_empty() {
        clauses.push((Occur::Must, filter(f.category, &req.categories)));
    }
    if !req.agents.is_empty() {
        clauses.push((Occur::Must, filter(f.agent, &req.agents)));
    }
    if let Some(recall) = &req.recall {
        clauses.push((Occur::Must, recall_filter(f, recall)?));
    }
    if !req.issues.is_empty() {
        clauses.push((Occur::Must, filter(f.issue, &req.issues)));
    }
    match &req.visible {
        None => {}
        Some(Visible::Only(branches)) => clauses.push((Occur::Must, filter(f.branch, branches))),
        Some(Visible::Except { tracked, hidden, partly }) => {
            let mut off: Vec<(Occur, Box<dyn Query>)> =
                hidden.iter().map(|b| (Occur::Should, term_query(f.branch, b))).collect();
            for (branch, commits) in partly {
                let at = BooleanQuery::new(vec![
                    (Occur::Must, term_query(f.branch, branch)),
                    (Occur::Must, filter(f.commit, commits)),
                ]);
                off.push((Occur::Should, Box::new(at)));
            }
            if !off.is_empty() {
                let mut hidden_q: Vec<(Occur, Box<dyn Query>)> =
                    vec![(Occur::Must, Box::new(BooleanQuery::new(off)) as Box<dyn Query>)];
                if !tracked.is_empty() {
                    hidden_q.push((Occur::MustNot, filter(f.namespace, tracked)));
                }
                clauses.push((Occur::MustNot, Box::new(BooleanQuery::new(hidden_q))));
            }
        }
    }
    Ok(clauses)
}

impl Index {
    /// The memories `req`'s filters leave (never expired ones), added at `since` (seconds
    /// since the epoch) or later, newest first: how many there are, and the first
    /// `req.limit` of them. `req.query` is not read.
    pub fn latest_memories(&self, req: &TextQuery, since: Option<i64>) -> Result<(usize, Vec<super::Item>)> {
        let f = &self.fields;
        let mut clauses = filters(f, req)?;
        clauses.push((Occur::Must, term_query(f.kind, DocKind::Memory.as_str())));
        clauses.push((Occur::MustNot, expired(f)));
        if let Some(since) = since {
            let from = std::ops::Bound::Included(Term::from_field_i64(f.added, since));
            clauses.push((Occur::Must, Box::new(RangeQuery::new(from, std::ops::Bound::Unbounded))));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let total = searcher.search(&query, &Count).map_err(tantivy_err)?;
        let newest = TopDocs::with_limit(req.limit.max(1)).order_by_fast_field::<i64>("added", Order::Desc);
        let top = searcher.search(&query, &newest).map_err(tantivy_err)?;
        let list =
            super::items::ItemList::of(f.clone(), searcher, top.into_iter().map(|(_, a)| (String::new(), a)).collect());
        let items = (0..list.len()).map(|i| list.get(i)).collect::<Result<Vec<_>>>()?;
        Ok((total, items))
    }

    /// The live items that cite one of `paths` (root-relative files, or folders ending in
    /// `/`) and that `req`'s filters leave, newest first, at most `req.limit`: what an edit
    /// of those files is briefed with. `req.query` is not read.
    pub fn citing(&self, req: &TextQuery, paths: &[String]) -> Result<Vec<super::Item>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let f = &self.fields;
        let mut clauses = filters(f, req)?;
        clauses.push((Occur::MustNot, expired(f)));
        let any: Vec<(Occur, Box<dyn Query>)> = paths.iter().map(|p| (Occur::Should, term_query(f.cites, p))).collect();
        clauses.push((Occur::Must, Box::new(BooleanQuery::new(any))));
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let newest = TopDocs::with_limit(req.limit.max(1)).order_by_fast_field::<i64>("added", Order::Desc);
        let top = searcher.search(&query, &newest).map_err(tantivy_err)?;
        let list =
            super::items::ItemList::of(f.clone(), searcher, top.into_iter().map(|(_, a)| (String::new(), a)).collect());
        (0..list.len()).map(|i| list.get(i)).collect()
    }

    /// Runs a search over what the reader sees now.
    /// Every item of `req.issues` that the other filters leave (no expired memory), newest
    /// first: "what was done for #123" (docs/trackers.md#issue-references).
    fn issue_items(&self, req: &TextQuery) -> Result<SearchResults> {
        let searcher = self.reader.searcher();
        let f = &self.fields;
        let mut clauses = filters(f, req)?;
        clauses.push((Occur::Must, Box::new(AllQuery)));
        // Sessions are what was done for an issue: they are listed here, unlike in searches.
        clauses.push((Occur::MustNot, expired(f)));
        let found = searcher.search(&BooleanQuery::new(clauses), &DocSetCollector).map_err(tantivy_err)?;
        let mut hits = Vec::with_capacity(found.len());
        for addr in found {
            let (mut h, _) = hit(&searcher, f, addr, 1.0)?;
            h.score = 100;
            h.matched.clone_from(&req.issues);
            hits.push(h);
        }
        hits.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| ref_rank(&a.ref_id).cmp(&ref_rank(&b.ref_id))));
        hits.truncate(if req.limit == 0 { 10 } else { req.limit });
        Ok(SearchResults {
            query: req.query.clone(),
            results: hits,
            stale: false,
            corrected: Default::default(),
            did_you_mean: Default::default(),
        })
    }

    pub fn search(&self, req: &TextQuery) -> Result<SearchResults> {
        let searcher = self.reader.searcher();
        // A word that matches nothing is searched as the nearest word that does (one edit
        // away), and the answer says so.
        if !req.issues.is_empty() && req.query.trim().is_empty() {
            return self.issue_items(req);
        }
        let corrected = if req.query.contains('"') || req.ranking.is_some() {
            std::collections::BTreeMap::new()
        } else {
            corrections(&searcher, &self.fields, &req.query)?
        };
        // A query none of whose words matches anything answers nothing: the nearest words
        // are only named, since what they find is about something else (`lint` is not
        // `line`).
        if !corrected.is_empty() && !any_term_held(&searcher, &self.fields, &parse_text(&req.query).0)? {
            // What the query means may still be found: only that, with the near words named.
            let limit = if req.limit == 0 { 10 } else { req.limit };
            let meant = match self.meaning_of(req, &req.query)? {
                Some(q) => self.finish_fused(req, &req.query, &searcher, Vec::new(), Some(q), limit)?.results,
                None => Vec::new(),
            };
            return Ok(SearchResults {
                query: req.query.clone(),
                results: meant,
                stale: false,
                corrected: Default::default(),
                did_you_mean: corrected,
            });
        }
        let corrected_text = with_corrections(&req.query, &corrected);
        let query_text = corrected_text.as_deref().unwrap_or(&req.query);
        let (free, phrases) = parse_text(query_text);
        if free.is_empty() && phrases.is_empty() {
            return Err(Error::Usage(if req.query.trim().is_empty() {
                "empty query: give some words to search for".to_owned()
            } else {
                format!("nothing to search for in `{}`: it has no words", req.query.trim())
            }));
        }
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let union_of = |weights: [(Field, f32); 4]| -> Vec<(Occur, Box<dyn Query>)> {
            free.iter()
                .flat_map(|term| weights.map(|(field, w)| (field, w, term)))
                .map(|(field, w, term)| {
                    (Occur::Should, Box::new(BoostQuery::new(term_query(field, term), w)) as Box<dyn Query>)
                })
                .collect()
        };
        // Memories ranked by importance keep the boosts; a document search's remainder,
        // after the tiers, weighs the body first (see [`body_first`]).
        let text = union_of(if req.ranking.is_some() { boosted(f) } else { body_first(f) });
        for phrase in &phrases {
            let mut any_field: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for (field, boost) in boosted(f) {
                any_field.push((Occur::Should, Box::new(BoostQuery::new(phrase_query(field, phrase), boost))));
            }
            clauses.push((Occur::Must, Box::new(BooleanQuery::new(any_field))));
        }
        let union: Option<Box<dyn Query>> =
            (!text.is_empty()).then(|| Box::new(BooleanQuery::new(union_of(boosted(f)))) as _);
        if !text.is_empty() {
            let occur = if phrases.is_empty() { Occur::Must } else { Occur::Should };
            clauses.push((occur, Box::new(BooleanQuery::new(text))));
        }
        let filter_clauses = filters(f, req)?;
        clauses.extend(filter_clauses.iter().map(|(o, q)| (*o, q.box_clone())));
        let limit = if req.limit == 0 { 10 } else { req.limit };
        let meaning = self.meaning_of(req, query_text)?;
        // By meaning, more candidates are taken by words than are shown, for the fusion to
        // choose from.
        let wanted = if meaning.is_some() { limit * MEANING_CANDIDATES } else { limit };
        if let Some(ranking) = &req.ranking {
            clauses.push((Occur::MustNot, hidden(f, req)));
            let stats = self.stats(&searcher);
            // Memories holding every word of the query first: decay and trust reorder
            // memories of like relevance, and must not lift a newer note holding one word
            // over the only one holding them all.
            let mut top: Vec<(Tier, f32, DocAddress)> = Vec::new();
            if let Some(every) = every_word_condition(f, query_text) {
                let mut narrow: Vec<(Occur, Box<dyn Query>)> =
                    clauses.iter().map(|(o, q)| (*o, q.box_clone())).collect();
                narrow.push((Occur::Must, Box::new(ConstScoreQuery::new(every, 0.0))));
                let full = ranked(&searcher, &stats, &BooleanQuery::new(narrow), wanted, ranking)?;
                top.extend(full.into_iter().map(|(s, a)| (Tier::AllTerms, s, a)));
            }
            if top.len() < wanted {
                let seen: std::collections::HashSet<DocAddress> = top.iter().map(|(_, _, a)| *a).collect();
                let rest = ranked(&searcher, &stats, &BooleanQuery::new(clauses), wanted + seen.len(), ranking)?;
                let rest: Vec<(f32, DocAddress)> =
                    rest.into_iter().filter(|(_, a)| !seen.contains(a)).take(wanted - seen.len()).collect();
                top.extend(rest.into_iter().map(|(s, a)| (Tier::SomeTerms, s, a)));
            }
            return self.finish_fused(req, query_text, &searcher, top, meaning, limit);
        }
        // Expired memories (awaiting compaction) are few: they are dropped from the top
        // after the search instead of by a clause, which would keep tantivy from skipping
        // the blocks that cannot make the top (block-max WAND needs a query that is nothing
        // but a union of terms).
        let expired_query = hidden(f, req);
        let expired_docs = match searcher.search(&expired_query, &Count).map_err(tantivy_err)? {
            0 => Some(std::collections::HashSet::new()),
            n if n <= EXPIRED_DROPPED_AFTER => {
                Some(searcher.search(&expired_query, &DocSetCollector).map_err(tantivy_err)?)
            }
            _ => None,
        };
        if expired_docs.is_none() {
            clauses.push((Occur::MustNot, expired_query.box_clone()));
        }
        let dropped = expired_docs.as_ref().map_or(0, std::collections::HashSet::len);
        let live = |addr: &DocAddress| expired_docs.as_ref().is_none_or(|e| !e.contains(addr));
        // Several words (and no quotes): the tiers first, then the union for the rest.
        let mut tiered: Vec<(Tier, f32, DocAddress)> = Vec::new();
        if let Some(union) = union.as_deref()
            && phrases.is_empty()
        {
            let mut narrow = filter_clauses;
            if expired_docs.is_none() {
                narrow.push((Occur::MustNot, expired_query));
            }
            let every_union = BooleanQuery::new(union_of(every_word(f)));
            tiered = self.tiers(&searcher, query_text, (union, &every_union), &narrow, (&live, dropped), limit)?;
        }
        if tiered.len() >= limit {
            return Ok(SearchResults {
                corrected,
                ..self.finish(req, &query_words(query_text), &searcher, tiered, &Default::default())?
            });
        }
        let seen: std::collections::HashSet<DocAddress> = tiered.iter().map(|(_, _, a)| *a).collect();
        let want = wanted + seen.len();
        let query: Box<dyn Query> = if clauses.len() == 1 && clauses[0].0 == Occur::Must {
            // Words only: the union itself, so that block-max WAND applies.
            clauses.pop().map_or_else(|| Box::new(AllQuery) as Box<dyn Query>, |(_, q)| q)
        } else {
            Box::new(BooleanQuery::new(clauses))
        };
        // The same files must always give the same answer, however documents fell into
        // segments: ties are broken by a rank derived from the refId. Ordering by (score,
        // rank) in the collector scores every match; ordering by score alone lets tantivy
        // skip blocks that cannot make the top. So take the top by score, one more than
        // asked: when the last kept and the first dropped differ, the set is the same in any
        // build and only its ties need ordering; otherwise ties straddle the cut and the
        // exhaustive order decides.
        let stats = self.stats(&searcher);
        let fast: Vec<(f32, DocAddress)> = searcher
            .search_with_statistics_provider(&query, &TopDocs::with_limit(want + 1 + dropped).order_by_score(), &stats)
            .map_err(tantivy_err)?
            .into_iter()
            .filter(|(_, addr)| live(addr))
            .collect();
        let straddles = fast.len() > want && fast[want - 1].0 == fast[want].0;
        let top: Vec<(f32, DocAddress)> = if straddles {
            let by = (
                (SortBySimilarityScore, Order::Desc),
                (SortByStaticFastValue::<u64>::for_field("ref_rank"), Order::Asc),
            );
            let all = searcher
                .search_with_statistics_provider(&query, &TopDocs::with_limit(want + dropped).order_by(by), &stats)
                .map_err(tantivy_err)?;
            all.into_iter().filter(|(_, addr)| live(addr)).map(|((score, _), addr)| (score, addr)).take(want).collect()
        } else {
            fast.into_iter().take(want).collect()
        };
        tiered.extend(
            top.into_iter()
                .filter(|(_, a)| !seen.contains(a))
                .take(wanted.saturating_sub(seen.len()))
                .map(|(score, a)| (Tier::SomeTerms, score, a)),
        );
        Ok(SearchResults { corrected, ..self.finish_fused(req, query_text, &searcher, tiered, meaning, limit)? })
    }

    /// The results of the tiers above `SomeTerms` for a query of several words, best
    /// first, at most `limit`: each tier's condition narrows, a union scores (the boosted
    /// one, and for the every-word tier its own).
    fn tiers(
        &self,
        searcher: &Searcher,
        query: &str,
        (union, every_union): (&dyn Query, &dyn Query),
        filters: &[(Occur, Box<dyn Query>)],
        (live, dropped): (&dyn Fn(&DocAddress) -> bool, usize),
        limit: usize,
    ) -> Result<Vec<(Tier, f32, DocAddress)>> {
        let f = &self.fields;
        let toks = phrase_tokens(query);
        let groups = terms_by_position(query);
        if toks.is_empty() || groups.is_empty() {
            return Ok(Vec::new());
        }
        let stats = self.stats(searcher);
        let top = |cond: Box<dyn Query>, n: usize, union: &dyn Query| -> Result<Vec<(f32, DocAddress)>> {
            let mut clauses: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Must, Box::new(ConstScoreQuery::new(cond, 0.0))), (Occur::Should, union.box_clone())];
            clauses.extend(filters.iter().map(|(o, q)| (*o, q.box_clone())));
            let by = (
                (SortBySimilarityScore, Order::Desc),
                (SortByStaticFastValue::<u64>::for_field("ref_rank"), Order::Asc),
            );
            let found = searcher
                .search_with_statistics_provider(
                    &BooleanQuery::new(clauses),
                    &TopDocs::with_limit(n + dropped).order_by(by),
                    &stats,
                )
                .map_err(tantivy_err)?;
            Ok(found
                .into_iter()
                .filter(|(_, addr)| live(addr))
                .map(|((score, _), addr)| (score, addr))
                .take(n)
                .collect())
        };
        let mut out: Vec<(Tier, f32, DocAddress)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut add = |tier: Tier, found: Vec<(f32, DocAddress)>, out: &mut Vec<(Tier, f32, DocAddress)>| {
            for (score, addr) in found {
                if out.len() < limit && seen.insert(addr) {
                    out.push((tier, score, addr));
                }
            }
        };
        // The whole name: a name phrase whose name has no other token (its field norm is
        // the query's token count; names are short, so the norm is exact).
        let count = analyzer::terms(query).len();
        let named = top(phrase_query(f.name, &toks), EXACT_NAME_CANDIDATES, union)?;
        let mut exact = Vec::new();
        for (score, addr) in named {
            let norms = searcher.segment_reader(addr.segment_ord).get_fieldnorms_reader(f.name).map_err(tantivy_err)?;
            if norms.fieldnorm(addr.doc_id) as usize == count {
                exact.push((score, addr));
            }
        }
        add(Tier::ExactName, exact, &mut out);
        // One word is its own phrase and holds every word of itself: a name that is that
        // word (`2025`, `Android`, `ログ`) is all a tier can add.
        if toks.len() < 2 || groups.len() < 2 {
            return Ok(out);
        }
        if out.len() < limit {
            // Two adjacent words in a body are weak evidence (a link's `x-class.md` holds
            // `x class`); in a name, tags or a description they are not.
            let any: Vec<(Occur, Box<dyn Query>)> = boosted(f)
                .iter()
                .filter(|(field, _)| *field != f.body || toks.len() >= 3)
                .map(|(field, _)| {
                    // Bodies are prose: a phrase copied from one is exact.
                    let slop = if *field == f.body { 0 } else { TIER_SLOP };
                    (Occur::Should, near_query(*field, &toks, slop))
                })
                .collect();
            add(Tier::Phrase, top(Box::new(BooleanQuery::new(any)), limit, union)?, &mut out);
        }
        if out.len() < limit
            && let Some(every) = every_word_condition(f, query)
        {
            add(Tier::AllTerms, top(every, limit, every_union)?, &mut out);
        }
        Ok(out)
    }

    /// The statistics searches score with: the same for the same documents, however they
    /// fell into segments.
    fn stats<'a>(&'a self, searcher: &'a Searcher) -> Stats<'a> {
        Stats { searcher, norms: &self.norms }
    }

    /// Turns the top documents into hits, by tier then score, with scores relative to the
    /// best (never above the one before: a lower tier may score higher by BM25).
    ///
    /// Each says which of `words` (those of the text searched, [`query_words`]) it holds;
    /// one that holds none of them (a match of a term that is no word of the query's own)
    /// is left out.
    fn finish(
        &self,
        req: &TextQuery,
        words: &[(String, Vec<String>)],
        searcher: &Searcher,
        top: Vec<(Tier, f32, DocAddress)>,
        by_meaning: &std::collections::HashSet<DocAddress>,
    ) -> Result<SearchResults> {
        let f = &self.fields;
        let addrs: Vec<DocAddress> = top.iter().map(|(_, _, a)| *a).collect();
        let held = held_words(searcher, f, words, &addrs)?;
        let mut hits = Vec::with_capacity(top.len());
        for ((tier, score, addr), matched) in top.into_iter().zip(held) {
            let meant = matched.is_empty() && by_meaning.contains(&addr);
            if matched.is_empty() && !meant {
                continue;
            }
            let (mut h, list) = hit(searcher, f, addr, score)?;
            // A page that is mostly links to others, matched through its links, counts less
            // than the pages they lead to (see [`LINK_LIST_WEIGHT`]).
            if list && tier >= Tier::AllTerms && req.ranking.is_none() && !head_holds(&h, words) {
                h.raw_score *= LINK_LIST_WEIGHT;
            }
            h.matched = matched;
            if meant {
                h.why = Some("meaning".to_owned());
            }
            h.every_word = tier < Tier::SomeTerms;
            hits.push((tier, h));
        }
        hits.sort_by(|(ta, a), (tb, b)| {
            ta.cmp(tb)
                .then_with(|| b.raw_score.total_cmp(&a.raw_score))
                .then_with(|| ref_rank(&a.ref_id).cmp(&ref_rank(&b.ref_id)))
        });
        let mut hits: Vec<SearchHit> = hits.into_iter().map(|(_, h)| h).collect();
        let best = hits.first().map_or(1.0, |h| h.raw_score.max(f32::MIN_POSITIVE));
        let mut cap = 100;
        for h in &mut hits {
            h.score = (((h.raw_score / best) * 100.0).round().clamp(0.0, 100.0) as u32).min(cap);
            cap = h.score;
        }
        Ok(SearchResults {
            query: req.query.clone(),
            results: hits,
            stale: false,
            corrected: Default::default(),
            did_you_mean: Default::default(),
        })
    }
}

impl Index {
    /// The current importance (docs/ranking.md) of every live memory, by namespace (`/metrics`).
    pub fn importance_by_namespace(&self, r: &Ranking) -> Result<std::collections::BTreeMap<String, Vec<f64>>> {
        let f = &self.fields;
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(f.kind, DocKind::Memory.as_str())),
            (Occur::MustNot, expired(f)),
        ]);
        let searcher = self.reader.searcher();
        let docs = searcher.search(&query, &DocSetCollector).map_err(tantivy_err)?;
        let mut out: std::collections::BTreeMap<String, Vec<f64>> = std::collections::BTreeMap::new();
        let mut buf = String::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let fast = segment.fast_fields();
            let importance = fast.f64("importance").ok().map(|c| c.first_or_default_col(DEFAULT_IMPORTANCE));
            let added = fast.i64("added").ok().map(|c| c.first_or_default_col(r.now));
            let namespace = fast.str("namespace").ok().flatten();
            let category = fast.str("category").ok().flatten();
            let ref_id = if r.access.is_empty() { None } else { fast.str("ref_id").ok().flatten() };
            for addr in docs.iter().filter(|a| a.segment_ord as usize == ord) {
                let doc = addr.doc_id;
                let mut text_of = |col: &Option<tantivy::columnar::StrColumn>| -> Option<String> {
                    let col = col.as_ref()?;
                    let o = col.ords().first(doc)?;
                    col.ord_to_str(o, &mut buf).ok().filter(|found| *found).map(|_| buf.clone())
                };
                let ns = text_of(&namespace).unwrap_or_default();
                let reads = text_of(&ref_id).and_then(|id| r.access.get(&id).copied()).unwrap_or(0);
                let imp = importance.as_ref().map_or(DEFAULT_IMPORTANCE, |c| c.get_val(doc));
                let kind = text_of(&category);
                let age = added.as_ref().map_or(0.0, |c| (r.now - c.get_val(doc)) as f64 / 86_400.0);
                let age_days = if fades(kind.as_deref()) { age } else { 0.0 };
                let half = r.half_life_days.get(&ns).copied().unwrap_or(DEFAULT_HALF_LIFE_DAYS);
                out.entry(ns).or_default().push(current_importance(imp, age_days, half, reads));
            }
        }
        Ok(out)
    }
}

/// The top `limit` documents by BM25 × current importance (cut to the writer's trust) ×
/// trust boost, ties by refId rank.
fn ranked(
    searcher: &Searcher,
    stats: &Stats<'_>,
    query: &dyn Query,
    limit: usize,
    r: &Ranking,
) -> Result<Vec<(f32, DocAddress)>> {
    let r = std::sync::Arc::new(r.clone());
    let collector = TopDocs::with_limit(limit).tweak_score(move |seg: &SegmentReader| {
        let fast = seg.fast_fields();
        let importance = fast.f64("importance").ok().map(|c| c.first_or_default_col(DEFAULT_IMPORTANCE));
        let added = fast.i64("added").ok().map(|c| c.first_or_default_col(r.now));
        let rank = fast.u64("ref_rank").ok().map(|c| c.first_or_default_col(0));
        // Per-segment tables from the string columns' ordinals.
        let by_ord = |name: &str,
                      value: &dyn Fn(&str) -> f64,
                      default: f64|
         -> Option<(Vec<f64>, tantivy::columnar::Column<u64>)> {
            let col = fast.str(name).ok().flatten()?;
            let mut table = Vec::with_capacity(col.num_terms());
            let mut buf = String::new();
            for ord in 0..col.num_terms() as u64 {
                let v = match col.ord_to_str(ord, &mut buf) {
                    Ok(true) => value(&buf),
                    _ => default,
                };
                table.push(v);
            }
            Some((table, col.ords().clone()))
        };
        // Lookups that cannot change the score are skipped: one half-life for every
        // namespace, nothing read yet (the usual case).
        let one_half_life = {
            let mut v = r.half_life_days.values();
            let first = v.next().copied().unwrap_or(DEFAULT_HALF_LIFE_DAYS);
            v.all(|h| *h == first).then_some(first)
        };
        let half = match one_half_life {
            Some(_) => None,
            None => by_ord(
                "namespace",
                &|ns| r.half_life_days.get(ns).copied().unwrap_or(DEFAULT_HALF_LIFE_DAYS),
                DEFAULT_HALF_LIFE_DAYS,
            ),
        };
        let default_half = one_half_life.unwrap_or(DEFAULT_HALF_LIFE_DAYS);
        // 1 for a memory of a kind that fades, 0 for one that keeps (`FADING_KINDS`).
        let fading = by_ord("category", &|k| if fades(Some(k)) { 1.0 } else { 0.0 }, 1.0);
        // The trust of each writer, by the ordinal of its name in this segment.
        let writer_trust = by_ord(
            "agent",
            &|a| r.trust.get(&crate::parse::trust::normalize(a)).copied().unwrap_or(DEFAULT_TRUST),
            DEFAULT_TRUST,
        );
        // Accesses by the ordinal of the refId (only the few memories ever read).
        let access: Option<(rustc_hash::FxHashMap<u64, u64>, tantivy::columnar::Column<u64>)> = if r.access.is_empty() {
            None
        } else {
            fast.str("ref_id").ok().flatten().map(|col| {
                let dict = col.dictionary();
                let map =
                    r.access.iter().filter_map(|(id, n)| dict.term_ord(id).ok().flatten().map(|o| (o, *n))).collect();
                (map, col.ords().clone())
            })
        };
        let r = r.clone();
        move |doc: tantivy::DocId, score: Score| {
            let lookup = |t: &Option<(Vec<f64>, tantivy::columnar::Column<u64>)>, default: f64| {
                t.as_ref()
                    .and_then(|(table, col)| col.first(doc).and_then(|o| table.get(o as usize).copied()))
                    .unwrap_or(default)
            };
            let imp = importance.as_ref().map_or(DEFAULT_IMPORTANCE, |c| c.get_val(doc));
            let age_days =
                added.as_ref().map_or(0.0, |c| (r.now - c.get_val(doc)) as f64 / 86_400.0) * lookup(&fading, 1.0);
            let reads =
                access.as_ref().and_then(|(m, col)| col.first(doc).and_then(|o| m.get(&o).copied())).unwrap_or(0);
            let trust = lookup(&writer_trust, DEFAULT_TRUST);
            let current = ranked_importance(imp, age_days, lookup(&half, default_half), reads, trust);
            let tweaked = f64::from(score) * current * trust_boost(trust);
            // Ties: the lower refId rank first, as in every other search.
            let tie = u64::MAX - rank.as_ref().map_or(0, |c| c.get_val(doc));
            (tweaked as f32, tie)
        }
    });
    let top = searcher.search_with_statistics_provider(query, &collector, stats).map_err(tantivy_err)?;
    Ok(top.into_iter().map(|((score, _), addr)| (score, addr)).collect())
}

/// A result, and whether it is a page that is mostly a list of links.
fn hit(searcher: &Searcher, f: &Fields, addr: DocAddress, score: f32) -> Result<(SearchHit, bool)> {
    let doc: TantivyDocument = searcher.doc(addr).map_err(tantivy_err)?;
    let list = doc.get_all(f.flags).any(|v| v.as_str() == Some(super::extract::LINK_LIST));
    let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).map(str::to_owned);
    let summary = text(f.description).or_else(|| text(f.summary_stored)).unwrap_or_default();
    let name = text(f.name).filter(|n| *n != summary).unwrap_or_default();
    let meta = doc
        .get_first(f.meta)
        .and_then(|v| v.as_str())
        .and_then(|m| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(m).ok());
    let hit = SearchHit {
        ref_id: text(f.ref_id).unwrap_or_default(),
        kind: text(f.kind).unwrap_or_default(),
        scope: text(f.scope),
        topic: text(f.topic),
        namespace: text(f.namespace),
        name,
        summary,
        tags: doc.get_all(f.tag).filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        status: text(f.status),
        issues: doc.get_all(f.issue).filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        score: 0,
        matched: Vec::new(),
        why: None,
        author: None,
        trust: None,
        source: None,
        raw_score: score,
        every_word: false,
        created: text(f.created),
        category: text(f.category),
        body: text(f.body_stored),
        agent: text(f.agent),
        surface: meta.as_ref().and_then(|m| m.get("surface").and_then(serde_json::Value::as_str).map(str::to_owned)),
        cites: crate::memory::cite::of_meta(meta.as_ref()),
        stale_cites: Vec::new(),
    };
    Ok((hit, list))
}

/// How much meaning weighs against the share of the query's words a result holds, below
/// the lexical tiers (docs/ranking.md#meaning): `0.8 × cosine + 0.2 × share`.
const MEANING_WEIGHT: f32 = 0.8;
/// How much meaning weighs against the score by words (over the best of them) when no
/// result holds every keyword of a query (docs/ranking.md#meaning): `0.5 × cosine + 0.5 ×
/// score / best`. Measured on the paraphrases of two corpora, where 0.3 to 0.7 all gained.
const UNSETTLED_MEANING_WEIGHT: f32 = 0.5;
/// The least cosine at which a result that holds none of the query's words is shown.
const MEANING_FLOOR: f32 = 0.35;
/// Candidates taken by words and by meaning, per result asked.
const MEANING_CANDIDATES: usize = 3;
/// The least cosine at which a result that holds none of the words of a query of keywords
/// is shown (after every result that holds one): a word or two alone says little of what
/// is meant, and unrelated texts often reach 0.4 with the built-in model.
const KEYWORDS_MEANING_FLOOR: f32 = 0.5;
/// A result found by meaning alone, below a query of keywords' matches, scores this share
/// of the best match times its cosine.
const MEANING_BELOW: f32 = 0.1;

/// Sorts results by tier, then score, then the refId rank: the same files give the same
/// order, however documents fell into segments, also where a cut falls among ties.
fn by_tier_score_and_rank(searcher: &Searcher, results: &mut [(Tier, f32, DocAddress)]) {
    let rank = |addr: &DocAddress| {
        let segment = searcher.segment_reader(addr.segment_ord);
        segment.fast_fields().u64("ref_rank").ok().and_then(|c| c.first(addr.doc_id)).unwrap_or(u64::MAX)
    };
    let mut keyed: Vec<((Tier, f32, DocAddress), u64)> = results.iter().map(|r| (*r, rank(&r.2))).collect();
    keyed.sort_by(|(a, ra), (b, rb)| a.0.cmp(&b.0).then_with(|| b.1.total_cmp(&a.1)).then_with(|| ra.cmp(rb)));
    for (slot, (r, _)) in results.iter_mut().zip(keyed) {
        *slot = r;
    }
}

impl Index {
    /// The query's vector, when the search is by meaning as well: asked for, not a query
    /// of words only ([`super::meaning::words_only`]), and the index's vectors are the
    /// same model's.
    fn meaning_of(&self, req: &TextQuery, query: &str) -> Result<Option<std::sync::Arc<super::meaning::QueryMeaning>>> {
        let Some(q) = &req.meaning else { return Ok(None) };
        if q.values.is_empty() || query.contains('"') {
            return Ok(None);
        }
        Ok((super::meaning::matches(self.payload()?.model.as_deref(), q)).then(|| q.clone()))
    }

    /// The fingerprint of the model that made the index's vectors (none: no vectors), how
    /// many items it holds and how many of them have a vector.
    pub fn vectors(&self) -> Result<(Option<String>, u64, u64)> {
        let (items, with) = super::meaning::counts(&self.reader.searcher())?;
        Ok((self.payload()?.model, items, with))
    }

    /// How rare each term is among the items: its inverse document frequency in the
    /// bodies, `ln(1 + (n − df + 0.5) / (df + 0.5))` — what a word held weighs as evidence
    /// that an item is about it.
    pub fn rarity(&self, terms: &[String]) -> Result<Vec<f32>> {
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as f32;
        terms
            .iter()
            .map(|t| {
                let df = searcher.doc_freq(&Term::from_field_text(self.fields.body, t)).map_err(tantivy_err)? as f32;
                Ok((1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln())
            })
            .collect()
    }

    /// The cosine of each of `ref_ids`' vectors with `q` (those without a vector, or not
    /// in the index, are left out), each read alone ([`super::meaning::cosine_alone`]).
    pub fn cosines(
        &self,
        q: &super::meaning::QueryMeaning,
        ref_ids: &[String],
    ) -> Result<std::collections::HashMap<String, f32>> {
        let mut out = std::collections::HashMap::new();
        if !super::meaning::matches(self.payload()?.model.as_deref(), q) {
            return Ok(out);
        }
        let searcher = self.reader.searcher();
        for id in ref_ids {
            let found = searcher.search(&*term_query(self.fields.ref_id, id), &DocSetCollector).map_err(tantivy_err)?;
            if let Some(addr) = found.iter().next()
                && let Some(cos) = super::meaning::cosine_alone(&searcher, *addr, q)?
            {
                out.insert(id.clone(), cos);
            }
        }
        Ok(out)
    }

    /// The live memories (not session records) whose meaning is at least `similarity`
    /// close to `q`, closest first, at most five, but those of `except`: what a new memory
    /// may say again: each one's id and summary.
    pub fn near_duplicates(
        &self,
        q: &std::sync::Arc<super::meaning::QueryMeaning>,
        similarity: f32,
        except: &[&str],
    ) -> Result<Vec<(String, String)>> {
        if !super::meaning::matches(self.payload()?.model.as_deref(), q) {
            return Ok(Vec::new());
        }
        let f = &self.fields;
        let req = TextQuery { kinds: vec![DocKind::Memory], ..TextQuery::default() };
        let mut clauses = filters(f, &req)?;
        clauses.push((Occur::MustNot, hidden(f, &req)));
        let searcher = self.reader.searcher();
        let near = super::meaning::nearest(
            &self.vectors,
            &searcher,
            &BooleanQuery::new(clauses),
            q,
            similarity,
            5 + except.len(),
        )?;
        let mut out = Vec::new();
        for (_, addr) in near {
            let (found, _) = hit(&searcher, f, addr, 0.0)?;
            if !except.contains(&found.ref_id.as_str()) && out.len() < 5 {
                out.push((found.ref_id, found.summary));
            }
        }
        Ok(out)
    }

    /// [`Index::finish`] of the candidates found by words joined with those found by
    /// meaning: the lexical tiers first as they are (a memory that holds every word of the
    /// query is in the every-word tier), each in its order; below them, by
    /// `0.8 × cosine + 0.2 × share` (the share of the query's words held), times a
    /// memory's weight beyond its text. Scores are on one scale: a tier adds 1 to the one below it.
    fn finish_fused(
        &self,
        req: &TextQuery,
        query: &str,
        searcher: &Searcher,
        lexical: Vec<(Tier, f32, DocAddress)>,
        meaning: Option<std::sync::Arc<super::meaning::QueryMeaning>>,
        limit: usize,
    ) -> Result<SearchResults> {
        let words = query_words(query);
        let Some(q) = meaning else {
            let mut lexical = lexical;
            by_tier_score_and_rank(searcher, &mut lexical);
            lexical.truncate(limit);
            return self.finish(req, &words, searcher, lexical, &Default::default());
        };
        let f = &self.fields;
        let mut clauses = filters(f, req)?;
        clauses.push((Occur::Must, Box::new(AllQuery)));
        clauses.push((Occur::MustNot, hidden(f, req)));
        // Memories are asked about in questions; a document search's words decide.
        let question = req.ranking.is_some() && q.question;
        // A document search's keywords, three or more, that no result holds all of: the
        // words alone did not settle it, so meaning weighs as much as their score. A word
        // or two says too little of what is meant. (`recall` merges the searches of
        // several kinds, each of which would judge this apart.)
        let unsettled = req.ranking.is_none()
            && words.len() >= 3
            && !lexical.is_empty()
            && lexical.iter().all(|(t, _, _)| *t >= Tier::SomeTerms);
        // A result that holds none of a question's words may answer it; one that holds none
        // of a few keywords is shown after every one that does, and must be closer.
        let floor = if question || unsettled { MEANING_FLOOR } else { KEYWORDS_MEANING_FLOOR };
        let question = question || unsettled;
        let near = super::meaning::nearest(
            &self.vectors,
            searcher,
            &BooleanQuery::new(clauses),
            &q,
            floor,
            limit * MEANING_CANDIDATES,
        )?;
        if !question {
            // Keywords: the words decide, as they did; what only the meaning finds comes after.
            let known: std::collections::HashSet<DocAddress> = lexical.iter().map(|(_, _, a)| *a).collect();
            let by_meaning: std::collections::HashSet<DocAddress> =
                near.iter().map(|(_, a)| *a).filter(|a| !known.contains(a)).collect();
            let mut ranked = lexical;
            by_tier_score_and_rank(searcher, &mut ranked);
            ranked.truncate(limit);
            let best = ranked.first().map_or(1.0, |(_, s, _)| *s);
            for (cos, addr) in near.iter().filter(|(_, a)| by_meaning.contains(a)) {
                if ranked.len() >= limit {
                    break;
                }
                // Below the weakest match of a word, in the order of their cosines.
                ranked.push((Tier::Meaning, best * cos * MEANING_BELOW, *addr));
            }
            return self.finish(req, &words, searcher, ranked, &by_meaning);
        }
        let mut candidates: Vec<(Tier, f32, DocAddress)> = lexical;
        let mut cosines: std::collections::HashMap<DocAddress, f32> = near.iter().map(|(c, a)| (*a, *c)).collect();
        let known: std::collections::HashSet<DocAddress> = candidates.iter().map(|(_, _, a)| *a).collect();
        let by_meaning: std::collections::HashSet<DocAddress> =
            near.iter().map(|(_, a)| *a).filter(|a| !known.contains(a)).collect();
        candidates.extend(near.iter().filter(|(_, a)| by_meaning.contains(a)).map(|(_, a)| (Tier::SomeTerms, 0.0, *a)));
        let addrs: Vec<DocAddress> = candidates.iter().map(|(_, _, a)| *a).collect();
        let held = held_words(searcher, f, &words, &addrs)?;
        let mut best_of_tier: std::collections::BTreeMap<Tier, f32> = Default::default();
        let mut tiered: Vec<(Tier, f32, DocAddress, f32)> = Vec::with_capacity(candidates.len());
        for ((tier, lex, addr), held) in candidates.into_iter().zip(held) {
            let share = if words.is_empty() { 0.0 } else { held.len() as f32 / words.len() as f32 };
            // A result that holds every word is in the every-word tier, however it was found.
            let tier = if tier == Tier::SomeTerms && share >= 1.0 { Tier::AllTerms } else { tier };
            if tier != Tier::SomeTerms {
                let best = best_of_tier.entry(tier).or_insert(0.0);
                *best = best.max(lex);
            }
            tiered.push((tier, lex, addr, share));
        }
        // The cosines of the candidates found by words alone, in one pass.
        let missing: Vec<DocAddress> = tiered
            .iter()
            .filter(|(tier, _, addr, _)| *tier == Tier::SomeTerms && !cosines.contains_key(addr))
            .map(|(_, _, addr, _)| *addr)
            .collect();
        for (addr, cos) in missing.iter().zip(super::meaning::cosines(&self.vectors, searcher, &missing, &q)?) {
            cosines.insert(*addr, cos.unwrap_or(0.0));
        }
        // The best score by words of a result that holds some of them.
        let best_some = tiered.iter().filter(|t| t.0 == Tier::SomeTerms).map(|t| t.1).fold(0.0f32, f32::max);
        let mut scored: Vec<(Tier, f32, DocAddress)> = Vec::with_capacity(tiered.len());
        for (tier, lex, addr, share) in tiered {
            let score = match tier {
                Tier::SomeTerms => {
                    let cos = cosines.get(&addr).copied().unwrap_or(0.0);
                    let weight = req.ranking.as_ref().map_or(1.0, |r| super::meaning::weight(searcher, addr, r));
                    if unsettled {
                        let of_best = (lex / best_some.max(f32::MIN_POSITIVE)).clamp(0.0, 1.0);
                        (UNSETTLED_MEANING_WEIGHT * cos.max(0.0) + (1.0 - UNSETTLED_MEANING_WEIGHT) * of_best) * weight
                    } else {
                        (MEANING_WEIGHT * cos.max(0.0) + (1.0 - MEANING_WEIGHT) * share) * weight
                    }
                }
                _ => {
                    let best = best_of_tier.get(&tier).copied().unwrap_or(0.0).max(f32::MIN_POSITIVE);
                    let above = match tier {
                        Tier::ExactName => 3.0,
                        Tier::Phrase => 2.0,
                        _ => 1.0,
                    };
                    above + 0.5 + 0.5 * (lex / best).clamp(0.0, 1.0)
                }
            };
            scored.push((tier, score, addr));
        }
        by_tier_score_and_rank(searcher, &mut scored);
        scored.truncate(limit);
        self.finish(req, &words, searcher, scored, &by_meaning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writers_importance_counts_only_up_to_its_trust() {
        let rank =
            |importance: f64, trust: f64| ranked_importance(importance, 0.0, 30.0, 0, trust) * trust_boost(trust);
        // Unverified or failed writers: importance above the default is not counted, so a
        // verified writer's memory at the default importance ranks first.
        for unverified in [0.0, 0.3, 0.5] {
            assert!(rank(1.0, unverified) < rank(0.5, 0.55), "{unverified}");
        }
        // Below the cap importance still orders a writer's memories, and a verified writer
        // can lift its own up to its trust.
        assert!(rank(0.2, 0.5) < rank(0.5, 0.5));
        assert_eq!(ranked_importance(1.0, 0.0, 30.0, 0, 0.8), 0.8);
        assert_eq!(ranked_importance(1.0, 0.0, 30.0, 0, 1.0), 1.0);
        // Decay works from the cap; reads bring a memory back up to it, not beyond.
        assert_eq!(ranked_importance(1.0, 30.0, 30.0, 0, 0.5), 0.25);
        assert_eq!(ranked_importance(0.5, 0.0, 30.0, 10, 0.5), 0.5);
        assert!((ranked_importance(0.5, 30.0, 30.0, 4, 0.5) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn quotes_make_phrases_and_the_rest_is_free_text() {
        let (free, phrases) = parse_text("token \"refresh flow\" retry");
        assert_eq!(free, vec!["token", "retri"]);
        assert_eq!(phrases, vec![vec![(0, "refresh".to_owned()), (1, "flow".to_owned())]]);
        let (free, phrases) = parse_text("unbalanced \"quote");
        assert_eq!(free, vec!["unbalanc", "quot"]);
        assert!(phrases.is_empty());
    }
}

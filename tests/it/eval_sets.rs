//! Known-item evaluation sets made from a corpus by a seeded generator: each query is made
//! from one document, which should come first. Five kinds: the document's title; 3–6
//! salient words of its description (the rarest in the corpus, in their order); its title
//! words inflected (plural for singular, and back, of plain words: not identifiers or verb
//! forms); a phrase copied from its body that no other body holds; and 3–5 words of its
//! body that share no word (nor its first five letters) with its title or description,
//! among the body's most telling (tf·idf) and used by other documents too: what a person
//! who read the page but forgot its title might type. Japanese text gets no inflected kind, and its "words" are the runs
//! between particles and punctuation. The same corpus and seed give the same set on every
//! machine. A sixth kind is written by a person, not generated: the paraphrases of
//! `testdata/paraphrases/{corpus}.tsv`, queries in the reader's own words that share no
//! content word with the document's title or description (nor, in Japanese, two characters
//! in a row). A seventh kind, for titles with CJK, is the title's content words run
//! together as a person types them without spaces. Shared by `tests/it/ranking.rs` and
//! `examples/ranking.rs`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

/// One Markdown file of a corpus.
pub struct Doc {
    /// Its path as the index names it (below the include folder).
    pub rel: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub body: String,
}

/// What a query was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Title,
    Description,
    Inflected,
    BodyPhrase,
    BodyWords,
    Paraphrase,
    TitleRunTogether,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::Title,
        Kind::Description,
        Kind::Inflected,
        Kind::BodyPhrase,
        Kind::BodyWords,
        Kind::Paraphrase,
        Kind::TitleRunTogether,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Title => "title",
            Kind::Description => "description words",
            Kind::Inflected => "inflected title",
            Kind::BodyPhrase => "body phrase",
            Kind::BodyWords => "body words",
            Kind::Paraphrase => "paraphrase",
            Kind::TitleRunTogether => "title without spaces",
        }
    }
}

/// A query and the document it should find.
pub struct Case {
    pub kind: Kind,
    pub query: String,
    pub want: String,
}

/// The Markdown files below `dir`, in path order, named `{prefix}/{path below dir}`.
pub fn read_docs(dir: &Path, prefix: &str) -> Vec<Doc> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
            let below = p.strip_prefix(dir).ok()?.to_string_lossy().replace('\\', "/");
            let (front, body) = split_front_matter(&text);
            let field = |name: &str| front.as_ref().and_then(|f| field(f, name));
            Some(Doc {
                rel: format!("{prefix}/{below}"),
                title: field("name").or_else(|| field("title")),
                description: field("description"),
                body: body.to_owned(),
            })
        })
        .collect()
}

fn split_front_matter(text: &str) -> (Option<yaml_rust2::Yaml>, &str) {
    let text = text.trim_start_matches('\u{feff}');
    let Some(rest) = text.strip_prefix("---\n") else { return (None, text) };
    let Some(end) = rest.find("\n---") else { return (None, text) };
    let body = rest[end + 4..].split_once('\n').map_or("", |(_, b)| b);
    let yaml = yaml_rust2::YamlLoader::load_from_str(&rest[..end]).ok().and_then(|mut d| d.drain(..).next());
    (yaml, body)
}

fn field(front: &yaml_rust2::Yaml, name: &str) -> Option<String> {
    let v = &front[name];
    let s = v.as_str().map(str::to_owned).or_else(|| v.as_i64().map(|n| n.to_string()))?;
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    (!s.is_empty()).then_some(s)
}

/// A small deterministic generator (an LCG).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "has", "have", "how", "in", "into", "is",
    "it", "its", "of", "on", "or", "that", "the", "this", "to", "use", "used", "using", "was", "when", "which", "with",
    "you", "your", "will", "not", "all", "also", "more", "than", "then", "these", "those", "there", "what", "about",
];

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ff66}'..='\u{ff9f}')
}

/// The words of a text: Latin runs of letters and digits (lower-cased), and CJK runs cut at
/// particles (the Japanese "words" of this generator).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut flush = |cur: &mut String| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            if "のはをにがでともやへ".contains(c) {
                flush(&mut cur);
            } else {
                if cur.chars().next_back().is_some_and(|p| !is_cjk(p)) {
                    flush(&mut cur);
                }
                cur.push(c);
            }
        } else if c.is_alphanumeric() {
            if cur.chars().next_back().is_some_and(is_cjk) {
                flush(&mut cur);
            }
            cur.extend(c.to_lowercase());
        } else {
            flush(&mut cur);
        }
    }
    flush(&mut cur);
    out
}

fn salient(word: &str) -> bool {
    let cjk = word.chars().any(is_cjk);
    (if cjk { word.chars().count() >= 2 } else { word.len() >= 3 }) && !STOPWORDS.contains(&word)
}

/// Plural for singular and back: `pools` → `pool`, `query` → `queries`, `index` → `indexes`;
/// only words a person would inflect: plain English words, not identifiers (`CStatusBarCtrl`
/// stays) and not verb forms (`using`, `created`).
fn inflect(word: &str) -> Option<String> {
    let plain = word.chars().skip(1).all(|c| c.is_ascii_lowercase()) && word.chars().all(|c| c.is_ascii_alphabetic());
    if word.len() < 4 || !plain || ["ing", "ed", "ly", "us", "ss"].iter().any(|end| word.ends_with(end)) {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    Some(if let Some(stem) = lower.strip_suffix("ies") {
        format!("{stem}y")
    } else if lower.ends_with("ss") || lower.ends_with('x') || lower.ends_with("ch") || lower.ends_with("sh") {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('s') {
        stem.to_owned()
    } else if let Some(stem) = lower.strip_suffix('y').filter(|s| !s.ends_with(['a', 'e', 'o', 'u'])) {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    })
}

/// Lines of prose of a body: no headings, code, tables, HTML or front-matter-like lines.
fn prose(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut code = false;
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            code = !code;
            continue;
        }
        if code || t.is_empty() || t.starts_with(['#', '|', '<', '{', '!', '[', ':']) || line.starts_with("    ") {
            continue;
        }
        out.push(t);
    }
    out
}

/// A phrase of `line`: 4–7 consecutive words (Latin), or 6–10 characters of one CJK run.
fn phrase(line: &str, rng: &mut Rng) -> Option<String> {
    let cjk_runs: Vec<Vec<char>> =
        line.split(|c: char| !is_cjk(c)).map(|r| r.chars().collect::<Vec<char>>()).filter(|r| r.len() >= 6).collect();
    if !cjk_runs.is_empty() {
        let run = &cjk_runs[rng.below(cjk_runs.len())];
        let len = (6 + rng.below(5)).min(run.len());
        let start = rng.below(run.len() - len + 1);
        return Some(run[start..start + len].iter().collect());
    }
    // Words as written, so the phrase is one the body holds: a window of plain words only.
    let toks: Vec<&str> = line.split_whitespace().collect();
    if toks.len() < 4 {
        return None;
    }
    let plain = |w: &&str| {
        w.chars().all(|c| c.is_alphanumeric() || "'-".contains(c))
            || w.strip_suffix([',', '.', ';', ':'])
                .is_some_and(|stem| !stem.is_empty() && stem.chars().all(char::is_alphanumeric))
    };
    let len = (4 + rng.below(4)).min(toks.len());
    let start = rng.below(toks.len() - len + 1);
    let window = &toks[start..start + len];
    if !window.iter().all(plain) {
        return None;
    }
    let chosen: Vec<&str> = window.iter().map(|w| w.trim_end_matches([',', '.', ';', ':'])).collect();
    (chosen.iter().filter(|w| salient(&w.to_lowercase())).count() >= 2).then(|| chosen.join(" "))
}

/// The content words of a title with CJK as a person types them without spaces: particles,
/// punctuation and spaces between CJK words left out, so that the words run together
/// (「プルリクエストのチェックとテスト」 → `プルリクエストチェックテスト`); Latin words keep a
/// space. None for a title without two CJK words to run together.
fn run_together(title: &str) -> Option<String> {
    let ws: Vec<String> = words(title).into_iter().filter(|w| salient(w)).collect();
    let mut out = String::new();
    let mut joined = false;
    for (i, w) in ws.iter().enumerate() {
        let cjk = |w: &str| w.chars().any(is_cjk);
        if i > 0 {
            if cjk(w) && cjk(&ws[i - 1]) {
                joined = true;
            } else {
                out.push(' ');
            }
        }
        out.push_str(w);
    }
    joined.then_some(out)
}

/// A body-words query of `d` (see the module's comment), if its body has three such words.
fn body_words(d: &Doc, lines: &[&str], df: &HashMap<String, usize>, n: usize, rng: &mut Rng) -> Option<String> {
    let head = format!("{} {}", d.title.as_deref().unwrap_or(""), d.description.as_deref().unwrap_or(""));
    let prefix = |w: &str| w.chars().take(5).collect::<String>();
    let taken: HashSet<String> = words(&head).iter().map(|w| prefix(w)).collect();
    let mut tf: HashMap<String, (usize, usize)> = HashMap::new();
    for (at, w) in words(&lines.join(" ")).into_iter().enumerate() {
        tf.entry(w).or_insert((0, at)).0 += 1;
    }
    let mut scored: Vec<(f64, usize, String)> = tf
        .into_iter()
        .filter(|(w, _)| {
            let used = df.get(w).copied().unwrap_or(0);
            w.len() >= 4
                && w.chars().all(|c| c.is_ascii_lowercase())
                && salient(w)
                && (2..=n / 10).contains(&used)
                && !taken.contains(&prefix(w))
        })
        .map(|(w, (count, at))| (count as f64 * (n as f64 / df[&w] as f64).ln(), at, w))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(8);
    if scored.len() < 3 {
        return None;
    }
    let k = 3 + rng.below(3);
    let mut chosen = Vec::new();
    while chosen.len() < k.min(scored.len()) {
        let (_, at, w) = scored.swap_remove(rng.below(scored.len()));
        chosen.push((at, w));
    }
    chosen.sort();
    Some(chosen.into_iter().map(|(_, w)| w).collect::<Vec<_>>().join(" "))
}

/// The cases of every kind, at most `per_kind` of each, from documents picked by `seed`.
pub fn cases(docs: &[Doc], seed: u64, per_kind: usize) -> Vec<Case> {
    let mut rng = Rng(seed);
    // Its own sequence, so that the other kinds' queries are those they were before it.
    let mut words_rng = Rng(seed ^ 0x5eed_b0d1);
    // Document frequency of every word, for salience.
    let mut df: HashMap<String, usize> = HashMap::new();
    for d in docs {
        let mut seen = HashSet::new();
        let all = format!("{} {} {}", d.title.as_deref().unwrap_or(""), d.description.as_deref().unwrap_or(""), d.body);
        for w in words(&all) {
            if seen.insert(w.clone()) {
                *df.entry(w).or_default() += 1;
            }
        }
    }
    let titles: HashMap<&str, usize> =
        docs.iter().filter_map(|d| d.title.as_deref()).fold(HashMap::new(), |mut m, t| {
            *m.entry(t).or_default() += 1;
            m
        });
    let bodies: Vec<String> = docs.iter().map(|d| d.body.to_lowercase()).collect();
    let mut order: Vec<usize> = (0..docs.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut out = Vec::new();
    let mut counts: HashMap<Kind, usize> = HashMap::new();
    for &i in &order {
        let d = &docs[i];
        // The search for a phrase no other body holds is the slow part: not once it is done.
        let phrases_wanted = counts.get(&Kind::BodyPhrase).copied().unwrap_or(0) < per_kind;
        let mut push = |kind: Kind, query: String, out: &mut Vec<Case>| {
            let n = counts.entry(kind).or_default();
            if *n < per_kind && !query.trim().is_empty() {
                *n += 1;
                out.push(Case { kind, query, want: d.rel.clone() });
            }
        };
        // A title that several documents share names none of them.
        if let Some(t) = d.title.as_deref().filter(|t| titles.get(t) == Some(&1)) {
            push(Kind::Title, t.to_owned(), &mut out);
            let toks: Vec<&str> = t.split_whitespace().collect();
            let inflected: Vec<String> = toks.iter().map(|w| inflect(w).unwrap_or_else(|| w.to_lowercase())).collect();
            let changed = toks.iter().zip(&inflected).filter(|(a, b)| a.to_lowercase() != **b).count();
            if changed > 0 && !t.chars().any(is_cjk) {
                push(Kind::Inflected, inflected.join(" "), &mut out);
            }
            if let Some(q) = run_together(t) {
                push(Kind::TitleRunTogether, q, &mut out);
            }
        }
        if let Some(desc) = &d.description {
            let mut ws: Vec<(usize, String)> =
                words(desc).into_iter().enumerate().filter(|(_, w)| salient(w)).collect();
            let mut seen = HashSet::new();
            ws.retain(|(_, w)| seen.insert(w.clone()));
            let k = 3 + rng.below(4);
            if ws.len() >= 3 {
                let mut by_rarity = ws.clone();
                by_rarity.sort_by_key(|(i, w)| (df.get(w).copied().unwrap_or(0), *i));
                by_rarity.truncate(k);
                by_rarity.sort_by_key(|(i, _)| *i);
                let q: Vec<String> = by_rarity.into_iter().map(|(_, w)| w).collect();
                let sep = if q.iter().all(|w| w.chars().any(is_cjk)) { "" } else { " " };
                push(Kind::Description, q.join(sep), &mut out);
            }
        }
        let lines = prose(&d.body);
        if let Some(q) = body_words(d, &lines, &df, docs.len(), &mut words_rng) {
            push(Kind::BodyWords, q, &mut out);
        }
        if !lines.is_empty() && phrases_wanted {
            for _ in 0..6 {
                let line = lines[rng.below(lines.len())];
                let Some(p) = phrase(line, &mut rng) else { continue };
                let needle = p.to_lowercase();
                if bodies.iter().enumerate().all(|(j, b)| j == i || !b.contains(&needle)) {
                    push(Kind::BodyPhrase, p, &mut out);
                    break;
                }
            }
        }
    }
    out
}

/// The person-written paraphrases of the corpus named `corpus` (`testdata/paraphrases/{corpus}.tsv`:
/// `path<TAB>query` per line, `#` for comments), each wanting `{prefix}/{path}`; none if
/// the corpus has no such file.
pub fn paraphrases(corpus: &str, prefix: &str) -> Vec<Case> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/paraphrases").join(format!("{corpus}.tsv"));
    let Ok(text) = std::fs::read_to_string(&file) else { return Vec::new() };
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(path, query)| Case {
            kind: Kind::Paraphrase,
            query: query.trim().to_owned(),
            want: format!("{prefix}/{path}"),
        })
        .collect()
}

/// What `query` shares with the title and description of `d`: content words (by their
/// first five letters) and, in Japanese, runs of two characters.
pub fn shared_with_head(query: &str, d: &Doc) -> Vec<String> {
    let head = format!("{} {}", d.title.as_deref().unwrap_or(""), d.description.as_deref().unwrap_or(""));
    let prefix = |w: &str| w.chars().take(5).collect::<String>();
    let taken: HashSet<String> = words(&head).iter().filter(|w| salient(w)).map(|w| prefix(w)).collect();
    let mut shared: Vec<String> = words(query)
        .into_iter()
        .filter(|w| !w.chars().any(is_cjk) && salient(w) && taken.contains(&prefix(w)))
        .collect();
    let pairs = |text: &str| -> HashSet<String> {
        let chars: Vec<char> = text.chars().collect();
        chars.windows(2).filter(|p| p.iter().all(|c| is_cjk(*c))).map(|p| p.iter().collect()).collect()
    };
    let head_pairs = pairs(&head);
    shared.extend(pairs(query).into_iter().filter(|p| head_pairs.contains(p)));
    shared
}

/// Per kind: (MRR@10, recall@1, queries), with `rank` giving a query's position (from 0)
/// of the wanted document in the top 10, if there.
pub fn score(cases: &[Case], mut rank: impl FnMut(&Case) -> Option<usize>) -> Vec<(Kind, f64, f64, usize)> {
    let mut by: HashMap<Kind, (f64, usize, usize)> = HashMap::new();
    for c in cases {
        let e = by.entry(c.kind).or_default();
        e.2 += 1;
        if let Some(i) = rank(c).filter(|i| *i < 10) {
            e.0 += 1.0 / (i as f64 + 1.0);
            e.1 += usize::from(i == 0);
        }
    }
    Kind::ALL
        .iter()
        .filter_map(|k| by.get(k).map(|(rr, first, n)| (*k, rr / *n as f64, *first as f64 / *n as f64, *n)))
        .collect()
}

//! Recall by meaning (docs/ranking.md#meaning): every item's vector lives in the index's own
//! segments (the `vector` fast field), so it is written, replaced, merged and deleted with
//! the item, under the same commit: nothing beside the index can disagree with it.
//!
//! A search reads each segment's vectors once into memory (segments never change; a merge
//! makes a new one) and scores the items its filters leave by the cosine of their vector
//! with the query's, exactly, over int8. [`fuse`] then joins that to the lexical ranking by
//! a bounded rule that keeps exact matches on top.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rustc_hash::FxHashMap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::query::Query;
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentOrdinal, SegmentReader};

use super::search::Ranking;
use super::tantivy_err;
use crate::config::{Config, ModelChoice};
use crate::error::Result;
use crate::semantic::encoder::Encoder;
use crate::semantic::{Model, dot_i8};
use crate::store;

/// A query's vector, with the model that made it: an index whose vectors another model
/// made is searched by words only until a sync rebuilds it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryMeaning {
    /// The fingerprint of what made the index's vectors ([`fingerprint`]).
    pub model: String,
    /// Whether the text was asked as a question ([`is_question`]).
    pub question: bool,
    pub values: Vec<i8>,
    pub scale: f32,
    /// The encoder's vector of the same text, for memories, when `[semantic] memories`
    /// names one: memories carry the encoder's vectors, of another length, so each item
    /// is compared with the vector of its own maker.
    pub memories: Option<Arc<QueryMeaning>>,
    /// How its maker's cosines are put on the built-in model's scale.
    pub calibration: Calibration,
}

/// A linear map of one maker's cosines onto the built-in model's scale, so that one floor
/// holds for both and a memory found by the encoder ranks fairly against a document found
/// by the model: unrelated texts often reach 0.4 with the built-in model, seldom 0.2 with
/// a transformer. Measured on the memory sets (docs/ranking.md#meaning).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub offset: f32,
    pub slope: f32,
}

impl Calibration {
    /// The built-in model's own scale.
    pub const MODEL: Calibration = Calibration { offset: 0.0, slope: 1.0 };
    /// An encoder's: its 0.15 is the model's 0.35 (the least cosine that may answer a
    /// question), and 1 stays 1.
    pub const ENCODER: Calibration = Calibration { offset: 1.0 - 0.65 / 0.85, slope: 0.65 / 0.85 };

    fn apply(self, cosine: f32) -> f32 {
        self.offset + self.slope * cosine
    }
}

impl QueryMeaning {
    /// This vector and the encoder's, when there is one.
    fn each(&self) -> impl Iterator<Item = &QueryMeaning> {
        std::iter::once(self).chain(self.memories.as_deref())
    }
}

/// What an index's vectors are made by: the model for every item, the encoder for
/// memories when the transformer tier is on.
#[derive(Debug, Clone, Copy)]
pub struct Makers {
    pub model: &'static Model,
    pub encoder: Option<&'static Encoder>,
}

impl Makers {
    /// The fingerprint an index records of its vectors: a change of either maker rebuilds.
    pub fn fingerprint(&self) -> String {
        match self.encoder {
            Some(e) => format!("{}+{}", self.model.fingerprint(), e.fingerprint()),
            None => self.model.fingerprint().to_owned(),
        }
    }

    /// An item's vector: a memory's by the encoder when there is one, else by the model.
    pub fn embed(&self, text: &str, memory: bool) -> Option<crate::semantic::Embedding> {
        match self.encoder {
            Some(e) if memory => e.embed(text),
            _ => self.model.embed(text),
        }
    }
}

/// The makers of `root`'s vectors, or None for words only.
pub fn makers_for(root: &Path, config: &Config) -> Option<Makers> {
    let model = model_for(root, config)?;
    let encoder = config.semantic.encoder().and_then(|folder| encoder_for(root, &folder));
    Some(Makers { model, encoder })
}

/// What an item's vector of meaning is made of: its name, its summary and the start of its
/// body (the model reads no further than its first 512 known words). A summary the body
/// starts with (a memory's extracted one) is not counted twice.
pub fn item_text(name: &str, description: &str, body: &str) -> String {
    let mut end = body.len().min(MEANING_BODY_BYTES);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let body = &body[..end];
    let mut text = String::with_capacity(name.len() + description.len() + body.len() + 2);
    for part in [name, description] {
        let part = part.trim();
        if !part.is_empty() && !text.contains(part) && !body.trim_start().starts_with(part) {
            text.push_str(part);
            text.push('\n');
        }
    }
    text.push_str(body);
    text
}

/// The most of a body an item's vector is made from: about 300 words, the part that says
/// what a page is about. Every word costs time in every full build (about a thousand
/// instructions each); a memory is seldom longer.
const MEANING_BODY_BYTES: usize = 2 << 10;

/// The file a model folder holds.
pub const MODEL_FILE: &str = "model.safetensors";

/// The model `[semantic] model` names for `root`, or None for words only. A folder's model
/// is read once per process and file (it lives as long as the process); one that cannot be
/// read or is not a model is logged once and leaves recall to words.
pub fn model_for(root: &Path, config: &Config) -> Option<&'static Model> {
    match config.semantic.choice() {
        ModelChoice::Off => None,
        ModelChoice::Builtin => Some(Model::builtin()),
        ModelChoice::Folder(folder) => folder_model(root, &folder),
    }
}

/// The vector of `text` as a query of `root` is searched with it: None when recall is by
/// words only (`[semantic] model = "off"`, a query of words only, a text the model knows no
/// word of).
pub fn query_meaning(root: &Path, config: &Config, text: &str) -> Option<Arc<QueryMeaning>> {
    let makers = makers_for(root, config)?;
    if words_only(text, makers.model) {
        return None;
    }
    text_meaning(makers, text)
}

/// [`query_meaning`] by the built-in (or folder) model alone, for a process that must not
/// wait for an encoder to load (a briefing hook): where memories carry an encoder's
/// vectors they do not match it, and are weighed by their words.
pub fn model_meaning(root: &Path, config: &Config, text: &str) -> Option<Arc<QueryMeaning>> {
    let model = model_for(root, config)?;
    if words_only(text, model) {
        return None;
    }
    text_meaning(Makers { model, encoder: None }, text)
}

/// Whether an index whose vectors `indexed_by` made ([`Makers::fingerprint`]) can be
/// searched with `q`: made by the same makers, or `q` is by the model alone and the index's
/// other items are that model's.
pub fn matches(indexed_by: Option<&str>, q: &QueryMeaning) -> bool {
    indexed_by.is_some_and(|by| by == q.model || by.split_once('+').is_some_and(|(model, _)| model == q.model))
}

/// The vector of `text` by each of `makers`, None when the model knows no word of it.
pub fn text_meaning(makers: Makers, text: &str) -> Option<Arc<QueryMeaning>> {
    let q = makers.model.embed(text)?.quantize();
    let model = makers.fingerprint();
    let question = is_question(text);
    let memories = makers.encoder.and_then(|e| e.embed(text)).map(|v| {
        let v = v.quantize();
        Arc::new(QueryMeaning {
            model: model.clone(),
            question,
            values: v.values,
            scale: v.scale,
            memories: None,
            calibration: Calibration::ENCODER,
        })
    });
    Some(Arc::new(QueryMeaning {
        model,
        question,
        values: q.values,
        scale: q.scale,
        memories,
        calibration: Calibration::MODEL,
    }))
}

type Loaded<T> = Mutex<Vec<(PathBuf, Option<store::FileStamp>, Option<&'static T>)>>;

/// What `load` gives for the file `path`, made once per process and state of the file (it
/// lives as long as the process), failures included.
fn once_per_file<T>(
    loaded: &'static OnceLock<Loaded<T>>,
    path: PathBuf,
    load: impl FnOnce() -> Option<T>,
) -> Option<&'static T> {
    let stamp = store::FileStamp::of(&path);
    let mut loaded = loaded.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, _, value)) = loaded.iter().find(|(p, s, _)| *p == path && *s == stamp) {
        return *value;
    }
    let value = load().map(|v| &*Box::leak(Box::new(v)));
    loaded.push((path, stamp, value));
    value
}

/// The encoder of a `[semantic] memories` folder, read once per process and weights file;
/// one that cannot be read or run is logged once, and memories then take the model's
/// vectors.
fn encoder_for(root: &Path, folder: &Path) -> Option<&'static Encoder> {
    use crate::semantic::encoder::{CONFIG_FILE, EncoderFiles, SENTENCE_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE};
    static LOADED: OnceLock<Loaded<Encoder>> = OnceLock::new();
    once_per_file(&LOADED, root.join(folder).join(WEIGHTS_FILE), || {
        let read = |name: &str, cap: u64| {
            store::read(root, &root.join(folder).join(name), cap)
                .map_err(|e| format!("cannot read {}: {}", folder.join(name).display(), e.chain()))
        };
        let files = (|| {
            Ok::<_, String>(EncoderFiles {
                weights: read(WEIGHTS_FILE, store::cap::ENCODER)?,
                vocab: read(VOCAB_FILE, store::cap::CONFIG)?,
                config: read(CONFIG_FILE, store::cap::CONFIG)?,
                sentence_config: read(SENTENCE_CONFIG_FILE, store::cap::CONFIG).ok(),
            })
        })();
        files
            .and_then(|f| Encoder::parse(&f).map_err(|e| format!("{}: {e}", folder.display())))
            .map_err(|e| tracing::warn!("{e}; memories are recalled with the model's vectors"))
            .ok()
    })
}

/// The model of a `[semantic] model` folder, read once per process and file; one that
/// cannot be read or is not a model is logged once and leaves recall to words.
fn folder_model(root: &Path, folder: &Path) -> Option<&'static Model> {
    static LOADED: OnceLock<Loaded<Model>> = OnceLock::new();
    let path = root.join(folder).join(MODEL_FILE);
    once_per_file(&LOADED, path.clone(), || {
        let rel = folder.join(MODEL_FILE);
        match store::read(root, &path, store::cap::MODEL) {
            Ok(bytes) => Model::parse(bytes)
                .map_err(|e| {
                    tracing::warn!("{}: not a model tmws reads ({e}); recall is by words only", rel.display());
                })
                .ok(),
            Err(e) => {
                tracing::warn!("cannot read the model {}: {}; recall is by words only", rel.display(), e.chain());
                None
            }
        }
    })
}

/// The values of a vector a first pass scores every item by. The model's dimensions are
/// its teacher's principal components, largest first, so the first 64 hold most of what a
/// cosine says at a quarter of the bytes to read; the items that pass are scored whole.
const HEAD: usize = 64;

/// How many items the first pass keeps for the whole cosine, at most (per segment when
/// every document a filter leaves is looked at). As many as [`FIRST_KEEPS`]: every kept
/// vector that passes the filters is scored whole, so an index of up to that many vectors
/// is searched exactly, and a larger one finds more of its true nearest (of the exact 30
/// best over 48k pages, 99.7 % against 95.6 % with 512 scored whole) for about 0.6 ms more
/// at 100k memories.
const HEAD_KEEPS: usize = 2048;

/// How many vectors the first pass over every segment keeps to check against a search's
/// filters.
const FIRST_KEEPS: usize = 2048;

/// The vectors of one segment: each distinct vector once (the column's dictionary, in
/// ordinal order), its first [`HEAD`] values apart from the rest, and each document's
/// ordinal.
pub(crate) struct SegmentVectors {
    dim: usize,
    head: Vec<i8>,
    tail: Vec<i8>,
    scales: Vec<f32>,
    /// Each document's vector ordinal, [`NONE`] for one without: looked up for every
    /// document a search's filters leave, so read out of the column once.
    doc_ord: Vec<u32>,
    /// The documents of each ordinal: those of ordinal `o` are
    /// `ord_docs[ord_starts[o]..ord_starts[o + 1]]`, in order.
    ord_starts: Vec<u32>,
    ord_docs: Vec<DocId>,
}

/// The ordinal of a document without a vector.
const NONE: u32 = u32::MAX;

impl SegmentVectors {
    fn read(segment: &SegmentReader, dim: usize) -> Result<SegmentVectors> {
        let empty = SegmentVectors {
            dim,
            head: Vec::new(),
            tail: Vec::new(),
            scales: Vec::new(),
            doc_ord: Vec::new(),
            ord_starts: vec![0],
            ord_docs: Vec::new(),
        };
        let Some(column) = segment.fast_fields().bytes("vector").map_err(tantivy_err)? else { return Ok(empty) };
        let split = HEAD.min(dim);
        let mut head = Vec::with_capacity(column.num_terms() * split);
        let mut tail = Vec::with_capacity(column.num_terms() * (dim - split));
        let mut scales = Vec::with_capacity(column.num_terms());
        let mut stream = column.dictionary().stream().map_err(|e| super::tantivy_err(e.into()))?;
        while stream.advance() {
            let key = stream.key();
            // A vector of another length is of another model: it never matches.
            match (key.len() == dim + 4).then(|| crate::semantic::Quantized::from_bytes(key, dim)).flatten() {
                Some(q) => {
                    head.extend_from_slice(&q.values[..split]);
                    tail.extend_from_slice(&q.values[split..]);
                    scales.push(q.scale);
                }
                None => {
                    head.extend(std::iter::repeat_n(0, split));
                    tail.extend(std::iter::repeat_n(0, dim - split));
                    scales.push(0.0);
                }
            }
        }
        // The column's dictionary is now copied out; its pages of the mapped file would stay
        // resident beside the copy (26 MB at 100k items) while nothing reads them.
        if let Ok(bytes) = column.dictionary().sstable_slice.read_bytes() {
            crate::sys::page_out(bytes.as_slice());
        }
        let ords = column.ords();
        let doc_ord: Vec<u32> = (0..segment.max_doc())
            .map(|doc| {
                ords.first(doc)
                    .and_then(|o| u32::try_from(o).ok())
                    .filter(|o| scales.get(*o as usize).is_some_and(|s| *s > 0.0))
                    .unwrap_or(NONE)
            })
            .collect();
        // Counting sort of the documents by ordinal.
        let mut ord_starts = vec![0u32; scales.len() + 1];
        for &o in doc_ord.iter().filter(|o| **o != NONE) {
            ord_starts[o as usize + 1] += 1;
        }
        for i in 1..ord_starts.len() {
            ord_starts[i] += ord_starts[i - 1];
        }
        let mut next = ord_starts.clone();
        let mut ord_docs = vec![0; ord_starts.last().copied().unwrap_or(0) as usize];
        for (doc, &o) in doc_ord.iter().enumerate().filter(|(_, o)| **o != NONE) {
            ord_docs[next[o as usize] as usize] = doc as DocId;
            next[o as usize] += 1;
        }
        Ok(SegmentVectors { dim, head, tail, scales, doc_ord, ord_starts, ord_docs })
    }

    /// How many first values the first pass reads (None for a segment without vectors).
    fn split(&self) -> Option<usize> {
        let split = HEAD.min(self.dim);
        (split > 0 && !self.scales.is_empty()).then_some(split)
    }

    /// The documents whose vector is that of ordinal `ord`, in order.
    fn docs_of(&self, ord: usize) -> &[DocId] {
        let (Some(&from), Some(&to)) = (self.ord_starts.get(ord), self.ord_starts.get(ord + 1)) else { return &[] };
        self.ord_docs.get(from as usize..to as usize).unwrap_or_default()
    }

    /// The ordinal of document `doc`'s vector (None when it has none).
    fn ord(&self, doc: DocId) -> Option<usize> {
        let ord = *self.doc_ord.get(doc as usize)?;
        (ord != NONE).then_some(ord as usize)
    }

    /// The first pass for every vector of the segment at once, by ordinal: the dot product
    /// of the first [`HEAD`] values, times the scale. One pass over contiguous rows is what
    /// the compiler vectorises well; looking each up as its document comes cost several
    /// times more.
    fn head_scores(&self, q: &QueryMeaning) -> Vec<f32> {
        let split = HEAD.min(self.dim);
        if split == 0 {
            return vec![0.0; self.scales.len()];
        }
        let qh = &q.values[..split.min(q.values.len())];
        self.head.chunks_exact(split).zip(&self.scales).map(|(row, scale)| dot_i8(row, qh) as f32 * scale).collect()
    }

    /// The whole cosine of the vector of ordinal `ord` with `q`.
    fn cosine_of(&self, ord: usize, q: &QueryMeaning) -> f32 {
        let split = HEAD.min(self.dim);
        let rest = self.dim - split;
        let head = self.head.get(ord * split..(ord + 1) * split).unwrap_or_default();
        let tail = self.tail.get(ord * rest..(ord + 1) * rest).unwrap_or_default();
        let (qh, qt) = q.values.split_at(split.min(q.values.len()));
        (dot_i8(head, qh) + dot_i8(tail, qt)) as f32 * self.scales[ord] * q.scale
    }

    /// The cosine of document `doc`'s vector with `q` (None when it has none).
    fn cosine(&self, doc: DocId, q: &QueryMeaning) -> Option<f32> {
        self.ord(doc).map(|ord| self.cosine_of(ord, q))
    }
}

/// Each segment's vectors, read once: the searches of a process share them.
#[derive(Default)]
pub(crate) struct VectorCache(Mutex<FxHashMap<(SegmentId, usize), Arc<SegmentVectors>>>);

impl VectorCache {
    /// The vectors of every segment `searcher` sees, by ordinal; segments no longer seen
    /// are forgotten.
    fn of(&self, searcher: &Searcher, dim: usize) -> Result<Vec<Arc<SegmentVectors>>> {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            let key = (segment.segment_id(), dim);
            let vectors = match cache.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = Arc::new(SegmentVectors::read(segment, dim)?);
                    cache.insert(key, v.clone());
                    v
                }
            };
            out.push(vectors);
        }
        let live: std::collections::HashSet<SegmentId> =
            searcher.segment_readers().iter().map(SegmentReader::segment_id).collect();
        cache.retain(|(id, _), _| live.contains(id));
        Ok(out)
    }
}

impl std::fmt::Debug for VectorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorCache").finish_non_exhaustive()
    }
}

/// The documents `query` matches whose cosine with `q` is at least `floor`, best first, at
/// most `n`: one maker's.
struct ByMeaning {
    segments: Vec<Arc<SegmentVectors>>,
    q: Arc<QueryMeaning>,
    floor: f32,
    n: usize,
}

struct SegmentByMeaning {
    ord: SegmentOrdinal,
    vectors: Arc<SegmentVectors>,
    q: Arc<QueryMeaning>,
    floor: f32,
    /// The refId ranks, which order equal cosines the same in every build.
    rank: Option<Column<u64>>,
    /// Each document that has a vector: its first-pass score, its ordinal.
    found: Vec<(f32, DocId, usize)>,
    /// The least first-pass score still among the best (none while fewer are found).
    least: f32,
    /// Each vector's first-pass score, by ordinal.
    head: Vec<f32>,
}

impl SegmentByMeaning {
    /// Cuts `found` to the best [`HEAD_KEEPS`] by their first-pass score.
    fn keep_best(&mut self) {
        if self.found.len() > HEAD_KEEPS {
            self.found.select_nth_unstable_by(HEAD_KEEPS - 1, |a, b| b.0.total_cmp(&a.0));
            self.found.truncate(HEAD_KEEPS);
            self.least = self.found.iter().map(|f| f.0).fold(f32::INFINITY, f32::min);
        }
    }
}

impl Collector for ByMeaning {
    type Fruit = Vec<(f32, DocAddress)>;
    type Child = SegmentByMeaning;

    fn for_segment(&self, ord: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<SegmentByMeaning> {
        let vectors = self.segments.get(ord as usize).cloned().ok_or_else(|| {
            tantivy::TantivyError::InternalError("a segment the vectors were not read for".to_owned())
        })?;
        let rank = segment.fast_fields().u64("ref_rank").ok();
        let head = vectors.head_scores(&self.q);
        Ok(SegmentByMeaning {
            head,
            ord,
            vectors,
            q: self.q.clone(),
            floor: self.floor,
            rank,
            found: Vec::new(),
            least: f32::NEG_INFINITY,
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(f32, u64, DocAddress)>>) -> tantivy::Result<Vec<(f32, DocAddress)>> {
        let mut all: Vec<(f32, u64, DocAddress)> = fruits.into_iter().flatten().collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        all.truncate(self.n);
        Ok(all.into_iter().map(|(cos, _, addr)| (cos, addr)).collect())
    }
}

impl SegmentCollector for SegmentByMeaning {
    type Fruit = Vec<(f32, u64, DocAddress)>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        if let Some(ord) = self.vectors.ord(doc) {
            let score = self.head.get(ord).copied().unwrap_or(f32::NEG_INFINITY);
            if score < self.least {
                return;
            }
            self.found.push((score, doc, ord));
            // Keep the best [`HEAD_KEEPS`]; what scores below them need not be kept.
            if self.found.len() >= 2 * HEAD_KEEPS {
                self.keep_best();
            }
        }
    }

    fn harvest(mut self) -> Vec<(f32, u64, DocAddress)> {
        self.keep_best();
        let segment = self.ord;
        self.found
            .into_iter()
            .map(|(_, doc, ord)| (self.q.calibration.apply(self.vectors.cosine_of(ord, &self.q)), doc))
            .filter(|(cos, _)| *cos >= self.floor)
            .map(|(cos, doc)| {
                let rank = self.rank.as_ref().and_then(|c| c.first(doc)).unwrap_or(u64::MAX);
                (cos, rank, DocAddress::new(segment, doc))
            })
            .collect()
    }
}

/// The `n` documents `filter` matches that are closest in meaning to `q`, with their
/// cosine, at least `floor`.
pub(crate) fn nearest(
    cache: &VectorCache,
    searcher: &Searcher,
    filter: &dyn Query,
    q: &Arc<QueryMeaning>,
    floor: f32,
    n: usize,
) -> Result<Vec<(f32, DocAddress)>> {
    let mut found = nearest_by(cache, searcher, filter, q, floor, n)?;
    if let Some(m) = &q.memories {
        found.extend(nearest_by(cache, searcher, filter, m, floor, n)?);
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        found.truncate(n);
    }
    Ok(found)
}

/// [`nearest`] of the items whose vectors have the length of `q`'s.
fn nearest_by(
    cache: &VectorCache,
    searcher: &Searcher,
    filter: &dyn Query,
    q: &Arc<QueryMeaning>,
    floor: f32,
    n: usize,
) -> Result<Vec<(f32, DocAddress)>> {
    let segments = cache.of(searcher, q.values.len())?;
    if let Some(found) = nearest_first(&segments, searcher, filter, q, floor, n)? {
        return Ok(found);
    }
    searcher.search(filter, &ByMeaning { segments, q: q.clone(), floor, n }).map_err(tantivy_err)
}

/// The documents closest by their first values, checked against `filter` afterwards: a
/// filter visits every document it leaves, which cost more than the cosines when it leaves
/// most of them. One pass over every segment's rows keeps the [`FIRST_KEEPS`] best by
/// their first values; their documents are checked against `filter`, and the best
/// [`HEAD_KEEPS`] that pass get their whole cosine. None when fewer than `n` pass while
/// more vectors were left out: then every document the filter leaves is looked at
/// ([`ByMeaning`]).
fn nearest_first(
    segments: &[Arc<SegmentVectors>],
    searcher: &Searcher,
    filter: &dyn Query,
    q: &Arc<QueryMeaning>,
    floor: f32,
    n: usize,
) -> Result<Option<Vec<(f32, DocAddress)>>> {
    use tantivy::DocSet;
    use tantivy::query::EnableScoring;
    // Each candidate: its first-pass score, its segment, its vector's ordinal.
    let mut best: Vec<(f32, u32, u32)> = Vec::with_capacity(2 * FIRST_KEEPS);
    let mut least = f32::NEG_INFINITY;
    let mut vectors_seen = 0usize;
    for (ord, vectors) in segments.iter().enumerate() {
        let Some(split) = vectors.split() else { continue };
        let qh = &q.values[..split.min(q.values.len())];
        vectors_seen += vectors.scales.len();
        for (o, (row, scale)) in vectors.head.chunks_exact(split).zip(&vectors.scales).enumerate() {
            let score = dot_i8(row, qh) as f32 * scale;
            if score >= least && *scale > 0.0 {
                best.push((score, ord as u32, o as u32));
                if best.len() >= 2 * FIRST_KEEPS {
                    least = keep_best(&mut best, FIRST_KEEPS);
                }
            }
        }
    }
    keep_best(&mut best, FIRST_KEEPS);
    // The documents of those vectors, by segment and document, for the filter.
    let mut docs: Vec<(u32, DocId, f32, u32)> = Vec::with_capacity(best.len());
    for &(score, seg, o) in &best {
        let vectors = &segments[seg as usize];
        let alive = searcher.segment_reader(seg).alive_bitset();
        for &doc in vectors.docs_of(o as usize) {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                docs.push((seg, doc, score, o));
            }
        }
    }
    docs.sort_unstable_by_key(|d| (d.0, d.1));
    let weight = filter.weight(EnableScoring::disabled_from_searcher(searcher)).map_err(tantivy_err)?;
    let mut passed: Vec<(f32, u32, DocId, u32)> = Vec::new();
    for group in docs.chunk_by(|a, b| a.0 == b.0) {
        let seg = group[0].0;
        let mut scorer = weight.scorer(searcher.segment_reader(seg), 1.0).map_err(tantivy_err)?;
        for &(_, doc, score, o) in group {
            let at = if scorer.doc() < doc { scorer.seek(doc) } else { scorer.doc() };
            if at == doc {
                passed.push((score, seg, doc, o));
            }
        }
    }
    // Too few of the closest pass the filter to be sure of the best: look at all.
    if passed.len() < n && vectors_seen > best.len() {
        return Ok(None);
    }
    if passed.len() > HEAD_KEEPS {
        passed.select_nth_unstable_by(HEAD_KEEPS - 1, |a, b| b.0.total_cmp(&a.0));
        passed.truncate(HEAD_KEEPS);
    }
    let mut ranks: FxHashMap<u32, Option<Column<u64>>> = FxHashMap::default();
    let mut all: Vec<(f32, u64, DocAddress)> = Vec::new();
    for (_, seg, doc, o) in passed {
        let cos = q.calibration.apply(segments[seg as usize].cosine_of(o as usize, q));
        if cos >= floor {
            let rank =
                ranks.entry(seg).or_insert_with(|| searcher.segment_reader(seg).fast_fields().u64("ref_rank").ok());
            let r = rank.as_ref().and_then(|c| c.first(doc)).unwrap_or(u64::MAX);
            all.push((cos, r, DocAddress::new(seg, doc)));
        }
    }
    all.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)).then_with(|| a.2.cmp(&b.2)));
    all.truncate(n);
    Ok(Some(all.into_iter().map(|(cos, _, addr)| (cos, addr)).collect()))
}

/// Cuts `best` to its `keep` highest first-pass scores; the least score kept (or minus
/// infinity while fewer are held).
fn keep_best(best: &mut Vec<(f32, u32, u32)>, keep: usize) -> f32 {
    if best.len() <= keep {
        return f32::NEG_INFINITY;
    }
    best.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0).then_with(|| (a.1, a.2).cmp(&(b.1, b.2))));
    best.truncate(keep);
    best.iter().map(|b| b.0).fold(f32::INFINITY, f32::min)
}

/// The cosine of each of `addrs` with `q` (None for one without a vector).
pub(crate) fn cosines(
    cache: &VectorCache,
    searcher: &Searcher,
    addrs: &[DocAddress],
    q: &QueryMeaning,
) -> Result<Vec<Option<f32>>> {
    let mut out = vec![None; addrs.len()];
    for q in q.each() {
        let segments = cache.of(searcher, q.values.len())?;
        for (addr, cos) in addrs.iter().zip(&mut out) {
            if cos.is_none() {
                *cos = segments
                    .get(addr.segment_ord as usize)
                    .and_then(|v| v.cosine(addr.doc_id, q))
                    .map(|c| q.calibration.apply(c));
            }
        }
    }
    Ok(out)
}

/// The cosine of one document's vector with `q`, read from its segment's column alone
/// (None when it has none): for a process that looks at a few documents, where reading
/// every vector of the index first would cost more than the rest of its work.
pub(crate) fn cosine_alone(searcher: &Searcher, addr: DocAddress, q: &QueryMeaning) -> Result<Option<f32>> {
    let segment = searcher.segment_reader(addr.segment_ord);
    let Some(column) = segment.fast_fields().bytes("vector").map_err(tantivy_err)? else { return Ok(None) };
    let Some(ord) = column.ords().first(addr.doc_id) else { return Ok(None) };
    let mut bytes = Vec::new();
    if !column.ord_to_bytes(ord, &mut bytes).map_err(|e| super::tantivy_err(e.into()))? {
        return Ok(None);
    }
    Ok(q.each().find_map(|q| {
        crate::semantic::Quantized::from_bytes(&bytes, q.values.len())
            .filter(|v| v.scale > 0.0)
            .map(|v| q.calibration.apply(crate::semantic::dot_i8(&v.values, &q.values) as f32 * v.scale * q.scale))
    }))
}

/// How many live items the index holds, and how many of them have a vector.
pub(crate) fn counts(searcher: &Searcher) -> Result<(u64, u64)> {
    let (mut items, mut with) = (0, 0);
    for segment in searcher.segment_readers() {
        items += u64::from(segment.num_docs());
        let Some(column) = segment.fast_fields().bytes("vector").map_err(tantivy_err)? else { continue };
        let alive = segment.alive_bitset();
        for doc in 0..segment.max_doc() {
            if alive.is_none_or(|a| a.is_alive(doc)) && column.ords().first(doc).is_some() {
                with += 1;
            }
        }
    }
    Ok((items, with))
}

/// A memory's weight in a ranking beyond its text, 0–1: its current importance (cut to its
/// writer's trust) times its writer's trust boost, over the most that can be. A document or
/// a commit weighs as a fresh memory of default importance by a writer nobody verified.
pub(crate) fn weight(searcher: &Searcher, addr: DocAddress, r: &Ranking) -> f32 {
    use super::search::{DEFAULT_HALF_LIFE_DAYS, DEFAULT_TRUST, ranked_importance, trust_boost};
    use crate::memory::fold::DEFAULT_IMPORTANCE;
    let most = trust_boost(1.0);
    let segment = searcher.segment_reader(addr.segment_ord);
    let fast = segment.fast_fields();
    let doc = addr.doc_id;
    let mut buf = String::new();
    let mut text = |name: &str| -> Option<String> {
        let col = fast.str(name).ok().flatten()?;
        let ord = col.ords().first(doc)?;
        col.ord_to_str(ord, &mut buf).ok().filter(|found| *found).map(|_| buf.clone())
    };
    let namespace = text("namespace");
    let agent = text("agent");
    let ref_id = if r.access.is_empty() { None } else { text("ref_id") };
    let importance = fast.f64("importance").ok().and_then(|c| c.first(doc)).unwrap_or(DEFAULT_IMPORTANCE);
    let added = fast.i64("added").ok().and_then(|c| c.first(doc)).unwrap_or(r.now);
    // Only notes and session records fade (docs/ranking.md), as in the lexical ranking.
    let fading = super::search::fades(text("category").as_deref());
    let age_days = if fading { (r.now - added) as f64 / 86_400.0 } else { 0.0 };
    let half = namespace.and_then(|ns| r.half_life_days.get(&ns).copied()).unwrap_or(DEFAULT_HALF_LIFE_DAYS);
    let trust = agent.and_then(|a| r.trust.get(&crate::parse::trust::normalize(&a)).copied()).unwrap_or(DEFAULT_TRUST);
    let reads = ref_id.and_then(|id| r.access.get(&id).copied()).unwrap_or(0);
    (ranked_importance(importance, age_days, half, reads, trust) * trust_boost(trust) / most) as f32
}

/// Whether a query is searched by words only: quoted phrases, and a query that is one
/// identifier, path or commit id, name exactly what they want; a model that knows no CJK
/// script would only blur a query written in one.
pub fn words_only(query: &str, model: &Model) -> bool {
    let q = query.trim();
    if q.contains('"') {
        return true;
    }
    // The built-in model's vocabulary is English: a kanji outside its few thousand is
    // unknown, and kana fall apart into single letters.
    if std::ptr::eq(model, Model::builtin()) && q.chars().any(is_cjk) {
        return true;
    }
    let mut tokens = q.split_whitespace();
    let (Some(one), None) = (tokens.next(), tokens.next()) else { return false };
    let hex = one.len() >= 7 && one.chars().all(|c| c.is_ascii_hexdigit()) && one.chars().any(|c| c.is_ascii_digit());
    // `plan399`, `v2`, `k8s`: letters with digits name one thing.
    let numbered = one.chars().any(|c| c.is_ascii_digit()) && one.chars().any(char::is_alphabetic);
    let path_or_code = one.contains(['/', '\\', '_', '#', ':', '.', '(', '<'])
        || one.chars().skip(1).any(|c| c.is_uppercase()) && one.chars().any(|c| c.is_lowercase());
    hex || numbered || path_or_code
}

/// Whether a query is asked as a question or a sentence (a filler word such as `how`,
/// `the` or `we`, or a question mark) rather than as keywords: a question leans on
/// meaning, keywords on the words themselves.
pub fn is_question(query: &str) -> bool {
    const ASKING: [&str; 40] = [
        "a", "about", "after", "an", "and", "are", "before", "can", "could", "did", "do", "does", "for", "from", "how",
        "i", "in", "is", "it", "my", "of", "on", "our", "should", "that", "the", "this", "to", "was", "we", "were",
        "what", "when", "where", "which", "who", "why", "will", "with", "you",
    ];
    query.contains('?')
        || query
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| !w.is_empty() && ASKING.contains(&w.to_lowercase().as_str()))
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0xFF66..=0xFF9F | 0x20000..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_by_the_model_alone_matches_an_index_whose_memories_are_an_encoders() {
        let q = |model: &str| QueryMeaning {
            model: model.to_owned(),
            question: false,
            values: vec![1],
            scale: 1.0,
            memories: None,
            calibration: Calibration::MODEL,
        };
        assert!(matches(Some("a1"), &q("a1")));
        assert!(matches(Some("a1+enc-b2"), &q("a1+enc-b2")));
        assert!(matches(Some("a1+enc-b2"), &q("a1")));
        // Another model, no vectors, or an index not yet made by the encoder.
        assert!(!matches(Some("a2+enc-b2"), &q("a1")));
        assert!(!matches(None, &q("a1")));
        assert!(!matches(Some("a1"), &q("a1+enc-b2")));
        assert!(!matches(Some("a1+enc-b3"), &q("a1+enc-b2")));
    }

    /// A live document's id, vector values and scale.
    type Stored = (u64, Vec<i8>, f32);

    /// A tantivy index of `segments` segments of `per` documents each, with vectors of
    /// 256 values whose spread falls with the dimension as the model's principal
    /// components do, every seventh document deleted and every 500th tagged `rare`.
    fn vectors_index(segments: usize, per: usize) -> (tantivy::Index, tantivy::schema::Field, Vec<Stored>) {
        vectors_index_of(segments, per, |next| (0..256).map(|d| next() * 0.985f32.powi(d)).collect())
    }

    /// [`vectors_index`] with the vectors `make` makes from a generator of values in ±0.5.
    fn vectors_index_of(
        segments: usize,
        per: usize,
        mut make: impl FnMut(&mut dyn FnMut() -> f32) -> Vec<f32>,
    ) -> (tantivy::Index, tantivy::schema::Field, Vec<Stored>) {
        use tantivy::schema::{FAST, INDEXED, STRING, Schema};
        let mut b = Schema::builder();
        let vector = b.add_bytes_field("vector", FAST);
        let rank = b.add_u64_field("ref_rank", FAST | INDEXED);
        let tag = b.add_text_field("tag", STRING);
        let index = tantivy::Index::create_in_ram(b.build());
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        let mut live = Vec::new();
        for s in 0..segments {
            for i in 0..per {
                let id = (s * per + i) as u64;
                let v = make(&mut next);
                let q = crate::semantic::Embedding(v).quantize();
                let t = if id % 500 == 3 { "rare" } else { "common" };
                writer.add_document(tantivy::doc!(vector => q.to_bytes(), rank => id, tag => t)).unwrap();
                if !id.is_multiple_of(7) {
                    live.push((id, q.values, q.scale));
                }
            }
            writer.commit().unwrap();
        }
        for id in (0..(segments * per) as u64).filter(|id| id.is_multiple_of(7)) {
            writer.delete_term(tantivy::Term::from_field_u64(rank, id));
        }
        writer.commit().unwrap();
        (index, tag, live)
    }

    /// A question by the model: the stored vector `target` moved by `shift` of each value.
    fn question_near(target: &[i8], shift: impl Fn(usize) -> i8) -> Arc<QueryMeaning> {
        let values: Vec<i8> = target.iter().enumerate().map(|(d, v)| v.saturating_add(shift(d))).collect();
        Arc::new(QueryMeaning {
            model: String::new(),
            question: true,
            scale: 1.0 / (values.iter().map(|v| f32::from(*v).powi(2)).sum::<f32>().sqrt()),
            values,
            memories: None,
            calibration: Calibration::MODEL,
        })
    }

    #[test]
    fn the_first_pass_over_every_segment_finds_what_every_cosine_finds() {
        use tantivy::query::{AllQuery, TermQuery};
        let (index, tag, live) = vectors_index(4, 1_500);
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 4);
        let rank_of = |addr: DocAddress| {
            searcher.segment_reader(addr.segment_ord).fast_fields().u64("ref_rank").unwrap().first(addr.doc_id).unwrap()
        };
        let cache = VectorCache::default();
        for (k, (_, target, _)) in live.iter().step_by(997).enumerate() {
            // A question close to one stored vector, and as far from the rest as chance puts it.
            let q = question_near(target, |d| ((d * 7 + k) % 5) as i8 - 2);
            let exact = |keep: &dyn Fn(u64) -> bool, n: usize| -> Vec<u64> {
                let mut all: Vec<(f32, u64)> = live
                    .iter()
                    .filter(|(id, _, _)| keep(*id))
                    .map(|(id, v, scale)| (dot_i8(v, &q.values) as f32 * scale * q.scale, *id))
                    .collect();
                all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                all.into_iter().take(n).map(|(_, id)| id).collect()
            };
            // Every document: the first pass over all segments at once.
            let found = nearest(&cache, &searcher, &AllQuery, &q, -1.0, 10).unwrap();
            let found: Vec<u64> = found.into_iter().map(|(_, a)| rank_of(a)).collect();
            assert_eq!(found, exact(&|_| true, 10), "question {k}");
            // A filter that leaves a few: fewer than asked pass the first pass, so every
            // document the filter leaves is scored.
            let rare =
                TermQuery::new(tantivy::Term::from_field_text(tag, "rare"), tantivy::schema::IndexRecordOption::Basic);
            let found = nearest(&cache, &searcher, &rare, &q, -1.0, 10).unwrap();
            let found: Vec<u64> = found.into_iter().map(|(_, a)| rank_of(a)).collect();
            let want = exact(&|id| id % 500 == 3, 10);
            assert_eq!(found, want, "question {k}, rare");
            assert_eq!(want.len(), 10);
        }
    }

    #[test]
    fn up_to_first_keeps_vectors_are_searched_exactly_however_alike_their_first_values() {
        use tantivy::query::AllQuery;
        // First values all but equal, so the first pass cannot tell the vectors apart: what
        // sets them apart is in the rest. 1,800 vectors, fewer than the first pass keeps.
        let (index, _, live) = vectors_index_of(2, 900, |next| {
            (0..256).map(|d| if d < HEAD { 0.4 + next() * 0.01 } else { next() }).collect()
        });
        const { assert!(2 * 900 <= FIRST_KEEPS) };
        let searcher = index.reader().unwrap().searcher();
        let rank_of = |addr: DocAddress| {
            searcher.segment_reader(addr.segment_ord).fast_fields().u64("ref_rank").unwrap().first(addr.doc_id).unwrap()
        };
        let cache = VectorCache::default();
        for (k, (_, target, _)) in live.iter().step_by(301).enumerate() {
            let q = question_near(target, |d| ((d * 3 + k) % 7) as i8 - 3);
            let mut all: Vec<(f32, u64)> =
                live.iter().map(|(id, v, scale)| (dot_i8(v, &q.values) as f32 * scale * q.scale, *id)).collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let exact: Vec<u64> = all.into_iter().take(30).map(|(_, id)| id).collect();
            let found = nearest(&cache, &searcher, &AllQuery, &q, -1.0, 30).unwrap();
            let found: Vec<u64> = found.into_iter().map(|(_, a)| rank_of(a)).collect();
            assert_eq!(found, exact, "question {k}");
        }
    }

    #[test]
    fn the_encoders_cosines_are_put_on_the_models_scale() {
        let e = Calibration::ENCODER;
        assert!((e.apply(0.15) - 0.35).abs() < 1e-6);
        assert!((e.apply(1.0) - 1.0).abs() < 1e-6);
        assert_eq!(Calibration::MODEL.apply(0.42), 0.42);
    }

    #[test]
    fn identifiers_paths_commits_and_quotes_are_searched_by_words_only() {
        let m = Model::builtin();
        for q in [
            "\"exact phrase\"",
            "src/pool.rs",
            "evict_lru",
            "IWbemServices::ExecQuery",
            "ExecQuery",
            "3f9a2b1c",
            "#123",
            "plan399",
            "データベース",
            "パスワード rotation",
        ] {
            assert!(words_only(q, m), "{q}");
        }
        for q in ["when do credentials for the test db change", "deploy", "Android", "2025", "rollback plan"] {
            assert!(!words_only(q, m), "{q}");
        }
    }
}

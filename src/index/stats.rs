//! BM25 statistics that depend only on the documents the index holds, not on how they fell
//! into segments (docs/search-index.md#consistency).
//!
//! BM25 divides each document's field length by the average one. tantivy takes the total
//! behind that average from each segment's token count, which is exact for a segment it
//! indexed and only estimated, from the rounded field norms of the documents kept, for one
//! it made by merging away deleted documents. A clean rebuild and an index whose deleted
//! documents were merged away hold the same documents, yet their scores differed. Here the
//! total is always the sum of the documents' rounded field norms (what BM25 takes as each
//! document's own length anyway), summed once per segment: once deleted documents are
//! merged away, each term's score is a clean rebuild's to the last bit (a query of several
//! terms may add them in another order: a last-bit difference). Document counts and
//! frequencies are tantivy's (exact once no segment holds deleted documents).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, SegmentReader, Term};

/// The field-length totals of the segments seen, kept while they are searched.
#[derive(Debug, Default)]
pub struct Norms {
    totals: Mutex<HashMap<(SegmentId, Field), u64>>,
}

impl Norms {
    /// The sum of the field norms of `field` over every document the searcher sees
    /// (deleted ones too, as tantivy counts them until they are merged away).
    fn total(&self, searcher: &Searcher, field: Field) -> tantivy::Result<u64> {
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let readers = searcher.segment_readers();
        if readers.iter().any(|r| !totals.contains_key(&(r.segment_id(), field))) {
            // New segments: forget those merged away since.
            totals.retain(|(id, _), _| readers.iter().any(|r| r.segment_id() == *id));
        }
        let mut sum = 0;
        for reader in readers {
            let key = (reader.segment_id(), field);
            sum += match totals.get(&key) {
                Some(total) => *total,
                None => {
                    let total = segment_total(reader, field)?;
                    totals.insert(key, total);
                    total
                }
            };
        }
        Ok(sum)
    }
}

/// The sum of one segment's field norms of `field` (its token count when it keeps none).
fn segment_total(reader: &SegmentReader, field: Field) -> tantivy::Result<u64> {
    let Some(norms) = reader.fieldnorms_readers().get_field(field)? else {
        return Ok(reader.inverted_index(field)?.total_num_tokens());
    };
    let mut count = [0u64; 256];
    for doc in 0..reader.max_doc() {
        count[usize::from(norms.fieldnorm_id(doc))] += 1;
    }
    Ok((0..=u8::MAX).map(|id| count[usize::from(id)] * u64::from(FieldNormReader::id_to_fieldnorm(id))).sum())
}

/// The statistics a search scores with.
pub struct Stats<'a> {
    pub searcher: &'a Searcher,
    pub norms: &'a Norms,
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.norms.total(self.searcher, field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Bm25StatisticsProvider::total_num_docs(self.searcher)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.searcher.doc_freq(term)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::index::{Index, SyncOptions, TextQuery};

    /// An entry whose body is `len` words of a small vocabulary.
    fn entry(n: usize, len: usize, salt: usize) -> String {
        const WORDS: [&str; 12] = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        ];
        let body: Vec<&str> = (0..len).map(|i| WORDS[(i * i + n * 7 + salt) % (3 + (i + n) % 9)]).collect();
        format!(
            "---\nname: entry {n} {}\ndescription: about {}\n---\n{}\n",
            WORDS[n % 12],
            WORDS[(n + salt) % 12],
            body.join(" ")
        )
    }

    fn scores(index: &Index, q: &str) -> Vec<(String, f32)> {
        let req = TextQuery { query: q.into(), limit: 20, ..TextQuery::default() };
        index.search(&req).unwrap().results.into_iter().map(|h| (h.ref_id, h.raw_score)).collect()
    }

    #[test]
    fn once_deleted_documents_are_merged_away_scores_are_a_clean_rebuilds() {
        let (edited, clean) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let path = |n: usize| format!("resources/workspaces/w/_notes/2601{:02}-e{n}.md", n % 28 + 1);
        let write = |root: &std::path::Path, n: usize, text: &str| {
            let p = root.join(path(n));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let config = Config::default();
        for n in 0..80 {
            write(edited.path(), n, &entry(n, 30 + n * 3, 0));
        }
        let mut index = Index::open(edited.path()).unwrap();
        index.sync(&config, &SyncOptions::default()).unwrap();
        // Bodies of 30 to 270 words: most field lengths are stored rounded.
        for n in (0..80).step_by(3) {
            write(edited.path(), n, &entry(n, 25 + n * 2, 1));
        }
        for n in (1..80).step_by(7) {
            std::fs::remove_file(edited.path().join(path(n))).unwrap();
        }
        index.sync(&config, &SyncOptions::default()).unwrap();
        assert!(index.merge_deletes().unwrap() > 0);
        for n in (0..80).filter(|n| n % 7 != 1) {
            let text = std::fs::read_to_string(edited.path().join(path(n))).unwrap();
            write(clean.path(), n, &text);
        }
        let mut rebuilt = Index::open(clean.path()).unwrap();
        rebuilt.sync(&config, &SyncOptions::default()).unwrap();
        for q in ["alpha", "kilo", "entry", "bravo charlie", "lima echo golf", "alpha entry"] {
            let (got, want) = (scores(&index, q), scores(&rebuilt, q));
            assert_eq!(got.len(), 20, "{q}");
            let ids = |v: &[(String, f32)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&want), "{q}");
            // The scores of a term in several fields (and of several terms) may be added in
            // another order, as segments fell: the last bit may differ.
            for ((_, g), (_, w)) in got.iter().zip(&want) {
                assert!((g - w).abs() <= w.abs() * 1e-6, "{q}: {got:?} {want:?}");
            }
        }
    }
}

//! Listing items by what they are and where they live, without a text query: what
//! `workspace_get_context` is built from.

use std::collections::BTreeMap;

use tantivy::collector::{Count, DocSetCollector};
use tantivy::query::{AllQuery, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use super::{Index, tantivy_err};
use crate::error::{Error, Result};
use crate::model::DocKind;

/// Which items to list. Every given condition must hold; an empty list means any.
#[derive(Debug, Clone, Default)]
pub struct ItemQuery {
    pub kinds: Vec<DocKind>,
    /// Items whose scope is exactly one of these.
    pub scopes: Vec<String>,
    /// Items whose scope is this one or below it.
    pub under: Option<String>,
    pub topics: Vec<String>,
    /// Items with one of these refIds.
    pub ref_ids: Vec<String>,
}

/// How many live items the index holds, by kind and, for memories, by namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub kinds: BTreeMap<String, u64>,
    pub namespaces: BTreeMap<String, u64>,
}

/// Items found by `Index::item_list`, in refId order, read from the index on demand (from
/// the commit that was current when the list was made).
pub struct ItemList {
    index: super::Fields,
    searcher: Searcher,
    refs: Vec<(String, DocAddress)>,
}

impl std::fmt::Debug for ItemList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemList").field("len", &self.refs.len()).finish()
    }
}

impl ItemList {
    pub(super) fn of(index: super::Fields, searcher: Searcher, refs: Vec<(String, DocAddress)>) -> ItemList {
        ItemList { index, searcher, refs }
    }

    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// The `i`th item's refId, read without its stored fields.
    pub fn ref_id(&self, i: usize) -> &str {
        &self.refs[i].0
    }

    /// The `i`th item's stored fields.
    pub fn get(&self, i: usize) -> Result<Item> {
        let f = &self.index;
        let doc: TantivyDocument = self.searcher.doc(self.refs[i].1).map_err(tantivy_err)?;
        let text = |field| doc.get_first(field).and_then(|v| v.as_str()).map(str::to_owned);
        let all = |field| doc.get_all(field).filter_map(|v| v.as_str().map(str::to_owned)).collect();
        Ok(Item {
            ref_id: text(f.ref_id).unwrap_or_default(),
            kind: text(f.kind).unwrap_or_default(),
            scope: text(f.scope),
            topic: text(f.topic),
            name: text(f.name).or_else(|| text(f.summary_stored)).unwrap_or_default(),
            description: text(f.description).or_else(|| text(f.summary_stored)).unwrap_or_default(),
            tags: all(f.tag),
            status: text(f.status),
            category: text(f.category),
            created: text(f.created),
            updated: text(f.updated),
            path: text(f.path).unwrap_or_default(),
            body: text(f.body_stored),
            meta: text(f.meta).and_then(|m| serde_json::from_str(&m).ok()),
            flags: all(f.flags).into_iter().filter(|x: &String| x != super::extract::LINK_LIST).collect(),
            expires: text(f.expires),
            importance: doc.get_first(f.importance).and_then(|v| v.as_f64()),
            agent: text(f.agent),
            branch: text(f.branch),
            key: text(f.key),
        })
    }
}

/// An item's stored fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item {
    pub ref_id: String,
    pub kind: String,
    pub scope: Option<String>,
    pub topic: Option<String>,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub status: Option<String>,
    pub category: Option<String>,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub path: String,
    /// The body, where the index stores it (T1 kinds, skills' paths, memories).
    pub body: Option<String>,
    /// An overview's topic fields.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    pub flags: Vec<String>,
    /// A memory's expiry (RFC 3339 UTC).
    pub expires: Option<String>,
    /// A memory's importance as written, its agent, its branch and its upsert key.
    pub importance: Option<f64>,
    pub agent: Option<String>,
    pub branch: Option<String>,
    pub key: Option<String>,
}

fn any_of(field: tantivy::schema::Field, values: &[String]) -> Box<dyn Query> {
    let terms: Vec<(Occur, Box<dyn Query>)> = values
        .iter()
        .map(|v| {
            let q: Box<dyn Query> = Box::new(TermQuery::new(Term::from_field_text(field, v), IndexRecordOption::Basic));
            (Occur::Should, q)
        })
        .collect();
    Box::new(BooleanQuery::new(terms))
}

impl Index {
    /// Every item matching `q`, ordered by refId.
    pub fn items(&self, q: &ItemQuery) -> Result<Vec<Item>> {
        let list = self.item_list(q)?;
        (0..list.len()).map(|i| list.get(i)).collect()
    }

    /// The items matching `q`, ordered by refId, read one by one when asked for: a caller
    /// that needs only the first few of thousands reads only those.
    pub fn item_list(&self, q: &ItemQuery) -> Result<ItemList> {
        let f = &self.fields;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        if !q.kinds.is_empty() {
            let kinds: Vec<String> = q.kinds.iter().map(|k| k.as_str().to_owned()).collect();
            clauses.push((Occur::Must, any_of(f.kind, &kinds)));
        }
        if !q.scopes.is_empty() {
            clauses.push((Occur::Must, any_of(f.scope, &q.scopes)));
        }
        if let Some(under) = &q.under {
            clauses.push((Occur::Must, any_of(f.scope_path, std::slice::from_ref(under))));
        }
        if !q.topics.is_empty() {
            clauses.push((Occur::Must, any_of(f.topic, &q.topics)));
        }
        if !q.ref_ids.is_empty() {
            clauses.push((Occur::Must, any_of(f.ref_id, &q.ref_ids)));
        }
        let query: Box<dyn Query> =
            if clauses.is_empty() { Box::new(AllQuery) } else { Box::new(BooleanQuery::new(clauses)) };
        let searcher = self.reader.searcher();
        let mut found: Vec<DocAddress> =
            searcher.search(&*query, &DocSetCollector).map_err(tantivy_err)?.into_iter().collect();
        found.sort_unstable();
        // The refIds from the fast field: no stored document is read to order them.
        let mut refs = Vec::with_capacity(found.len());
        let mut column: Option<(u32, Option<tantivy::columnar::StrColumn>)> = None;
        for addr in found {
            if column.as_ref().is_none_or(|(seg, _)| *seg != addr.segment_ord) {
                let reader = searcher.segment_reader(addr.segment_ord);
                column = Some((addr.segment_ord, reader.fast_fields().str("ref_id").map_err(tantivy_err)?));
            }
            let mut ref_id = String::new();
            if let Some((_, Some(col))) = &column
                && let Some(ord) = col.term_ords(addr.doc_id).next()
            {
                col.ord_to_str(ord, &mut ref_id).map_err(Error::index)?;
            }
            refs.push((ref_id, addr));
        }
        refs.sort_unstable();
        Ok(ItemList { index: self.fields.clone(), searcher, refs })
    }

    /// Live items by kind, and memories by namespace (deleted items are not counted).
    pub fn counts(&self) -> Result<Counts> {
        let f = &self.fields;
        let searcher = self.reader.searcher();
        let count_terms = |field: tantivy::schema::Field, within: Option<&Term>| -> Result<BTreeMap<String, u64>> {
            let mut values = std::collections::BTreeSet::new();
            for segment in searcher.segment_readers() {
                let inverted = segment.inverted_index(field).map_err(tantivy_err)?;
                let mut terms = inverted.terms().stream().map_err(|e| tantivy_err(e.into()))?;
                while terms.advance() {
                    if let Ok(text) = std::str::from_utf8(terms.key()) {
                        values.insert(text.to_owned());
                    }
                }
            }
            let mut counts = BTreeMap::new();
            for value in values {
                let term: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(field, &value), IndexRecordOption::Basic));
                let query: Box<dyn Query> = match within {
                    Some(w) => Box::new(BooleanQuery::new(vec![
                        (Occur::Must, term),
                        (Occur::Must, Box::new(TermQuery::new(w.clone(), IndexRecordOption::Basic))),
                    ])),
                    None => term,
                };
                let n = searcher.search(&*query, &Count).map_err(tantivy_err)? as u64;
                if n > 0 {
                    counts.insert(value, n);
                }
            }
            Ok(counts)
        };
        let memory = Term::from_field_text(f.kind, DocKind::Memory.as_str());
        Ok(Counts { kinds: count_terms(f.kind, None)?, namespaces: count_terms(f.namespace, Some(&memory))? })
    }
}

/// Commits by branch, for the branches of an index that git no longer has.
type BranchCommits = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// `memory_commits_off`'s last answer: (the segments it read, the branches it was told
/// git has, the answer). A search after nothing changed reads no document.
#[derive(Debug, Default)]
pub(crate) struct CommitsOff(std::sync::Mutex<Option<(String, std::collections::BTreeSet<String>, BranchCommits)>>);

impl Index {
    /// The commits memories were written at (`""` for an entry that records none), by the
    /// branch they were written on, for the branches of the index that are not in `known`:
    /// what visibility by ancestry checks for the entries of deleted branches.
    pub fn memory_commits_off(&self, known: &std::collections::BTreeSet<String>) -> Result<BranchCommits> {
        let searcher = self.reader.searcher();
        let segments: String = searcher
            .segment_readers()
            .iter()
            .map(|s| format!("{}:{} ", s.segment_id().uuid_string(), s.num_deleted_docs()))
            .collect();
        if let Ok(memo) = self.commits_off.0.lock()
            && let Some((seen, for_known, answer)) = memo.as_ref()
            && *seen == segments
            && for_known == known
        {
            return Ok(answer.clone());
        }
        let answer = self.read_commits_off(&searcher, known)?;
        if let Ok(mut memo) = self.commits_off.0.lock() {
            *memo = Some((segments, known.clone(), answer.clone()));
        }
        Ok(answer)
    }

    /// Every branch memories of the index were written on (from the term dictionary: no
    /// document is read).
    pub fn memory_branches(&self) -> Result<std::collections::BTreeSet<String>> {
        let searcher = self.reader.searcher();
        let mut branches = std::collections::BTreeSet::new();
        for seg in searcher.segment_readers() {
            let Some(col) = seg.fast_fields().str("branch").map_err(tantivy_err)? else { continue };
            let mut stream = col.dictionary().stream().map_err(Error::index)?;
            while stream.advance() {
                branches.insert(String::from_utf8_lossy(stream.key()).into_owned());
            }
        }
        Ok(branches)
    }

    fn read_commits_off(
        &self,
        searcher: &tantivy::Searcher,
        known: &std::collections::BTreeSet<String>,
    ) -> Result<BranchCommits> {
        let mut branches = std::collections::BTreeSet::new();
        for seg in searcher.segment_readers() {
            let Some(col) = seg.fast_fields().str("branch").map_err(tantivy_err)? else { continue };
            let mut stream = col.dictionary().stream().map_err(Error::index)?;
            while stream.advance() {
                let name = String::from_utf8_lossy(stream.key()).into_owned();
                if !known.contains(&name) {
                    branches.insert(name);
                }
            }
        }
        let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            std::collections::BTreeMap::new();
        for branch in branches {
            let query = tantivy::query::TermQuery::new(
                tantivy::Term::from_field_text(self.fields.branch, &branch),
                tantivy::schema::IndexRecordOption::Basic,
            );
            let found = searcher.search(&query, &DocSetCollector).map_err(tantivy_err)?;
            let commits = out.entry(branch).or_default();
            let mut column: Option<(u32, Option<tantivy::columnar::StrColumn>)> = None;
            for addr in found {
                if column.as_ref().is_none_or(|(seg, _)| *seg != addr.segment_ord) {
                    let reader = searcher.segment_reader(addr.segment_ord);
                    column = Some((addr.segment_ord, reader.fast_fields().str("commit").map_err(tantivy_err)?));
                }
                // An entry that records no commit (a branch without one yet) counts as "".
                let mut commit = String::new();
                if let Some((_, Some(col))) = &column
                    && let Some(ord) = col.term_ords(addr.doc_id).next()
                {
                    col.ord_to_str(ord, &mut commit).map_err(Error::index)?;
                }
                commits.insert(commit);
            }
        }
        Ok(out)
    }
}

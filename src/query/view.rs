//! What the web view of `tmws serve` shows beyond the tools' answers (docs/web-view.md): a
//! scope's documents a page at a time, memories with each citation's state, and the pool's
//! live servers.
//!
//! Reading here changes nothing: a memory shown on a page is not counted as an access (a
//! person scrolling a list is not recall), and every list is cut to a page so that a root
//! of 100k memories answers as fast as one of ten.

use super::api::MemoryListRequest;
use super::cites::{Checker, of_meta};
use super::engine::Engine;
use super::memory::{self, MemoryHit};
use crate::error::Result;
use crate::index::ItemQuery;
use crate::model::DocKind;
pub use crate::pool::LiveServer;

/// One document of a scope, as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentRow {
    pub ref_id: String,
    /// `overview`, `topic_overview`, `entry` or `doc`.
    pub kind: String,
    pub scope: Option<String>,
    pub topic: Option<String>,
    pub name: String,
    pub description: String,
    pub status: Option<String>,
}

/// A page of a scope's documents, in refId order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentPage {
    /// How many documents the scope holds.
    pub total: usize,
    pub rows: Vec<DocumentRow>,
}

/// A citation and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiteState {
    /// As written: `src/pool.rs:120-140@abc1234`.
    pub cite: String,
    /// As a person reads it: `valid`, `moved to src/b.rs:4-6`, `changed`, ….
    pub state: String,
    pub stale: bool,
}

/// A memory with what a person reviewing it needs: the list's fields, its importance, key,
/// branch and expiry, and each citation with its state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryCard {
    pub hit: MemoryHit,
    pub cites: Vec<CiteState>,
}

impl MemoryCard {
    pub fn stale(&self) -> bool {
        self.cites.iter().any(|c| c.stale)
    }
}

impl Engine {
    /// The documents of `scope` and below (every scope when empty), `limit` of them from
    /// `offset`, in refId order.
    pub fn documents(&self, scope: &str, offset: usize, limit: usize) -> Result<DocumentPage> {
        let query = ItemQuery {
            kinds: vec![DocKind::Overview, DocKind::TopicOverview, DocKind::Entry, DocKind::Doc],
            under: (!scope.is_empty()).then(|| scope.to_owned()),
            ..ItemQuery::default()
        };
        let (page, _) = self.searched(
            |m| &m.context,
            |index| {
                let list = index.item_list(&query)?;
                let rows = (offset.min(list.len())..list.len().min(offset.saturating_add(limit)))
                    .map(|i| {
                        list.get(i).map(|item| DocumentRow {
                            ref_id: item.ref_id,
                            kind: item.kind,
                            scope: item.scope,
                            topic: item.topic,
                            name: item.name,
                            description: item.description,
                            status: item.status,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(DocumentPage { total: list.len(), rows })
            },
        )?;
        Ok(page)
    }

    /// The newest memories `req` leaves (as `memory_list` finds them), each with its
    /// importance, key, branch, expiry, content when `content` is set, and citations
    /// with their states; `keep` filters what the request cannot (author, staleness), and
    /// at most `req.limit` are kept of the newest `scan` the request finds.
    pub fn memory_cards(
        &self,
        req: &MemoryListRequest,
        scan: u32,
        content: bool,
        keep: impl Fn(&MemoryCard) -> bool,
    ) -> Result<(usize, Vec<MemoryCard>)> {
        let wanted = req.limit as usize;
        let listing = MemoryListRequest { limit: scan.max(req.limit), ..req.clone() };
        let (root, config) = (self.root(), self.config());
        let (cards, _) = self.searched(
            |m| &m.memory_search,
            |index| {
                let listed = memory::list(root, config, index, &listing)?;
                let ids: Vec<String> = listed.results.iter().map(|h| h.id.clone()).collect();
                let items = if ids.is_empty() {
                    Vec::new()
                } else {
                    index.items(&ItemQuery { kinds: vec![DocKind::Memory], ref_ids: ids, ..ItemQuery::default() })?
                };
                let mut checker = Checker::new(root);
                let mut kept = Vec::new();
                for mut hit in listed.results {
                    if kept.len() >= wanted {
                        break;
                    }
                    let mut cites = Vec::new();
                    if let Some(item) = items.iter().find(|i| i.ref_id == hit.id) {
                        hit.importance = item.importance;
                        hit.key.clone_from(&item.key);
                        hit.branch.clone_from(&item.branch);
                        hit.expires_at.clone_from(&item.expires);
                        if content {
                            hit.content.clone_from(&item.body);
                        }
                        for cite in of_meta(item.meta.as_ref()) {
                            let state = checker.check(&cite);
                            cites.push(CiteState {
                                cite: cite.to_text(),
                                state: state.describe(),
                                stale: state.stale(),
                            });
                            if state.stale() && !hit.stale_cites.contains(&cite.path) {
                                hit.stale_cites.push(cite.path.clone());
                            }
                        }
                        hit.cites = cites.iter().map(|c| c.cite.clone()).collect();
                    }
                    let card = MemoryCard { hit, cites };
                    if keep(&card) {
                        kept.push(card);
                    }
                }
                checker.save();
                Ok((listed.total, kept))
            },
        )?;
        Ok(cards)
    }

    /// One memory as [`memory_cards`](Self::memory_cards) shows it, with its content.
    pub fn memory_card(&self, id: &str) -> Result<Option<MemoryCard>> {
        let root = self.root();
        let (found, _) = self.searched(
            |m| &m.memory_search,
            |index| {
                let Some(item) = memory::find(index, id.trim())? else { return Ok(None) };
                let trust = super::trust::ranking_scores(root);
                let mut checker = Checker::new(root);
                let cites: Vec<CiteState> = of_meta(item.meta.as_ref())
                    .iter()
                    .map(|c| {
                        let state = checker.check(c);
                        CiteState { cite: c.to_text(), state: state.describe(), stale: state.stale() }
                    })
                    .collect();
                checker.save();
                let hit = MemoryHit {
                    id: item.ref_id.clone(),
                    namespace: crate::layout::memory_namespace(&item.path).map(str::to_owned),
                    kind: item.category.clone(),
                    summary: item.description.clone(),
                    tags: item.tags.clone(),
                    created_at: item.created.clone(),
                    from: Some(memory::Provenance::of_item(&item, &trust)),
                    content: item.body.clone(),
                    expires_at: item.expires.clone(),
                    importance: item.importance,
                    key: item.key.clone(),
                    branch: item.branch.clone(),
                    cites: cites.iter().map(|c| c.cite.clone()).collect(),
                    ..MemoryHit::default()
                };
                Ok(Some(MemoryCard { hit, cites }))
            },
        )?;
        Ok(found)
    }

    /// Live memories by namespace, as the index counts them (no log is read).
    pub fn memory_counts(&self) -> Result<std::collections::BTreeMap<String, u64>> {
        let (counts, _) = self.searched(|m| &m.context, |index| index.counts())?;
        Ok(counts.namespaces)
    }

    /// The downstream servers the pool holds a connection to now (none before the first
    /// `tool_call`).
    pub fn pool_live(&self) -> Vec<LiveServer> {
        self.pool().live()
    }
}

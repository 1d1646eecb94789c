//! What the web view of `tmws serve` shows beyond the tools' answers (docs/web-view.md): a
//! scope's documents a page at a time, memories with each citation's state, and the pool's
//! live servers.
//!
//! Reading here changes nothing: a memory shown on a page is not counted as an access (a
//! person scrolling a list is not recall), and every list is cut to a page so that a root
//! of 100k memories answers as fast as one of ten.

use super::cites::{Checker, of_meta};
use super::engine::Engine;
use super::memory::{self, MemoryHit};
use crate::error::Result;
use crate::index::{ItemQuery, TextQuery};
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

/// How many of the newest memories the `stale` filter looks through.
pub const STALE_SCAN: usize = 1000;

/// What the memories page filters by: the index filters all but `stale`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryFilter {
    pub namespace: Option<String>,
    pub kind: Option<String>,
    /// The writer's name, as written (`agent`).
    pub author: Option<String>,
    pub tag: Option<String>,
    /// A branch, or `*` for every branch (else what is visible on the checked-out one).
    pub branch: Option<String>,
    /// Only memories with a citation whose code changed or is gone.
    pub stale: bool,
}

/// What making cards needs once per page: the writers' trust, commit links and a
/// citation checker.
struct CardCx {
    trust: std::collections::BTreeMap<String, f64>,
    links: memory::links::Links,
    checker: Checker,
}

impl CardCx {
    fn new(root: &std::path::Path) -> CardCx {
        CardCx {
            trust: super::trust::ranking_scores(root),
            links: memory::links::current(root),
            checker: Checker::new(root),
        }
    }

    fn card(&mut self, item: &crate::index::Item, content: bool) -> MemoryCard {
        let cites: Vec<CiteState> = of_meta(item.meta.as_ref())
            .iter()
            .map(|c| {
                let state = self.checker.check(c);
                CiteState { cite: c.to_text(), state: state.describe(), stale: state.stale() }
            })
            .collect();
        let mut stale_cites: Vec<String> = Vec::new();
        for (c, state) in of_meta(item.meta.as_ref()).iter().zip(&cites) {
            if state.stale && !stale_cites.contains(&c.path) {
                stale_cites.push(c.path.clone());
            }
        }
        let hit = MemoryHit {
            id: item.ref_id.clone(),
            namespace: crate::layout::memory_namespace(&item.path).map(str::to_owned),
            kind: item.category.clone(),
            summary: item.description.clone(),
            tags: item.tags.clone(),
            created_at: item.created.clone(),
            from: Some(memory::Provenance::of_item(item, &self.trust)),
            content: content.then(|| item.body.clone().unwrap_or_default()),
            expires_at: item.expires.clone(),
            importance: item.importance,
            key: item.key.clone(),
            branch: item.branch.clone(),
            cites: cites.iter().map(|c| c.cite.clone()).collect(),
            stale_cites,
            introduced_in: self.links.of(&item.ref_id).cloned(),
            problem: item.meta.as_ref().and_then(memory::Problem::of),
            ..MemoryHit::default()
        };
        MemoryCard { hit, cites }
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

    /// The newest memories `filter` leaves, at most `limit`, each with its importance, key,
    /// branch, expiry, the commit that introduced it and its citations with their states;
    /// and how many the index's filters leave. Staleness is read from citations, so with
    /// `stale` the newest [`STALE_SCAN`] the other filters leave are looked through.
    pub fn memory_cards(&self, filter: &MemoryFilter, limit: usize) -> Result<(usize, Vec<MemoryCard>)> {
        let (root, config) = (self.root(), self.config());
        if let Some(ns) = &filter.namespace {
            memory::namespace(config, ns)?;
        }
        let (cards, _) = self.searched(
            |m| &m.memory_search,
            |index| {
                let query = TextQuery {
                    tags: filter.tag.iter().cloned().collect(),
                    limit: if filter.stale { STALE_SCAN } else { limit },
                    namespaces: filter.namespace.iter().cloned().collect(),
                    categories: filter.kind.iter().cloned().collect(),
                    agents: filter.author.iter().cloned().collect(),
                    visible: memory::visible::visible(root, index, filter.branch.as_deref())?,
                    ..TextQuery::default()
                };
                let (total, items) = index.latest_memories(&query, None)?;
                let mut cx = CardCx::new(root);
                let mut kept = Vec::new();
                for item in &items {
                    let card = cx.card(item, false);
                    if !filter.stale || card.stale() {
                        kept.push(card);
                    }
                    if kept.len() >= limit {
                        break;
                    }
                }
                cx.checker.save();
                Ok((total, kept))
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
                let mut cx = CardCx::new(root);
                let card = cx.card(&item, true);
                cx.checker.save();
                Ok(Some(card))
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

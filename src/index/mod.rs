//! The derived full-text index (docs/search-index.md): tantivy under `.tmws/cache/index/`, in this
//! version's folder ([`crate::layout::INDEX_HOME`]).
//!
//! The index is disposable: every item in it is derived from a file, keyed on its refId,
//! and a sync converges it to the files whatever happened before (a crash, a kill, a
//! missed watcher event). The commit payload carries the schema version and an epoch that
//! the manifest of indexed files must match; any mismatch or corruption rebuilds from the
//! files, with one log line, never an error for the user.

pub mod analyzer;
mod confined;
pub mod extract;
mod frozen;
pub mod items;
pub mod manifest;
pub mod markup;
pub mod meaning;
pub mod memlog;
pub mod retire;
pub mod schema;
pub mod search;
pub mod stats;
pub mod sync;
pub mod watch;

use std::path::{Path, PathBuf};

use tantivy::directory::error::LockError;
use tantivy::index::SegmentId;
use tantivy::{IndexReader, IndexWriter, ReloadPolicy, TantivyError};

pub use self::items::{Item, ItemList, ItemQuery};
pub use self::memlog::cited_path;
pub use self::schema::{Fields, SCHEMA_VERSION};
pub use self::search::{Ranking, RecallFilter, SearchHit, SearchResults, TextQuery, current_importance};
pub use self::sync::{SyncOptions, SyncPhase, SyncProgress, SyncReport};
use crate::error::{Chain, Error, Result};
use crate::layout::{self, INDEX_DIR, INDEX_OPEN_LOCK, SYNCING_MARKER};
use crate::store;

/// Memory for the writer's indexing buffers, shared by its threads. A thread's segment is
/// written when its share fills, and at a commit every thread's is, at once: the buffers
/// and the sorted terms of all of them are the peak of a build. 96 MB took a full build
/// of a win32-shaped tree (48k pages, 203 MB) from 349 to about 270 MB of peak RSS in the
/// same time as 256 MB (medians, 2 cores), writing 6 segments instead of 2. 64 MB, with
/// the process made lean for a large sync ([`crate::sys::lean`]), took it from 211–217 to
/// 166–182 MB for ~5 % more time (fat LTO, medians of three interleaved runs: 8.47 →
/// 8.91 s), and a 100k-file root of short pages from 176–188 to 151–153 MB in the same
/// time (4.5–4.8 s): the peak stays under 200 MB on both.
const WRITER_MEMORY: usize = 64 << 20;

/// Decompressed blocks of stored fields kept per segment by a reader (tantivy keeps 100):
/// every reload under writes makes new segment readers with caches of their own, and in
/// a server with many callers several generations are alive at once.
const DOC_STORE_CACHE_BLOCKS: usize = 16;

/// Why an index found on disk is not used as it is: a writer rebuilds it from the files, a
/// reader refuses it. Tantivy's error, where there is one, stays the cause.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("none was built")]
    NoneBuilt,
    #[error("it was built by another version")]
    OtherVersion,
    #[error("it could not be opened ({0})")]
    Unopened(#[source] TantivyError),
    #[error("{0}")]
    Unreadable(#[source] TantivyError),
    #[error("its schema is not this version's")]
    Schema,
    #[error("its commit could not be read ({0})")]
    Payload(#[source] TantivyError),
    #[error("it is version {0}, this tmws writes version {SCHEMA_VERSION}")]
    Version(u32),
}

/// What the last commit recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Payload {
    pub version: u32,
    /// Bumped by every commit; the manifest written after it carries the same number.
    pub epoch: u64,
    /// How far each JSONL log (root-relative path) is in this commit.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub logs: std::collections::BTreeMap<String, memlog::LogMark>,
    /// The git HEAD whose history is indexed (kind `commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The fingerprint of the model whose vectors the items carry (none: no vectors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The entries and overviews held back for review (root-relative paths): they make no
    /// items, so that listing them needs no walk of every file.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub proposals: std::collections::BTreeSet<String>,
}

/// A moment's state of the files, as far as a reader waits for it ([`Index::freshness_now`]).
#[derive(Debug, Clone, Default)]
pub struct Freshness {
    /// The epoch of the latest commit then.
    epoch: u64,
    /// A writer was applying changes it had found.
    syncing: bool,
    /// Each memory log with complete lines past its indexed offset: where they ended.
    logs: std::collections::BTreeMap<String, u64>,
}

impl Freshness {
    /// Whether a memory log held complete lines past what was committed: writes that were
    /// acknowledged, not indexed yet.
    pub fn has_unindexed_lines(&self) -> bool {
        !self.logs.is_empty()
    }
}

/// An open index: always a reader, and the writer when no other process holds it.
pub struct Index {
    root: PathBuf,
    index: tantivy::Index,
    fields: Fields,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    /// The writer's manifest, kept between syncs.
    manifest: Option<manifest::Cached>,
    /// Why the index was rebuilt on open, if it was.
    pub rebuilt: Option<String>,
    /// Nothing can be written below the root (a read-only mount, a full disk, no
    /// permission): the existing index is read as it is, and every answer may be stale.
    read_only: bool,
    /// Field-length totals by segment, for scoring (`stats`).
    norms: stats::Norms,
    /// The last answer of `memory_commits_off`, with the segments and branches it was for.
    commits_off: items::CommitsOff,
    /// The payload of the latest commit, with the stamp of the `meta.json` it was read from.
    payload_cache: std::sync::Mutex<Option<(store::FileStamp, Payload)>>,
    /// Each segment's vectors of meaning, read once.
    vectors: meaning::VectorCache,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("root", &self.root).field("writer", &self.writer.is_some()).finish()
    }
}

/// tantivy's error as the library's: one that a full or read-only disk caused stays an
/// I/O error of that kind, so that reads answer from the index as it is (`cannot_write`)
/// rather than fail; any other is an index error.
pub(crate) fn tantivy_err(e: TantivyError) -> Error {
    use std::io::ErrorKind;
    use tantivy::directory::error::OpenWriteError;
    let kind = match &e {
        TantivyError::IoError(io) => Some(io.kind()),
        TantivyError::OpenWriteError(OpenWriteError::IoError { io_error, .. }) => Some(io_error.kind()),
        TantivyError::LockFailure(LockError::IoError(io), _) => Some(io.kind()),
        // The indexing threads hand their errors over as text.
        TantivyError::ErrorInThread(text) | TantivyError::SystemError(text) => {
            if text.contains("No space left on device") || text.contains("StorageFull") {
                Some(ErrorKind::StorageFull)
            } else if text.contains("Read-only file system") || text.contains("ReadOnlyFilesystem") {
                Some(ErrorKind::ReadOnlyFilesystem)
            } else {
                None
            }
        }
        _ => None,
    };
    match kind {
        // Either way tantivy's error stays the cause: inside the I/O error (whose message is
        // tantivy's), or as the index error's source.
        Some(k @ (ErrorKind::StorageFull | ErrorKind::ReadOnlyFilesystem | ErrorKind::QuotaExceeded)) => {
            Error::io(Path::new(INDEX_DIR), std::io::Error::new(k, e))
        }
        _ => Error::index(e),
    }
}

impl Index {
    /// Opens (or creates) the index of `root`, taking the writer role when it is free.
    pub fn open(root: &Path) -> Result<Index> {
        let dir = root.join(INDEX_DIR);
        // One process at a time finds, creates or rebuilds the index and tries for the
        // writer: two that both found none would both create it, and one rebuilding would
        // delete the folder (and the writer lock in it) under another that already writes.
        let _opening = match store::FileLock::exclusive(root, &root.join(INDEX_OPEN_LOCK)) {
            Ok(lock) => lock,
            Err(e) if e.cannot_write() => return Self::open_read_only(root, &e),
            Err(e) => return Err(e),
        };
        store::create_dir_in(root, &dir)?;
        let fields = Fields::new();
        let mut rebuilt = None;
        let index = match Self::open_existing(root, &dir, &fields) {
            Ok(Some(index)) => index,
            Ok(None) => Self::create(root, &dir, &fields)?,
            Err(why) => {
                tracing::info!("rebuilding the index from the files: {}", Chain(&why));
                rebuilt = Some(why.to_string());
                store::remove_dir_all(&dir)?;
                store::create_dir_in(root, &dir)?;
                Self::create(root, &dir, &fields)?
            }
        };
        index.tokenizers().register(analyzer::ANALYZER, analyzer::analyzer());
        let writer = match index.writer_with_num_threads(writer_threads(), WRITER_MEMORY) {
            Ok(w) => Some(w),
            Err(TantivyError::LockFailure(LockError::LockBusy, _)) => None,
            Err(e) => return Err(tantivy_err(e)),
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
            .try_into()
            .map_err(tantivy_err)?;
        if writer.is_some() {
            match retire::retire_other_versions(root) {
                Ok(r) => {
                    r.removed.iter().for_each(|f| tracing::info!("removed the index of another tmws version: {f}"))
                }
                Err(e) => tracing::warn!("cannot remove the index of another tmws version: {}", e.chain()),
            }
        }
        Ok(Index {
            root: root.to_path_buf(),
            index,
            fields,
            reader,
            writer,
            manifest: None,
            commits_off: items::CommitsOff::default(),
            rebuilt,
            read_only: false,
            norms: stats::Norms::default(),
            payload_cache: std::sync::Mutex::default(),
            vectors: meaning::VectorCache::default(),
        })
    }

    /// The existing index, to read only, when nothing can be written below the root
    /// (docs/trust-boundary.md): answers come from it, marked stale. Without an index, `why` (the
    /// write that failed) is the error.
    fn open_read_only(root: &Path, why: &Error) -> Result<Index> {
        let dir = root.join(INDEX_DIR);
        let fields = Fields::new();
        let no_index = |e: Unusable| {
            Error::environment_with(format!("{why}, and there is no index to read ({e})"), e)
                .with_hint("run tmws once where it can write .tmws/cache/, to build the index")
        };
        if !store::exists(&dir.join("meta.json")) {
            return Err(no_index(Unusable::NoneBuilt));
        }
        let index = frozen::Frozen::open(root, &dir)
            .and_then(tantivy::Index::open)
            .map_err(|e| no_index(Unusable::Unreadable(e)))?;
        if index.schema() != fields.schema {
            return Err(no_index(Unusable::OtherVersion));
        }
        tracing::warn!("{why}: reading the existing index only; answers may be stale");
        Self::reading(root, index, fields, true)
    }

    /// Whether nothing can be written below the root: answers come from the index as it is.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Opens the index of `root` to read only, never taking the writer role: what a server
    /// queries while its watcher (or another process) writes. The index must exist (open
    /// it with `open` first).
    pub fn open_reader(root: &Path) -> Result<Index> {
        let dir = root.join(INDEX_DIR);
        let fields = Fields::new();
        let index = match Self::open_existing(root, &dir, &fields) {
            Ok(Some(index)) => index,
            Ok(None) => return Err(Error::Index(format!("no index at {}", dir.display()))),
            Err(why) => return Err(Error::IndexCause { message: why.to_string(), source: Box::new(why) }),
        };
        Self::reading(root, index, fields, false)
    }

    /// An opened tantivy index as a reader that never writes.
    fn reading(root: &Path, index: tantivy::Index, fields: Fields, read_only: bool) -> Result<Index> {
        index.tokenizers().register(analyzer::ANALYZER, analyzer::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
            .try_into()
            .map_err(tantivy_err)?;
        Ok(Index {
            root: root.to_path_buf(),
            index,
            fields,
            reader,
            writer: None,
            manifest: None,
            commits_off: items::CommitsOff::default(),
            rebuilt: None,
            read_only,
            norms: stats::Norms::default(),
            payload_cache: std::sync::Mutex::default(),
            vectors: meaning::VectorCache::default(),
        })
    }

    /// The existing index, None when there is none, or why it cannot be used.
    fn open_existing(
        root: &Path,
        dir: &Path,
        fields: &Fields,
    ) -> std::result::Result<Option<tantivy::Index>, Unusable> {
        if !store::exists(&dir.join("meta.json")) {
            return Ok(None);
        }
        let index = confined::Confined::open(root, dir).and_then(tantivy::Index::open).map_err(Unusable::Unopened)?;
        if index.schema() != fields.schema {
            return Err(Unusable::Schema);
        }
        let payload = read_payload(&index).map_err(Unusable::Payload)?;
        if payload.version != SCHEMA_VERSION && payload != Payload::default() {
            return Err(Unusable::Version(payload.version));
        }
        Ok(Some(index))
    }

    fn create(root: &Path, dir: &Path, fields: &Fields) -> Result<tantivy::Index> {
        let dir = confined::Confined::open(root, dir).map_err(tantivy_err)?;
        tantivy::Index::create(dir, fields.schema.clone(), tantivy::IndexSettings::default()).map_err(tantivy_err)
    }

    /// Whether the writer keeps its manifest in memory now.
    pub fn holds_manifest(&self) -> bool {
        self.manifest.is_some()
    }

    /// Drops the manifest kept in memory; the next sync reads it from the files.
    pub fn forget_manifest(&mut self) {
        self.manifest = None;
    }

    /// Whether this process holds the writer role.
    pub fn is_writer(&self) -> bool {
        self.writer.is_some()
    }

    /// Tries again to take the writer role (after the writer process went away).
    pub fn try_take_writer(&mut self) -> Result<bool> {
        if self.writer.is_none() && !self.read_only {
            match self.index.writer_with_num_threads(writer_threads(), WRITER_MEMORY) {
                Ok(w) => self.writer = Some(w),
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {}
                Err(e) => return Err(tantivy_err(e)),
            }
        }
        Ok(self.writer.is_some())
    }

    /// The committed segments that hold deleted documents (replaced or removed items).
    fn segments_with_deletes(&self) -> Result<Vec<SegmentId>> {
        let metas = self.index.searchable_segment_metas().map_err(tantivy_err)?;
        Ok(metas.iter().filter(|m| m.has_deletes()).map(|m| m.id()).collect())
    }

    /// Merges away the deleted documents of the committed segments, each segment on its
    /// own, without waiting: tantivy's merge threads commit each result when it is done.
    /// What a writer does once idle (docs/search-index.md#consistency): deleted documents still
    /// count in BM25's statistics (document frequencies, field lengths), so until they are
    /// merged away, scores differ from a clean rebuild's. A segment that a merge of the
    /// merge policy holds already is left to it (that merge drops its deleted documents
    /// too). Returns how many merges were started.
    pub fn start_merging_deletes(&mut self) -> Result<usize> {
        if self.writer.is_none() {
            return Ok(0);
        }
        let ids = self.segments_with_deletes()?;
        let Some(writer) = self.writer.as_mut() else { return Ok(0) };
        for id in &ids {
            let merge = writer.merge(std::slice::from_ref(id));
            // The merge goes on whoever waits; a thread waits to say how it ended.
            let spawned = std::thread::Builder::new().name("tmws-merge".into()).spawn(move || {
                if let Err(e) = merge.wait() {
                    tracing::debug!("a merge of deleted documents did not happen: {}", Chain(&e));
                }
            });
            if let Err(e) = spawned {
                tracing::debug!("cannot wait for a merge: {}", Chain(&e));
            }
        }
        Ok(ids.len())
    }

    /// Merges away the deleted documents of the committed segments and waits until that
    /// is committed: what `tmws index` does before it exits. When a merge of the merge
    /// policy holds one of them, the writer waits for every merge (which ends it), takes
    /// the role again and merges what is left. Returns how many segments were merged.
    pub fn merge_deletes(&mut self) -> Result<usize> {
        let mut merged = 0;
        for round in 0..2 {
            let ids = self.segments_with_deletes()?;
            let Some(writer) = self.writer.as_mut() else { break };
            if ids.is_empty() {
                break;
            }
            let merges: Vec<_> = ids.iter().map(|id| writer.merge(std::slice::from_ref(id))).collect();
            let done = merges.into_iter().map(|m| m.wait()).filter(Result::is_ok).count();
            merged += done;
            if done == ids.len() || round == 1 {
                break;
            }
            // Some were busy in the merge policy's merges: wait for those, then retry.
            if let Some(writer) = self.writer.take() {
                writer.wait_merging_threads().map_err(tantivy_err)?;
            }
            self.try_take_writer()?;
        }
        self.reader.reload().map_err(tantivy_err)?;
        Ok(merged)
    }

    /// Makes the latest commit (of this or another process) visible to searches.
    pub fn reload(&self) -> Result<()> {
        self.reader.reload().map_err(tantivy_err)
    }

    /// The payload of the latest commit. It is read again only when `meta.json` changed:
    /// a server's waiting queries ask for it every few milliseconds.
    pub fn payload(&self) -> Result<Payload> {
        let stamp = store::FileStamp::of(&self.root.join(INDEX_DIR).join("meta.json"));
        let mut cached = self.payload_cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Some(stamp), Some((seen, payload))) = (&stamp, cached.as_ref())
            && seen == stamp
        {
            return Ok(payload.clone());
        }
        let payload = read_payload(&self.index).map_err(tantivy_err)?;
        *cached = stamp.map(|s| (s, payload.clone()));
        Ok(payload)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the writer (this process or another) is applying changes it found: the
    /// index is behind the files until it commits.
    pub fn sync_pending(&self) -> bool {
        store::exists(&self.root.join(SYNCING_MARKER)) || self.logs_ahead()
    }

    /// What the index must have committed to be as fresh as the files are now: the
    /// commit after the one a writer is working on, and every complete line of the memory
    /// logs. A reader waits for this moment's state, not for an index that is never behind
    /// (under a steady stream of writes from other processes it always is).
    pub fn freshness_now(&self) -> Freshness {
        let payload = self.payload().unwrap_or_default();
        let mut logs = std::collections::BTreeMap::new();
        if let Ok(names) = store::list_dir(&self.root, &self.root.join(layout::MEMORY_DIR)) {
            for name in names.into_iter().filter(|n| n.ends_with(".jsonl")) {
                let rel = format!("{}/{name}", layout::MEMORY_DIR);
                let offset = payload.logs.get(&rel).map_or(0, |m| m.offset);
                if let Ok(tail) = store::read_from(&self.root, &self.root.join(&rel), offset, store::cap::LOG)
                    && let Some(last) = tail.iter().rposition(|b| *b == b'\n')
                {
                    logs.insert(rel, offset + last as u64 + 1);
                }
            }
        }
        Freshness { epoch: payload.epoch, syncing: store::exists(&self.root.join(SYNCING_MARKER)), logs }
    }

    /// Whether the latest commit holds everything `then` asked for.
    pub fn has_caught_up(&self, then: &Freshness) -> bool {
        let Ok(payload) = self.payload() else { return false };
        let syncing = then.syncing && payload.epoch <= then.epoch && store::exists(&self.root.join(SYNCING_MARKER));
        !syncing && then.logs.iter().all(|(rel, end)| payload.logs.get(rel).is_some_and(|m| m.offset >= *end))
    }

    /// Whether a memory log holds a complete line past what the last commit indexed: an
    /// entry another process just added that the writer has not applied yet.
    fn logs_ahead(&self) -> bool {
        let Ok(names) = store::list_dir(&self.root, &self.root.join(layout::MEMORY_DIR)) else { return false };
        let logs: Vec<String> = names.into_iter().filter(|n| n.ends_with(".jsonl")).collect();
        if logs.is_empty() {
            return false;
        }
        let marks = self.payload().map(|p| p.logs).unwrap_or_default();
        logs.iter().any(|name| {
            let rel = format!("{}/{name}", layout::MEMORY_DIR);
            let offset = marks.get(&rel).map_or(0, |m| m.offset);
            store::read_from(&self.root, &self.root.join(&rel), offset, store::cap::LOG)
                .is_ok_and(|tail| tail.contains(&b'\n'))
        })
    }
}

fn writer_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4)
}

fn read_payload(index: &tantivy::Index) -> tantivy::Result<Payload> {
    let metas = index.load_metas()?;
    Ok(metas.payload.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_that_open_a_new_root_at_once_all_get_the_index_and_one_writes() {
        for round in 0..30 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let start = std::sync::Barrier::new(6);
            // Each keeps its index open (a writer lets the lock go when dropped).
            let opened: Vec<Index> = std::thread::scope(|s| {
                let opens: Vec<_> = (0..6)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            Index::open(root)
                        })
                    })
                    .collect();
                opens.into_iter().map(|h| h.join().unwrap().unwrap_or_else(|e| panic!("round {round}: {e}"))).collect()
            });
            let writers: Vec<bool> = opened.iter().map(Index::is_writer).collect();
            assert_eq!(writers.iter().filter(|w| **w).count(), 1, "round {round}: {writers:?}");
            assert!(opened.iter().all(|i| i.rebuilt.is_none()), "round {round}: one saw another's index half made");
        }
    }

    #[test]
    fn an_index_that_cannot_be_opened_says_why_and_keeps_tantivys_error() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(INDEX_DIR)).unwrap();
        std::fs::write(root.join(INDEX_DIR).join("meta.json"), "not json").unwrap();
        let Err(e) = Index::open_reader(root) else { panic!("a corrupt index is refused") };
        assert_eq!(e.category(), crate::error::Category::Index);
        let why = e.source().expect("why");
        assert!(e.to_string().starts_with("index: it could not be opened (Data corrupted"), "{e}");
        assert!(matches!(why.downcast_ref::<Unusable>(), Some(Unusable::Unopened(_))), "{why:?}");
        assert!(why.source().and_then(|t| t.downcast_ref::<TantivyError>()).is_some());
        // A writer rebuilds it, and says why in the same words.
        let index = Index::open(root).unwrap();
        assert_eq!(index.rebuilt.as_deref(), Some(why.to_string().as_str()));
    }

    #[test]
    fn an_open_waits_while_another_process_is_opening() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let held = store::FileLock::exclusive(root, &root.join(INDEX_OPEN_LOCK)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| tx.send(Index::open(root).map(|i| i.is_writer())).unwrap());
            assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "opened while the lock was held");
            drop(held);
            assert!(rx.recv_timeout(std::time::Duration::from_secs(120)).unwrap().unwrap());
        });
    }
}

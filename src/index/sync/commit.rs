//! Ending a sync: one commit whose payload carries the schema version, the new epoch and
//! the logs' checkpoints; then the manifest with the same epoch, as a journal record of the
//! files this sync changed or, after a full sync or once the journal is long, whole; then
//! the syncing marker goes, also one left by a writer that died mid-sync.

use std::path::Path;

use tantivy::IndexWriter;

use super::super::manifest::{Cached, Change};
use super::super::{Payload, tantivy_err};
use super::plan::read_manifest;
use crate::error::{Chain, Result};
use crate::layout::{JOURNAL_FILE, MANIFEST_FILE};
use crate::store;

/// Commits the writer with `payload`; `written` is called once the segments are written
/// and the commit itself begins.
pub(super) fn commit(writer: &mut IndexWriter, payload: &Payload, written: impl FnOnce()) -> Result<()> {
    let mut prepared = writer.prepare_commit().map_err(tantivy_err)?;
    tracing::debug!("sync: segments written");
    written();
    prepared.set_payload(&serde_json::to_string(payload).unwrap_or_default());
    prepared.commit().map_err(tantivy_err)?;
    Ok(())
}

/// Writes the manifest after a sync: a journal record of `changes`, or the whole manifest
/// (after a full sync, or when the journal would grow past its share). A manifest read only
/// in part is first read whole. Returns it as it now is on disk.
pub(super) fn save_manifest(root: &Path, mut cached: Cached, changes: Vec<Change>, full: bool) -> Result<Cached> {
    if let Some(record) = cached.record(&changes).filter(|_| !full) {
        store::append_at(root, &root.join(JOURNAL_FILE), cached.journal_len, &record)?;
        cached.journal_len += record.len() as u64;
        return Ok(cached);
    }
    if cached.partial {
        // Written whole, it needs every entry: read them, then this sync's.
        let mut whole = read_manifest(root, None);
        for (rel, state) in changes {
            match state {
                Some(state) => whole.manifest.files.insert(rel, state),
                None => whole.manifest.files.remove(&rel),
            };
        }
        whole.manifest.version = cached.manifest.version;
        whole.manifest.epoch = cached.manifest.epoch;
        cached = whole;
    }
    let bytes = cached.manifest.to_bytes();
    store::write_atomic(root, &root.join(MANIFEST_FILE), &bytes)?;
    cached.rewritten(&bytes);
    // Its records extend the manifest just replaced: a replay would skip them, and the next
    // append would cut them off; drop them now.
    if let Err(e) = store::remove_file(&root.join(JOURNAL_FILE)) {
        tracing::debug!("{}", Chain(&e));
    }
    Ok(cached)
}

/// Removes the syncing marker: this sync's (`working`), or one a killed writer left (this
/// sync converged all the same).
pub(super) fn clear_marker(marker: &Path, working: bool) -> Result<()> {
    if (working || store::exists(marker))
        && let Err(e) = store::remove_file(marker)
        && store::exists(marker)
    {
        return Err(e);
    }
    Ok(())
}

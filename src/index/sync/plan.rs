//! What a sync must do: where it starts from (the manifest, the last commit's payload,
//! whether everything must be indexed again), which files it looks at (a scan that stats
//! and reads nothing) and what changed (one merge of two sorted lists).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use super::super::manifest::{self, Cached, FileState, Manifest, under};
use super::super::{Payload, SCHEMA_VERSION, read_payload, tantivy_err};
use crate::error::Result;
use crate::layout::{self, Includes, JOURNAL_FILE, MANIFEST_FILE};
use crate::store::{self, Scanned};

/// Where a sync starts from.
pub(super) struct Start {
    /// The manifest as read (or kept), its entries taken out into `manifest`.
    pub cached: Cached,
    pub manifest: Manifest,
    /// What the last commit recorded.
    pub payload: Payload,
    /// Everything is indexed again: asked for, or the index and the manifest disagree.
    pub full: bool,
    /// There was no index at all: a full sync that is not a rebuild.
    pub first_build: bool,
}

/// The writer's manifest (kept between syncs, or read for `targets`) against the last
/// commit: a mismatch of epoch or version means the index must be built again.
pub(super) fn start(
    root: &Path,
    index: &tantivy::Index,
    kept: Option<Cached>,
    rebuild: bool,
    targets: Option<&[String]>,
) -> Result<Start> {
    let mut cached = kept.unwrap_or_else(|| read_manifest(root, targets));
    let manifest = std::mem::take(&mut cached.manifest);
    let payload = read_payload(index).map_err(tantivy_err)?;
    let first_build = manifest == Manifest::default() && payload == Payload::default();
    let full = rebuild || manifest.epoch != payload.epoch || manifest.version != SCHEMA_VERSION;
    Ok(Start { cached, manifest, payload, full, first_build })
}

/// Stats every indexed file below `targets` (or the whole layout and the includes).
pub(super) fn scan(root: &Path, includes: &Includes, targets: Option<&[String]>) -> Vec<Scanned> {
    let starts: Vec<std::path::PathBuf> = match targets {
        Some(ts) => ts.iter().map(|t| root.join(t)).collect(),
        None => layout::index_starts(includes).iter().map(|s| root.join(s)).collect(),
    };
    store::scan(root, &starts, |rel| layout::is_indexed(rel, includes))
}

/// What changed between the manifest and a scan.
pub(super) struct Diff<'s> {
    /// Files the manifest has and the scan did not find (below the targets).
    pub vanished: Vec<String>,
    /// Files whose size or mtime is not the manifest's, or that it does not have.
    pub to_read: Vec<&'s Scanned>,
}

/// Both lists are sorted by path: one merge finds what vanished and what changed.
pub(super) fn diff<'s>(
    scanned: &'s [Scanned],
    known: &BTreeMap<String, FileState>,
    targets: Option<&[String]>,
) -> Diff<'s> {
    let under_targets = |k: &str| targets.is_none_or(|ts| under(k, ts));
    let mut vanished: Vec<String> = Vec::new();
    let mut to_read: Vec<&Scanned> = Vec::new();
    let mut known = known.iter().peekable();
    for s in scanned {
        while let Some((k, _)) = known.next_if(|(k, _)| k.as_str() < s.rel.as_str()) {
            if under_targets(k) {
                vanished.push(k.clone());
            }
        }
        match known.next_if(|(k, _)| k.as_str() == s.rel.as_str()) {
            Some((_, m)) if m.size == s.size && m.mtime == s.mtime => {}
            _ => to_read.push(s),
        }
    }
    vanished.extend(known.filter(|(k, _)| under_targets(k)).map(|(k, _)| k.clone()));
    Diff { vanished, to_read }
}

/// The manifest as the files have it: the manifest file with its journal replayed; only
/// the entries at or below `targets` when there are some (then only the blocks of the
/// manifest that can hold them are read).
pub(super) fn read_manifest(root: &Path, targets: Option<&[String]>) -> Cached {
    let journal = store::read_opt(root, &root.join(JOURNAL_FILE), store::cap::LOG).ok().flatten().unwrap_or_default();
    let path = root.join(MANIFEST_FILE);
    let file = match targets {
        Some(_) => store::FileAt::open_opt(root, &path).ok().flatten(),
        None => None,
    };
    match file {
        Some(file) => Cached::read_some(&file, &journal, targets),
        None => {
            let bytes =
                if targets.is_none() { store::read_opt(root, &path, store::cap::LOG).ok().flatten() } else { None };
            Cached::read_some(bytes.unwrap_or_default().as_slice(), &journal, targets)
        }
    }
}

impl manifest::Source for store::FileAt {
    fn size(&self) -> usize {
        usize::try_from(self.len()).unwrap_or(usize::MAX)
    }

    fn bytes_at(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        self.read_at(at as u64, len).ok().map(Cow::Owned)
    }
}

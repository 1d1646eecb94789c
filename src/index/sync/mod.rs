//! Sync: converge the index to the files (docs/search-index.md), in four steps.
//!
//! `plan`: a scan stats the canonical folders (and the configured extra folders) without
//! reading anything, and one merge with the manifest finds what vanished and what changed
//! (size or mtime). `read`: only those files are read, on several threads, and only those
//! whose blake3 differs are parsed again. `apply`: their items replace the old ones in the
//! writer, vanished files' items go. `commit`: all of it goes into one commit, after which
//! the manifest is written with the commit's epoch: whole after a full sync, else as a
//! journal record of the files this sync changed.

mod apply;
mod commit;
mod commits;
mod plan;
mod read;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use serde::Serialize;

use self::apply::Apply;
use super::manifest::Change;
use super::{Index, Payload, SCHEMA_VERSION, tantivy_err};
use crate::config::Config;
use crate::error::{Chain, Result};
use crate::layout::{self, Includes};
use crate::model::Diagnostic;
use crate::store;

/// How to sync.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Drop everything and index all files again.
    pub rebuild: bool,
    /// Where the sync is, for a progress display.
    pub progress: Option<Arc<SyncProgress>>,
}

/// The steps of a sync, in order, as a progress display names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPhase {
    /// Finding the files and what changed (stats only).
    Scan,
    /// Reading and parsing the changed files: `done` of `total`.
    Parse,
    /// Writing the index's segments.
    Write,
    /// Committing them, then the manifest.
    Commit,
}

impl SyncPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncPhase::Scan => "scan",
            SyncPhase::Parse => "parse",
            SyncPhase::Write => "write",
            SyncPhase::Commit => "commit",
        }
    }
}

/// Where a running sync is, updated by the sync and read by whoever shows it (on another
/// thread): the phase, and in `Parse` how many of the files to read are done.
#[derive(Debug, Default)]
pub struct SyncProgress {
    phase: AtomicU8,
    done: AtomicUsize,
    total: AtomicUsize,
}

impl SyncProgress {
    pub fn phase(&self) -> SyncPhase {
        match self.phase.load(Ordering::Relaxed) {
            0 => SyncPhase::Scan,
            1 => SyncPhase::Parse,
            2 => SyncPhase::Write,
            _ => SyncPhase::Commit,
        }
    }

    /// Files read in `Parse` so far.
    pub fn done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }

    /// Files `Parse` reads in all.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn enter(&self, phase: SyncPhase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }
}

/// Moves `progress`, if any, to `phase`.
fn enter(progress: Option<&Arc<SyncProgress>>, phase: SyncPhase) {
    if let Some(p) = progress {
        p.enter(phase);
    }
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SyncReport {
    /// Files indexed for the first time.
    pub new: usize,
    /// Files whose content changed.
    pub changed: usize,
    /// Files that vanished.
    pub removed: usize,
    /// Files seen in all.
    pub files: usize,
    /// Items in the index after the sync.
    pub items: u64,
    pub millis: u64,
    /// Whether everything was indexed again (asked for, or the index did not match the
    /// manifest).
    pub rebuilt: bool,
    /// Whether another process holds the writer role, so nothing was written here.
    pub reader_only: bool,
    /// The process that made this sync when it was asked of the one that keeps the index
    /// (`tmws index` beside a running `tmws mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_pid: Option<u32>,
    /// Whether the indexed git history changed (HEAD moved).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub commits_moved: bool,
    /// The git HEAD whose history the index now holds.
    #[serde(skip)]
    pub head: Option<String>,
    /// Each file applied: (path, `new` | `changed` | `removed`).
    #[serde(skip)]
    pub changes: Vec<(String, &'static str)>,
    /// Syntax problems of the files read (they are indexed anyway).
    #[serde(skip)]
    pub problems: Vec<Diagnostic>,
}

impl Index {
    /// Whether the manifest of the last sync records the file at `rel` (root-relative) as
    /// it is on disk now, the same size and modification time, or both say it is not
    /// there: whether an answer from the file's items may be behind it. Only the manifest's
    /// blocks that can hold `rel` are read.
    pub fn holds_as_now(&self, rel: &str) -> bool {
        let targets = [rel.to_owned()];
        let cached = plan::read_manifest(&self.root, Some(&targets));
        let known = cached.manifest.files.get(rel);
        let now = store::scan(&self.root, &[self.root.join(rel)], |r| r == rel);
        match (known, now.iter().find(|s| s.rel == rel)) {
            (None, None) => true,
            (Some(k), Some(s)) => k.size == s.size && k.mtime == s.mtime,
            _ => false,
        }
    }

    /// Converges the index to the files. A reader (another process writes) does nothing.
    pub fn sync(&mut self, config: &Config, opts: &SyncOptions) -> Result<SyncReport> {
        self.sync_paths(config, opts, None)
    }

    /// Converges the index for `targets` only (root-relative files or folders, which may
    /// have vanished): what the watcher calls with the paths of a batch of events. `None`
    /// means the whole root. A manifest that does not match the index widens it to all.
    pub fn sync_paths(
        &mut self,
        config: &Config,
        opts: &SyncOptions,
        targets: Option<&[String]>,
    ) -> Result<SyncReport> {
        let started = Instant::now();
        let mut report = SyncReport::default();
        let Some(writer) = self.writer.as_mut() else {
            report.reader_only = true;
            self.reader.reload().map_err(tantivy_err)?;
            report.items = self.reader.searcher().num_docs();
            return Ok(report);
        };
        let includes = Includes::new(&config.index.include)?;
        let model = super::meaning::makers_for(&self.root, config);
        self.fields.model = model;

        // The writer keeps its manifest between syncs (no other process writes it while
        // this one holds the writer lock); a sync that fails leaves none, so the next one
        // reads the files again. A batch of a few paths reads only their entries.
        let plan::Start { mut cached, mut manifest, payload, full, first_build } =
            plan::start(&self.root, &self.index, self.manifest.take(), opts.rebuild, targets)?;
        let mut logs = payload.logs.clone();
        let mut proposals = payload.proposals.clone();
        // Vectors of another model (or none, or some where none are wanted) are replaced
        // by indexing everything again.
        let fingerprint = model.map(|m| m.fingerprint());
        let full = full || payload.model != fingerprint;
        let targets = if full { None } else { targets };
        if full {
            cached.partial = false;
            writer.delete_all_documents().map_err(tantivy_err)?;
            manifest.files.clear();
            logs.clear();
            proposals.clear();
            report.rebuilt = !first_build;
        }
        let progress = opts.progress.as_ref();
        enter(progress, SyncPhase::Scan);
        let scanned = plan::scan(&self.root, &includes, targets);
        report.files = scanned.len();
        tracing::debug!(files = scanned.len(), ms = started.elapsed().as_millis(), "sync: scanned");
        let plan::Diff { vanished, to_read } = plan::diff(&scanned, &manifest.files, targets);
        if to_read.len() >= crate::sys::LARGE_SYNC {
            crate::sys::lean();
        }

        let marker = self.root.join(layout::SYNCING_MARKER);
        let working = full || !vanished.is_empty() || !to_read.is_empty();
        if working {
            store::write_marker(&self.root, &marker, std::process::id().to_string().as_bytes())?;
        }
        let mut changes: Vec<Change> = Vec::new();
        let marks = logs.clone();
        let mut apply = Apply {
            writer,
            fields: &self.fields,
            full,
            report: &mut report,
            logs: &mut logs,
            proposals: &mut proposals,
            dirty: false,
            applied: Vec::new(),
            pending: apply::Pending::default(),
        };
        for rel in &vanished {
            if apply.vanished(rel, &mut manifest) {
                changes.push((rel.clone(), None));
            }
        }
        if let Some(p) = progress {
            p.total.store(to_read.len(), Ordering::Relaxed);
            p.enter(SyncPhase::Parse);
        }
        read::read_all(&self.root, &to_read, &includes, &manifest.files, &marks, &self.fields, |r| {
            if let Some(p) = progress {
                p.done.fetch_add(1, Ordering::Relaxed);
            }
            match r {
                Ok(read) => {
                    let old = manifest.files.get(&read.rel);
                    apply.read(read, old)
                }
                // A file that vanished between the scan and the read is picked up by the
                // next sync; one that cannot be read is logged and skipped.
                Err(e) => {
                    tracing::warn!("{}", Chain(&e));
                    Ok(())
                }
            }
        })?;
        apply.flush()?;
        tracing::debug!(read = to_read.len(), ms = started.elapsed().as_millis(), "sync: applied");
        let Apply { writer, dirty, applied, .. } = apply;
        let touched = !applied.is_empty();
        for (rel, state) in applied {
            if !full {
                changes.push((rel.clone(), Some(state.clone())));
            }
            manifest.files.insert(rel, state);
        }
        let (head, moved) = commits::sync(&self.root, writer, &self.fields, payload.head.as_deref(), full);
        report.commits_moved = moved;
        report.head.clone_from(&head);
        if dirty || full || moved {
            let payload = Payload {
                version: SCHEMA_VERSION,
                epoch: payload.epoch + 1,
                logs,
                head,
                model: fingerprint,
                proposals,
            };
            enter(progress, SyncPhase::Write);
            commit::commit(writer, &payload, || enter(progress, SyncPhase::Commit))?;
            tracing::debug!(ms = started.elapsed().as_millis(), "sync: committed");
            manifest.epoch = payload.epoch;
        }
        cached.manifest = manifest;
        enter(progress, SyncPhase::Commit);
        if dirty || full || touched {
            cached.manifest.version = SCHEMA_VERSION;
            cached = commit::save_manifest(&self.root, cached, changes, full)?;
        }
        commit::clear_marker(&marker, working)?;
        self.manifest = (!cached.partial).then_some(cached);
        self.reader.reload().map_err(tantivy_err)?;
        report.items = self.reader.searcher().num_docs();
        tracing::debug!(ms = started.elapsed().as_millis(), "sync: reader reloaded");
        report.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::manifest::Manifest;
    use crate::layout::JOURNAL_FILE;

    #[test]
    fn a_batch_reads_only_its_entries_and_still_writes_the_manifest_whole_when_due() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let plans = root.join("resources/workspaces/w/_plans");
        std::fs::create_dir_all(&plans).unwrap();
        for n in 1..=5 {
            std::fs::write(plans.join(format!("26010{n}-p.md")), format!("---\nname: plan {n}\n---\nword{n}\n"))
                .unwrap();
        }
        let config = Config::default();
        let mut index = Index::open(root).unwrap();
        assert_eq!(index.sync(&config, &SyncOptions::default()).unwrap().new, 5);
        index.forget_manifest();
        let rel = |n: u32| format!("resources/workspaces/w/_plans/26010{n}-p.md");

        // A batch of one path: the journal gets one record, and no manifest is kept.
        std::fs::write(plans.join("260101-p.md"), "---\nname: plan one\n---\nchanged\n").unwrap();
        let r = index.sync_paths(&config, &SyncOptions::default(), Some(&[rel(1)])).unwrap();
        assert_eq!((r.new, r.changed, r.removed), (0, 1, 0));
        assert!(!index.holds_manifest());
        let whole = plan::read_manifest(root, None);
        assert_eq!(whole.manifest.files.len(), 5);
        assert!(whole.journal_len > 0);

        // Fill the journal past its limit with records that leave the manifest as it is.
        let base = whole.base.unwrap();
        let mut filler = Vec::new();
        let (v, e) = (whole.manifest.version, whole.manifest.epoch);
        while filler.len() < 300 << 10 {
            let keep = (rel(2), whole.manifest.files.get(&rel(2)).cloned());
            filler.extend(Manifest::journal_bytes(&base, v, e, &[keep]));
        }
        store::append_at(root, &root.join(JOURNAL_FILE), whole.journal_len, &filler).unwrap();

        // The next batch is due to write the manifest whole: from every entry, not just
        // the one it read.
        std::fs::remove_file(plans.join("260103-p.md")).unwrap();
        let r = index.sync_paths(&config, &SyncOptions::default(), Some(&[rel(3)])).unwrap();
        assert_eq!((r.new, r.changed, r.removed), (0, 0, 1));
        assert!(!store::exists(&root.join(JOURNAL_FILE)));
        let after = plan::read_manifest(root, None);
        assert_eq!(after.journal_len, 0);
        let paths: Vec<&String> = after.manifest.files.keys().collect();
        assert_eq!(paths, [&rel(1), &rel(2), &rel(4), &rel(5)]);
        assert_eq!(after.manifest.files[&rel(1)], whole.manifest.files[&rel(1)]);
        // And a new process agrees: nothing to do.
        drop(index);
        let mut index = Index::open(root).unwrap();
        let r = index.sync(&config, &SyncOptions::default()).unwrap();
        assert_eq!((r.new, r.changed, r.removed, r.rebuilt), (0, 0, 0, false));
    }

    #[test]
    fn a_log_is_read_on_from_the_checkpoint_in_the_commit_payload() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(".tmws/memory/long-term.jsonl");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let line = |id: &str, word: &str| {
            format!(
                "{{\"op\":\"add\",\"id\":\"{id}\",\"at\":\"2026-11-22T10:00:0{}Z\",\"content\":\"{word} {}\"}}\n",
                &id[2..],
                "pad ".repeat(80)
            )
        };
        let first = format!("{}{}", line("m_1", "alpha"), line("m_2", "bravo"));
        std::fs::write(&log, format!("{first}{{\"op\":\"add\"")).unwrap();
        let config = Config::default();
        let mut index = Index::open(dir.path()).unwrap();
        index.sync(&config, &SyncOptions::default()).unwrap();
        let mark = index.payload().unwrap().logs[".tmws/memory/long-term.jsonl"].clone();
        assert_eq!(mark.offset, first.len() as u64, "the torn line is not consumed");

        // Rewrite the first line in place, well before the checked window, and append: only
        // the new line is read, which shows the read started at the checkpoint.
        let edited = first.replacen("alpha", "ALPHX", 1);
        std::fs::write(&log, format!("{edited}\n{}", line("m_3", "charlie"))).unwrap();
        let report = index.sync(&config, &SyncOptions::default()).unwrap();
        assert_eq!((report.changed, report.items), (1, 3));
        let find = |index: &Index, q: &str| {
            let req = super::super::TextQuery { query: q.into(), limit: 5, ..Default::default() };
            index.search(&req).unwrap().results.into_iter().map(|h| h.ref_id).collect::<Vec<_>>()
        };
        assert_eq!(find(&index, "charlie"), ["m_3"]);
        assert_eq!(find(&index, "alpha"), ["m_1"]);
        // A rebuild reads everything again.
        index.sync(&config, &SyncOptions { rebuild: true, ..SyncOptions::default() }).unwrap();
        // (Quoted: a word that matches nothing would be searched as `alphx`, one edit away.)
        assert!(find(&index, "\"alpha\"").is_empty());
        assert_eq!(find(&index, "alphx"), ["m_1"]);
    }
}

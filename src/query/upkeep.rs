//! Upkeep without a person (docs/memory-log.md#upkeep): inside `tmws watch`, `mcp` and `serve`,
//! every `upkeep.every_secs` (a day) once no request came for `upkeep.idle_secs`: expired entries
//! are compacted away (`memory cleanup`), entries below `memory.prune_below` are pruned (when set),
//! and short-term entries of branches that are gone unmerged are deleted (`memory gc-branches`), in
//! the logs git does not track: a tracked log changes only by a command someone gave, never by
//! itself. What the last run did, and when, is kept in `.tmws/cache/upkeep.json` (this machine's;
//! never tracked), which `memory stats` and `/metrics` show and which keeps several processes of
//! one root from running it twice in a period.

use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::memory::maint;
use crate::config::Config;
use crate::error::Result;
use crate::layout;
use crate::store;

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UpkeepRun {
    /// When it ran, RFC 3339 UTC.
    pub at: String,
    pub removed_expired: usize,
    pub compacted_bytes: u64,
    pub pruned: usize,
    pub gc_removed: usize,
    /// The namespaces whose logs git tracks, which the upkeep leaves as they are: a
    /// tracked file changes only by a person's or an agent's command (`memory cleanup`,
    /// `prune`, `gc-branches`), never by itself while nobody looks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_tracked: Vec<String>,
    /// What failed, if anything did (the run goes on with the next task).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The last run, as `.tmws/cache/upkeep.json` says.
pub fn last(root: &Path) -> Option<UpkeepRun> {
    let bytes = store::read_opt(root, &root.join(layout::UPKEEP_FILE), 64 << 10).ok().flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// When the upkeep last ran.
pub fn last_run(root: &Path) -> Option<DateTime<Utc>> {
    last(root).and_then(|r| DateTime::parse_from_rfc3339(&r.at).ok()).map(|t| t.with_timezone(&Utc))
}

/// Whether a run is due at `now`.
pub fn due(root: &Path, config: &Config, now: DateTime<Utc>) -> bool {
    let every = config.upkeep.every_secs;
    if every == 0 {
        return false;
    }
    let every = i64::try_from(every).unwrap_or(i64::MAX);
    // A run recorded in the future was made under a clock set ahead: it says nothing of
    // when the next is due (trusting it would stop the upkeep until that day comes).
    last_run(root).is_none_or(|at| {
        let since = (now - at).num_seconds();
        since >= every || since < -60
    })
}

/// Runs the upkeep now and records it.
pub fn run(root: &Path, config: &Config, now: DateTime<Utc>) -> Result<UpkeepRun> {
    let mut done = UpkeepRun { at: now.to_rfc3339_opts(SecondsFormat::Secs, true), ..UpkeepRun::default() };
    let tracked = super::memory::tracked_namespaces(root);
    done.left_tracked = tracked.iter().cloned().collect();
    match maint::cleanup(root, config, &tracked, maint::Clock::Unattended(now)) {
        Ok(c) => (done.removed_expired, done.compacted_bytes) = (c.removed_expired, c.compacted_bytes),
        Err(e) => done.errors.push(format!("cleanup: {e}")),
    }
    if let Some(below) = config.memory.prune_below {
        match maint::prune(root, config, below, now, &tracked, &crate::memory::op::Author::upkeep()) {
            Ok(p) => done.pruned = p.pruned,
            Err(e) => done.errors.push(format!("prune: {e}")),
        }
    }
    match maint::gc_branches(root, config, &tracked, &crate::memory::op::Author::upkeep()) {
        Ok(g) => done.gc_removed = g.removed,
        Err(e) => done.errors.push(format!("gc-branches: {e}")),
    }
    let text = serde_json::to_vec_pretty(&done).unwrap_or_default();
    store::create_dir_all(&root.join(layout::CACHE_DIR))?;
    store::write_atomic(root, &root.join(layout::UPKEEP_FILE), &text)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_recorded_in_the_future_does_not_stop_the_upkeep() {
        let root = tempfile::tempdir().unwrap();
        let config = Config::default();
        let now = Utc::now();
        let record = |at: DateTime<Utc>| {
            let run = UpkeepRun { at: at.to_rfc3339_opts(SecondsFormat::Secs, true), ..UpkeepRun::default() };
            let path = root.path().join(layout::UPKEEP_FILE);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, serde_json::to_vec(&run).unwrap()).unwrap();
        };
        assert!(due(root.path(), &config, now), "never ran");
        record(now - chrono::Duration::minutes(5));
        assert!(!due(root.path(), &config, now), "ran five minutes ago");
        record(now + chrono::Duration::days(365));
        assert!(due(root.path(), &config, now), "a record from a clock a year ahead");
    }
}

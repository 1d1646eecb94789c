//! The manifest: what was indexed from which file, so a sync re-reads only what changed.
//!
//! Derived state under `.tmws/cache/`. Its `epoch` must equal the index commit's; when it
//! does not (a crash between the commit and the manifest write, a deleted file), the next
//! sync rebuilds from the files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The manifest's path, relative to the root.
pub const MANIFEST_PATH: &str = ".tmws/cache/manifest.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub epoch: u64,
    /// By root-relative path.
    pub files: BTreeMap<String, FileState>,
}

/// What a file was when it was last indexed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime: u64,
    /// blake3 of the content, hex.
    pub hash: String,
    /// The refIds of the items made from the file, when they are not just its path (the
    /// common case is left out to keep the manifest small).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
}

impl FileState {
    /// The refIds of the items made from the file at `rel`.
    pub fn refs_of<'a>(&'a self, rel: &'a str) -> Vec<&'a str> {
        if self.refs.is_empty() { vec![rel] } else { self.refs.iter().map(String::as_str).collect() }
    }

    /// Records the refIds made from the file at `rel`.
    pub fn set_refs(&mut self, rel: &str, refs: Vec<String>) {
        self.refs = if refs.len() == 1 && refs[0] == rel { Vec::new() } else { refs };
    }
}

impl Manifest {
    /// Parses a manifest; anything unreadable is an empty one (the index is then rebuilt).
    pub fn from_json(text: &str) -> Manifest {
        serde_json::from_str(text).unwrap_or_default()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

//! The manifest: what was indexed from which file, so a sync re-reads only what changed.
//!
//! Derived state under `.tmws/cache/`. Its `epoch` must equal the index commit's; when it
//! does not (a crash between the commit and the manifest write, a deleted file), the next
//! sync rebuilds from the files.
//!
//! Every sync reads it whole, so it is a compact binary file rather than JSON (parsing
//! 100k JSON entries alone took a quarter of the no-op sync budget): a magic, the version
//! and epoch, the entries in path order, and a blake3 of all of it at the end. A file that
//! is cut short, altered or of another format reads as an empty manifest.

use std::collections::BTreeMap;

/// The manifest's path, relative to the root.
pub const MANIFEST_PATH: &str = ".tmws/cache/manifest.bin";

const MAGIC: &[u8; 8] = b"TMWSMAN1";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub version: u32,
    pub epoch: u64,
    /// By root-relative path.
    pub files: BTreeMap<String, FileState>,
}

/// What a file was when it was last indexed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileState {
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime: u64,
    /// blake3 of the content.
    pub hash: [u8; 32],
    /// The refIds of the items made from the file, when they are not just its path (the
    /// common case is left out to keep the manifest small).
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
    pub fn from_bytes(bytes: &[u8]) -> Manifest {
        Self::decode(bytes).unwrap_or_default()
    }

    fn decode(bytes: &[u8]) -> Option<Manifest> {
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        if blake3::hash(body).as_bytes() != sum {
            return None;
        }
        let mut r = Reader(body);
        if r.take(8)? != MAGIC {
            return None;
        }
        let version = r.u32()?;
        let epoch = r.u64()?;
        let count = r.u64()?;
        let mut entries = Vec::with_capacity(usize::try_from(count).ok()?.min(body.len() / 52));
        for _ in 0..count {
            let rel = r.string()?;
            let size = r.u64()?;
            let mtime = r.u64()?;
            let hash: [u8; 32] = r.take(32)?.try_into().ok()?;
            let n = r.u32()?;
            let refs = (0..n).map(|_| r.string()).collect::<Option<Vec<_>>>()?;
            entries.push((rel, FileState { size, mtime, hash, refs }));
        }
        if !r.0.is_empty() {
            return None;
        }
        // Written in path order, so this is a bulk build, not 100k inserts.
        Some(Manifest { version, epoch, files: entries.into_iter().collect() })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(28 + self.files.len() * 128);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        let put_str = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        for (rel, f) in &self.files {
            put_str(&mut out, rel);
            out.extend_from_slice(&f.size.to_le_bytes());
            out.extend_from_slice(&f.mtime.to_le_bytes());
            out.extend_from_slice(&f.hash);
            out.extend_from_slice(&u32::try_from(f.refs.len()).unwrap_or(u32::MAX).to_le_bytes());
            for r in &f.refs {
                put_str(&mut out, r);
            }
        }
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }
}

/// A cursor over the bytes of a manifest.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.u32()?).ok()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest { version: 3, epoch: 42, files: BTreeMap::new() };
        m.files.insert("a/OVERVIEW.md".into(), FileState { size: 10, mtime: 7, hash: [1; 32], refs: Vec::new() });
        m.files.insert(
            ".tmws/skills.yaml".into(),
            FileState { size: 99, mtime: 8, hash: [2; 32], refs: vec!["x#a".into(), "x#b".into()] },
        );
        m
    }

    #[test]
    fn round_trips() {
        let m = sample();
        assert_eq!(Manifest::from_bytes(&m.to_bytes()), m);
        assert_eq!(Manifest::from_bytes(&Manifest::default().to_bytes()), Manifest::default());
    }

    #[test]
    fn anything_damaged_reads_as_empty() {
        let bytes = sample().to_bytes();
        for cut in [0, 1, 8, 30, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(Manifest::from_bytes(&bytes[..cut]), Manifest::default(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        assert_eq!(Manifest::from_bytes(&flipped), Manifest::default());
        assert_eq!(Manifest::from_bytes(br#"{"version":3,"epoch":1,"files":{}}"#), Manifest::default());
    }
}

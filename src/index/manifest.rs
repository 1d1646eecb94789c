//! The manifest: what was indexed from which file, so a sync re-reads only what changed.
//!
//! Derived state under `.tmws/cache/`. Its `epoch` must equal the index commit's; when it
//! does not (a crash between the commit and the manifest write, a deleted file), the next
//! sync rebuilds from the files.
//!
//! A no-op sync reads it whole, so it is a compact binary file rather than JSON (parsing
//! 100k JSON entries alone took a quarter of the no-op sync budget): a header (magic,
//! version, epoch, entry count), the entries in path order cut into blocks of ~32 KiB, an
//! index of the blocks (first path, offset, length, entry count and blake3 of each), and a
//! footer naming where the index is, ending with a blake3 of the header, the index and the
//! footer. That checksum covers every entry through the blocks' own, so it names the
//! manifest; and a watcher's batch of a few paths reads the header, the index and only the
//! blocks that can hold its paths (a few KiB of 12 MB at 100k files). A file that is cut
//! short, altered or of another format reads as an empty manifest.
//!
//! Rewriting 100k entries after every saved file would cost a watcher more than its whole
//! budget, so a sync that changed a few files appends a record of just those to a journal
//! beside it (`manifest.log`) instead. Each record names the checksum of the manifest it
//! extends and carries its own: a record of another manifest (left over from before the
//! manifest was rewritten) or a torn one ends the replay, and the next append truncates
//! there. The manifest is rewritten, and the journal dropped, by a full sync or once the
//! journal has grown to an eighth of it.

use std::borrow::Cow;
use std::collections::BTreeMap;

const MAGIC: &[u8; 8] = b"TMWSMAN2";
/// Magic, version, epoch, entry count.
const HEADER_LEN: usize = 8 + 4 + 8 + 8;
/// The index's offset and length, the checksum.
const FOOTER_LEN: usize = 8 + 8 + 32;
/// A block is closed once its entries reach this many bytes.
const BLOCK_BYTES: usize = 32 << 10;
const JOURNAL_MAGIC: &[u8; 8] = b"TMWSMJ01";

/// One file's change in a journal record: its new state, or None when it went away.
pub type Change = (String, Option<FileState>);

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

/// Where a manifest's bytes come from: all of them in memory, or a file read in pieces.
pub trait Source {
    /// The length in bytes.
    fn size(&self) -> usize;
    /// `len` bytes from `at`, or None when they cannot be read.
    fn bytes_at(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>>;
}

impl Source for [u8] {
    fn size(&self) -> usize {
        self.len()
    }

    fn bytes_at(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
        self.get(at..at.checked_add(len)?).map(Cow::Borrowed)
    }
}

/// A block of entries as the manifest's index describes it.
struct Block<'a> {
    first: &'a str,
    offset: usize,
    len: usize,
    count: usize,
    hash: &'a [u8],
}

/// Whether root-relative `k` is one of `targets` or below one of them.
pub fn under(k: &str, targets: &[String]) -> bool {
    targets.iter().any(|t| k == t || (k.starts_with(t.as_str()) && k.as_bytes().get(t.len()) == Some(&b'/')))
}

/// The blocks that can hold a path at or below one of `targets`, in order.
fn blocks_under(blocks: &[Block], targets: &[String]) -> Vec<usize> {
    let mut wanted = vec![false; blocks.len()];
    for t in targets {
        // `0` follows `/`: `t` and every path below it sort before `t0`. Block i holds the
        // paths from its first to the next block's first.
        let end = format!("{t}0");
        let lo = blocks.partition_point(|b| b.first <= t.as_str()).saturating_sub(1);
        let hi = blocks.partition_point(|b| b.first < end.as_str());
        for w in wanted.iter_mut().take(hi).skip(lo) {
            *w = true;
        }
    }
    wanted.iter().enumerate().filter(|(_, w)| **w).map(|(i, _)| i).collect()
}

impl Manifest {
    /// Parses a manifest; anything unreadable is an empty one (the index is then rebuilt).
    #[cfg(test)]
    pub fn from_bytes(bytes: &[u8]) -> Manifest {
        Self::from_bytes_with_checksum(bytes).0
    }

    /// Parses a manifest and gives its checksum, what the journal's records name as their
    /// base; an empty manifest and None when it does not parse.
    #[cfg(test)]
    pub fn from_bytes_with_checksum(bytes: &[u8]) -> (Manifest, Option<[u8; 32]>) {
        Self::read_from(bytes, None)
    }

    /// The same from `source`, with only the entries at or below `targets` when there are
    /// some: then only the header, the index and the blocks that can hold them are read.
    pub fn read_from(source: &(impl Source + ?Sized), targets: Option<&[String]>) -> (Manifest, Option<[u8; 32]>) {
        match Self::decode(source, targets) {
            Some((m, sum)) => (m, Some(sum)),
            None => (Manifest::default(), None),
        }
    }

    fn decode(source: &(impl Source + ?Sized), targets: Option<&[String]>) -> Option<(Manifest, [u8; 32])> {
        let size = source.size();
        let footer = source.bytes_at(size.checked_sub(FOOTER_LEN)?, FOOTER_LEN)?;
        let mut r = Reader(&footer);
        let index_at = usize::try_from(r.u64()?).ok()?;
        let index_len = usize::try_from(r.u64()?).ok()?;
        let sum: [u8; 32] = r.take(32)?.try_into().ok()?;
        if index_at < HEADER_LEN || index_at.checked_add(index_len)?.checked_add(FOOTER_LEN)? != size {
            return None;
        }
        let header = source.bytes_at(0, HEADER_LEN)?;
        let index = source.bytes_at(index_at, index_len)?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(&header);
        hasher.update(&index);
        hasher.update(&footer[..16]);
        if hasher.finalize().as_bytes() != &sum {
            return None;
        }
        let mut r = Reader(&header);
        if r.take(8)? != MAGIC {
            return None;
        }
        let version = r.u32()?;
        let epoch = r.u64()?;
        let count = usize::try_from(r.u64()?).ok()?;

        let mut blocks: Vec<Block> = Vec::new();
        let (mut r, mut at, mut total) = (Reader(&index), HEADER_LEN, 0usize);
        while !r.0.is_empty() {
            let block = Block {
                first: r.str()?,
                offset: usize::try_from(r.u64()?).ok()?,
                len: usize::try_from(r.u32()?).ok()?,
                count: usize::try_from(r.u32()?).ok()?,
                hash: r.take(32)?,
            };
            // Back to back from the header to the index, in path order.
            if block.offset != at || blocks.last().is_some_and(|b| b.first >= block.first) {
                return None;
            }
            at = block.offset.checked_add(block.len)?;
            total = total.checked_add(block.count)?;
            blocks.push(block);
        }
        if at != index_at || total != count {
            return None;
        }

        let wanted = match targets {
            None => (0..blocks.len()).collect(),
            Some(ts) => blocks_under(&blocks, ts),
        };
        // An entry takes 56 bytes at least: a count the bytes cannot hold allocates nothing.
        let mut entries = Vec::with_capacity(if targets.is_none() { count.min(index_at / 56) } else { 0 });
        for b in wanted.into_iter().map(|i| &blocks[i]) {
            let bytes = source.bytes_at(b.offset, b.len)?;
            if blake3::hash(&bytes).as_bytes() != b.hash {
                return None;
            }
            let mut r = Reader(&bytes);
            for n in 0..b.count {
                let rel = r.str()?;
                let state = r.state()?;
                if n == 0 && rel != b.first {
                    return None;
                }
                if targets.is_none_or(|ts| under(rel, ts)) {
                    entries.push((rel.to_owned(), state));
                }
            }
            if !r.0.is_empty() {
                return None;
            }
        }
        // Written in path order, so this is a bulk build, not 100k inserts.
        Some((Manifest { version, epoch, files: entries.into_iter().collect() }, sum))
    }

    /// Applies the records of `journal` that extend the manifest whose checksum is `base`,
    /// in order, and returns how many bytes they span: the end of the last good record,
    /// where the next one is to be written. Replay stops at a torn or altered record and at
    /// one of another base.
    #[cfg(test)]
    pub fn apply_journal(&mut self, base: &[u8; 32], journal: &[u8]) -> usize {
        self.apply_journal_to_some(base, journal, &|_| true)
    }

    /// The same, applying only the changes to paths that `keep` accepts.
    fn apply_journal_to_some(&mut self, base: &[u8; 32], journal: &[u8], keep: &dyn Fn(&str) -> bool) -> usize {
        let mut at = 0;
        while let Some((len, record)) = Self::journal_record(journal.get(at..).unwrap_or_default(), base) {
            self.version = record.version;
            self.epoch = record.epoch;
            for (rel, state) in record.changes.into_iter().filter(|(rel, _)| keep(rel)) {
                match state {
                    Some(state) => self.files.insert(rel, state),
                    None => self.files.remove(&rel),
                };
            }
            at += len;
        }
        at
    }

    /// The first record of `bytes` and its length, if it is whole and extends `base`.
    fn journal_record(bytes: &[u8], base: &[u8; 32]) -> Option<(usize, Record)> {
        let mut r = Reader(bytes);
        if r.take(8)? != JOURNAL_MAGIC {
            return None;
        }
        let len = usize::try_from(r.u32()?).ok()?;
        let body = r.take(len)?;
        let sum = r.take(32)?;
        if blake3::hash(&bytes[..12 + len]).as_bytes() != sum {
            return None;
        }
        let mut r = Reader(body);
        if r.take(32)? != base {
            return None;
        }
        let version = r.u32()?;
        let epoch = r.u64()?;
        let count = r.u64()?;
        let mut changes = Vec::new();
        for _ in 0..count {
            let rel = r.string()?;
            let state = match r.take(1)?[0] {
                0 => None,
                _ => Some(r.state()?),
            };
            changes.push((rel, state));
        }
        r.0.is_empty().then_some((12 + len + 32, Record { version, epoch, changes }))
    }

    /// A journal record that brings the manifest whose checksum is `base` to `version`
    /// and `epoch` with `changes`.
    pub fn journal_bytes(base: &[u8; 32], version: u32, epoch: u64, changes: &[Change]) -> Vec<u8> {
        let mut body = Vec::with_capacity(52 + changes.len() * 128);
        body.extend_from_slice(base);
        body.extend_from_slice(&version.to_le_bytes());
        body.extend_from_slice(&epoch.to_le_bytes());
        body.extend_from_slice(&(changes.len() as u64).to_le_bytes());
        for (rel, state) in changes {
            put_str(&mut body, rel);
            match state {
                None => body.push(0),
                Some(f) => {
                    body.push(1);
                    put_state(&mut body, f);
                }
            }
        }
        let mut out = Vec::with_capacity(12 + body.len() + 32);
        out.extend_from_slice(JOURNAL_MAGIC);
        out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&body);
        let sum = blake3::hash(&out);
        out.extend_from_slice(sum.as_bytes());
        out
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.files.len() * 128 + FOOTER_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        let mut index = Vec::with_capacity(self.files.len() / 2);
        let close = |out: &[u8], index: &mut Vec<u8>, (first, start, count): (&str, usize, u32)| {
            put_str(index, first);
            index.extend_from_slice(&(start as u64).to_le_bytes());
            index.extend_from_slice(&u32::try_from(out.len() - start).unwrap_or(u32::MAX).to_le_bytes());
            index.extend_from_slice(&count.to_le_bytes());
            index.extend_from_slice(blake3::hash(&out[start..]).as_bytes());
        };
        let mut block: Option<(&str, usize, u32)> = None;
        for (rel, f) in &self.files {
            let (_, start, count) = block.get_or_insert((rel.as_str(), out.len(), 0));
            let start = *start;
            *count += 1;
            put_str(&mut out, rel);
            put_state(&mut out, f);
            if out.len() - start >= BLOCK_BYTES
                && let Some(b) = block.take()
            {
                close(&out, &mut index, b);
            }
        }
        if let Some(b) = block.take() {
            close(&out, &mut index, b);
        }
        let index_at = out.len();
        out.extend_from_slice(&index);
        out.extend_from_slice(&(index_at as u64).to_le_bytes());
        out.extend_from_slice(&(index.len() as u64).to_le_bytes());
        let mut hasher = blake3::Hasher::new();
        hasher.update(&out[..HEADER_LEN]);
        hasher.update(&out[index_at..]);
        out.extend_from_slice(hasher.finalize().as_bytes());
        out
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&u32::try_from(s.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_state(out: &mut Vec<u8>, f: &FileState) {
    out.extend_from_slice(&f.size.to_le_bytes());
    out.extend_from_slice(&f.mtime.to_le_bytes());
    out.extend_from_slice(&f.hash);
    out.extend_from_slice(&u32::try_from(f.refs.len()).unwrap_or(u32::MAX).to_le_bytes());
    for r in &f.refs {
        put_str(out, r);
    }
}

/// One journal record: the version and epoch it brings the manifest to, and the changes.
struct Record {
    version: u32,
    epoch: u64,
    changes: Vec<Change>,
}

/// The writer's manifest between syncs, and where its journal stands.
#[derive(Debug, Clone, Default)]
pub struct Cached {
    pub manifest: Manifest,
    /// The checksum of the manifest file that the journal extends; None when there is no
    /// good one, so the next save writes it whole.
    pub base: Option<[u8; 32]>,
    pub base_len: usize,
    /// The end of the journal's last good record.
    pub journal_len: u64,
    /// Whether `manifest` holds only some of the entries (those a watcher's batch needs).
    pub partial: bool,
}

impl Cached {
    /// Reads a manifest file and replays its journal onto it, keeping only the entries at or below `targets` when there are some: what
    /// a batch of a few changed paths needs, at a fraction of the cost of 100k.
    pub fn read_some(manifest: &(impl Source + ?Sized), journal: &[u8], targets: Option<&[String]>) -> Cached {
        let (mut m, base) = Manifest::read_from(manifest, targets);
        let keep = |rel: &str| targets.is_none_or(|ts| under(rel, ts));
        let journal_len = base.map_or(0, |b| m.apply_journal_to_some(&b, journal, &keep) as u64);
        Cached { manifest: m, base, base_len: manifest.size(), journal_len, partial: targets.is_some() }
    }

    /// The record to append for `changes`, or None when the manifest is to be written
    /// whole: there is no good one, or the journal would grow past an eighth of it
    /// (256 KiB at least).
    pub fn record(&self, changes: &[Change]) -> Option<Vec<u8>> {
        let base = self.base?;
        let record = Manifest::journal_bytes(&base, self.manifest.version, self.manifest.epoch, changes);
        let limit = (self.base_len as u64 / 8).max(256 << 10);
        (self.journal_len + record.len() as u64 <= limit).then_some(record)
    }

    /// Notes that the manifest was written whole as `bytes`.
    pub fn rewritten(&mut self, bytes: &[u8]) {
        self.base = bytes.get(bytes.len().saturating_sub(32)..).and_then(|s| s.try_into().ok());
        self.base_len = bytes.len();
        self.journal_len = 0;
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
        self.str().map(str::to_owned)
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u32()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn state(&mut self) -> Option<FileState> {
        let size = self.u64()?;
        let mtime = self.u64()?;
        let hash: [u8; 32] = self.take(32)?.try_into().ok()?;
        let n = self.u32()?;
        let refs = (0..n).map(|_| self.string()).collect::<Option<Vec<_>>>()?;
        Some(FileState { size, mtime, hash, refs })
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
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1;
            assert_eq!(Manifest::from_bytes(&flipped), Manifest::default(), "byte {at} altered");
        }
        assert_eq!(Manifest::from_bytes(br#"{"version":3,"epoch":1,"files":{}}"#), Manifest::default());
    }

    fn state(size: u64) -> FileState {
        FileState { size, mtime: size * 10, hash: [size as u8; 32], refs: Vec::new() }
    }

    #[test]
    fn journal_records_replay_in_order_onto_their_base() {
        let base = sample();
        let (read, sum) = Manifest::from_bytes_with_checksum(&base.to_bytes());
        assert_eq!(read, base);
        let sum = sum.unwrap();
        let first = Manifest::journal_bytes(&sum, 3, 43, &[("b.md".into(), Some(state(5)))]);
        let second = Manifest::journal_bytes(
            &sum,
            3,
            44,
            &[("a/OVERVIEW.md".into(), None), ("b.md".into(), Some(state(6))), ("c.md".into(), Some(state(7)))],
        );
        let journal = [first.clone(), second.clone()].concat();
        let mut m = base.clone();
        assert_eq!(m.apply_journal(&sum, &journal), journal.len());
        let mut want = base.clone();
        want.epoch = 44;
        want.files.remove("a/OVERVIEW.md");
        want.files.insert("b.md".into(), state(6));
        want.files.insert("c.md".into(), state(7));
        assert_eq!(m, want);

        // A torn or altered second record: only the first applies, and the next append
        // goes where the second began.
        for cut in [1, 12, second.len() / 2, second.len() - 1] {
            let mut m = base.clone();
            assert_eq!(m.apply_journal(&sum, &journal[..first.len() + cut]), first.len(), "cut {cut}");
            assert_eq!((m.epoch, m.files.get("b.md")), (43, Some(&state(5))));
        }
        let mut altered = journal.clone();
        altered[first.len() + 60] ^= 1;
        let mut m = base.clone();
        assert_eq!(m.apply_journal(&sum, &altered), first.len());

        // Only some paths: the rest of the manifest and of the journal is stepped over.
        let some = Cached::read_some(base.to_bytes().as_slice(), &journal, Some(&["b.md".to_owned()]));
        assert!(some.partial);
        assert_eq!(some.journal_len, journal.len() as u64);
        assert_eq!(some.manifest.epoch, 44);
        assert_eq!(some.manifest.files.into_iter().collect::<Vec<_>>(), vec![("b.md".to_owned(), state(6))]);

        // Records of another manifest (one since rewritten) are not this one's.
        let mut m = base.clone();
        assert_eq!(m.apply_journal(&[9; 32], &journal), 0);
        assert_eq!(m, base);
        assert_eq!(Manifest::from_bytes_with_checksum(b"not a manifest"), (Manifest::default(), None));
    }

    /// A manifest of `n` files spread over folders whose names share prefixes (`d1`,
    /// `d10`, `d1-x`), so targets fall at block edges and next to paths that only look
    /// below them.
    fn spread(n: u64) -> Manifest {
        let mut m = Manifest { version: 3, epoch: 9, files: BTreeMap::new() };
        for i in 0..n {
            let dir = ["d1", "d10", "d1-x", "d2"][(i % 4) as usize];
            let refs = if i % 7 == 0 { vec![format!("ref{i}#a")] } else { Vec::new() };
            m.files.insert(format!("{dir}/sub{}/f{i:05}.md", i % 13), FileState { refs, ..state(i) });
        }
        m.files.insert("d1".into(), state(1));
        m
    }

    #[test]
    fn a_few_paths_read_only_the_blocks_that_can_hold_them_and_find_all_their_entries() {
        let m = spread(6_000);
        let bytes = m.to_bytes();
        let (whole, sum) = Manifest::from_bytes_with_checksum(&bytes);
        assert_eq!(whole, m);
        let sum = sum.unwrap();

        /// Counts the bytes read.
        struct Counting<'a>(&'a [u8], std::cell::Cell<usize>);
        impl Source for Counting<'_> {
            fn size(&self) -> usize {
                self.0.len()
            }
            fn bytes_at(&self, at: usize, len: usize) -> Option<Cow<'_, [u8]>> {
                self.1.set(self.1.get() + len);
                self.0.bytes_at(at, len)
            }
        }
        let first = m.files.keys().next().unwrap().clone();
        let last = m.files.keys().next_back().unwrap().clone();
        let cases: Vec<Vec<String>> = vec![
            vec!["d1".into()],
            vec!["d10".into()],
            vec!["d1-x/sub3".into()],
            vec!["d2/sub12/f00011.md".into()],
            vec!["d2/sub1".into(), "d10/sub0/f00001.md".into()],
            vec![first.clone()],
            vec![last.clone()],
            vec!["d1/sub4/nothing-here.md".into()],
            vec!["a".into()],
            vec!["zzz".into()],
            vec!["d".into()],
        ];
        for targets in cases {
            let source = Counting(&bytes, std::cell::Cell::new(0));
            let (some, some_sum) = Manifest::read_from(&source, Some(&targets));
            let want: BTreeMap<String, FileState> =
                m.files.iter().filter(|(k, _)| under(k, &targets)).map(|(k, v)| (k.clone(), v.clone())).collect();
            assert!(some.files == want, "{targets:?}: read {:?}, want {:?}", some.files.keys(), want.keys());
            assert_eq!((some.version, some.epoch, some_sum), (3, 9, Some(sum)), "{targets:?}");
            if targets.len() == 1 && !targets[0].starts_with("d1") {
                // A path, or a folder of a quarter of the files: a few blocks, not all.
                assert!(source.1.get() < bytes.len() / 3, "{targets:?} read {} of {}", source.1.get(), bytes.len());
            }
        }
        assert!(bytes.len() > 8 * BLOCK_BYTES, "the test needs many blocks");

        // A block that a read needs and that was altered: no manifest, so a rebuild.
        let mut altered = bytes.clone();
        let at = bytes.len() / 2;
        altered[at] ^= 1;
        assert_eq!(Manifest::from_bytes_with_checksum(&altered), (Manifest::default(), None));
    }
}

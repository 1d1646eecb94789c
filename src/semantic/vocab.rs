//! The vocabulary as two hash tables over the model's own bytes: one of every token, for the
//! first piece of a word, and one of the continuing pieces (`##ing`) keyed without their
//! prefix, so that WordPiece looks a piece up without building a string.
//!
//! A table is open addressing with linear probing: a slot holds a token id and 32 bits of
//! its key's hash, so a probe compares bytes only when the hashes agree. Nothing here owns
//! or copies a token: a token is a range of the vocabulary bytes, which the model keeps.

use std::hash::Hasher;

use rustc_hash::FxHasher;

/// The tokens of a model, by id and by text.
pub struct Vocab {
    /// Where each token starts in the vocabulary bytes, and one more entry: token `i` is
    /// `bytes[starts[i]..starts[i + 1] - 1]` (the `- 1` skips the `\n` between tokens).
    starts: Box<[u32]>,
    whole: Table,
    continuing: Table,
    prefix_len: usize,
    /// The longest token, and the longest continuing piece without its prefix, in bytes: no
    /// piece longer than these can match, so WordPiece starts no longer.
    pub longest_whole: usize,
    pub longest_continuing: usize,
}

impl Vocab {
    /// Indexes the tokens of `text` (joined by `\n`); where a token appears twice, the later
    /// id wins, as in the reference's dictionary. The caller has checked that the text's
    /// length fits in u32.
    pub fn new(text: &str, prefix: &str) -> Vocab {
        // One pass over the text (a string split finds `\n` with a fast search), then one
        // over the tokens: this is most of what the first `Model::builtin()` costs.
        let mut starts = Vec::with_capacity(text.len() / 6 + 2);
        let (mut at, mut continuing_count, mut longest_whole, mut longest_continuing) = (0usize, 0, 0, 0);
        for t in text.split('\n') {
            starts.push(u32::try_from(at).unwrap_or(u32::MAX));
            at += t.len() + 1;
            longest_whole = longest_whole.max(t.len());
            if let Some(rest) = t.strip_prefix(prefix) {
                continuing_count += 1;
                longest_continuing = longest_continuing.max(rest.len());
            }
        }
        starts.push(u32::try_from(at).unwrap_or(u32::MAX));
        let starts = starts.into_boxed_slice();
        let text = text.as_bytes();
        let prefix = prefix.as_bytes();
        let count = starts.len() - 1;
        let mut whole = Table::with_capacity(count);
        let mut continuing = Table::with_capacity(continuing_count);
        for id in 0..count {
            let t = token(text, &starts, id);
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            whole.insert(t, id, |other| token(text, &starts, other as usize));
            if let Some(rest) = t.strip_prefix(prefix) {
                let key_of = |other: u32| token(text, &starts, other as usize).get(prefix.len()..).unwrap_or(&[]);
                continuing.insert(rest, id, key_of);
            }
        }
        Vocab { starts, whole, continuing, prefix_len: prefix.len(), longest_whole, longest_continuing }
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// The id of the token `piece`, the first piece of a word.
    #[inline]
    pub fn whole(&self, text: &[u8], piece: &[u8]) -> Option<u32> {
        self.whole.get(piece, |id| token(text, &self.starts, id as usize))
    }

    /// The id of the token made of the prefix and `piece`, a later piece of a word.
    #[inline]
    pub fn continuing(&self, text: &[u8], piece: &[u8]) -> Option<u32> {
        self.continuing.get(piece, |id| token(text, &self.starts, id as usize).get(self.prefix_len..).unwrap_or(&[]))
    }
}

/// Token `i` of the vocabulary `text`.
#[inline]
fn token<'t>(text: &'t [u8], starts: &[u32], i: usize) -> &'t [u8] {
    text.get(starts[i] as usize..starts[i + 1] as usize - 1).unwrap_or(&[])
}

/// An open-addressing table of token ids; a slot is `hash << 32 | id + 1`, 0 when empty.
struct Table {
    slots: Box<[u64]>,
    /// The slot is the top `64 - shift` bits of the mixed hash.
    shift: u32,
}

impl Table {
    /// A table for `n` keys, at most half full.
    fn with_capacity(n: usize) -> Table {
        let size = (n * 2).next_power_of_two().max(16);
        Table { slots: vec![0; size].into_boxed_slice(), shift: 64 - size.trailing_zeros() }
    }

    #[inline]
    fn hash(key: &[u8]) -> u64 {
        let mut h = FxHasher::default();
        h.write(key);
        // FxHasher's low bits are weak for short keys: mix before taking the top bits.
        h.finish().wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// Where `key` is, or the empty slot where it would go, and its tag: one probe for
    /// both [`Table::insert`] and [`Table::get`].
    #[inline]
    fn slot_of<'k>(&self, key: &[u8], key_of: impl Fn(u32) -> &'k [u8]) -> (usize, u64) {
        let h = Self::hash(key);
        let tag = h & 0xFFFF_FFFF_0000_0000;
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[i];
            if slot == 0 || (slot & 0xFFFF_FFFF_0000_0000 == tag && key_of((slot as u32).wrapping_sub(1)) == key) {
                return (i, tag);
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `key` with `id`, replacing the id of an equal key; `key_of` gives an id's key.
    fn insert<'k>(&mut self, key: &[u8], id: u32, key_of: impl Fn(u32) -> &'k [u8]) {
        let (i, tag) = self.slot_of(key, key_of);
        self.slots[i] = tag | u64::from(id.wrapping_add(1));
    }

    /// The id of `key`, if it is in the table.
    #[inline]
    fn get<'k>(&self, key: &[u8], key_of: impl Fn(u32) -> &'k [u8]) -> Option<u32> {
        let (i, _) = self.slot_of(key, key_of);
        let slot = self.slots[i];
        (slot != 0).then(|| (slot as u32).wrapping_sub(1))
    }
}

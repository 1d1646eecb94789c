//! Text to token ids, exactly as the reference tokeniser (`tools/model/tmws_static.py`):
//! BERT's uncased basic tokeniser, then WordPiece, unknown words dropped, at most
//! `max_tokens` ids.
//!
//! The text is read in chunks, the runs between whitespace (and each CJK ideograph alone),
//! because no step of the reference looks across a space: lowercasing's final sigma looks
//! only at letters and marks around it, NFD reorders only marks that follow a letter, and
//! words end at spaces. A chunk of ASCII needs neither NFD nor a table lookup and is read
//! straight from the text; any other is cleaned into a buffer, lowercased and decomposed.
//! Reading stops as soon as `max_tokens` known tokens are found, so a long body costs what
//! its first few thousand bytes cost. Buffers are reused from word to word and chunk to
//! chunk: a text costs a few allocations, whatever its length.

use icu_normalizer::DecomposingNormalizerBorrowed;
use unicode_general_category::{GeneralCategory, get_general_category};

use super::vocab::Vocab;

/// What WordPiece reads a text with: a vocabulary and its settings.
pub struct Wordpiece<'a> {
    pub vocab: &'a Vocab,
    /// The vocabulary's bytes (tokens joined by `\n`), which `vocab` indexes.
    pub text: &'a [u8],
    pub unk: u32,
    pub max_word_chars: usize,
    pub max_tokens: usize,
    /// Whether an unknown word gives the unknown token, as a transformer reads it; a static
    /// model drops it.
    pub keep_unknown: bool,
}

/// Appends the token ids of `text` to `ids` (which the caller passes empty).
pub fn tokenize(model: &Wordpiece<'_>, text: &str, ids: &mut Vec<u32>) {
    let mut words = Words { model, ids, word: String::new(), word_chars: 0, full: false };
    let mut chunk = Chunk::default();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && !words.full {
        let b = bytes[i];
        if is_ascii_space(b) {
            chunk.end(&mut words);
            i += 1;
        } else if b.is_ascii() {
            // A run of printable ASCII: a chunk by itself when nothing came before it and a
            // space or the end follows, else a piece of the chunk being cleaned.
            let mut j = i;
            while j < bytes.len() && (0x21..0x7F).contains(&bytes[j]) {
                j += 1;
            }
            if j == i {
                // A control character: dropped, and it does not end the chunk.
                i += 1;
                continue;
            }
            let run = text.get(i..j).unwrap_or("");
            if chunk.text.is_empty() && (j == bytes.len() || is_ascii_space(bytes[j])) {
                words.ascii(run);
            } else {
                chunk.text.push_str(run);
            }
            i = j;
        } else {
            let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else { break };
            i += c.len_utf8();
            if c == '\u{FFFD}' {
                continue;
            }
            let category = get_general_category(c);
            if is_other(category) {
                continue;
            }
            if category == GeneralCategory::SpaceSeparator {
                chunk.end(&mut words);
            } else if is_cjk(c) {
                // Spaced out: a chunk of its own.
                chunk.end(&mut words);
                chunk.text.push(c);
                chunk.end(&mut words);
            } else {
                chunk.text.push(c);
            }
        }
    }
    chunk.end(&mut words);
}

/// The chunk being cleaned, and the buffers of its lowercase and NFD forms.
#[derive(Default)]
struct Chunk {
    text: String,
    lower: String,
    nfd: String,
}

impl Chunk {
    /// Splits the chunk into words, and empties it.
    fn end(&mut self, words: &mut Words<'_>) {
        if self.text.is_empty() || words.full {
            self.text.clear();
            return;
        }
        if self.text.is_ascii() {
            words.ascii(&self.text);
        } else {
            self.lower.clear();
            if self.text.contains('Σ') {
                // The one context-dependent lowercase mapping: a capital sigma that ends a
                // word becomes `ς`, which the standard library's string lowercasing knows.
                self.lower.push_str(&self.text.to_lowercase());
            } else {
                for c in self.text.chars() {
                    self.lower.extend(c.to_lowercase());
                }
            }
            self.nfd.clear();
            // Writing into a String cannot fail.
            let _ = DecomposingNormalizerBorrowed::new_nfd().normalize_to(&self.lower, &mut self.nfd);
            words.unicode(&self.nfd);
        }
        self.text.clear();
    }
}

/// The words of a text as they are found, and their token ids.
struct Words<'a> {
    model: &'a Wordpiece<'a>,
    ids: &'a mut Vec<u32>,
    /// The word being read from a non-ASCII chunk, or an ASCII word lowercased; only its
    /// first `max_word_chars` characters are kept, since a longer word is unknown whatever
    /// its letters (`word_chars` counts them all).
    word: String,
    word_chars: usize,
    /// Whether `max_tokens` ids are found: nothing more is read.
    full: bool,
}

impl Words<'_> {
    /// The words of a chunk of printable ASCII: each run between punctuation is a word,
    /// read in place when it has no capital, and each punctuation character is one.
    fn ascii(&mut self, chunk: &str) {
        let bytes = chunk.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if is_ascii_punctuation(b) {
                self.ascii_word(chunk.get(start..i).unwrap_or(""));
                self.piece(chunk.get(i..=i).unwrap_or(""), 1);
                if self.full {
                    return;
                }
                start = i + 1;
            }
        }
        self.ascii_word(chunk.get(start..).unwrap_or(""));
    }

    /// An ASCII word without punctuation.
    #[inline]
    fn ascii_word(&mut self, word: &str) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.model.max_word_chars {
            // Unknown, whatever its letters.
            self.unknown();
            return;
        }
        if word.bytes().any(|b| b.is_ascii_uppercase()) {
            let mut lower = std::mem::take(&mut self.word);
            lower.clear();
            lower.push_str(word);
            lower.make_ascii_lowercase();
            self.piece(&lower, word.len());
            self.word = lower;
            self.word.clear();
        } else {
            self.piece(word, word.len());
        }
    }

    /// The words of a lowercased, decomposed chunk: marks dropped, split at whitespace and
    /// punctuation.
    fn unicode(&mut self, chunk: &str) {
        for c in chunk.chars() {
            let (space, punctuation) = if c.is_ascii() {
                (is_ascii_space(c as u8), is_ascii_punctuation(c as u8))
            } else {
                let category = get_general_category(c);
                if category == GeneralCategory::NonspacingMark {
                    continue;
                }
                // U+2028 and U+2029 are not cleaned into spaces, but Python's split splits
                // there.
                (c.is_whitespace(), is_punctuation(category))
            };
            if space || punctuation {
                self.end_word();
                if punctuation {
                    let mut buf = [0u8; 4];
                    self.piece(c.encode_utf8(&mut buf), 1);
                }
            } else {
                self.word_chars += 1;
                if self.word_chars <= self.model.max_word_chars {
                    self.word.push(c);
                }
            }
            if self.full {
                return;
            }
        }
        self.end_word();
    }

    /// The word read so far into the buffer.
    fn end_word(&mut self) {
        if !self.word.is_empty() {
            let word = std::mem::take(&mut self.word);
            self.piece(&word, self.word_chars);
            self.word = word;
            self.word.clear();
        }
        self.word_chars = 0;
    }

    /// WordPiece of a word of `chars` characters: greedy longest match first, and the whole
    /// word unknown (so dropped) when it cannot be split wholly into pieces.
    fn piece(&mut self, word: &str, chars: usize) {
        if word.is_empty() {
            return;
        }
        if chars > self.model.max_word_chars {
            self.unknown();
            return;
        }
        let model = self.model;
        let vocab = model.vocab;
        let text = model.text;
        let mark = self.ids.len();
        let mut start = 0;
        while start < word.len() {
            let longest = if start == 0 { vocab.longest_whole } else { vocab.longest_continuing };
            let mut end = floor_boundary(word, (start + longest).min(word.len()));
            let found = loop {
                if end <= start {
                    break None;
                }
                let piece = word.as_bytes().get(start..end).unwrap_or(&[]);
                let id = if start == 0 { vocab.whole(text, piece) } else { vocab.continuing(text, piece) };
                if id.is_some() {
                    break id;
                }
                end = floor_boundary(word, end - 1);
            };
            let Some(id) = found else {
                self.ids.truncate(mark);
                self.unknown();
                return;
            };
            // The unknown token itself is dropped like any unknown word.
            if id != model.unk {
                self.ids.push(id);
            }
            start = end;
        }
        self.check_full();
    }

    /// A word no piece of the vocabulary spells: the unknown token when the reader keeps
    /// it, else nothing.
    fn unknown(&mut self) {
        if self.model.keep_unknown {
            self.ids.push(self.model.unk);
            self.check_full();
        }
    }

    fn check_full(&mut self) {
        if self.ids.len() >= self.model.max_tokens {
            self.ids.truncate(self.model.max_tokens);
            self.full = true;
        }
    }
}

/// The greatest character boundary of `s` at or before `i`.
#[inline]
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The reference's whitespace among ASCII: space, tab, line feed, carriage return.
#[inline]
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The reference's ASCII punctuation: every printable non-alphanumeric character.
#[inline]
fn is_ascii_punctuation(b: u8) -> bool {
    matches!(b, 33..=47 | 58..=64 | 91..=96 | 123..=126)
}

/// Whether a character of this category is dropped by cleaning (`C*`).
fn is_other(category: GeneralCategory) -> bool {
    use GeneralCategory as G;
    matches!(category, G::Control | G::Format | G::Surrogate | G::PrivateUse | G::Unassigned)
}

/// Whether a character of this category is punctuation (`P*`).
fn is_punctuation(category: GeneralCategory) -> bool {
    use GeneralCategory as G;
    matches!(
        category,
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// The CJK ideographs the reference spaces out (kana and Hangul are not among them).
fn is_cjk(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B820..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

//! Text analysis for every searchable field (docs/search-index.md).
//!
//! Words are split the way people and code write them: at spaces and punctuation, and
//! inside identifiers at `_`, `-`, `.` and camelCase boundaries (`get_symbols_overview`,
//! `getLibraryDocs`, `resolve-library-id`), keeping the whole identifier as well so an exact
//! match ranks first. Text in Japanese, Chinese and Korean has no spaces between words, so
//! runs of CJK characters become overlapping bigrams: `接続` is found inside
//! `データベース接続プール`. Tokens are then lowercased, folded to ASCII and stemmed (English).

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RawTokenizer, RemoveLongFilter, TextAnalyzer, Token, TokenFilter, TokenStream,
    Tokenizer,
};

/// The name the analyzer is registered under in the index.
pub const ANALYZER: &str = "tmws";

/// The analyzer used for indexing and for queries.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default()).filter(RemoveLongFilter::limit(64)).filter(Normalize).build()
}

/// Lowercasing, folding to ASCII and English stemming (Snowball) in one filter, the same
/// as tantivy's `LowerCaser`, `AsciiFoldingFilter` and a stemmer in a row (a test holds
/// them equal over the corpora) but one pass over an ASCII token instead of three, which
/// is nearly every token. Stems are remembered per thread: the same words recur across
/// documents, and a lookup is several times cheaper than stemming. Only tokens of three or
/// more ASCII letters are stemmed; identifiers with separators, numbers and CJK bigrams
/// pass through as they are.
#[derive(Clone, Copy, Debug)]
pub struct Normalize;

impl TokenFilter for Normalize {
    type Tokenizer<T: Tokenizer> = NormalizeFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> NormalizeFilter<T> {
        NormalizeFilter { inner: tokenizer, unicode: UnicodeFold::default() }
    }
}

#[derive(Clone, Debug)]
pub struct NormalizeFilter<T> {
    inner: T,
    unicode: UnicodeFold,
}

impl<T: Tokenizer> Tokenizer for NormalizeFilter<T> {
    type TokenStream<'a> = NormalizeStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        NormalizeStream { tail: self.inner.token_stream(text), unicode: &mut self.unicode }
    }
}

#[derive(Debug)]
pub struct NormalizeStream<'a, T> {
    tail: T,
    unicode: &'a mut UnicodeFold,
}

fn stemmer() -> &'static frostem::Stemmer {
    static STEMMER: std::sync::OnceLock<frostem::Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English))
}

impl<T: TokenStream> TokenStream for NormalizeStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let text = &mut self.tail.token_mut().text;
        // Nearly every token is a word in lowercase ASCII letters already: one loop.
        let mut letters = text.bytes().all(|b| b.is_ascii_lowercase());
        if !letters {
            if !text.is_ascii() {
                self.unicode.fold(text);
            }
            // ASCII from here (folding leaves a few symbols as they are: not letters).
            text.make_ascii_lowercase();
            letters = text.bytes().all(|b| b.is_ascii_lowercase());
        }
        if letters && text.len() >= 3 {
            STEMS.with_borrow_mut(|cache| cache.stem(text));
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

/// tantivy's own lowercasing and folding, for the rare token that is not ASCII.
#[derive(Clone)]
struct UnicodeFold(TextAnalyzer);

impl Default for UnicodeFold {
    fn default() -> UnicodeFold {
        UnicodeFold(
            TextAnalyzer::builder(RawTokenizer::default()).filter(LowerCaser).filter(AsciiFoldingFilter).build(),
        )
    }
}

impl std::fmt::Debug for UnicodeFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnicodeFold")
    }
}

impl UnicodeFold {
    fn fold(&mut self, text: &mut String) {
        let mut stream = self.0.token_stream(text);
        let folded = if stream.advance() { std::mem::take(&mut stream.token_mut().text) } else { String::new() };
        drop(stream);
        *text = folded;
    }
}

/// The longest word the cache holds; longer ones (rare) are stemmed every time.
const STEM_MAX: usize = 15;
/// Slots of the cache: 32 bytes each, 2 MiB per indexing thread once used (a 256 KiB
/// cache missed too often on the bench's vocabulary, a `String` hash map cost more per hit).
const STEM_SLOTS: usize = 1 << 16;

thread_local! {
    /// One cache per thread, shared by the analyzers of every field (tantivy clones an
    /// analyzer per field and per query).
    static STEMS: std::cell::RefCell<StemCache> = const { std::cell::RefCell::new(StemCache { slots: Vec::new() }) };
}

/// A direct-mapped cache of stems: a word's hash picks one slot, which holds the word and
/// its stem inline, so a hit reads one cache line and follows no pointer (a hash map of
/// `String`s spent most of its time on those). A collision replaces the slot.
#[derive(Debug, Default)]
struct StemCache {
    /// Empty until the thread's first word.
    slots: Vec<StemSlot>,
}

/// Room for a stem's changed ending in a slot.
const SLOT_TAIL: usize = 14;

#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct StemSlot {
    /// The word, zero-padded; 0 for an empty slot.
    word: u128,
    /// The stem is `word[..keep]` followed by `tail[..tail_len]`: most stems cut a suffix
    /// off, some change a letter or two after that (`happiness` → `happi`).
    keep: u8,
    tail_len: u8,
    tail: [u8; SLOT_TAIL],
}

const _: () = assert!(std::mem::size_of::<StemSlot>() == 32);

const EMPTY_SLOT: StemSlot = StemSlot { word: 0, keep: 0, tail_len: 0, tail: [0; SLOT_TAIL] };

impl StemCache {
    /// Replaces `word` (lowercase ASCII letters) with its stem.
    #[inline]
    fn stem(&mut self, word: &mut String) {
        let bytes = word.as_bytes();
        if bytes.len() > STEM_MAX {
            let stem = stemmer().stem(word).into_owned();
            *word = stem;
            return;
        }
        if self.slots.is_empty() {
            self.slots = vec![EMPTY_SLOT; STEM_SLOTS];
        }
        // The word zero-padded is the key (words have no zero bytes): one 16-byte compare.
        let k = bytes.iter().rev().fold(0u128, |k, &b| (k << 8) | u128::from(b));
        let mixed = ((k as u64) ^ ((k >> 64) as u64).rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = &mut self.slots[(mixed >> (64 - STEM_SLOTS.trailing_zeros())) as usize];
        if slot.word == k {
            word.truncate(usize::from(slot.keep));
            word.extend(slot.tail[..usize::from(slot.tail_len)].iter().map(|&b| char::from(b)));
            return;
        }
        let stem = stemmer().stem(word);
        let keep = bytes.iter().zip(stem.as_bytes()).take_while(|(a, b)| a == b).count();
        let tail = &stem.as_bytes()[keep..];
        // Stems are ASCII (of ASCII words); the check keeps `char::from` above exact.
        if tail.len() <= SLOT_TAIL && stem.is_ascii() {
            slot.word = k;
            slot.keep = keep as u8;
            slot.tail_len = tail.len() as u8;
            slot.tail[..tail.len()].copy_from_slice(tail);
        }
        let stem = stem.into_owned();
        *word = stem;
    }
}

/// Words too common to find anything by: a request in a person's own words (`what did we
/// decide about the cache`) holds them, and nearly every entry does too. `recall` leaves
/// them out of its task and `memory_search` out of its query (docs/ranking.md); a search
/// of documents keeps them, since its tiers read them in a name or a phrase.
pub const FILLER: [&str; 52] = [
    "a", "about", "after", "again", "an", "and", "are", "as", "at", "be", "before", "by", "can", "did", "do", "does",
    "for", "from", "how", "i", "in", "into", "is", "it", "its", "my", "of", "on", "once", "or", "our", "should",
    "than", "that", "the", "then", "there", "these", "this", "those", "to", "was", "we", "were", "what", "when",
    "which", "who", "why", "will", "with", "you",
];

/// Whether `word` (as written, any case) is one of the [`FILLER`] words.
pub fn is_filler(word: &str) -> bool {
    let lower = word.to_lowercase();
    FILLER.contains(&lower.as_str())
}

/// The analyzed terms of a text, in order (duplicates kept).
pub fn terms(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// Whether a character belongs to a script written without spaces between words (or, for
/// Hangul, where bigrams find words inside compounds).
#[inline]
pub fn is_cjk(c: char) -> bool {
    if (c as u32) < 0x1100 {
        return false;
    }
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x31F0..=0x31FF   // Katakana phonetic extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9F   // half-width Katakana
        | 0x1100..=0x11FF   // Hangul Jamo
        | 0x3130..=0x318F   // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0x20000..=0x2A6DF // CJK extension B
    )
}

#[inline]
fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && !is_cjk(c)
}

/// Splits text into words, identifier parts and CJK bigrams, streaming: one token buffer
/// and one parts buffer are reused for every token of every text.
#[derive(Clone, Default, Debug)]
pub struct CodeTokenizer {
    parts: Vec<(usize, usize)>,
    pieces: Vec<(usize, usize, usize)>,
    chars: Vec<(usize, char)>,
}

/// The tokens of one text.
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    text: &'a str,
    /// Byte offset where scanning resumes.
    pos: usize,
    /// The position the next word or bigram gets.
    next_position: usize,
    token: Token,
    /// Pending parts of the current word (byte ranges) and the next one to emit.
    parts: &'a mut Vec<(usize, usize)>,
    part: usize,
    /// Pieces of the current word between its separators that have several camelCase
    /// parts (`DefaultCompressionExclusionFilter` of `ms-DFSR-DefaultCompressionExclusionFilter`):
    /// byte range and the position (from the word's) of their first part; and the next.
    pieces: &'a mut Vec<(usize, usize, usize)>,
    piece: usize,
    /// The position of the current word's first part.
    word_position: usize,
    chars: &'a mut Vec<(usize, char)>,
    /// Inside a CJK run: the byte offset of the next bigram's first character, and the
    /// run's end.
    cjk: Option<(usize, usize)>,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.parts.clear();
        self.pieces.clear();
        CodeTokenStream {
            text,
            pos: 0,
            next_position: 0,
            token: Token::default(),
            parts: &mut self.parts,
            part: 0,
            pieces: &mut self.pieces,
            piece: 0,
            word_position: 0,
            chars: &mut self.chars,
            cjk: None,
        }
    }
}

impl CodeTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize, position: usize) {
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = position;
        self.token.position_length = 1;
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
    }

    /// The next bigram of the current CJK run, if any.
    fn next_bigram(&mut self) -> bool {
        let Some((at, end)) = self.cjk else { return false };
        let mut it = self.text[at..end].char_indices();
        let Some((_, first)) = it.next() else {
            self.cjk = None;
            return false;
        };
        let second_start = at + first.len_utf8();
        if second_start >= end {
            self.cjk = None;
            return false;
        }
        let second = self.text[second_start..].chars().next().map_or(0, char::len_utf8);
        let position = self.next_position;
        self.next_position += 1;
        self.emit(at, second_start + second, position);
        self.cjk = Some((second_start, end));
        true
    }

    /// Splits the word at `start..end` into parts (identifier separators, camelCase).
    fn split_word(&mut self, start: usize, end: usize) {
        self.parts.clear();
        self.pieces.clear();
        self.chars.clear();
        self.chars.extend(self.text[start..end].char_indices().map(|(i, c)| (start + i, c)));
        let mut part_start: Option<usize> = None;
        // The first part of the piece being read, and how many pieces there were.
        let mut piece_first = 0;
        let mut pieces = 0;
        let close_piece = |parts: &[(usize, usize)], pieces_out: &mut Vec<(usize, usize, usize)>, first: usize| {
            if parts.len() > first + 1 {
                pieces_out.push((parts[first].0, parts[parts.len() - 1].1, first));
            }
        };
        for k in 0..self.chars.len() {
            let (offset, c) = self.chars[k];
            if !is_word(c) {
                if let Some(s) = part_start.take() {
                    self.parts.push((s, offset));
                    close_piece(self.parts, self.pieces, piece_first);
                    piece_first = self.parts.len();
                    pieces += 1;
                }
                continue;
            }
            match part_start {
                Some(s) => {
                    let prev = self.chars[k - 1].1;
                    let next = self.chars.get(k + 1).map(|x| x.1);
                    let lower_to_upper = (prev.is_lowercase() || prev.is_ascii_digit()) && c.is_uppercase();
                    let acronym_end = prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
                    if lower_to_upper || acronym_end {
                        self.parts.push((s, offset));
                        part_start = Some(offset);
                    }
                }
                None => part_start = Some(offset),
            }
        }
        if let Some(s) = part_start {
            self.parts.push((s, end));
            close_piece(self.parts, self.pieces, piece_first);
            pieces += 1;
        }
        // A word of one piece is already whole.
        if pieces < 2 {
            self.pieces.clear();
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        // Parts of the current word come first.
        if self.part < self.parts.len() {
            let (from, to) = self.parts[self.part];
            let position = self.word_position + self.part;
            self.part += 1;
            self.emit(from, to, position);
            return true;
        }
        if self.piece < self.pieces.len() {
            let (from, to, first) = self.pieces[self.piece];
            self.piece += 1;
            self.emit(from, to, self.word_position + first);
            return true;
        }
        if self.cjk.is_some() && self.next_bigram() {
            return true;
        }
        let text = self.text;
        let bytes = text.as_bytes();
        while self.pos < text.len() {
            let b = bytes[self.pos];
            // Spaces and punctuation: nearly every other character.
            if b.is_ascii() && !b.is_ascii_alphanumeric() {
                self.pos += 1;
                continue;
            }
            let c = if b.is_ascii() { char::from(b) } else { text[self.pos..].chars().next().unwrap_or(' ') };
            let start = self.pos;
            if is_cjk(c) {
                let mut end = start;
                for (i, ch) in text[start..].char_indices() {
                    if !is_cjk(ch) {
                        break;
                    }
                    end = start + i + ch.len_utf8();
                }
                self.pos = end;
                if end - start == c.len_utf8() {
                    let position = self.next_position;
                    self.next_position += 1;
                    self.emit(start, end, position);
                    return true;
                }
                self.cjk = Some((start, end));
                return self.next_bigram();
            }
            if !is_word(c) {
                self.pos += c.len_utf8();
                continue;
            }
            // A word: word characters, joined by `_` (also repeated) or by `-` and `.`
            // between word characters.
            let mut end = start + c.len_utf8();
            let mut prev = c;
            // Most words are one part: no separator and no capital after the first letter.
            let mut one_part = true;
            while end < text.len() {
                // The common case first: a lowercase letter or a digit goes on the word.
                if bytes[end].is_ascii_lowercase() || bytes[end].is_ascii_digit() {
                    prev = char::from(bytes[end]);
                    end += 1;
                    continue;
                }
                let ch =
                    if bytes[end].is_ascii() { bytes[end] as char } else { text[end..].chars().next().unwrap_or(' ') };
                let next_is_word = || text[end + ch.len_utf8()..].chars().next().is_some_and(is_word);
                let ok = is_word(ch)
                    || (ch == '_' && (is_word(prev) || prev == '_'))
                    || ((ch == '-' || ch == '.') && is_word(prev) && next_is_word());
                if !ok {
                    break;
                }
                if !ch.is_ascii_alphanumeric() || ch.is_ascii_uppercase() {
                    one_part = false;
                }
                prev = ch;
                end += ch.len_utf8();
            }
            self.pos = end;
            let mut stop = end;
            self.piece = 0;
            if one_part {
                self.parts.clear();
                self.pieces.clear();
                self.parts.push((start, stop));
            } else {
                while stop > start && bytes[stop - 1] == b'_' {
                    stop -= 1;
                }
                self.split_word(start, stop);
            }
            if self.parts.is_empty() {
                continue;
            }
            let position = self.next_position;
            self.word_position = position;
            self.next_position += self.parts.len();
            if self.parts.len() > 1 {
                let first = self.parts[0].0;
                self.part = 0;
                self.emit(first, stop, position);
            } else {
                let (from, to) = self.parts[0];
                self.part = 1;
                self.emit(from, to, position);
            }
            return true;
        }
        false
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: &[&str]) {
        assert_eq!(terms(text), expect, "{text}");
    }

    #[test]
    fn words_are_lowercased_folded_and_stemmed() {
        check("Decisions about Caching", &["decis", "about", "cach"]);
        check("décisions", &["decis"]);
        assert_eq!(terms("decision"), terms("decisions"));
    }

    #[test]
    fn identifiers_split_and_stay_whole() {
        check("get_symbols_overview", &["get_symbols_overview", "get", "symbol", "overview"]);
        check("getLibraryDocs", &["getlibrarydoc", "get", "librari", "doc"]);
        check("resolve-library-id", &["resolve-library-id", "resolv", "librari", "id"]);
        check("HTTPServer v2", &["httpserver", "http", "server", "v2"]);
        check("file.md.", &["file.md", "file", "md"]);
        check("__init__", &["init"]);
        check("a - b", &["a", "b"]);
        // A piece between separators with camelCase parts is found whole as well.
        check(
            "ms-DFSR-DefaultCompressionExclusionFilter",
            &[
                "ms-dfsr-defaultcompressionexclusionfilter",
                "ms",
                "dfsr",
                "default",
                "compress",
                "exclus",
                "filter",
                "defaultcompressionexclusionfilt",
            ],
        );
    }

    #[test]
    fn one_analyzer_gives_each_text_its_own_tokens() {
        // The buffers are reused from text to text: nothing of one reaches the next.
        let mut a = analyzer();
        let tokens = |a: &mut TextAnalyzer, text: &str| {
            let mut out = Vec::new();
            let mut stream = a.token_stream(text);
            while stream.advance() {
                out.push((stream.token().text.clone(), stream.token().position));
            }
            out
        };
        let first = tokens(&mut a, "ms-DFSR-DefaultCompressionExclusionFilter");
        assert_eq!(first.len(), 8);
        assert_eq!(tokens(&mut a, "x"), vec![("x".to_owned(), 0)]);
        assert_eq!(tokens(&mut a, "Binary trie"), vec![("binari".to_owned(), 0), ("trie".to_owned(), 1)]);
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        check("データベース接続", &["デー", "ータ", "タベ", "ベー", "ース", "ス接", "接続"]);
        check("接続", &["接続"]);
        check("数据库连接池", &["数据", "据库", "库连", "连接", "接池"]);
        check("데이터베이스 연결", &["데이", "이터", "터베", "베이", "이스", "연결"]);
        check("字", &["字"]);
        check("tmwsの設定", &["tmws", "の設", "設定"]);
    }

    #[test]
    fn positions_increase_and_offsets_point_into_the_text() {
        let mut t = CodeTokenizer::default();
        let text = "use getLibraryDocs 接続";
        let mut s = t.token_stream(text);
        let mut got = Vec::new();
        while s.advance() {
            let tok = s.token();
            got.push((tok.text.clone(), tok.position, text[tok.offset_from..tok.offset_to] == tok.text));
        }
        assert_eq!(
            got,
            vec![
                ("use".into(), 0, true),
                ("getLibraryDocs".into(), 1, true),
                ("get".into(), 1, true),
                ("Library".into(), 2, true),
                ("Docs".into(), 3, true),
                ("接続".into(), 4, true),
            ]
        );
    }

    #[test]
    fn the_one_pass_normalizer_gives_exactly_what_tantivys_filters_give() {
        use super::{CodeTokenizer, analyzer};
        use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, TokenStream};
        let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
        let mut reference = TextAnalyzer::builder(CodeTokenizer::default())
            .filter(RemoveLongFilter::limit(64))
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .build();
        let mut ours = analyzer();
        let mut texts = vec![
            "Café ÜBER naïve Straße İstanbul ΣΊΣΥΦΟΣ σοφός Ωmega ﬁnancial ＡＢＣ half-width ｶﾀｶﾅ".to_owned(),
            "happiness HAPPINESS generalizations getLibraryDocs XMLHttpRequest __init__ v2.3.1 a_b-c.d".to_owned(),
            "データベース接続プールの設定を変更した 数据库连接池 데이터베이스 연결 🙂 émoji✓ x".to_owned(),
            format!("{} {} {}", "internationalization".repeat(2), "a".repeat(70), "Ünïcödé".repeat(12)),
        ];
        let (corpora, full) = crate::testing::corpora();
        let files = crate::testing::markdown_files(&corpora);
        // Every fifth file keeps the test quick in a debug build; all languages of the corpora
        // are among them.
        texts.extend(files.iter().step_by(5).filter_map(|f| std::fs::read_to_string(f).ok()));
        let mut tokens = 0;
        for text in &texts {
            let mut want = reference.token_stream(text);
            let mut got = ours.token_stream(text);
            loop {
                let (w, g) = (want.advance(), got.advance());
                assert_eq!(w, g, "a stream ended early in {:?}", &text[..text.len().min(80)]);
                if !w {
                    break;
                }
                tokens += 1;
                let (w, g) = (want.token(), got.token());
                let mut expected = w.text.clone();
                if expected.len() >= 3 && expected.bytes().all(|b| b.is_ascii_lowercase()) {
                    expected = stemmer.stem(&expected).into_owned();
                }
                assert_eq!(
                    (&g.text, g.position, g.offset_from, g.offset_to),
                    (&expected, w.position, w.offset_from, w.offset_to),
                    "token {:?} of {:?}",
                    w.text,
                    &text[..text.len().min(80)]
                );
            }
        }
        assert!(tokens > if full { 1_000_000 } else { 30_000 }, "{tokens}");
    }
}

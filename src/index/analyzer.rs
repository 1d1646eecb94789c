//! Text analysis for every searchable field (DESIGN §3).
//!
//! Words are split the way people and code write them: at spaces and punctuation, and
//! inside identifiers at `_`, `-`, `.` and camelCase boundaries (`get_symbols_overview`,
//! `getLibraryDocs`, `resolve-library-id`), keeping the whole identifier as well so an exact
//! match ranks first. Text in Japanese, Chinese and Korean has no spaces between words, so
//! runs of CJK characters become overlapping bigrams: `接続` is found inside
//! `データベース接続プール`. Tokens are then lowercased, folded to ASCII and stemmed (English).

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// The name the analyzer is registered under in the index.
pub const ANALYZER: &str = "tmws";

/// The analyzer used for indexing and for queries.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(CodeTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
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
pub fn is_cjk(c: char) -> bool {
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

fn is_word(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c)
}

/// Splits text into words, identifier parts and CJK bigrams.
#[derive(Clone, Default, Debug)]
pub struct CodeTokenizer {
    tokens: Vec<Token>,
}

/// The tokens of one text, produced up front.
#[derive(Debug)]
pub struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    index: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        tokenize(text, &mut self.tokens);
        CodeTokenStream { tokens: &mut self.tokens, index: 0 }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.index < self.tokens.len() {
            self.index += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index - 1]
    }
}

fn push(out: &mut Vec<Token>, text: &str, from: usize, to: usize, position: usize) {
    out.push(Token { offset_from: from, offset_to: to, position, text: text[from..to].to_owned(), position_length: 1 });
}

fn tokenize(text: &str, out: &mut Vec<Token>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |i: usize| chars.get(i).map_or(text.len(), |(o, _)| *o);
    let mut position = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i].1) {
                i += 1;
            }
            if i - start == 1 {
                push(out, text, chars[start].0, end_of(i), position);
                position += 1;
            }
            for (k, &(offset, _)) in chars.iter().enumerate().take(i.saturating_sub(1)).skip(start) {
                push(out, text, offset, end_of(k + 2), position);
                position += 1;
            }
        } else if is_word(c) {
            let start = i;
            i += 1;
            while i < chars.len() {
                let c = chars[i].1;
                let joins = c == '_' || ((c == '-' || c == '.') && chars.get(i + 1).is_some_and(|n| is_word(n.1)));
                if is_word(c) || (joins && is_word(chars[i - 1].1)) || (c == '_' && chars[i - 1].1 == '_') {
                    i += 1;
                } else {
                    break;
                }
            }
            let mut stop = i;
            while stop > start && chars[stop - 1].1 == '_' {
                stop -= 1;
            }
            position = word(text, &chars[start..stop], end_of(stop), position, out);
        } else {
            i += 1;
        }
    }
}

/// Emits one word: its parts, preceded by the whole word when it has several parts.
fn word(text: &str, chars: &[(usize, char)], end: usize, position: usize, out: &mut Vec<Token>) -> usize {
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let mut part_start: Option<usize> = None;
    for (k, &(offset, c)) in chars.iter().enumerate() {
        if !is_word(c) {
            if let Some(s) = part_start.take() {
                parts.push((s, offset));
            }
            continue;
        }
        if let Some(s) = part_start {
            let prev = chars[k - 1].1;
            let next = chars.get(k + 1).map(|x| x.1);
            let lower_to_upper = (prev.is_lowercase() || prev.is_ascii_digit()) && c.is_uppercase();
            let acronym_end = prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
            if lower_to_upper || acronym_end {
                parts.push((s, offset));
                part_start = Some(offset);
            }
        } else {
            part_start = Some(offset);
        }
    }
    if let Some(s) = part_start {
        parts.push((s, end));
    }
    let Some(&(first, _)) = parts.first() else { return position };
    if parts.len() > 1 {
        push(out, text, first, end, position);
    }
    for (k, (from, to)) in parts.into_iter().enumerate() {
        push(out, text, from, to, position + k);
    }
    position + out.last().map_or(0, |t| t.position + 1 - position)
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
}

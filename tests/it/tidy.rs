//! What each module must not know, checked by reading the sources (ARCHITECTURE.md).

use std::path::{Path, PathBuf};

use super::util::repo;

/// A source file: its path, its whole text, and its production code: the text without its
/// unit tests (`#[cfg(test)] mod … { … }` blocks), empty for a file that is a test module
/// itself (declared `#[cfg(test)] mod name;` by its parent).
struct Source {
    path: PathBuf,
    text: String,
    code: String,
}

fn sources(dir: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut test_files = Vec::new();
    read_sources(dir, &mut out, &mut test_files);
    for s in &mut out {
        if test_files.contains(&s.path) {
            s.code.clear();
        }
    }
    out
}

fn read_sources(dir: &Path, out: &mut Vec<Source>, test_files: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            read_sources(&p, out, test_files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let (code, test_modules) = without_unit_tests(&text);
            // `mod name;` in `a/mod.rs` (or `lib.rs`, `main.rs`) is `a/name.rs`; in `a/b.rs`
            // it is `a/b/name.rs`; either may be `…/name/mod.rs`.
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let home = if ["mod", "lib", "main"].contains(&stem.as_str()) {
                p.parent().unwrap().to_path_buf()
            } else {
                p.with_extension("")
            };
            for name in test_modules {
                test_files.push(home.join(format!("{name}.rs")));
                test_files.push(home.join(&name).join("mod.rs"));
            }
            out.push(Source { path: p, text, code });
        }
    }
}

/// `text` without its `#[cfg(test)] mod … { … }` blocks (other attributes and a `pub`
/// between the two allowed), braces matched in code only: comments, strings and character
/// literals are read past. Also the names of the modules declared `#[cfg(test)] mod name;`.
fn without_unit_tests(text: &str) -> (String, Vec<String>) {
    let b = text.as_bytes();
    let code = code_bytes(text);
    let is_code = |i: usize| code.get(i).copied().unwrap_or(false);
    let mut out = String::with_capacity(text.len());
    let mut test_modules = Vec::new();
    let mut from = 0;
    let mut search = 0;
    while let Some(at) = text[search..].find("#[cfg(test)]").map(|i| search + i) {
        search = at + 1;
        if !is_code(at) || at < from {
            continue;
        }
        // Past blanks, other attributes and a visibility, to `mod name`.
        let mut i = at + "#[cfg(test)]".len();
        loop {
            i = skip_blanks(b, i);
            if text[i..].starts_with("#[") {
                i = matching(b, &code, i + 1).map_or(b.len(), |end| end + 1);
            } else if text[i..].starts_with("pub") {
                i += 3;
                if text[i..].starts_with('(') {
                    i = matching(b, &code, i).map_or(b.len(), |end| end + 1);
                }
            } else {
                break;
            }
        }
        if !text[i..].starts_with("mod ") {
            continue;
        }
        i = skip_blanks(b, i + 4);
        let name_len = text[i..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len() - i);
        let name = text[i..i + name_len].to_owned();
        let start = skip_blanks(b, i + name_len);
        let after = &text[start..];
        if after.starts_with(';') {
            test_modules.push(name);
        } else if after.starts_with('{') {
            let end = matching(b, &code, start).unwrap_or_else(|| panic!("unbalanced braces in `mod {name}`"));
            out.push_str(&text[from..at]);
            from = end + 1;
        }
    }
    out.push_str(&text[from..]);
    (out, test_modules)
}

/// For each byte of a Rust source, whether it is code: not in a comment, a string or a
/// character literal. Simple on purpose: it knows line and (nested) block comments,
/// strings with escapes, raw strings and character literals, which is what the sources use.
fn code_bytes(text: &str) -> Vec<bool> {
    let b = text.as_bytes();
    let mut code = vec![true; b.len()];
    let mut i = 0;
    while i < b.len() {
        let start = i;
        // `r"…"`, `r#"…"#` and `br"…"` are raw strings; the `r` of `for"` is not.
        let raw = b[i] == b'r'
            && matches!(b.get(i + 1), Some(b'"' | b'#'))
            && (i == 0 || !is_ident(b[i - 1]) || (b[i - 1] == b'b' && (i == 1 || !is_ident(b[i - 2]))));
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if raw {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i] == b'\'' {
            // A character literal (`'{'`, `'\''`, `'\u{7b}'`), not a lifetime (`'a`).
            let len = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..).and_then(|rest| rest.iter().position(|&c| c == b'\'')).map(|p| p + 4)
            } else {
                let n = text[i + 1..].chars().next().map_or(0, char::len_utf8);
                (n > 0 && b.get(i + 1 + n) == Some(&b'\'')).then_some(n + 2)
            };
            i += len.unwrap_or(1);
            if len.is_none() {
                continue;
            }
        } else {
            i += 1;
            continue;
        }
        code[start..i.min(b.len())].fill(false);
    }
    code
}

fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Where the bracket that closes the one at `open` is (`{`, `[` or `(`), counting code only.
fn matching(b: &[u8], code: &[bool], open: usize) -> Option<usize> {
    let (o, c) = match b[open] {
        b'{' => (b'{', b'}'),
        b'[' => (b'[', b']'),
        _ => (b'(', b')'),
    };
    let mut depth = 0usize;
    for i in open..b.len() {
        if !code[i] {
            continue;
        }
        if b[i] == o {
            depth += 1;
        } else if b[i] == c {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap().to_string_lossy().replace('\\', "/")
}

#[test]
fn only_the_store_touches_the_disk() {
    for s in sources(&repo().join("src")) {
        let (r, text) = (rel(&s.path), &s.code);
        if r.starts_with("src/store/") {
            continue;
        }
        for banned in ["std::fs", "fs::read", "fs::write", "File::open", "File::create"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: disk access belongs in src/store/");
        }
    }
}

/// A surface stays small enough to read whole: what grows past this belongs in a module of
/// its own (or in the library below the surfaces).
#[test]
fn no_surface_file_is_over_600_lines() {
    let long: Vec<(String, usize)> = sources(&repo().join("src/surface"))
        .iter()
        .map(|s| (rel(&s.path), s.text.lines().count()))
        .filter(|(_, lines)| *lines > 600)
        .collect();
    assert_eq!(long, [], "files in src/surface/ over 600 lines");
}

#[test]
fn only_surfaces_know_clap_and_print() {
    for s in sources(&repo().join("src")) {
        let (r, text) = (rel(&s.path), &s.code);
        if r.starts_with("src/surface/") || r == "src/main.rs" {
            continue;
        }
        for banned in ["clap::", "println!", "print!(", "eprintln!", "std::process::exit"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: that belongs in src/surface/");
        }
    }
}

#[test]
fn surfaces_reach_the_library_through_the_engine() {
    for s in sources(&repo().join("src/surface")) {
        let (r, text) = (rel(&s.path), &s.code);
        for banned in ["crate::index", "crate::pool", "crate::schema", "Index::", "Pool::"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: surfaces go through query::Engine");
        }
    }
    // And only the surfaces speak HTTP or serve MCP; the pool is an MCP client.
    for s in sources(&repo().join("src")) {
        let (r, text) = (rel(&s.path), &s.code);
        if r.starts_with("src/surface/") {
            continue;
        }
        for banned in ["axum::", "ServerHandler", "StreamableHttpService"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: that belongs in src/surface/");
        }
        if !r.starts_with("src/pool/") {
            assert!(!text.contains("rmcp::"), "{r} uses `rmcp::`: MCP is the surface's and the pool's");
        }
    }
}

#[test]
fn parse_and_model_are_pure() {
    for s in sources(&repo().join("src")) {
        let (r, text) = (rel(&s.path), &s.code);
        if r.starts_with("src/parse/") || r.starts_with("src/semantic/") || r == "src/model.rs" || r == "src/schema.rs"
        {
            for banned in ["crate::store", "crate::check", "crate::surface", "ignore::"] {
                assert!(!text.contains(banned), "{r} uses `{banned}`: parsing is pure");
            }
        }
    }
}

#[test]
fn the_memory_logs_know_nothing_of_the_index_or_the_tools() {
    for s in sources(&repo().join("src/memory")) {
        let (r, text) = (rel(&s.path), &s.code);
        for banned in ["crate::index", "crate::query", "crate::surface", "crate::pool"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: the memory logs sit below the index and the tools");
        }
    }
}

#[test]
fn no_placeholders_and_every_module_says_what_it_is() {
    for dir in ["src", "tests", "benches", "examples"] {
        for s in sources(&repo().join(dir)) {
            // Unit tests too: a test is no place for a placeholder or a skip either.
            let (r, text) = (rel(&s.path), &s.text);
            // Spelled in pieces so that this file does not match itself.
            for banned in
                [concat!("todo", "!("), concat!("unimplemented", "!("), concat!("dbg", "!("), concat!("#[", "ignore")]
            {
                assert!(!text.contains(banned), "{r} contains `{banned}`");
            }
            if dir == "src" {
                assert!(text.starts_with("//!"), "{r} must open with a `//!` paragraph saying what it is");
            }
        }
    }
}

/// The reader above cuts test modules only, whole, whatever braces their strings,
/// characters and comments hold, and keeps the production code around them.
#[test]
fn the_rules_read_all_production_code_and_no_unit_test() {
    let text = r##"//! A module.
fn before() -> char { '{' }
#[cfg(test)]
#[allow(clippy::print_stdout, reason = "x")]
mod tests {
    fn a() { let s = "}"; let c = '}'; let r = r#"}"#; let e = '\''; let b = br"\"; }
    // }
    /* } /* } */ } */
    fn b<'a>(x: &'a str) -> &'a str { x }
    mod inner { fn c() {} }
}
fn between() {}
#[cfg(test)]
pub(crate) mod helpers { fn d() {} }
#[cfg(test)]
fn test_only_function() {}
#[cfg(test)]
mod fuzz;
fn after() {}
"##;
    let (code, files) = without_unit_tests(text);
    assert_eq!(
        code,
        "//! A module.\nfn before() -> char { '{' }\n\nfn between() {}\n\n#[cfg(test)]\nfn test_only_function() {}\n\
         #[cfg(test)]\nmod fuzz;\nfn after() {}\n"
    );
    assert_eq!(files, ["fuzz"]);
}

/// The repository explains itself: what its code and pages cite is a page of `docs/` (whose
/// existence `docs.rs` checks), never a section number of a document it does not hold.
#[test]
fn nothing_cites_a_document_outside_the_repository() {
    let marker = ["DESIGN", " §"].concat();
    let mut found = Vec::new();
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples", "docs", "schemas", ".ci"] {
        walk(&repo().join(dir), &mut files);
    }
    files.extend(["README.md", "ARCHITECTURE.md", "Cargo.toml"].map(|f| repo().join(f)));
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (n, line) in text.lines().enumerate() {
            if line.contains(&marker) {
                found.push(format!("{}:{}", rel(&file), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "cite the docs/ page instead: {found:#?}");
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

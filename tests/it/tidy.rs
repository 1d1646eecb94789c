//! What each module must not know, checked by reading the sources (ARCHITECTURE.md).

use std::path::{Path, PathBuf};

use super::util::repo;

fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            let mut text = std::fs::read_to_string(&p).unwrap();
            // Unit tests may set up files and print; the rules are about the code they
            // test. A file of tests only says so at its top.
            if let Some(i) = text.find("#[cfg(test)]").or_else(|| text.find("#![cfg(test)]")) {
                text.truncate(i);
            }
            out.push((p, text));
        }
    }
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(repo()).unwrap().to_string_lossy().replace('\\', "/")
}

#[test]
fn only_the_store_touches_the_disk() {
    for (path, text) in sources(&repo().join("src")) {
        let r = rel(&path);
        if r.starts_with("src/store/") {
            continue;
        }
        for banned in ["std::fs", "fs::read", "fs::write", "File::open", "File::create"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: disk access belongs in src/store/");
        }
    }
}

#[test]
fn only_surfaces_know_clap_and_print() {
    for (path, text) in sources(&repo().join("src")) {
        let r = rel(&path);
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
    for (path, text) in sources(&repo().join("src/surface")) {
        let r = rel(&path);
        for banned in ["crate::index", "crate::pool", "crate::schema", "Index::", "Pool::"] {
            assert!(!text.contains(banned), "{r} uses `{banned}`: surfaces go through query::Engine");
        }
    }
    // And only the surfaces speak HTTP or serve MCP; the pool is an MCP client.
    for (path, text) in sources(&repo().join("src")) {
        let r = rel(&path);
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
    for (path, text) in sources(&repo().join("src")) {
        let r = rel(&path);
        if r.starts_with("src/parse/") || r == "src/model.rs" || r == "src/schema.rs" {
            for banned in ["crate::store", "crate::check", "crate::surface", "ignore::"] {
                assert!(!text.contains(banned), "{r} uses `{banned}`: parsing is pure");
            }
        }
    }
}

#[test]
fn no_placeholders_and_every_module_says_what_it_is() {
    for dir in ["src", "tests", "benches", "examples"] {
        for (path, text) in sources(&repo().join(dir)) {
            let r = rel(&path);
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

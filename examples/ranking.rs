//! Ranking quality on real-world Markdown: each document's own title (and description)
//! is a query, and the document should come first.
//!
//! ```sh
//! cargo run --release --example ranking -- ../shared/corpora/eips ../shared/corpora/cpp-docs
//! ```
//!
//! For each corpus: copies it into a temporary root as an `index.include` folder, indexes
//! it, and prints MRR@10 and recall@1 for title queries and for description queries.

#![allow(clippy::print_stdout, reason = "an example reports to its user on stdout")]

use std::path::Path;

use tmws::query::api::SearchRequest;
use tmws::query::{Engine, SyncOptions};

fn copy(from: &Path, to: &Path, files: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(from).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            copy(&p, &to.join(&name), files);
        } else if name.ends_with(".md") {
            std::fs::create_dir_all(to).unwrap();
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(to.join(&name), &bytes).unwrap();
            files.push((to.join(&name).to_string_lossy().into_owned(), bytes));
        }
    }
}

/// (MRR@10, recall@1, queries) for the given (query, expected refId) pairs.
fn score(engine: &Engine, cases: &[(String, String)]) -> (f64, f64, usize) {
    let (mut rr, mut first) = (0.0, 0);
    for (q, want) in cases {
        let Ok(res) = engine.search(&SearchRequest::new(q.clone())) else { continue };
        if let Some(i) = res.answer.results.iter().position(|h| &h.ref_id == want) {
            rr += 1.0 / (i as f64 + 1.0);
            if i == 0 {
                first += 1;
            }
        }
    }
    let n = cases.len().max(1) as f64;
    (rr / n, f64::from(first) / n, cases.len())
}

fn main() {
    for corpus in std::env::args().skip(1) {
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join(".tmws")).unwrap();
        std::fs::write(dir.join(".tmws/config.toml"), "[index]\ninclude = [\"corpus\"]\n").unwrap();
        let mut files = Vec::new();
        copy(Path::new(&corpus), &dir.join("corpus"), &mut files);
        let engine = Engine::open(&dir).unwrap();
        let started = std::time::Instant::now();
        let report = engine.sync(&SyncOptions::default()).unwrap();
        let secs = started.elapsed().as_secs_f64();
        let mut titles = Vec::new();
        let mut descriptions = Vec::new();
        for (path, bytes) in &files {
            let rel = Path::new(path).strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
            let name = field(bytes, "name").or_else(|| field(bytes, "title"));
            if let Some(t) = name {
                titles.push((t, rel.clone()));
            }
            if let Some(d) = field(bytes, "description").filter(|d| d.split_whitespace().count() >= 3) {
                descriptions.push((d, rel));
            }
        }
        let (t_mrr, t_r1, t_n) = score(&engine, &titles);
        let (d_mrr, d_r1, d_n) = score(&engine, &descriptions);
        println!(
            "{corpus}: {} docs indexed in {secs:.2} s ({:.0} docs/s); titles: MRR@10 {t_mrr:.3}, recall@1 {t_r1:.3} ({t_n} queries); descriptions: MRR@10 {d_mrr:.3}, recall@1 {d_r1:.3} ({d_n} queries)",
            report.items,
            report.items as f64 / secs
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A text field of a file's front-matter (a BOM and CRLF allowed), when it parses.
fn field(bytes: &[u8], key: &str) -> Option<String> {
    let text = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (front, _) = text.strip_prefix("---\n")?.split_once("\n---")?;
    let yaml = yaml_rust2::YamlLoader::load_from_str(front).ok()?.into_iter().next()?;
    yaml[key].as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned)
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tmws-ranking-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

//! Ranking quality: a document's own title, as a query, finds it first (EIPs corpus).

use tmws::query::api::SearchRequest;
use tmws::query::{Engine, SyncOptions};

use super::util::{TestRoot, corpora, front_matter_field, full_corpora};

#[test]
fn titles_find_their_documents_first_in_the_eips_corpus() {
    let root = TestRoot::new().file(".tmws/config.toml", "[index]\ninclude = [\"eips\"]\n");
    let mut cases = Vec::new();
    let dir = corpora().join("eips/EIPS");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        let rel = format!("eips/{}", p.file_name().unwrap().to_string_lossy());
        root.write(&rel, &bytes);
        if let Some(title) = front_matter_field(&bytes, "title") {
            cases.push((title, rel));
        }
    }
    let engine = Engine::open(root.path()).unwrap();
    engine.sync(&SyncOptions::default()).unwrap();
    let (mut rr, mut first) = (0.0, 0);
    for (title, rel) in &cases {
        let hits = engine.search(&SearchRequest::new(title.clone())).unwrap().answer.results;
        if let Some(i) = hits.iter().position(|h| &h.ref_id == rel) {
            rr += 1.0 / (i as f64 + 1.0);
            first += usize::from(i == 0);
        }
    }
    let n = cases.len() as f64;
    assert_eq!(cases.len(), if full_corpora() { 584 } else { 102 });
    let (mrr, recall1) = (rr / n, first as f64 / n);
    assert!(mrr >= 0.98 && recall1 >= 0.97, "MRR@10 {mrr:.3}, recall@1 {recall1:.3}");
}

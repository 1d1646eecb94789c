//! Memory entries as the memory benches write them: words from a vocabulary of a few
//! thousand with a Zipf-like spread (a few words are everywhere, most are rare), as text
//! written by people has, and queries of a common word and rarer ones.

pub const WORDS: [&str; 24] = [
    "deploy",
    "cache",
    "token",
    "refresh",
    "database",
    "pool",
    "timeout",
    "retry",
    "staging",
    "release",
    "index",
    "watcher",
    "schema",
    "migration",
    "latency",
    "queue",
    "worker",
    "config",
    "secret",
    "branch",
    "merge",
    "lock",
    "compaction",
    "session",
];

/// The `i`-th entry's content: four words of the Zipf-like vocabulary and a common word.
pub fn content(i: usize) -> String {
    // A cheap deterministic hash spreads the picks.
    let pick = |salt: usize| {
        let x = (i.wrapping_mul(2_654_435_761) ^ salt.wrapping_mul(40_503)).wrapping_mul(2_246_822_519) >> 7;
        // Zipf-like: rank r with probability ~ 1/r over 4,000 words.
        let u = (x % 1_000_000) as f64 / 1_000_000.0;
        let r = (4_000f64.powf(u)) as usize;
        letters(r)
    };
    format!(
        "Entry {i}: the {} {} needs a {} after the {} ({})",
        pick(1),
        pick(2),
        WORDS[i % WORDS.len()],
        pick(3),
        pick(4)
    )
}

/// Queries of two or three words: a common word and rarer ones, as people search.
pub fn queries() -> Vec<String> {
    (0..50).map(|q| format!("{} {} {}", WORDS[q % WORDS.len()], letters(3 + q * 7), letters(40 + q * 31))).collect()
}

/// A word of letters only, one per number (digits would be split off by the analyzer).
pub fn letters(mut i: usize) -> String {
    let mut w = String::from("zq");
    loop {
        w.push(char::from(b'a' + u8::try_from(i % 26).unwrap_or(0)));
        i /= 26;
        if i == 0 {
            return w;
        }
    }
}

/// The `add` line of the `i`-th long-term memory as the benches write it: its content (as
/// its summary too), a tag, and `extra` fields (`,"agent":"x"`) after the others.
pub fn add_line(i: usize, extra: &str) -> String {
    let content = content(i);
    let id = tmws::query::memory::memory_id("long-term", &content);
    format!(
        "{{\"op\":\"add\",\"id\":\"{id}\",\"ns\":\"long-term\",\"at\":\"2026-11-01T00:00:00Z\",\"expires_at\":\"2036-11-01T00:00:00Z\",\"kind\":\"note\",\"content\":\"{content}\",\"summary\":\"{content}\",\"tags\":[\"{}\"],\"importance\":0.5{extra}}}\n",
        WORDS[(i / 7) % WORDS.len()]
    )
}

/// A root of 10k generated documents and `memories` long-term memories, made once under the
/// temp folder as `name` (again when `version` changes) and indexed as this version of tmws
/// indexes. `prepare` runs on the new root before the log is written (more files, git) and
/// gives each memory's extra fields ([`add_line`]).
pub fn docs_and_memories_root(
    name: &str,
    version: &str,
    memories: usize,
    prepare: impl FnOnce(&std::path::Path) -> Box<dyn Fn(usize) -> String>,
) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(name);
    let marker = root.join(".tmws/generated");
    if !std::fs::read_to_string(&marker).is_ok_and(|t| t.trim() == version) {
        let _ = std::fs::remove_dir_all(&root);
        super::generate(&root, 10_000);
        let extra = prepare(&root);
        let log: String = (0..memories).map(|i| add_line(i, &extra(i))).collect();
        std::fs::create_dir_all(root.join(".tmws/memory")).unwrap();
        std::fs::write(root.join(".tmws/config.toml"), "[namespaces.long-term]\nmax_entries = 200000\n").unwrap();
        std::fs::write(root.join(".tmws/memory/long-term.jsonl"), log).unwrap();
        std::fs::write(&marker, version).unwrap();
    }
    tmws::query::Engine::open(&root).unwrap().sync(&tmws::query::SyncOptions::default()).unwrap();
    root
}

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

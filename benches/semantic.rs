//! The built-in embedding model (src/semantic): what recall by meaning costs.
//!
//! - `builtin_parse`: parsing the built-in model, what the first `Model::builtin()` of a
//!   process costs (every CLI command that embeds pays it once).
//! - `embed_paragraph`: `embed` of a ~2 KB English paragraph.
//! - `embed_100k_body`: `embed` of a 100 KB body, read only up to its first 512 tokens.
//! - `dot_i8_100k`: `dot_i8` of a query against 100,000 stored int8 vectors of 256 values,
//!   the scan of one query (budget: 1 ms).
//! - `encoder_question`, `encoder_memory`, `encoder_paragraph`: the transformer tier's
//!   encoder (`[semantic] memories`, from the folder `TMWS_ENCODER` names) on a 10-token
//!   question, a 40-token memory and the 2 KB paragraph (cut at 256 tokens); what a
//!   question to memories and a memory's write cost more with it. Without `TMWS_ENCODER`
//!   they measure nothing and say so.
//!
//! Run with `cargo bench --bench semantic`.

use divan::{Bencher, black_box};
use tmws::semantic::{Model, dot_i8};

// The binary's allocator, so that in-process figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// About 2 KB of ordinary English prose, the size of a memory or a short page.
const PARAGRAPH: &str = "The staging environment mirrors production closely, but it runs on \
smaller machines and its database is refreshed from a masked snapshot every Sunday night. \
Credentials for the staging database rotate every Monday morning; the new password is \
written to the team vault, and the deploy pipeline reads it from there, so nobody should \
copy it into configuration files or chat. When a rotation fails, the on-call engineer gets \
a page, and the previous password stays valid for another twelve hours while the cause is \
found. Migrations run before each deploy: a migration that takes longer than five minutes \
blocks the pipeline, and the release manager decides whether to roll back or wait. Feature \
flags are read at start-up and cached for a minute, which means a flag turned off in the \
dashboard can still be seen as on by a process that started just before the change. Logs \
are kept for fourteen days in staging and ninety days in production; traces are sampled at \
ten percent, except for requests that fail, which are always kept. The load balancer \
checks each instance's health endpoint every ten seconds and takes an instance out of \
rotation after three failures in a row. Cache keys include the schema version, so a \
deploy that changes the schema starts with a cold cache, and the first minutes after such \
a deploy are slower than usual. Backups are taken every six hours, copied to another \
region, and restored once a month into a scratch environment to prove that they work; the \
last restore took forty minutes. Anyone who changes the network rules must open a ticket \
first, because the firewall is managed as code and a manual change is overwritten at the \
next apply. Certificates renew automatically thirty days before they expire, and an alert \
fires when a renewal has failed twice. New services get a staging slot only after their \
owners have written a runbook that says how to restart them, whom to call, and which \
dashboards to watch. Questions about any of this go to the platform channel.";

#[divan::bench]
fn builtin_parse() -> Model {
    Model::parse_builtin().unwrap()
}

#[divan::bench]
fn embed_paragraph(bencher: Bencher) {
    let model = Model::builtin();
    assert!(PARAGRAPH.len() > 1900 && PARAGRAPH.len() < 2200, "{}", PARAGRAPH.len());
    bencher.bench(|| model.embed(black_box(PARAGRAPH)));
}

#[divan::bench]
fn embed_100k_body(bencher: Bencher) {
    let model = Model::builtin();
    let body = PARAGRAPH.repeat(100 * 1024 / PARAGRAPH.len() + 1);
    assert_eq!(model.tokens(&body).len(), model.max_tokens());
    bencher.bench(|| model.embed(black_box(&body)));
}

#[divan::bench]
fn dot_i8_100k(bencher: Bencher) {
    const ROWS: usize = 100_000;
    const DIM: usize = 256;
    // Stored vectors from a fixed generator, one after another as an index keeps them.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as i8
    };
    let rows: Vec<i8> = (0..ROWS * DIM).map(|_| next()).collect();
    let query: Vec<i8> = (0..DIM).map(|_| next()).collect();
    bencher.bench(|| {
        let mut best = i32::MIN;
        for row in rows.chunks_exact(DIM) {
            best = best.max(dot_i8(black_box(&query), row));
        }
        best
    });
}

/// The encoder of `TMWS_ENCODER`, read once.
fn encoder() -> Option<&'static tmws::semantic::encoder::Encoder> {
    use tmws::semantic::encoder::{Encoder, EncoderFiles};
    static ENCODER: std::sync::OnceLock<Option<Encoder>> = std::sync::OnceLock::new();
    ENCODER
        .get_or_init(|| {
            let dir = std::path::PathBuf::from(std::env::var_os("TMWS_ENCODER")?);
            let read = |name: &str| std::fs::read(dir.join(name)).ok();
            let files = EncoderFiles {
                weights: read("model.safetensors")?,
                vocab: read("vocab.txt")?,
                config: read("config.json")?,
                sentence_config: read("sentence_bert_config.json"),
            };
            Some(Encoder::parse(&files).expect("TMWS_ENCODER holds an encoder"))
        })
        .as_ref()
}

fn encode(bencher: Bencher, text: &str) {
    let Some(encoder) = encoder() else {
        #[allow(clippy::print_stderr, reason = "a bench without its input says why")]
        {
            eprintln!("TMWS_ENCODER is not set: the encoder benches measure nothing");
        }
        return;
    };
    bencher.bench(|| encoder.embed(black_box(text)));
}

#[divan::bench]
fn encoder_question(bencher: Bencher) {
    encode(bencher, "when do credentials for the test db change?");
}

#[divan::bench]
fn encoder_memory(bencher: Bencher) {
    encode(
        bencher,
        "Credentials for the staging database rotate every Monday morning; the new password is \
         written to the team vault, and the deploy pipeline reads it from there, so nobody copies it.",
    );
}

#[divan::bench]
fn encoder_paragraph(bencher: Bencher) {
    encode(bencher, PARAGRAPH);
}

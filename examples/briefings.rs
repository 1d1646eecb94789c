//! How well briefings brief: replays the hook payloads of `testdata/briefings/payloads.jsonl`
//! (four agent clients working in the project of `testdata/briefings/project/`) through
//! `tmws brief`'s library function, in order, as the clients' hooks would run it.
//!
//! ```sh
//! cargo run --example briefings
//! cargo run --example briefings -- --json
//! cargo run --example briefings -- --show 1 --show 12
//! cargo run --example briefings -- --pinned
//! cargo run --example briefings -- --lines
//! ```
//!
//! Copies the project to a temporary folder, replays every payload, and prints per client
//! and event: the labelled payloads and the hits (the expected item briefed within the
//! event's budget, or already briefed earlier in the session since its last compaction),
//! the hit rate, the precision (briefed items on labelled payloads that were expected), the
//! distractors and the share of them that got nothing, items briefed twice in a session
//! without a compaction between, briefings over budget, and characters briefed; then the
//! characters per session and every miss with what was briefed instead.
//! `--show LINE` then prints what the payload of that line of `payloads.jsonl` printed;
//! `--lines` prints one line per payload (what it expected, what it got);
//! `--pinned` prints the rows as `tests/it/briefings_replay.rs` pins them, to paste there
//! when a change moves them for the better.
//! `tests/it/briefings_replay.rs` pins the same figures.

#![allow(clippy::print_stdout, reason = "an example reports to its user on stdout")]

#[path = "../tests/it/briefing_set.rs"]
mod briefing_set;

fn main() {
    let mut json = false;
    let mut pinned = false;
    let mut lines = false;
    let mut show: Vec<usize> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => json = true,
            "--pinned" => pinned = true,
            "--lines" => lines = true,
            "--show" => show.push(args.next().and_then(|n| n.parse().ok()).expect("--show LINE")),
            other => panic!("unknown argument {other:?}: --json, --pinned, --lines, --show LINE"),
        }
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let replay = briefing_set::Replay::run(dir.path());
    if pinned {
        for row in replay.rows() {
            println!("    {:?},", row.pinned());
        }
        return;
    }
    if lines {
        for o in &replay.outcomes {
            let verdict = match (o.case.distractor(), o.hit(), o.hit_now) {
                (true, _, _) if o.is_silent() => "silent",
                (true, _, _) => "BRIEFED",
                (false, true, true) => "hit",
                (false, true, false) => "hit earlier",
                (false, false, _) => "MISS",
            };
            println!(
                "{:>3} {:<7} {:<13} {:<3} {:<11} {:>4} {:?} want {:?} got {:?}",
                o.case.line,
                o.case.client,
                o.case.event,
                o.case.session,
                verdict,
                o.chars,
                o.case.gist(),
                o.expect,
                o.items
            );
        }
        return;
    }
    let long = tempfile::tempdir().expect("a temporary folder");
    let long_chars = briefing_set::long_session(long.path());
    if json {
        let mut v = replay.json();
        v["long_session_chars"] = serde_json::Value::from(long_chars);
        println!("{}", serde_json::to_string_pretty(&v).expect("JSON of plain values"));
    } else {
        print!("{}", replay.render());
        println!(
            "\nA session start and {} prompts in one session: {long_chars} characters briefed (ceiling {})",
            briefing_set::LONG_SESSION_PROMPTS,
            briefing_set::SESSION_CEILING
        );
    }
    for line in show {
        let Some(o) = replay.outcomes.iter().find(|o| o.case.line == line) else {
            println!("\nline {line}: no such payload");
            continue;
        };
        println!(
            "\nline {line} ({} {} {}, {:?}): {} characters, items {:?}\n{}",
            o.case.client,
            o.case.event,
            o.case.session,
            o.case.gist(),
            o.chars,
            o.items,
            briefing_set::briefing_text(&o.stdout)
        );
    }
}

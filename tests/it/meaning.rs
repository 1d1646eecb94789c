//! Recall by meaning (docs/ranking.md#meaning) through the real binary: memories, documents
//! and tools found in other words, exact matches kept on top, queries of words only, the
//! model switched off and on again, and near-duplicates named at write time.

use serde_json::Value;

use super::util::TestRoot;

fn json_of(out: &super::util::Output) -> Value {
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Notes that share no word with the questions below, and others about something else.
const NOTES: [&str; 8] = [
    "The staging database password rotates every Monday",
    "Our CI pipeline caches the node_modules folder between runs",
    "Release notes are written by whoever cuts the release",
    "The office coffee machine is descaled on the first of the month",
    "Flaky browser tests are retried twice before they fail the build",
    "Production logs are kept for ninety days in cold storage",
    "The mobile app targets Android 12 and newer",
    "Team lunch is on Thursdays at noon",
];

fn root_with_notes() -> (TestRoot, Vec<String>) {
    let root = TestRoot::new();
    let ids = NOTES
        .iter()
        .map(|n| {
            let added = json_of(&root.run(&["--json", "memory", "add", "--namespace", "long-term", n]));
            added["id"].as_str().unwrap().to_owned()
        })
        .collect();
    (root, ids)
}

fn search(root: &TestRoot, query: &str) -> Vec<Value> {
    let found = json_of(&root.run(&["--json", "memory", "search", query]));
    found["results"].as_array().unwrap().clone()
}

#[test]
fn a_memory_is_found_by_its_meaning_with_no_word_in_common_and_says_so() {
    let (root, ids) = root_with_notes();
    let found = search(&root, "when do db credentials change?");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["id"], ids[0].as_str());
    assert_eq!(found[0]["why"], "meaning");
    assert!(found[0].get("matched").is_none(), "it holds none of the words: {:?}", found[0]);

    let recalled = json_of(&root.run(&["--json", "recall", "how often is the espresso maker cleaned"]));
    assert_eq!(recalled["results"][0]["refId"], ids[3].as_str(), "{recalled:#?}");
    assert_eq!(recalled["results"][0]["why"], "meaning");
    assert_eq!(recalled["results"][0]["matched"], serde_json::json!([]));

    // Words only: the same questions find nothing.
    root.write(".tmws/config.toml", "[semantic]\nmodel = \"off\"\n");
    assert_eq!(search(&root, "when do db credentials change?"), Vec::<Value>::new());
    let recalled = json_of(&root.run(&["--json", "recall", "how often is the espresso maker cleaned"]));
    assert_eq!(recalled["results"], serde_json::json!([]));
}

#[test]
fn a_memory_holding_every_word_stays_above_those_found_by_meaning() {
    let (root, ids) = root_with_notes();
    // Every word of the query is in the CI note; the flaky-test note is close in meaning.
    let found = search(&root, "pipeline caches runs");
    assert_eq!(found[0]["id"], ids[1].as_str(), "{found:#?}");
    assert_eq!(found[0]["matched"], serde_json::json!(["pipeline", "caches", "runs"]));
    assert!(found[0].get("why").is_none());
}

#[test]
fn identifiers_paths_and_quoted_phrases_are_searched_by_words_only() {
    let (root, _) = root_with_notes();
    // Each is close in meaning to a note, and none is a word of one.
    for query in ["docs/espresso-maker.md", "espressoMaker", "\"monday password\"", "evict_lru"] {
        assert_eq!(search(&root, query), Vec::<Value>::new(), "{query}");
    }
    assert_eq!(search(&root, "rotate passwords")[0]["matched"], serde_json::json!(["rotate", "passwords"]));
}

#[test]
fn the_model_shows_itself_and_a_change_of_model_makes_the_vectors_again() {
    let (root, _) = root_with_notes();
    let status = json_of(&root.run(&["--json", "model"]));
    assert_eq!(status["model"], "builtin");
    assert_eq!(status["active"], true);
    assert_eq!(status["dimensions"], 256);
    assert_eq!(status["vocabulary"], 29_525);
    assert_eq!(status["licence"], "Apache-2.0");
    let sha = include_str!("../../assets/model/static-minilm-l6.safetensors.sha256");
    assert_eq!(status["sha256"].as_str(), sha.split_whitespace().next());
    assert_eq!(status["items"], NOTES.len());
    assert_eq!(status["vectors"], NOTES.len());
    assert_eq!(status["current"], true);

    root.write(".tmws/config.toml", "[semantic]\nmodel = \"off\"\n");
    let status = json_of(&root.run(&["--json", "model"]));
    assert_eq!((status["active"].clone(), status["vectors"].clone()), (Value::Bool(false), Value::from(0)));
    let human = root.run(&["model"]);
    assert_eq!(human.stdout, format!("model: off (recall is by words only)\nvectors: 0 of {} items\n", NOTES.len()));

    root.write(".tmws/config.toml", "[semantic]\nmodel = \"builtin\"\n");
    let status = json_of(&root.run(&["--json", "model"]));
    assert_eq!((status["vectors"].clone(), status["current"].clone()), (Value::from(NOTES.len()), Value::Bool(true)));
}

#[test]
fn a_model_folder_outside_the_root_or_not_a_model_is_refused_plainly() {
    let root = TestRoot::new().file(".tmws/config.toml", "[semantic]\nmodel = \"../models\"\n");
    let out = root.run(&["memory", "search", "anything"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            ".tmws/config.toml:2:1: `semantic.model` `../models` must be `builtin`, `off` or a folder inside the root"
        ),
        "{}",
        out.stderr
    );
    // A folder whose file is no model: recall goes on by words, and says why in the log.
    let root = TestRoot::new()
        .file(".tmws/config.toml", "[semantic]\nmodel = \"models/mine\"\n")
        .file("models/mine/model.safetensors", "not a model");
    json_of(&root.run(&["--json", "memory", "add", "the staging database password rotates every Monday"]));
    let status = json_of(&root.run(&["--json", "model"]));
    assert_eq!(status["active"], false);
    assert_eq!(search(&root, "staging password")[0]["matched"], serde_json::json!(["staging", "password"]));
}

#[test]
fn memory_add_names_a_live_memory_that_says_nearly_the_same() {
    let (root, ids) = root_with_notes();
    let again = json_of(&root.run(&[
        "--json",
        "memory",
        "add",
        "--namespace",
        "long-term",
        "the staging database password is rotated every Monday.",
    ]));
    assert_eq!(again["deduplicated"], false);
    assert_eq!(again["similar_to"], serde_json::json!([ids[0]]));
    let other = json_of(&root.run(&["--json", "memory", "add", "the build server runs out of disk on Sundays"]));
    assert!(other.get("similar_to").is_none(), "{other}");
}

#[test]
fn a_document_and_a_tool_are_found_in_other_words() {
    let root = TestRoot::sample();
    let found = json_of(&root.run(&["--json", "search", "how do we keep secrets out of the logs"]));
    let first = &found["results"][0];
    assert_eq!(first["why"], Value::Null, "the sample has a page holding these words: {found:#?}");
}

/// Keywords (three or more) that no page holds all of: a page that holds none of them but
/// says what they mean ranks above a page that holds one of them in passing; the page
/// that holds one of them most strongly stays first.
#[test]
fn keywords_no_page_holds_all_of_let_meaning_rank_the_partial_matches() {
    let root = TestRoot::new()
        .file(".tmws/config.toml", "")
        .file(
            "resources/workspaces/ops/_runbooks/staging.md",
            "---\nname: Staging area for office furniture\n---\nDesks and chairs wait in the staging area of \
             the ground floor. The staging area is cleaned on Fridays.\n",
        )
        .file(
            "resources/workspaces/ops/_runbooks/credentials.md",
            "---\nname: Credentials of the test db\n---\nSecrets of the sql servers used by tests are renewed \
             weekly; credentials older than seven days stop working.\n",
        )
        .file(
            "resources/workspaces/ops/_runbooks/lunch.md",
            "---\n\
             name: Team lunch\n\
             ---\n\
             Lunch is on Thursdays at noon in the canteen on the second floor. Bring your own cup; the\n\
             canteen has plates, forks and knives. Vegetarian dishes are marked in green on the menu,\n\
             and the menu of the week is pinned by the elevator. Guests are welcome when announced a day\n\
             before; the kitchen closes at two. Tables by the window are kept for the visitors of the\n\
             day. Birthdays are celebrated on the last Thursday of the month with a cake from the bakery\n\
             across the street, and the team that organises it changes every quarter. Dishes go back to\n\
             the trolley by the door; the trolley is emptied at three. Fruit is free all week, coffee\n\
             too, and tea is in the cupboard left of the sink. Ask the front desk for the wifi password.\n",
        );
    let found = json_of(&root.run(&["--json", "search", "rotate staging database password"]));
    let got: Vec<(&str, &Value, &Value)> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["refId"].as_str().unwrap(), &r["why"], &r["matched"]))
        .collect();
    let runbook = |name: &str| format!("resources/workspaces/ops/_runbooks/{name}.md");
    let (staging, credentials, lunch) = (runbook("staging"), runbook("credentials"), runbook("lunch"));
    assert_eq!(
        got,
        vec![
            (staging.as_str(), &Value::Null, &serde_json::json!(["staging"])),
            (credentials.as_str(), &Value::from("meaning"), &serde_json::json!([])),
            (lunch.as_str(), &Value::Null, &serde_json::json!(["password"])),
        ],
        "{found:#?}"
    );
    // Two keywords say too little: the page holding one of them comes first.
    let found = json_of(&root.run(&["--json", "search", "database password"]));
    assert_eq!(found["results"][0]["refId"], lunch.as_str(), "{found:#?}");
}

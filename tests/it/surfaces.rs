//! One table of requests run through every surface: the engine in process, the CLI, MCP
//! (rmcp's client over `tmws mcp` and `/mcp`, with either generation of the protocol) and HTTP (reqwest against `tmws serve`). Each surface
//! starts from its own copy of the sample root and runs the table in order; every surface
//! must give the engine's answer, text for text, and the same category for every error.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tmws::query::Engine;

use super::clients::{Answer, Mcp, Protocol, Serve, answer_of, client_named, encode, mcp_over_http};
use super::util::{TestRoot, eventually, tmws};

/// How HTTP asks for it (None: no REST route; MCP at `/mcp` is the same as stdio).
#[derive(Debug, Clone)]
enum Http {
    Get(String),
    Post(&'static str, Value),
    Delete(String),
}

#[derive(Debug, Clone)]
pub(super) struct Case {
    pub(super) what: &'static str,
    pub(super) tool: &'static str,
    pub(super) args: Value,
    /// The CLI's spelling (None: the CLI cannot say it, e.g. an unknown parameter).
    cli: Option<Vec<String>>,
    http: Option<Http>,
    /// A good answer contains this; an error is of this category.
    expect: Result<&'static str, &'static str>,
    /// It changes the files: asked once, never again while waiting for freshness.
    pub(super) writes: bool,
}

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_owned).collect()
}

/// The long-term memory the table adds, and its id.
const NOTE: &str = "The staging database of the billing service listens on port 5433.";

fn note_id() -> String {
    tmws::query::memory::memory_id("long-term", NOTE)
}

pub(super) fn cases() -> Vec<Case> {
    let id = note_id();
    let ok = |what, tool, args, cli: Vec<String>, http, contains| Case {
        what,
        tool,
        args,
        cli: Some(cli),
        http,
        expect: Ok(contains),
        writes: false,
    };
    let err = |what, tool, args, cli: Option<Vec<String>>, http, category| Case {
        what,
        tool,
        args,
        cli,
        http,
        expect: Err(category),
        writes: false,
    };
    let mut add = ok(
        "memory_add with tags",
        "memory_add",
        json!({"content": NOTE, "namespace": "long-term", "tags": ["staging", "billing"]}),
        vec![
            "memory".into(),
            "add".into(),
            NOTE.into(),
            "-n".into(),
            "long-term".into(),
            "--tag".into(),
            "staging,billing".into(),
        ],
        Some(Http::Post("/memory", json!({"content": NOTE, "namespace": "long-term", "tags": ["staging", "billing"]}))),
        "deduplicated: false",
    );
    add.writes = true;
    let mut delete = ok(
        "memory_delete",
        "memory_delete",
        json!({"id": id}),
        words(&format!("memory delete {id}")),
        Some(Http::Delete(format!("/memory/{id}"))),
        "deleted: true",
    );
    delete.writes = true;
    let entry = json!({"topic": "decisions", "workspace": "devtools", "name": "Pin the toolchain",
        "description": "Every build uses the same compiler.", "body": "Why.\n"});
    let mut write = ok(
        "entry_write creates a decision",
        "entry_write",
        entry.clone(),
        vec![
            "new".into(),
            "decisions".into(),
            "Pin the toolchain".into(),
            "-w".into(),
            "devtools".into(),
            "--description".into(),
            "Every build uses the same compiler.".into(),
            "--body".into(),
            "Why.\n".into(),
        ],
        Some(Http::Post("/workspace/entry", entry)),
        "action: created\n",
    );
    write.writes = true;
    let mut invalid = err(
        "entry_write refuses an invalid entry",
        "entry_write",
        json!({"topic": "plans", "workspace": "devtools", "name": "P", "description": "d", "fields": {"status": "later"}}),
        Some(words("new plans P -w devtools --description d --field status=later")),
        Some(Http::Post(
            "/workspace/entry",
            json!({"topic": "plans", "workspace": "devtools", "name": "P", "description": "d", "fields": {"status": "later"}}),
        )),
        "usage",
    );
    invalid.writes = true;
    let problem = json!({"problem": "the staging database refuses connections on port 5432",
                         "solution": "connect to port 5433", "files": ["billing/db.toml"]});
    let mut add_problem = ok(
        "memory_add of a problem and its solution",
        "memory_add",
        problem.clone(),
        words("memory add --problem")
            .into_iter()
            .chain([
                "the staging database refuses connections on port 5432".into(),
                "--solution".into(),
                "connect to port 5433".into(),
                "--file".into(),
                "billing/db.toml".into(),
            ])
            .collect(),
        Some(Http::Post("/memory", problem)),
        "namespace: long-term\n",
    );
    add_problem.writes = true;
    vec![
        write,
        invalid,
        ok(
            "context at the workspace",
            "workspace_get_context",
            json!({"workspace": "devtools"}),
            words("context -w devtools"),
            Some(Http::Get("/workspace/context?workspace=devtools".into())),
            "scope: devtools\n",
        ),
        ok(
            "context at a domain, two topics",
            "workspace_get_context",
            json!({"workspace": "devtools", "domain": "common", "topics": ["lessons", "spikes"]}),
            words("context -w devtools -d common --topics lessons,spikes"),
            Some(Http::Get("/workspace/context?workspace=devtools&domain=common&topics=lessons,spikes".into())),
            "scope: devtools/common\n",
        ),
        ok(
            "context with topics named in the singular",
            "workspace_get_context",
            json!({"workspace": "devtools", "domain": "common", "topics": ["lesson", "_spikes"]}),
            words("context -w devtools -d common --topics lesson,_spikes"),
            Some(Http::Get("/workspace/context?workspace=devtools&domain=common&topics=lesson,_spikes".into())),
            "\nlessons:\n",
        ),
        ok(
            "context at a repository, every topic, no defaults",
            "workspace_get_context",
            json!({"workspace": "devtools", "domain": "common", "repository": "tmws-cli", "topics": ["*"], "include_defaults": false}),
            words("context -w devtools -d common -r tmws-cli --topics * --no-defaults"),
            Some(Http::Get(
                "/workspace/context?workspace=devtools&domain=common&repository=tmws-cli&topics=*&include_defaults=false"
                    .into(),
            )),
            "scope: devtools/common/tmws-cli\n",
        ),
        ok(
            "context cut to a small cap",
            "workspace_get_context",
            json!({"workspace": "devtools", "max_chars": 300}),
            words("context -w devtools --max-chars 300"),
            Some(Http::Get("/workspace/context?workspace=devtools&max_chars=300".into())),
            "truncated: true\n",
        ),
        ok(
            "the workspaces, by name",
            "workspace_list",
            json!({}),
            words("workspaces"),
            Some(Http::Get("/workspace/list".into())),
            "scope: devtools\n",
        ),
        ok(
            "a document read whole by its refId",
            "workspace_read",
            json!({"ref_id": "resources/workspaces/devtools/OVERVIEW.md"}),
            words("read resources/workspaces/devtools/OVERVIEW.md"),
            Some(Http::Get("/workspace/read?ref_id=resources%2Fworkspaces%2Fdevtools%2FOVERVIEW.md".into())),
            "front_matter:\n",
        ),
        err(
            "a file the index does not hold is not read",
            "workspace_read",
            json!({"ref_id": ".tmws/config.toml"}),
            Some(words("read .tmws/config.toml")),
            Some(Http::Get("/workspace/read?ref_id=.tmws%2Fconfig.toml".into())),
            "not_found",
        ),
        ok(
            "search with a kind filter",
            "workspace_search",
            json!({"query": "connection pool", "kinds": ["entry"]}),
            words("search connection pool --kind entry --format yaml"),
            Some(Http::Get("/workspace/search?query=connection%20pool&kinds=entry".into())),
            "kind: entry\n",
        ),
        ok(
            "search in a scope with a limit",
            "workspace_search",
            json!({"query": "index", "scope": "devtools/common", "limit": 2}),
            words("search index --scope devtools/common --limit 2 --format yaml"),
            Some(Http::Get("/workspace/search?query=index&scope=devtools%2Fcommon&limit=2".into())),
            "scope: devtools/common",
        ),
        add,
        ok(
            "memory_search finds what was just added",
            "memory_search",
            json!({"query": "staging database port", "tags": ["billing"]}),
            words("memory search staging database port --tag billing"),
            Some(Http::Get("/memory/search?query=staging%20database%20port&tags=billing".into())),
            "found: 1\n",
        ),
        ok(
            "memory_list gives the newest first",
            "memory_list",
            json!({"namespace": "long-term", "limit": 1}),
            words("memory list -n long-term --limit 1"),
            Some(Http::Get("/memory/list?namespace=long-term&limit=1".into())),
            "summary: The staging database of the billing service listens on port 5433.\n",
        ),
        add_problem,
        ok(
            "recall gives the problem with its solution",
            "recall",
            json!({"task": "staging database refuses"}),
            words("recall staging database refuses"),
            Some(Http::Get("/recall?task=staging%20database%20refuses".into())),
            "solution: connect to port 5433\n",
        ),
        ok(
            "recall on a scope's ladder",
            "recall",
            json!({"task": "single binary", "scope": "devtools/common", "limit": 3}),
            words("recall single binary --scope devtools/common --limit 3"),
            Some(Http::Get("/recall?task=single%20binary&scope=devtools%2Fcommon&limit=3".into())),
            "refId: resources/workspaces/devtools/_decisions/260310-single-binary.md\n",
        ),
        err(
            "recall of an empty task",
            "recall",
            json!({"task": "  "}),
            Some(vec!["recall".into(), "  ".into()]),
            Some(Http::Get("/recall?task=%20%20".into())),
            "usage",
        ),
        ok(
            "memory_get with its content",
            "memory_get",
            json!({"id": id, "include_content": true}),
            words(&format!("memory get {id} --content")),
            Some(Http::Get(format!("/memory/{id}?include_content=true"))),
            "listens on port 5433",
        ),
        ok(
            "tool_search from the registry",
            "tool_search",
            json!({"query": "find symbol"}),
            words("registry search find symbol --format yaml"),
            None,
            "tool: find_symbol\n",
        ),
        ok(
            "tool_describe from the registry",
            "tool_describe",
            json!({"server": "code", "tool": "find_symbol"}),
            words("registry describe code find_symbol"),
            None,
            "input_schema:",
        ),
        delete,
        err(
            "memory_get of the deleted memory",
            "memory_get",
            json!({"id": id}),
            Some(words(&format!("memory get {id}"))),
            Some(Http::Get(format!("/memory/{id}"))),
            "not_found",
        ),
        err(
            "an unknown workspace",
            "workspace_get_context",
            json!({"workspace": "nope"}),
            Some(words("context -w nope")),
            Some(Http::Get("/workspace/context?workspace=nope".into())),
            "not_found",
        ),
        err(
            "a scope name that leaves the folder",
            "workspace_get_context",
            json!({"workspace": "../etc"}),
            Some(words("context -w ../etc")),
            Some(Http::Get(format!("/workspace/context?workspace={}", encode("../etc")))),
            "usage",
        ),
        err(
            "an id that names nothing",
            "memory_get",
            json!({"id": "m_ffffffffffff"}),
            Some(words("memory get m_ffffffffffff")),
            Some(Http::Get("/memory/m_ffffffffffff".into())),
            "not_found",
        ),
        err(
            "a limit out of range",
            "workspace_search",
            json!({"query": "index", "limit": 0}),
            Some(words("search index --limit 0 --format yaml")),
            Some(Http::Get("/workspace/search?query=index&limit=0".into())),
            "usage",
        ),
        err(
            "a value of the wrong type",
            "memory_search",
            json!({"query": "index", "limit": "many"}),
            Some(words("memory search index --limit many")),
            Some(Http::Get("/memory/search?query=index&limit=many".into())),
            "usage",
        ),
        err(
            "an unknown parameter",
            "workspace_search",
            json!({"query": "index", "colour": "red"}),
            None,
            Some(Http::Get("/workspace/search?query=index&colour=red".into())),
            "usage",
        ),
        err(
            "an unknown server",
            "tool_describe",
            json!({"server": "nowhere", "tool": "x"}),
            Some(words("registry describe nowhere x")),
            None,
            "not_found",
        ),
    ]
}

/// Timestamps differ from run to run, and who wrote a memory from surface to surface
/// (the person at the command line, the MCP client, `http`): everything else must not.
fn normalise(a: Answer) -> Answer {
    let re = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    let who = regex::Regex::new(r"(?m)^(\s*)(author|trust|source): .*$").unwrap();
    match a {
        Answer::Ok(t) => {
            let t = re.replace_all(&t, "<time>");
            // A written entry names its author in its front-matter, so the hash of the file
            // differs by the surface that wrote it.
            let written = regex::Regex::new(r"(?m)^hash: [0-9a-f]{64}$").unwrap();
            let t = if t.contains("\naction: ") { written.replace_all(&t, "hash: <hash>") } else { t };
            Answer::Ok(who.replace_all(&t, "$1$2: <who>").into_owned())
        }
        e => e,
    }
}

fn engine_answers(cases: &[Case]) -> Vec<Answer> {
    let root = TestRoot::sample();
    let engine = Engine::open(root.path()).unwrap();
    let session = engine.session();
    cases
        .iter()
        .map(|c| {
            let args = c.args.as_object().unwrap().clone();
            match engine.call_blocking(&session, c.tool, args) {
                Ok(tmws::query::catalog::Output::Text { text, .. }) => Answer::Ok(text),
                Ok(other) => panic!("{}: {other:?}", c.what),
                Err(e) => Answer::Err(e.category().as_str().to_owned(), e.to_string()),
            }
        })
        .collect()
}

#[test]
fn every_surface_gives_the_engines_answers_and_error_categories() {
    let cases = cases();
    let expected: Vec<Answer> = engine_answers(&cases).into_iter().map(normalise).collect();
    // The table means something: each good answer holds what it should, each error is of
    // the category it should be.
    for (c, a) in cases.iter().zip(&expected) {
        match (c.expect, a) {
            (Ok(contains), Answer::Ok(text)) => assert!(text.contains(contains), "{}: {text}", c.what),
            (Err(category), Answer::Err(got, _)) => assert_eq!(got, category, "{}", c.what),
            (want, got) => panic!("{}: expected {want:?}, got {got:?}", c.what),
        }
    }

    // The CLI: the answer on stdout, or the message on stderr and the category's exit code.
    let root = TestRoot::sample();
    for (c, want) in cases.iter().zip(&expected) {
        let Some(argv) = &c.cli else { continue };
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = tmws(root.path(), &argv);
        match want {
            Answer::Ok(text) => {
                assert_eq!(out.code, 0, "{}: {}", c.what, out.stderr);
                assert_eq!(&normalise(Answer::Ok(out.stdout)), want, "CLI, {}", c.what);
                assert!(!text.is_empty());
            }
            Answer::Err(category, message) => {
                let code = category_exit_code(category);
                assert_eq!(out.code, code, "CLI, {}: {}", c.what, out.stderr);
                // The command line names the flags it was given (`--limit`) where the engine
                // names parameters (`limit`); the rest is the engine's message.
                let line = out.stderr.lines().next().unwrap_or("");
                assert_eq!(as_parameters(line), format!("tmws: {message}"), "CLI, {}", c.what);
            }
        }
    }

    // MCP over stdio: errors are results with isError and their category. A server's
    // index catches up with a write in the background, and `memory_get` does not say when
    // it is behind: after each write, a search that does say so is asked until it is not.
    // Both generations of the protocol, over stdio and over `/mcp`.
    let through_mcp = |call: &dyn Fn(&str, Value) -> Answer, how: &str| {
        let fresh = |tool: &str, args: Value| {
            eventually(&format!("a fresh answer of {tool}, {how}"), || {
                let a = call(tool, args.clone());
                if a.stale() { Err(a) } else { Ok(a) }
            })
        };
        for (c, want) in cases.iter().zip(&expected) {
            let got = if c.writes { call(c.tool, c.args.clone()) } else { fresh(c.tool, c.args.clone()) };
            assert_eq!(&normalise(got), want, "MCP {how}, {}", c.what);
            if c.writes {
                fresh("memory_search", json!({"query": "caught up"}));
            }
        }
    };
    for protocol in Protocol::BOTH {
        let root = TestRoot::sample();
        let mcp = Mcp::start_as(root.path(), &[], protocol, client_named("table"));
        through_mcp(&|tool, args| mcp.call(tool, args), &format!("{protocol:?} over stdio"));
        mcp.stop();
        let root = TestRoot::sample();
        let serve = Serve::start(root.path(), None);
        let client = mcp_over_http(&serve.rt, &serve.url, &serve.token, protocol, client_named("table"));
        let call = |tool: &str, args: Value| {
            let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone());
            answer_of(&serve.rt.block_on(client.call_tool(params)).unwrap())
        };
        through_mcp(&call, &format!("{protocol:?} over /mcp"));
    }

    // HTTP: the REST routes, the error's status and its JSON body.
    let root = TestRoot::sample();
    let serve = Serve::start(root.path(), Some("cross-surface-token"));
    for (c, want) in cases.iter().zip(&expected) {
        let Some(http) = &c.http else { continue };
        let response = eventually(&format!("a fresh answer over HTTP, {}", c.what), || {
            let r = match http {
                Http::Get(path) => serve.get(path),
                Http::Post(path, body) => serve.post(path, &body.to_string()),
                Http::Delete(path) => serve.delete(path),
            };
            if c.writes || !r.answer().stale() { Ok(r) } else { Err(r.body) }
        });
        assert_eq!(&normalise(response.answer()), want, "HTTP, {}", c.what);
        if c.writes {
            eventually("the server's index caught up with the write", || {
                let r = serve.get("/memory/search?query=caught%20up");
                if r.answer().stale() { Err(r.body) } else { Ok(()) }
            });
        }
        match want {
            Answer::Ok(_) => assert_eq!(response.content_type, "application/yaml; charset=utf-8", "{}", c.what),
            Answer::Err(category, _) => {
                assert_eq!(response.status, category_status(category), "HTTP, {}", c.what);
                assert_eq!(response.content_type, "application/json", "{}", c.what);
            }
        }
    }
}

/// What the contract says each category is on the CLI (docs/errors.md).
fn category_exit_code(category: &str) -> i32 {
    match category {
        "not_found" | "conflict" | "downstream" => 1,
        "usage" | "environment" | "index" => 2,
        other => panic!("unknown category {other}"),
    }
}

/// And over HTTP.
fn category_status(category: &str) -> u16 {
    match category {
        "usage" => 400,
        "not_found" => 404,
        "conflict" => 409,
        "downstream" => 502,
        "environment" | "index" => 500,
        other => panic!("unknown category {other}"),
    }
}

#[test]
fn a_parameter_is_described_once_and_published_by_every_surface() {
    // The request type's doc comment is the MCP description and the CLI's help.
    let root = TestRoot::sample();
    let mcp = Mcp::start(root.path());
    let tools = mcp.tools();
    mcp.stop();
    let search = tools.iter().find(|t| t.name == "workspace_search").unwrap();
    let schema = Value::Object((*search.input_schema).clone());
    let limit = &schema["properties"]["limit"];
    assert_eq!(
        limit,
        &json!({
            "description": "How many results at most, 1 to 100.",
            "type": "integer",
            "default": 10,
            "maximum": 100,
            "minimum": 1
        })
    );
    let help = tmws(root.path(), &["search", "--help"]).stdout;
    assert!(
        help.contains("--limit <LIMIT>") && help.contains("How many results at most, 1 to 100. [default: 10]"),
        "{help}"
    );
    // Every parameter of every tool is a flag of its CLI command, and is accepted over HTTP.
    let context = tools.iter().find(|t| t.name == "workspace_get_context").unwrap();
    let help = tmws(root.path(), &["context", "--help"]).stdout;
    for (param, flag) in [
        ("workspace", "--workspace"),
        ("domain", "--domain"),
        ("repository", "--repository"),
        ("topics", "--topics"),
        ("include_defaults", "--no-defaults"),
        ("filter_status", "--status"),
        ("filter_tags", "--tag"),
        ("filter_category", "--category"),
        ("format", "--format"),
        ("max_chars", "--max-chars"),
    ] {
        assert!(context.input_schema["properties"].get(param).is_some(), "{param}");
        assert!(help.contains(flag), "{flag} in\n{help}");
    }
}

/// A command line's error with each flag (`--max-chars`) named as its parameter
/// (`max_chars`), to compare with what the engine said.
fn as_parameters(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let flag = &rest[at + 2..];
        let end = flag.find(|c: char| !(c.is_ascii_lowercase() || c == '-')).unwrap_or(flag.len());
        out.push_str(&flag[..end].replace('-', "_"));
        rest = &flag[end..];
    }
    out.push_str(rest);
    out
}

//! A tool that exists only here, added to no surface by hand: each surface's tests make it
//! the way they make every tool in the table (the MCP tool list, a CLI command, a REST
//! route) and run it, which is what adding a tool to the table takes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::query::answer::{Answer, Reply};
use crate::query::api::{Format, Params};
use crate::query::catalog::{Command, Cx, Hints, Route, Spec, Typed};

/// Parameters of `ping`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PingRequest {
    /// The word to say back.
    pub word: String,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for PingRequest {}

/// `ping`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct Pong {
    pub said: String,
    pub root_has_tmws: bool,
}

impl Answer for Pong {}

/// A trivial tool: it says the word back, and whether the root it runs in is one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ping;

pub(crate) static PING: Spec = Spec {
    name: "ping",
    title: "Ping",
    description: "Says the word back.",
    hints: Hints::READ,
    cli: Some(Command::new(None, "ping", "Say the word back (ping).", "Examples:\n  tmws ping --word hi")),
    http: &[Route::get("/ping")],
};

impl Typed for Ping {
    type Request = PingRequest;
    type Answer = Pong;

    fn spec(&self) -> &'static Spec {
        &PING
    }

    fn run(&self, cx: &Cx<'_>, req: &PingRequest) -> Result<Reply<Pong>> {
        let root_has_tmws = cx.engine.root().join(".tmws").is_dir();
        let answer = Pong { said: req.word.clone(), root_has_tmws };
        Ok(Reply { answer, format: req.format, max_chars: 1000 })
    }
}

/// A fresh root and its engine.
pub(crate) fn root() -> (tempfile::TempDir, crate::query::Engine) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".tmws")).unwrap();
    let engine = crate::query::Engine::open(dir.path()).unwrap();
    (dir, engine)
}

#[test]
fn a_tool_in_the_table_is_an_mcp_tool_with_its_schema() {
    let listed = super::mcp::listed(&Ping, &crate::config::Config::default());
    assert_eq!(listed.name, "ping");
    assert_eq!(listed.title.as_deref(), Some("Ping"));
    assert_eq!(listed.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    let props = listed.input_schema["properties"].as_object().unwrap();
    assert_eq!(props.keys().collect::<Vec<_>>(), ["word", "format"]);
    assert_eq!(listed.input_schema["required"], serde_json::json!(["word"]));
    let (_dir, engine) = root();
    let args = serde_json::json!({"word": "hi", "format": "json"});
    let answered = engine.answer(&engine.session(), &Ping, args.as_object().unwrap().clone()).unwrap();
    assert_eq!(answered.text(), "{\n  \"said\": \"hi\",\n  \"root_has_tmws\": true\n}");
}

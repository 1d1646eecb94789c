//! The tools over the other MCP servers a project uses: find, describe and call their tools.

use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::{Answered, Command, Cx, Downstream, Hints, Shape, Spec, Table, Tool, Typed};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::query::answer::Reply;
use crate::query::api::{Flag, Params, ToolCallRequest, ToolDescribeRequest, ToolSearchRequest};
use crate::query::registry;
use crate::query::tools::{self, ToolDescription, ToolResults};

const REGISTRY: Option<&str> = Some("registry");

/// `tool_search`: another server's tool by what it should do, from the index.
#[derive(Debug, Clone, Copy)]
pub struct ToolSearch;

static TOOL_SEARCH: Spec = Spec {
    name: "tool_search",
    title: "Find another server's tool",
    description: "Find a tool of the other MCP servers this project uses, by what it should do: returns server, tool, a \
one-line summary, category and a 0-100 score, best first. Answered from tmws's registry: no server is started. \
Then tool_describe gives the tool's input schema and tool_call calls it.",
    hints: Hints::READ,
    cli: Some(Command {
        shape: Shape::Table(Table::Tools),
        ..Command::new(
            REGISTRY,
            "search",
            "Find tools of the registered servers by what they do (tool_search: from the index, no server is \
started).",
            "\
Examples:
  tmws registry search find symbol
  tmws registry search --server serena  every tool of one server
  tmws registry search library docs --category docs --limit 3",
        )
    }),
    http: &[],
};

impl Typed for ToolSearch {
    type Request = ToolSearchRequest;
    type Answer = ToolResults;

    fn spec(&self) -> &'static Spec {
        &TOOL_SEARCH
    }

    fn run(&self, cx: &Cx<'_>, req: &ToolSearchRequest) -> Result<Reply<ToolResults>> {
        let engine = cx.engine;
        let max = req.validate(engine.config())?;
        // Tools carry the model's vectors only: an encoder of memories would cost a query
        // milliseconds for nothing.
        let meaning = crate::index::meaning::model_meaning(engine.root(), engine.config(), &req.query);
        let ((mut answer, current), stale) = engine.searched(
            |m| &m.tool_search,
            |index| {
                Ok((tools::search(index, engine.registry(), req, meaning.clone())?, registry::indexed_as_now(index)))
            },
        )?;
        answer.stale = stale || !current;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }

    fn asked<'r>(&self, req: &'r ToolSearchRequest) -> Option<&'r str> {
        Some(&req.query)
    }
}

/// `tool_describe`: a tool's description and input schema, from the registry file.
#[derive(Debug, Clone, Copy)]
pub struct ToolDescribe;

static TOOL_DESCRIBE: Spec = Spec {
    name: "tool_describe",
    title: "Describe another server's tool",
    description: "The full description, usage hint and JSON input schema of one tool found with tool_search, to build the \
arguments of tool_call. No server is started.",
    hints: Hints::READ,
    cli: Some(Command::new(
        REGISTRY,
        "describe",
        "A tool's description, usage hint and input schema (tool_describe: from the registry, no server is started).",
        "\
Examples:
  tmws registry describe serena find_symbol
  tmws registry describe serena find_symbol --format json",
    )),
    http: &[],
};

impl Typed for ToolDescribe {
    type Request = ToolDescribeRequest;
    type Answer = ToolDescription;

    fn spec(&self) -> &'static Spec {
        &TOOL_DESCRIBE
    }

    fn run(&self, cx: &Cx<'_>, req: &ToolDescribeRequest) -> Result<Reply<ToolDescription>> {
        let max = req.validate(cx.engine.config())?;
        let answer = tools::describe(cx.engine.registry(), &req.server, &req.tool)?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }
}

/// `tool_call`: another server's tool called through the pool; its result, verbatim.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall;

static TOOL_CALL: Spec = Spec {
    name: "tool_call",
    title: "Call another server's tool",
    description: "Call a tool of another MCP server and get its result as that server gives it. The server is started \
on the first call and kept for a while; a call can take as long as the tool needs (up to the pool's timeout). \
Check the arguments with tool_describe first.",
    hints: Hints { open_world: true, ..Hints::ADD },
    cli: Some(Command::new(
        REGISTRY,
        "call",
        "Call a tool the way `tool_call` does (config checked, server started, usage logged) and print its text \
result (--json: the whole result); exit 1 when it is an error.",
        "\
Examples:
  tmws registry call serena find_symbol '{\"name_path\": \"Engine\"}'
  tmws registry call docs get_library_docs '{\"library\": \"tokio\"}' --json",
    )),
    http: &[],
};

impl ToolCall {
    /// Calls the tool through the pool, counting it for `/metrics`.
    pub async fn call(cx: Cx<'_>, req: &ToolCallRequest) -> Result<tools::ToolCallAnswer> {
        let engine = cx.engine;
        req.validate(engine.config())?;
        let arguments = req.arguments.clone();
        let answer = tools::call(
            engine.root(),
            engine.config(),
            engine.registry(),
            engine.pool(),
            &req.server,
            &req.tool,
            arguments,
        )
        .await;
        let m = engine.metrics();
        match &answer {
            Ok(called) => {
                if let Some(d) = called.started {
                    m.connect.observe(d);
                }
                if called.is_error { &m.tool_calls_failed } else { &m.tool_calls_ok }.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                m.tool_calls_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        let failed = !matches!(&answer, Ok(c) if !c.is_error);
        cx.session.note(engine.root(), |a| {
            let c = a.tool_calls.entry(format!("{}/{}", req.server, req.tool)).or_default();
            c.0 += 1;
            c.1 += u64::from(failed);
        });
        answer
    }
}

impl Tool for ToolCall {
    fn spec(&self) -> &'static Spec {
        &TOOL_CALL
    }

    fn schema(&self, config: &Config) -> Map<String, Value> {
        ToolCallRequest::schema(config)
    }

    /// Whatever the other server answered, which tmws does not know in advance: an object
    /// of any fields (see [`ToolCallAnswer::structured`](tools::ToolCallAnswer::structured)).
    fn output_schema(&self) -> Map<String, Value> {
        let schema = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "description": "The other server's answer as it gave it: its structuredContent, or, when it gave none, {\"content\": [its content blocks]}.",
            "additionalProperties": true,
        });
        schema.as_object().cloned().unwrap_or_default()
    }

    fn flags(&self) -> &'static [Flag] {
        ToolCallRequest::FLAGS
    }

    fn stdin_unless(&self) -> &'static [&'static str] {
        ToolCallRequest::STDIN_UNLESS
    }

    fn answer(&self, _cx: &Cx<'_>, _args: Map<String, Value>) -> Result<Answered> {
        Err(Error::Usage(format!("{} runs on the async runtime: use Engine::call", TOOL_CALL.name)))
    }

    fn downstream<'a>(
        &'a self,
        cx: Cx<'a>,
        args: Map<String, Value>,
    ) -> super::Either<Downstream<'a>, Map<String, Value>> {
        Ok(Box::pin(async move {
            let req = ToolCallRequest::from_args(args)?;
            ToolCall::call(cx, &req).await
        }))
    }
}

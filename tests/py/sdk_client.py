"""Drives tmws with the official Python MCP SDK (PyPI `mcp`), as an agent's client would.

Usage: sdk_client.py stdio TMWS ROOT [legacy|auto]
       sdk_client.py http URL TOKEN [legacy|auto]

`legacy` (the default) drives `ClientSession` through the `initialize` handshake; `auto`
uses the SDK's `Client` as it comes (`mode="auto"`): it probes `server/discover` and speaks
the stateless protocol (2026-07-28) when the server does.

Lists the tools, calls every one of them with good arguments and with bad ones, and prints
one JSON report on stdout: what the SDK saw (tool names, annotations, parameter types,
answers, whether each call was an error and its structured content), and every warning the
SDK logged (a session DELETE it took for a failure, say). The Rust test reads the report.
"""

import asyncio
import json
import logging
import sys


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(f"{record.name}: {record.getMessage()}")


# The name this client gives in `initialize`: the verifier of its trust_verify calls.
CLIENT_NAME = "sdk-agent"


def client_info():
    from mcp.types import Implementation

    return Implementation(name=CLIENT_NAME, version="1.0")


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def exercise(session, head):
    report = dict(head)
    tools = (await session.list_tools()).tools
    report["tools"] = {}
    for t in tools:
        props = t.input_schema.get("properties", {})
        report["tools"][t.name] = {
            "title": t.title,
            "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else None,
            "types": {k: v.get("type") for k, v in props.items()},
            "defaults": {k: v["default"] for k, v in props.items() if "default" in v},
            "required": t.input_schema.get("required", []),
        }

    calls = {
        "workspace_list": {},
        "recall": {"task": "the watcher misses new folders", "format": "json"},
        "workspace_get_context": {"workspace": "devtools", "max_chars": 300},
        "workspace_search": {"query": "connection pool", "limit": 2, "format": "json"},
        "workspace_read": {"ref_id": "resources/workspaces/devtools/OVERVIEW.md", "max_chars": 200},
        "memory_add": {"content": "The Python SDK can add memories.", "namespace": "long-term", "tags": ["py"]},
        "memory_search": {"query": "python sdk memories", "format": "json", "min_score": 0},
        "memory_list": {"since": "1d", "limit": 3, "format": "json"},
        "memory_stats": {"format": "json"},
        "memory_verify": {"format": "json"},
        "memory_cleanup": {},
        "session_record": {},
        "tool_search": {"query": "anything"},
        "tool_describe": {"server": "code", "tool": "find_symbol", "format": "json"},
        "entry_write": {
            "topic": "lessons",
            "workspace": "devtools",
            "name": "The Python SDK writes entries",
            "description": "A lesson written through the official SDK.",
            "fields": {"tags": ["py"]},
            "body": "Written over MCP.\n",
            "format": "json",
        },
        "memory_clear": {"namespace": "short-term", "confirm": True},
        "trust_verify": {"agent": "writer-bot", "success": True, "evidence": "its tests pass", "format": "json"},
        "trust_show": {"format": "json"},
        "review_list": {"format": "json"},
        "task_start": {"name": "py-task", "issue": "#7"},
        "task_list": {"format": "json"},
        "task_done": {"name": "py-task", "outcome": "called", "merge": True},
        "issue_show": {"reference": "#123", "format": "json"},
    }
    report["calls"] = {}
    for name, args in calls.items():
        r = await session.call_tool(name, args)
        # As an agent does: an answer that says the index is catching up (`stale`, after a
        # wait of 200 ms, on a loaded machine) is asked again, for two minutes at least.
        for _ in range(1200):
            if r.is_error or args.get("format") != "json" or not json.loads(text_of(r)).get("stale"):
                break
            await asyncio.sleep(0.1)
            r = await session.call_tool(name, args)
        report["calls"][name] = {"is_error": bool(r.is_error), "text": text_of(r)}

    found = json.loads(report["calls"]["memory_search"]["text"])
    memory_id = found["results"][0]["id"] if found["results"] else None
    report["memory_id"] = memory_id
    for name, args in {
        "memory_get": {"id": memory_id, "include_content": True},
        "memory_delete": {"id": memory_id},
    }.items():
        r = await session.call_tool(name, args)
        report["calls"][name] = {"is_error": bool(r.is_error), "text": text_of(r)}

    bad = {
        "unknown parameter": ("workspace_search", {"query": "x", "colour": "red"}),
        "camelCase parameter": ("memory_search", {"query": "x", "minScore": 0.5}),
        "wrong type": ("workspace_search", {"query": "x", "limit": "many"}),
        "out of range": ("workspace_search", {"query": "x", "limit": 0}),
        "missing required": ("workspace_get_context", {}),
        "unknown scope": ("workspace_get_context", {"workspace": "nowhere"}),
        "unknown memory": ("memory_get", {"id": "m_000000000000"}),
        "clear without confirm": ("memory_clear", {"all": True}),
        "unknown refId": ("workspace_read", {"ref_id": ".tmws/config.toml"}),
        "unknown server": ("tool_call", {"server": "nobody", "tool": "x", "arguments": {}}),
        "invalid entry": (
            "entry_write",
            {"topic": "lessons", "workspace": "devtools", "name": "x", "description": "d", "fields": {"created": "soon"}},
        ),
        "self verification": ("trust_verify", {"agent": CLIENT_NAME, "success": True, "evidence": "mine"}),
        "verifier parameter": (
            "trust_verify",
            {"agent": "writer-bot", "success": True, "evidence": "e", "verifier": "writer-bot"},
        ),
        "stale entry": (
            "entry_write",
            {
                "topic": "overview",
                "workspace": "devtools",
                "name": "DevTools",
                "description": "d",
                "ref_id": "resources/workspaces/devtools/OVERVIEW.md",
                "expected_hash": "0" * 64,
            },
        ),
    }
    report["bad"] = {}
    for what, (name, args) in bad.items():
        r = await session.call_tool(name, args)
        report["bad"][what] = {
            "is_error": bool(r.is_error),
            "text": text_of(r),
            "structured": r.structured_content,
        }
    try:
        await session.call_tool("no_such_tool", {})
        report["unknown_tool"] = "answered"
    except Exception as e:  # an MCP error, as the spec says for an unknown tool
        report["unknown_tool"] = type(e).__name__ + ": " + str(e)
    return report


async def main():
    collect = Collect()
    logging.getLogger().addHandler(collect)
    logging.getLogger().setLevel(logging.WARNING)
    surface = sys.argv[1]
    protocol = sys.argv[4] if len(sys.argv) > 4 else "legacy"
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.client import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def legacy(read, write):
        async with ClientSession(read, write, client_info=client_info()) as session:
            init = await session.initialize()
            head = {"server": init.server_info.name, "instructions": init.instructions or "", "protocol": init.protocol_version}
            return await exercise(session, head)

    async def auto(server):
        async with Client(server, client_info=client_info(), mode="auto") as client:
            head = {
                "server": client.server_info.name if client.server_info else None,
                "instructions": client.instructions or "",
                "protocol": client.protocol_version,
            }
            return await exercise(client, head)

    if surface == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=["mcp"], cwd=sys.argv[3])
        if protocol == "auto":
            report = await auto(params)
        else:
            async with stdio_client(params) as (read, write):
                report = await legacy(read, write)
    else:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {sys.argv[3]}"})
        async with http:
            transport = streamable_http_client(sys.argv[2], http_client=http, terminate_on_close=True)
            if protocol == "auto":
                report = await auto(transport)
            else:
                async with transport as (read, write):
                    report = await legacy(read, write)
    report["warnings"] = collect.records
    print(json.dumps(report))


asyncio.run(main())

"""Checks tmws' typed answers with the official Python MCP SDK's `Client` (PyPI `mcp`).

Usage: sdk_typed.py MODE stdio TMWS ROOT
       sdk_typed.py MODE http URL TOKEN

MODE is the SDK's connection mode: `auto` (its default: `server/discover`, falling back to
`initialize`) or `legacy` (`initialize`). The SDK validates each tool result's
structuredContent against the tool's outputSchema itself and raises when it is missing or
does not keep to it; this script validates it again with `jsonschema` (the SDK's own
validator) to report every failure, not only the first. It calls every tool with good
arguments (`tool_call` through the `mock` server the root's registry names), follows the
first resource link of a search with `resources/read`, and reads URIs that name nothing or
could leave the root. It prints one JSON report on stdout; the Rust test reads it.
"""

import asyncio
import json
import os
import sys

from jsonschema.validators import validator_for

CALLS = [
    ("workspace_list", {}),
    ("recall", {"task": "the watcher misses new folders"}),
    ("workspace_get_context", {"workspace": "devtools", "topics": ["*"]}),
    ("workspace_get_context", {"workspace": "devtools", "max_chars": 300}),
    ("workspace_search", {"query": "connection pool", "limit": 2}),
    ("workspace_read", {"ref_id": "resources/workspaces/devtools/OVERVIEW.md"}),
    ("workspace_read", {"ref_id": "resources/workspaces/devtools/OVERVIEW.md", "max_chars": 100}),
    ("memory_add", {"content": "The typed SDK client adds memories.", "namespace": "long-term", "tags": ["py"]}),
    ("memory_add", {"problem": "typed answers were text only", "solution": "publish an output schema"}),
    ("memory_search", {"query": "typed sdk client memories", "min_score": 0, "include_content": True}),
    ("memory_list", {"since": "1d", "limit": 3}),
    ("memory_stats", {}),
    ("memory_verify", {}),
    ("memory_cleanup", {}),
    ("session_record", {}),
    ("tool_search", {"query": "echo"}),
    ("tool_describe", {"server": "mock", "tool": "echo"}),
    ("tool_call", {"server": "mock", "tool": "echo", "arguments": {"text": "hello"}}),
    (
        "entry_write",
        {
            "topic": "lessons",
            "workspace": "devtools",
            "name": "Typed answers keep to their schema",
            "description": "A lesson written through the SDK's Client.",
            "body": "Written over MCP.\n",
        },
    ),
    ("memory_clear", {"namespace": "short-term", "confirm": True}),
    ("trust_verify", {"agent": "writer-bot", "success": True, "evidence": "its tests pass"}),
    ("trust_show", {}),
    ("review_list", {}),
    ("task_start", {"name": "py-typed", "issue": "#7"}),
    ("task_list", {"all": True}),
    ("task_done", {"name": "py-typed", "outcome": "validated", "merge": True}),
    ("issue_show", {"reference": "#123"}),
]

HOSTILE = [
    "tmws://ref/../../etc/passwd",
    "tmws://ref/%2Fetc%2Fpasswd",
    "file:///etc/passwd",
    "tmws://ref/.tmws/config.toml",
]


async def exercise(client):
    from mcp.shared.exceptions import MCPError

    report = {"protocol": client.protocol_version, "validated": [], "invalid": [], "without_schema": [], "errors": {}}
    schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
    report["without_schema"] = sorted(n for n, s in schemas.items() if s is None)

    async def call(name, args):
        result = await client.call_tool(name, args)
        # As an agent does: an answer that says the index is catching up is asked again.
        for _ in range(1200):
            if result.is_error or not (result.structured_content or {}).get("stale"):
                break
            await asyncio.sleep(0.1)
            result = await client.call_tool(name, args)
        if result.is_error:
            report["errors"][name] = result.structured_content
            return result
        schema = schemas[name]
        errors = list(validator_for(schema)(schema).iter_errors(result.structured_content))
        report["invalid"].extend(f"{name}: {e.message} at {list(e.absolute_path)}" for e in errors)
        report["validated"].append(name)
        return result

    results = {}
    for name, args in CALLS:
        if name == "entry_write":
            # One lesson per run: the runs share a root, and a new entry never replaces one.
            args = {**args, "name": f"{args['name']} {' '.join(sys.argv[1:3])}"}
        results[name] = await call(name, args)
    found = results["memory_search"].structured_content["results"]
    memory_id = found[0]["id"]
    await call("memory_get", {"id": memory_id, "include_content": True})
    await call("memory_delete", {"id": memory_id})
    report["tool_call"] = results["tool_call"].structured_content

    search = results["workspace_search"]
    link = next(c for c in search.content if c.type == "resource_link")
    read = await client.read_resource(link.uri)
    whole = await client.call_tool("workspace_read", {"ref_id": link.name})
    report["read"] = {
        "link": {"uri": link.uri, "name": link.name, "title": link.title, "mime_type": link.mime_type},
        "mime_type": read.contents[0].mime_type,
        "same_as_workspace_read": read.contents[0].text == whole.content[0].text,
    }
    report["resources"] = [r.uri for r in (await client.list_resources()).resources]
    report["hostile"] = {}
    for uri in HOSTILE:
        try:
            await client.read_resource(uri)
            report["hostile"][uri] = "read"
        except MCPError as e:
            report["hostile"][uri] = {"code": e.error.code, "message": e.error.message}
    return report


async def main():
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    mode, transport = sys.argv[1], sys.argv[2]
    info = Implementation(name="sdk-typed", version="1.0")
    if transport == "stdio":
        # The SDK passes a server only a few variables; this one names where the approvals of
        # this machine are kept (the test's own).
        env = {k: v for k, v in os.environ.items() if k == "TMWS_CONFIG_HOME"}
        server = StdioServerParameters(command=sys.argv[3], args=["mcp"], cwd=sys.argv[4], env=env or None)
        async with Client(server, mode=mode, client_info=info) as client:
            report = await exercise(client)
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers={"Authorization": f"Bearer {sys.argv[4]}"})
        async with http:
            server = streamable_http_client(sys.argv[3], http_client=http, terminate_on_close=True)
            async with Client(server, mode=mode, client_info=info) as client:
                report = await exercise(client)
    print(json.dumps(report))


asyncio.run(main())

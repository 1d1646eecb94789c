"""A scripted agent session through the official Python MCP SDK (PyPI `mcp`), over stdio.

Usage: sdk_session.py TMWS ROOT CLIENT_NAME solve|recall

`solve`: recall for a task, add the problem met and its solution, search, call another
server's tool (`mock/echo`), verify another agent, disconnect. `recall`: recall for a
similar task. Prints one JSON object: each call's error flag and text.
"""

import asyncio
import json
import os
import sys

TASK = "deploys hang after the token refresh"
SIMILAR = "why does the deploy hang once the token is refreshed"


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def run(session, mode, name):
    await session.initialize()
    calls = []
    if mode == "solve":
        calls = [
            ("recall", {"task": TASK, "format": "json"}),
            (
                "memory_add",
                {
                    "problem": "deploys hang after the token refresh: the deploy job keeps the old token",
                    "solution": "reload the token file before each deploy step",
                    "files": ["deploy/run.sh"],
                    "agent": name,
                    "format": "json",
                },
            ),
            ("workspace_search", {"query": "connection pool", "format": "json"}),
            ("tool_call", {"server": "mock", "tool": "echo", "arguments": {"text": "hello"}}),
            ("trust_verify", {"agent": "writer-bot", "success": True, "evidence": "its deploy passed"}),
        ]
    else:
        calls = [("recall", {"task": SIMILAR, "format": "json"})]
    report = []
    for tool, args in calls:
        r = await session.call_tool(tool, args)
        # An answer that says the index is catching up is asked again, as an agent does (for
        # two minutes at least: a busy machine may take long to catch up).
        for _ in range(1200):
            if r.is_error or args.get("format") != "json" or not json.loads(text_of(r)).get("stale"):
                break
            await asyncio.sleep(0.1)
            r = await session.call_tool(tool, args)
        report.append({"tool": tool, "is_error": bool(r.is_error), "text": text_of(r)})
    return report


async def main():
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import Implementation

    tmws, root, name, mode = sys.argv[1:5]
    # The SDK passes a server only a few variables; this one names where the approvals of
    # this machine are kept (the test's own).
    env = {k: v for k, v in os.environ.items() if k == "TMWS_CONFIG_HOME"}
    params = StdioServerParameters(command=tmws, args=["mcp"], cwd=root, env=env or None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name=name, version="1.0")) as session:
            report = await run(session, mode, name)
    print(json.dumps(report))


asyncio.run(main())

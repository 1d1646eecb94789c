"""Calls tools in order through the official Python MCP SDK's `Client` (PyPI `mcp`) over stdio.

Usage: sdk_calls.py MODE TMWS ROOT CALLS

MODE is the SDK's connection mode: `auto` (its default: `server/discover`, falling back to
`initialize`) or `legacy` (`initialize`). CALLS is a JSON list of `[tool, arguments]`. Prints
one JSON list: for each call its error flag and its structured content.
"""

import asyncio
import json
import os
import sys


async def main():
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    mode, tmws, root, calls = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    # The SDK passes a server only a few variables; this one names where the approvals of
    # this machine are kept (the test's own).
    env = {k: v for k, v in os.environ.items() if k == "TMWS_CONFIG_HOME"}
    server = StdioServerParameters(command=tmws, args=["mcp"], cwd=root, env=env or None)
    report = []
    async with Client(server, mode=mode, client_info=Implementation(name="sdk-calls", version="1.0")) as client:
        for name, args in calls:
            result = await client.call_tool(name, args)
            report.append({"is_error": bool(result.is_error), "answer": result.structured_content})
    print(json.dumps(report))


asyncio.run(main())

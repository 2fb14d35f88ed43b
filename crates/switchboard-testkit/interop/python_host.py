"""An MCP host on the official Python SDK's client (PyPI `mcp`, 1.x or 2.x,
installed by scripts/install-interop.sh), for interop tests of
switchboard's server side (`switchboard serve`).

Usage:
    python python_host.py MODE TOOL=JSON_ARGS [TOOL=JSON_ARGS ...] -- COMMAND [ARGS ...]
    python python_host.py MODE TOOL=JSON_ARGS [TOOL=JSON_ARGS ...] -- http://HOST:PORT/mcp

MODE is the 2.x client's `mode` (`legacy`, `auto` or `2026-07-28`); the 1.x
client speaks the session era only and ignores it. Spawns COMMAND over stdio
with this process's environment (or connects to the URL over Streamable
HTTP), lists its tools, calls each TOOL, and
prints one JSON line: {"sdk": version, "protocol": version, "server": name,
"tools": [names], "calls": {TOOL: result}}. A failure prints
{"error": message} and exits 1.
"""

import asyncio
import json
import os
import sys
import traceback
from importlib.metadata import version as package_version

from mcp import StdioServerParameters


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def v1_transport(params):
    if isinstance(params, str):
        from mcp.client.streamable_http import streamablehttp_client

        return streamablehttp_client(params)
    from v1_stdio import stdio_client

    return stdio_client(params)


async def with_v1(params, calls):
    from mcp import ClientSession

    async with v1_transport(params) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = []
            cursor = None
            while True:
                page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
                tools += [t.name for t in page.tools]
                cursor = page.nextCursor
                if not cursor:
                    break
            results = {name: dump(await session.call_tool(name, args)) for name, args in calls}
            return str(init.protocolVersion), init.serverInfo.name, tools, results


async def with_v2(params, calls, mode):
    from mcp.client.client import Client

    async with Client(params, mode=mode) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        results = {name: dump(await client.call_tool(name, args)) for name, args in calls}
        info = client.server_info
        return str(client.protocol_version), info.name if info else None, tools, results


async def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    mode, specs, command = argv[0], argv[1:split], argv[split + 1 :]
    calls = []
    for spec in specs:
        name, _, args = spec.partition("=")
        calls.append((name, json.loads(args)))
    if command[0].startswith(("http://", "https://")):
        params = command[0]
    else:
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    sdk = package_version("mcp")
    if sdk.startswith("1."):
        protocol, server, tools, results = await with_v1(params, calls)
    else:
        protocol, server, tools, results = await with_v2(params, calls, mode)
    print(json.dumps({"sdk": sdk, "protocol": protocol, "server": server, "tools": tools, "calls": results}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception:  # noqa: BLE001 - the test reads the message
        print(json.dumps({"error": traceback.format_exc()}))
        sys.exit(1)

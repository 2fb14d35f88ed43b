"""An MCP host on the official Python SDK's client (PyPI `mcp`, 1.x or 2.x,
installed by scripts/install-interop.sh) that subscribes to a resource, for
interop tests of `switchboard serve`.

Usage:
    python python_subscriber.py URI TOOL JSON_ARGS -- COMMAND [ARGS ...]

Spawns COMMAND over stdio (the 2.x client in its session-era mode, where
resources/subscribe lives), sends resources/subscribe for URI, calls TOOL
with JSON_ARGS (which makes the server change the resource), and waits (at
most 20 s) for notifications/resources/updated about URI. Prints one JSON
line: {"sdk": version, "updated": [every updated URI heard], "call":
result}. A failure prints {"error": message} and exits 1.
"""

import asyncio
import json
import os
import sys
import traceback
import warnings
from importlib.metadata import version as package_version

from mcp import StdioServerParameters


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    uri, tool, args = argv[:split]
    command = argv[split + 1 :]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    updated = []
    heard = asyncio.Event()

    async def on_message(message):
        note = getattr(message, "root", message)
        if getattr(note, "method", None) == "notifications/resources/updated":
            updated.append(str(note.params.uri))
            if str(note.params.uri) == uri:
                heard.set()

    sdk = package_version("mcp")
    if sdk.startswith("1."):
        from mcp import ClientSession
        from v1_stdio import stdio_client

        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                await session.subscribe_resource(uri)
                call = dump(await session.call_tool(tool, json.loads(args)))
                await asyncio.wait_for(heard.wait(), 20)
    else:
        from mcp.client.client import Client

        async with Client(params, mode="legacy", message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(uri)
            call = dump(await client.call_tool(tool, json.loads(args)))
            await asyncio.wait_for(heard.wait(), 20)
    print(json.dumps({"sdk": sdk, "updated": updated, "call": call}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception:  # noqa: BLE001 - the test reads the message
        print(json.dumps({"error": traceback.format_exc()}))
        sys.exit(1)

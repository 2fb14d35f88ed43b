"""A small MCP server on the official Python SDK (PyPI `mcp`), for interop tests.

Usage: python python_server.py {streamable-http|sse|stdio} [PORT]
Prints `listening on http://127.0.0.1:PORT` to stdout once the HTTP server is up.
"""

import sys

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server

    SDK2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

    SDK2 = False

server = Server("switchboard-python-interop", instructions="Python SDK interop server.")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.resource("test://python/hello")
def hello() -> str:
    """A static text resource."""
    return "Hello from Python!"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
        return
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    if SDK2:
        server.run(transport, host="127.0.0.1", port=port)
    else:
        server.settings.host = "127.0.0.1"
        server.settings.port = port
        server.run(transport)


if __name__ == "__main__":
    main()

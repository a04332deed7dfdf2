"""An MCP server (the SDK's own server API) that tries what a sandbox stops: the sandbox tests run it as a
real stdio process through the mcp extension. Tools: ``write`` (a file), ``read`` (a file), ``env`` (a
variable), ``pid``, ``fetch`` (a URL, through the proxy variables when they are set). ``--fail``: exit at
once with a line on stderr."""

from __future__ import annotations

import os
import sys
import urllib.request

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool(description="Write a text to a file.")
def write(path: str, text: str) -> str:
    try:
        with open(path, "w") as out:
            out.write(text)
    except OSError as e:
        return f"not written: {e.strerror}"
    return "written"


@server.tool(description="Read a file.")
def read(path: str) -> str:
    try:
        with open(path) as source:
            return source.read()
    except OSError as e:
        return f"not read: {e.strerror}"


@server.tool(description="An environment variable.")
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool(description="The server's process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="Fetch a URL.")
def fetch(url: str) -> str:
    try:
        return urllib.request.urlopen(url, timeout=10).read().decode()
    except Exception as e:
        return f"fetch failed: {e}"


if __name__ == "__main__":
    if "--fail" in sys.argv:
        sys.exit("probe: failing at start, as asked")
    server.run()

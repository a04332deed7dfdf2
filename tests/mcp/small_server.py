"""A small MCP server built with the SDK's own server API (``MCPServer``), run by the tests as a real process.

``python small_server.py [stdio|http PORT]``. Tools: ``add``, ``shout`` (progress and a log line),
``crash`` (the process exits), ``hang`` (never answers), ``huge`` (a result of many lines), ``picture``
(an image), ``grow`` (registers a new tool and sends ``list_changed``), ``ask`` (an elicitation), ``think``
(a sampling request), ``roots`` (the client's roots), ``whoami`` (an environment variable), ``pid``. A prompt
``review`` and a resource ``notes://today``. With ``--bad-schema`` one more tool is listed whose input
schema is not a valid JSON Schema; with ``--slow-start SECONDS`` the server waits before it reads stdin.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, Image, MCPServer
from pydantic import BaseModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("small", instructions="A small server for caddie's tests.")


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Upper-case a text, reporting progress and logging.")
async def shout(text: str, ctx: Context) -> str:
    await ctx.info(f"shouting {len(text)} characters")
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step}")
    return text.upper()


@server.tool(description="Exit the server process at once.")
def crash() -> str:
    os._exit(3)


@server.tool(description="Never answer.")
async def hang() -> str:
    await asyncio.sleep(3600)
    return "late"


@server.tool(description="Return many numbered lines.")
def huge(lines: int = 5000) -> str:
    return "\n".join(f"line {i} " + "x" * 40 for i in range(1, lines + 1))


@server.tool(description="Return a one-pixel image.", structured_output=False)
def picture() -> list[Any]:
    return ["a pixel:", Image(data=PNG, format="png")]


@server.tool(description="Add a new tool named `extra` and announce it.")
async def grow(ctx: Context) -> str:
    def extra() -> str:
        return "extra ran"

    server.add_tool(extra, name="extra", description="A tool added at run time.")
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


class Person(BaseModel):
    name: str
    age: int


@server.tool(description="Ask the user for a name and an age.")
async def ask(ctx: Context) -> str:
    result = await ctx.elicit("Who are you?", Person)
    if result.action == "accept":
        return f"hello {result.data.name}, {result.data.age}"
    return f"no answer ({result.action})"


@server.tool(description="Ask the client's model a question.")
async def think(question: str, ctx: Context) -> str:
    from mcp.types import SamplingMessage, TextContent

    reply = await ctx.request_context.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=50
    )
    content = reply.content
    return f"model said: {getattr(content, 'text', content)}"


@server.tool(description="The client's roots.")
async def roots(ctx: Context) -> str:
    listed = await ctx.request_context.session.list_roots()
    return " ".join(str(r.uri) for r in listed.roots)


@server.tool(description="The server's process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="An environment variable of the server process.")
def whoami(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.prompt(description="Review a file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Please review {path} looking for {focus}."


@server.resource("notes://today", description="Today's notes.", mime_type="text/plain")
def today() -> str:
    return "buy milk"


def main() -> None:
    args = sys.argv[1:]
    print(f"small server {os.getpid()} starting", file=sys.stderr, flush=True)
    if "--bad-schema" in args:

        def broken() -> str:
            return "broken ran"

        tool = server._tool_manager.add_tool(broken, name="broken", description="Its schema is broken.")
        tool.parameters = {"type": "object", "properties": {"x": {"type": "no-such-type"}}}
    if "--slow-start" in args:
        time.sleep(float(args[args.index("--slow-start") + 1]))
    if args and args[0] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run()


if __name__ == "__main__":
    main()

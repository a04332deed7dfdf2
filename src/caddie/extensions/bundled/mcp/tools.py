"""A server's tools as caddie tools: ``mcp__<server>__<tool>`` with the server's input schema, calling the
server through its connection. Results are converted (``convert``) and cut by bash's rules; progress
notices become partial results; an abort (Esc, Ctrl+C, RPC ``abort``) cancels the request, which tells the
server (``notifications/cancelled``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    ImageContent,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolResult,
    limit_output,
    redact,
)
from caddie.extensions.bundled.mcp import convert
from caddie.extensions.bundled.mcp.connection import ServerConnection, one_line
from caddie.extensions.bundled.mcp.naming import tool_name
from caddie.extensions.bundled.mcp.schema import input_schema

MAX_DESCRIPTION = 2048
TEMP_FILE_PREFIX = "caddie-mcp"


def progress_text(done: float, total: float | None, message: str | None) -> str:
    amount = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"progress {amount}" + (f": {message}" if message else "")


def result_of(server: str, tool: str, result: dict[str, Any]) -> ToolResult:
    """A ``CallToolResult`` as caddie's result; an error result raises ``ToolError`` with its text."""
    converted = convert.tool_result(result)
    if converted.is_error:
        raise ToolError(
            redact(convert.text_of(converted.content)) or f"{server} reported an error from {tool}"
        )
    content: list[TextContent | ImageContent] = []
    details: dict[str, Any] = {"server": server, "tool": tool}
    text = convert.text_of(converted.content)
    limited, truncation = limit_output(text, TEMP_FILE_PREFIX) if text else (text, None)
    if truncation:
        details.update(truncation)
    if text:
        content.append(TextContent(limited))
    content += [b for b in converted.content if isinstance(b, ImageContent)]
    if not content:
        content = [TextContent("(no output)")]
    return ToolResult(content, details)


def make_tool(
    conn_of: Callable[[], ServerConnection | None],
    server: str,
    tool: dict[str, Any],
    warn: Callable[[str], None],
) -> ToolDefinition:
    """One tool of ``server`` (the connection is looked up at call time: it may have been restarted)."""
    name = str(tool.get("name", ""))
    schema, problem = input_schema(tool.get("inputSchema"))
    if problem is not None:
        warn(f'MCP server "{server}": tool {name}: {problem}; its arguments are passed through unchecked')
    description = str(tool.get("description") or tool.get("title") or f"{name} (MCP server {server})")
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: OnUpdate, ctx: Any
    ) -> ToolResult:
        conn = conn_of()
        if conn is None or conn.state != "ready":
            why = conn.error or conn.state if conn is not None else "not configured"
            raise ToolError(f'MCP server "{server}" is not connected ({why}); /mcp reconnects it')
        arguments = params if isinstance(params, dict) else {}

        def progress(done: float, total: float | None, message: str | None) -> None:
            on_update(ToolResult([TextContent(progress_text(done, total, message))], {"server": server}))

        call = asyncio.ensure_future(conn.call_tool(name, arguments, progress))

        def abort() -> None:
            call.cancel()

        remove = signal.add_listener(abort) if signal is not None else lambda: None
        try:
            result = await call
        except asyncio.CancelledError:
            if signal is not None and signal.aborted:
                raise ToolError(f"Cancelled: the call to {server}/{name} was aborted") from None
            raise
        except ToolError:
            raise
        except Exception as e:
            raise ToolError(redact(f"MCP server {server}, tool {name}: {one_line(e)}")) from None
        finally:
            remove()
            if not call.done():
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call
        return result_of(server, name, result)

    return ToolDefinition(
        name=tool_name(server, name),
        description=description,
        parameters=schema,
        execute=execute,
        label=f"{server}: {tool.get('title') or name}",
    )

"""Tools registered after start-up (Pi's dynamic-tools example): ``echo_session`` appears at
``session_start``, and ``/add-echo-tool <name>`` adds another echo tool while the session runs; each is
offered to the model from its next request."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolResult,
)


class EchoParams(BaseModel):
    message: str = Field(description="Message to echo")


def normalize_tool_name(text: str) -> str | None:
    name = text.strip().lower()
    return name if re.fullmatch(r"[a-z0-9_]+", name) else None


def register(api: ExtensionAPI) -> None:
    registered: set[str] = set()

    def add_echo_tool(name: str, label: str, prefix: str) -> bool:
        if name in registered:
            return False
        registered.add(name)

        async def echo(
            tool_call_id: str, params: EchoParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
        ) -> ToolResult:
            return ToolResult(
                [TextContent(f"{prefix}{params.message}")], details={"tool": name, "prefix": prefix}
            )

        api.register_tool(
            ToolDefinition(
                name=name,
                label=label,
                description=f"Echo a message with prefix: {prefix}",
                parameters=EchoParams,
                execute=echo,
                prompt_snippet=f"Echo back user-provided text with {prefix.strip()} prefix",
                prompt_guidelines=["Use echo_session when the user asks for exact echo output."],
            )
        )
        return True

    def on_start(event: object, ctx: ExtensionContext) -> None:
        add_echo_tool("echo_session", "Echo Session", "[session] ")
        ctx.ui.notify("Registered dynamic tool: echo_session", "info")

    def add_command(args: str, ctx: CommandContext) -> None:
        name = normalize_tool_name(args)
        if name is None:
            ctx.ui.notify("Usage: /add-echo-tool <tool_name> (lowercase, numbers, underscores)", "warning")
            return
        if not add_echo_tool(name, f"Echo {name}", f"[{name}] "):
            ctx.ui.notify(f"Tool already registered: {name}", "warning")
            return
        ctx.ui.notify(f"Registered dynamic tool: {name}", "info")

    api.on("session_start", on_start)
    api.register_command(
        "add-echo-tool", add_command, "Register a new echo tool dynamically: /add-echo-tool <tool_name>"
    )

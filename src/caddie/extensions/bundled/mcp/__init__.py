"""mcp — Model Context Protocol servers in caddie, as Claude Code, Codex and OpenCode users run them.

Off until a server is configured (``mcpServers`` in settings, or a trusted project's ``.mcp.json``): with
none, the extension registers ``/mcp`` and a few handlers and imports nothing else. With servers, each
starts in the background when the session starts (the first prompt waits on none of them); its tools
become ``mcp__<server>__<tool>`` once it is ready, its prompts ``/mcp__<server>__<prompt>`` commands, its
resources ``@server:uri`` attachments. Built on the official ``mcp`` SDK, written only against
``caddie.extensions.api``. docs/mcp.md is the user's guide.

Layout: ``config``, ``naming``, ``convert``, ``schema``, ``elicitation``, ``sampling`` are pure; ``sdk``
imports the SDK off the event loop; ``connection`` holds one server; ``transports`` reaches it (``oauth``:
the SDK's auth for remote servers); ``asking`` puts a server's questions to the user; ``tools``, ``runtime``
and ``commands`` are the glue.
"""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI
from caddie.extensions.bundled.mcp.commands import DESCRIPTION, mcp_command
from caddie.extensions.bundled.mcp.naming import PREFIX
from caddie.extensions.bundled.mcp.runtime import McpRuntime

__all__ = ["McpRuntime", "register"]


def register(api: ExtensionAPI) -> McpRuntime:
    """Register ``/mcp``, the config lister and the handlers; returns the extension's state (for tests)."""
    rt = McpRuntime(api)
    api.expect_tools(PREFIX + "*")

    async def on_mcp(args: str, ctx: CommandContext) -> None:
        await mcp_command(rt, args, ctx)

    api.register_command("mcp", on_mcp, DESCRIPTION, lambda prefix: _completions(rt, prefix))
    api.register_config_items(rt.config_items)
    api.on("session_start", rt.on_session_start)
    api.on("session_shutdown", rt.on_session_shutdown)
    api.on("input", rt.on_input)
    api.on("before_agent_start", rt.on_before_agent_start)
    api.on("message_start", rt.on_message_start)
    api.register_flag(
        "mcp-wait",
        "seconds the first request may wait for MCP servers still starting (default 0: it waits on none; "
        "their tools join as soon as each is ready)",
    )
    return rt


def _completions(rt: McpRuntime, prefix: str) -> list[str]:
    words = prefix.split(" ")
    if len(words) <= 1:
        return [
            a for a in ("reconnect", "enable", "disable", "auth", "logout", "tools") if a.startswith(words[0])
        ]
    return [f"{words[0]} {s.name}" for s in rt.servers.servers if s.name.startswith(words[-1])]

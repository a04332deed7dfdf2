"""``/mcp``: the servers, their state and tools; ``/mcp reconnect|enable|disable|auth|logout|tools NAME``.

Without arguments it lists every server (in the terminal UI it then offers the actions for one). Enable and
disable also save the switch in the user's settings (``disabledMcpServers``), as ``caddie config`` does.
"""

from __future__ import annotations

import json
import os
from typing import Any

from caddie.extensions.api import CommandContext
from caddie.extensions.bundled.mcp import oauth
from caddie.extensions.bundled.mcp.config import SWITCH_KEY, ServerConfig
from caddie.extensions.bundled.mcp.connection import ServerConnection, last_line
from caddie.extensions.bundled.mcp.naming import tool_name
from caddie.extensions.bundled.mcp.runtime import McpRuntime, sandbox_note
from caddie.extensions.bundled.mcp.sdk import load_sdk

DESCRIPTION = "MCP servers: state, tools; /mcp reconnect|enable|disable|auth|logout|tools NAME"
ACTIONS = ("reconnect", "enable", "disable", "auth", "logout", "tools")
NO_SERVERS = (
    'No MCP servers are configured. Add them under "mcpServers" in ~/.caddie/agent/settings.json, '
    "the project's .caddie/settings.json, or a .mcp.json (Claude Code's format); see docs/mcp.md."
)


def state_line(config: ServerConfig, conn: ServerConnection | None, trusted: bool) -> str:
    if not trusted:
        state = "not started (project not trusted)"
    elif not config.enabled:
        state = "disabled"
    elif config.problem:
        state = f"not started: {config.problem}"
    elif conn is None:
        state = "stopped"
    elif conn.state == "ready":
        lists = conn.lists
        parts = [f"{len(lists.tools)} tools"]
        if lists.prompts:
            parts.append(f"{len(lists.prompts)} prompts")
        if lists.resources or lists.templates:
            parts.append(f"{len(lists.resources) + len(lists.templates)} resources")
        state = "connected · " + ", ".join(parts)
        if conn.sandboxed is not None:
            state += f" · sandbox: {conn.sandboxed}"
    elif conn.state == "starting":
        state = "starting…"
    else:
        state = (
            f"{'needs authorization' if conn.state == 'needs-auth' else conn.state}: {conn.error or ''}".rstrip(
                ": "
            )
            + (sandbox_note(conn) if conn.state == "failed" else "")
        )
    return f"{config.name} — {state}  [{config.source}: {config.describe()}]"


def report(rt: McpRuntime) -> str:
    servers = rt.servers
    if not servers.servers and not servers.untrusted:
        return NO_SERVERS
    lines = ["MCP servers:"]
    for config in servers.servers:
        lines.append("  " + state_line(config, rt.connection(config.name), True))
    for config in servers.untrusted:
        lines.append("  " + state_line(config, None, False))
    lines.append("/mcp tools NAME lists a server's tools; /mcp reconnect NAME starts a failed one again.")
    return "\n".join(lines)


def tools_report(rt: McpRuntime, name: str) -> str:
    conn = rt.connection(name)
    if conn is None or conn.state != "ready":
        return f'MCP server "{name}" is not connected.'
    lines = [f"{name} ({conn.server_name or 'unnamed server'}, protocol {conn.protocol}):"]
    for tool in conn.lists.tools:
        about = str(tool.get("description") or "").strip().splitlines()
        lines.append(f"  {tool_name(name, str(tool.get('name')))} — {about[0][:100] if about else ''}")
    for prompt in conn.lists.prompts:
        lines.append(f"  /{tool_name(name, str(prompt.get('name')))} (prompt)")
    for resource in conn.lists.resources[:20]:
        lines.append(f"  @{name}:{resource.get('uri')} (resource)")
    if len(conn.lists.resources) > 20:
        lines.append(f"  … {len(conn.lists.resources) - 20} more resources")
    if conn.logs:
        lines.append("Recent log messages:")
        lines += [f"  {line[:200]}" for line in list(conn.logs)[-5:]]
    lines.append(f"stderr log: {conn.log_path}")
    return "\n".join(lines)


async def mcp_command(rt: McpRuntime, args: str, ctx: CommandContext) -> None:
    rt.start_deferred()  # headless runs start servers late; asking about them starts them now
    words = args.split()
    if not words:
        ctx.ui.notify(report(rt), "info")
        if ctx.mode == "tui" and (rt.servers.servers or rt.servers.untrusted):
            await pick(rt, ctx)
        return
    action, name = words[0], " ".join(words[1:])
    if action not in ACTIONS:
        ctx.ui.notify(f"Unknown /mcp action {action!r}; use one of: {', '.join(ACTIONS)}.", "error")
        return
    if not name:
        ctx.ui.notify(f"Name the server: /mcp {action} NAME", "error")
        return
    await run_action(rt, action, name, ctx)


async def pick(rt: McpRuntime, ctx: CommandContext) -> None:
    names = [s.name for s in rt.servers.servers]
    if not names:
        return
    name = await ctx.ui.select("MCP server", names)
    if name is None:
        return
    config = rt.servers.by_name(name)
    conn = rt.connection(name)
    choices = ["tools"]
    if config is not None and config.enabled:
        choices += ["reconnect", "disable"]
    else:
        choices.append("enable")
    if config is not None and config.transport != "stdio":
        choices += ["auth", "logout"]
    if conn is not None and conn.state != "ready":
        choices.remove("tools")
    action = await ctx.ui.select(f"{name}: what now?", choices)
    if action is not None:
        await run_action(rt, action, name, ctx)


async def run_action(rt: McpRuntime, action: str, name: str, ctx: CommandContext) -> None:
    config = rt.servers.by_name(name)
    if config is None:
        known = ", ".join(s.name for s in rt.servers.servers) or "none"
        ctx.ui.notify(f'No MCP server called "{name}" (configured: {known}).', "error")
        return
    if config in rt.servers.untrusted:
        ctx.ui.notify(
            f'"{name}" comes from this project, which is not trusted; trust it to start the server.', "error"
        )
        return
    if action == "tools":
        ctx.ui.notify(tools_report(rt, name), "info")
    elif action in ("enable", "disable"):
        on = action == "enable"
        save_switch(rt, name, on)
        rt.set_enabled(name, on)
        ctx.ui.notify(f'MCP server "{name}" is {"on" if on else "off"} (saved in your settings).', "info")
    elif action in ("reconnect", "auth"):
        if config.problem:
            ctx.ui.notify(f'MCP server "{name}" cannot start: {config.problem}', "error")
            return
        if not config.enabled:
            ctx.ui.notify(f'MCP server "{name}" is disabled; /mcp enable {name} starts it.', "error")
            return
        if action == "auth":
            if config.transport == "stdio":
                ctx.ui.notify(f'"{name}" is a local (stdio) server; it has no authorization.', "error")
                return
            rt.auth_requests.add(name)
        conn = await rt.reconnect(name)
        ready = await rt.ready(name)
        if ready is not None:
            ctx.ui.notify(f'MCP server "{name}" connected: {len(ready.lists.tools)} tools.', "info")
        else:
            why = conn.error if conn is not None else "it did not start"
            ctx.ui.notify(f'MCP server "{name}" did not connect: {why}', "error")
    elif action == "logout":
        sdk = await load_sdk()
        oauth.TokenFile(os.path.join(rt.agent_dir, oauth.AUTH_FILE), config, sdk).forget()
        ctx.ui.notify(f'Forgot the stored authorization for "{name}".', "info")


def save_switch(rt: McpRuntime, name: str, on: bool) -> None:
    """``disabledMcpServers`` in the user's settings file (the list ``caddie config`` switches)."""
    path = os.path.join(rt.agent_dir, "settings.json")
    try:
        with open(path, encoding="utf-8") as f:
            data: Any = json.load(f)
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError):
        return  # an unreadable settings file is reported by caddie at start-up; never overwrite it
    if not isinstance(data, dict):
        return
    current = [n for n in data.get(SWITCH_KEY, []) or [] if isinstance(n, str) and n != name]
    if not on:
        current.append(name)
    data[SWITCH_KEY] = current
    os.makedirs(rt.agent_dir, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


__all__ = ["DESCRIPTION", "last_line", "mcp_command"]

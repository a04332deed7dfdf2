"""The extension's state in a session: the configured servers, their connections, and what each brings
into the session (tools, prompt commands, ``@server:uri`` resources). Glue; the decisions are in
``config``, ``naming``, ``convert``, ``schema`` and ``elicitation``.

Connections outlive the extension instance when the session switches (``/new``, ``/resume``, ``/fork``,
``/reload`` load the extensions again): they are kept per event loop and the next instance takes over the
ones whose configuration did not change. ``session_shutdown("quit")`` ends every server process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caddie.extensions.api import (
    ConfigItem,
    ConfigScope,
    ExtensionAPI,
    ExtensionContext,
    InputEvent,
    InputResult,
    SessionShutdownEvent,
    SessionStartEvent,
    TextContent,
)
from caddie.extensions.bundled.mcp import asking, convert, oauth, transports
from caddie.extensions.bundled.mcp.config import SWITCH_KEY, ServerList, collect_servers
from caddie.extensions.bundled.mcp.connection import ServerConnection, one_line
from caddie.extensions.bundled.mcp.naming import PREFIX, command_name, find_mentions, safe, tool_name
from caddie.extensions.bundled.mcp.tools import make_tool

MCP_JSON = ".mcp.json"
HEADLESS = ("print", "json")
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ServerConnection]] = (
    weakref.WeakKeyDictionary()
)


def pool() -> dict[str, ServerConnection]:
    """The connections of this event loop (one caddie process: its session and the ones it switches to)."""
    return _POOLS.setdefault(asyncio.get_running_loop(), {})


def read_mcp_json(cwd: str) -> tuple[dict[str, Any] | None, str | None]:
    path = Path(cwd) / MCP_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, f"{path} could not be read ({e}); its servers are ignored"
    if not isinstance(data, dict):
        return None, f"{path} must hold a JSON object with mcpServers; ignored"
    return data, None


def configured(scope: ConfigScope) -> ServerList:
    mcp_json, problem = read_mcp_json(scope.cwd)
    found = collect_servers(
        scope.user, scope.project, mcp_json, trusted=scope.project_trusted, env=os.environ
    )
    if problem:
        found.warnings.append(problem)
    return found


class McpRuntime:
    def __init__(self, api: ExtensionAPI) -> None:
        self.api = api
        self.ctx: ExtensionContext | None = None
        self.servers = ServerList()
        self.cwd = os.getcwd()
        self.agent_dir = ""
        self.tools: dict[str, set[str]] = {}
        """Per server, the caddie tool names registered for it."""
        self.commands: dict[str, set[str]] = {}
        self.said: dict[str, str | None] = {}
        """The last failure shown per server (one line per failure, not one per state change)."""
        self.auth_requests: set[str] = set()
        """Servers whose next connection may open the browser for authorization (``/mcp auth``)."""
        self.active = False
        self.stopping: set[asyncio.Future[None]] = set()
        self.waited = False
        self.deferred = False
        """Headless: the servers start once the first request is sent (``on_message_start``)."""
        self.warned: set[str] = set()
        self.prompt_handlers: dict[str, Callable[[str, Any], Any]] = {}

    # -- session events ---------------------------------------------------------------------------------
    async def on_session_start(self, event: SessionStartEvent, ctx: ExtensionContext) -> None:
        self.ctx = ctx
        self.active = True
        scope = ctx.config_scope()
        self.cwd, self.agent_dir = scope.cwd, scope.agent_dir
        self.servers = configured(scope)
        for warning in self.servers.warnings:
            ctx.ui.notify(warning, "warning")
        if self.servers.untrusted and event.reason == "startup":
            names = ", ".join(s.name for s in self.servers.untrusted)
            ctx.ui.notify(
                f"MCP servers {names} come from this project, which is not trusted: not started "
                "(trust the project, e.g. caddie --trust, to start them)",
                "warning",
            )
        if ctx.mode in HEADLESS and event.reason == "startup" and not self.wait_seconds(ctx) and not pool():
            self.deferred = True  # -p: the first request goes out before any server competes for the CPU
        else:
            self.reconcile()

    def start_deferred(self) -> None:
        if self.deferred and self.active:
            self.deferred = False
            self.reconcile()

    async def on_message_start(self, event: Any, ctx: ExtensionContext) -> None:
        """Headless runs start their servers once the first request is on its way (the model's reply began)."""
        if self.deferred and getattr(event.message, "role", None) == "assistant":
            self.start_deferred()

    def wait_seconds(self, ctx: ExtensionContext) -> float:
        flag = self.api.get_flag("mcp-wait")
        if not isinstance(flag, str) or not flag.strip():
            return 0.0
        try:
            return max(0.0, float(flag))
        except ValueError:
            if not self.waited:
                ctx.ui.notify(f"--mcp-wait {flag}: not a number of seconds; not waiting", "warning")
            return 0.0

    async def on_session_shutdown(self, event: SessionShutdownEvent, ctx: ExtensionContext) -> None:
        self.active = False
        if event.reason == "quit":
            await self.stop_all()

    async def stop_all(self) -> None:
        conns = list(pool().values())
        pool().clear()
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)

    def reconcile(self) -> None:
        """Start the enabled servers, take over the ones still running with the same configuration, stop
        the rest. No configured server: nothing is imported, nothing runs."""
        wanted = {s.name: s for s in self.servers.servers if s.enabled and s.problem is None}
        conns = pool()
        for name, conn in list(conns.items()):
            if name not in wanted or conn.config != wanted[name]:
                conns.pop(name)
                self.forget(name)
                self.stopping.add(asyncio.ensure_future(conn.stop()))
                self.stopping = {t for t in self.stopping if not t.done()}
        for name, config in wanted.items():
            existing = conns.get(name)
            if existing is None:
                conns[name] = conn = ServerConnection(config, self, self.log_path(name))
                conn.responsive = self.ctx is not None and self.ctx.mode == "tui"
                if name in self.auth_requests:  # the user is authorizing it in a browser
                    conn.patience = oauth.AUTH_WAIT_SECONDS + config.startup_timeout_ms / 1000
                conn.start()
            else:
                conn = existing
                conn.hooks = self
                if conn.state in ("failed", "needs-auth", "stopped") and not conn.running:
                    conn.start()
                else:
                    self.changed(conn)

    def log_path(self, name: str) -> str:
        base = self.agent_dir or os.path.join(os.path.expanduser("~"), ".caddie", "agent")
        return os.path.join(base, "mcp-logs", f"{_safe_file(name)}.log")

    def finder(self, name: str) -> Callable[[], ServerConnection | None]:
        return lambda: self.connection(name)

    def connection(self, name: str) -> ServerConnection | None:
        return pool().get(name) if self.active else None

    # -- ConnectionHooks --------------------------------------------------------------------------------
    def changed(self, conn: ServerConnection) -> None:
        if not self.active or pool().get(conn.name) is not conn:
            return
        if conn.state == "ready":
            self.said[conn.name] = None
            self.sync(conn)
            return
        self.forget(conn.name)
        if conn.state in ("failed", "needs-auth") and conn.error and self.said.get(conn.name) != conn.error:
            self.said[conn.name] = conn.error
            if self.ctx is not None:
                self.ctx.ui.notify(
                    f'MCP server "{conn.name}" {_verb(conn.state)}: {conn.error}{sandbox_note(conn)}',
                    "warning",
                )

    def sync(self, conn: ServerConnection) -> None:
        """Register the server's current tools and prompt commands; unregister what it no longer has."""
        name = conn.name
        api = self.api
        tools = {tool_name(name, str(t.get("name", ""))): t for t in conn.lists.tools if t.get("name")}
        for gone in self.tools.get(name, set()) - set(tools):
            api.unregister_tool(gone)
        for tool in tools.values():
            api.register_tool(make_tool(self.finder(name), name, tool, self.warn))
        self.tools[name] = set(tools)
        prompts = {command_name(name, str(p.get("name", ""))): p for p in conn.lists.prompts if p.get("name")}
        for gone in self.commands.get(name, set()) - set(prompts):
            api.unregister_command(gone)
        for full, prompt in prompts.items():
            handler = self.prompt_command(name, prompt)
            self.prompt_handlers[full] = handler
            api.register_command(full, handler, _prompt_description(name, prompt))
        self.commands[name] = set(prompts)

    def forget(self, name: str) -> None:
        for tool in self.tools.pop(name, set()):
            self.api.unregister_tool(tool)
        for command in self.commands.pop(name, set()):
            self.api.unregister_command(command)
            self.prompt_handlers.pop(command, None)

    def warn(self, text: str) -> None:
        if text in self.warned:
            return
        self.warned.add(text)
        if self.ctx is not None:
            self.ctx.ui.notify(text, "warning")

    def roots(self) -> list[dict[str, str]]:
        return [{"uri": Path(self.cwd).resolve().as_uri(), "name": Path(self.cwd).name or self.cwd}]

    def logged(self, conn: ServerConnection, level: str, text: str) -> None:
        if level in ("warning", "error", "critical", "alert", "emergency") and self.ctx is not None:
            self.ctx.ui.notify(
                f"{conn.name} [{level}]: {text[:500]}", "warning" if level == "warning" else "error"
            )

    async def elicit(self, conn: ServerConnection, params: dict[str, Any]) -> dict[str, Any]:
        return await asking.elicit(self.ctx, conn.name, params)

    async def sample(self, conn: ServerConnection, params: dict[str, Any]) -> dict[str, Any]:
        return await asking.sample(self.ctx, conn.name, params)

    def transport(self, conn: ServerConnection, sdk: Any, errlog: Any) -> Any:
        interactive = conn.name in self.auth_requests
        self.auth_requests.discard(conn.name)
        sandbox = self.ctx.sandbox if self.ctx is not None else None
        confined = sandbox is not None and transports.in_sandbox(conn.config, sandbox)
        conn.sandboxed = sandbox.summary() if confined and sandbox is not None else None
        return transports.open_transport(
            conn.config,
            sdk,
            errlog,
            transports.Place(self.cwd, self.agent_dir),
            interactive,
            self.show_auth_url(conn.name),
            sandbox,
        )

    def show_auth_url(self, name: str) -> Callable[[str], None]:
        def show(url: str) -> None:
            if self.ctx is not None:
                self.ctx.ui.notify(f'Authorize caddie for MCP server "{name}": open {url}', "info")

        return show

    # -- prompts and resources --------------------------------------------------------------------------
    def prompt_command(self, server: str, prompt: dict[str, Any]) -> Any:
        name = str(prompt.get("name", ""))
        arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict) and a.get("name")]

        async def run(args: str, ctx: Any) -> None:
            conn = self.connection(server)
            if conn is None or conn.state != "ready":
                ctx.ui.notify(f'MCP server "{server}" is not connected; /mcp shows why', "error")
                return
            values, problem = prompt_arguments(arguments, args)
            if problem:
                ctx.ui.notify(f"/{command_name(server, name)}: {problem}", "error")
                return
            try:
                result = await conn.get_prompt(name, values)
            except Exception as e:
                ctx.ui.notify(f"/{command_name(server, name)}: {one_line(e)}", "error")
                return
            content = convert.prompt_messages(result)
            if not content:
                ctx.ui.notify(f"/{command_name(server, name)}: the prompt is empty", "warning")
                return
            self.api.send_user_message(content)

        return run

    async def on_input(self, event: InputEvent, ctx: ExtensionContext) -> InputResult | None:
        """``@server:uri`` in a prompt attaches that resource (its text in a ``<resource>`` block). A prompt
        command of a server still starting (``/mcp__server__prompt`` typed before it was ready, or given to
        ``-p``) waits for the server, then runs."""
        if event.text.startswith("/" + PREFIX):
            return await self.late_command(event.text, ctx)
        names = {s.name for s in self.servers.servers if s.enabled}
        mentions = find_mentions(event.text, names)
        if not mentions:
            return None
        text, images = event.text, list(event.images or [])
        for mention in mentions:
            conn = await self.ready(mention.server)
            if conn is None:
                ctx.ui.notify(
                    f'@{mention.server}:{mention.uri}: MCP server "{mention.server}" is not connected',
                    "error",
                )
                continue
            try:
                result = await conn.read_resource(mention.uri)
            except Exception as e:
                ctx.ui.notify(f"@{mention.server}:{mention.uri}: {one_line(e)}", "error")
                continue
            for block in convert.resource_attachment(mention.server, mention.uri, result):
                if isinstance(block, TextContent):
                    text += "\n\n" + block.text
                else:
                    images.append(block)
        if text == event.text and len(images) == len(event.images or []):
            return None
        return InputResult("transform", text, images or None)

    async def on_before_agent_start(self, event: Any, ctx: ExtensionContext) -> None:
        """``--mcp-wait SECONDS``: the first request waits (that long at most) for servers still starting."""
        if self.waited:
            return
        seconds = self.wait_seconds(ctx)
        self.waited = True
        names = [n for n, c in pool().items() if c.state == "starting"] if self.active else []
        if seconds > 0 and names:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(self.ready(n) for n in names)), seconds)

    async def late_command(self, text: str, ctx: ExtensionContext) -> InputResult | None:
        command, _, args = text[1:].partition(" ")
        owner = next(
            (
                s.name
                for s in self.servers.servers
                if s.enabled and command.startswith(f"{PREFIX}{safe(s.name)}__")
            ),
            None,
        )
        if owner is None or await self.ready(owner) is None:
            return None
        handler = self.prompt_handlers.get(command)
        if handler is None:
            ctx.ui.notify(
                f'/{command}: MCP server "{owner}" has no such prompt (/mcp tools {owner} lists them)',
                "error",
            )
            return InputResult("handled")
        await handler(args.strip(), ctx)
        return InputResult("handled")

    async def ready(self, name: str) -> ServerConnection | None:
        """The connection once it is ready (a prompt that names a server waits for it to finish starting)."""
        self.start_deferred()
        conn = self.connection(name)
        while conn is not None and conn.state == "starting" and conn.running:
            await asyncio.sleep(0.05)
            conn = self.connection(name)
        return conn if conn is not None and conn.state == "ready" else None

    # -- switching servers on and off -------------------------------------------------------------------
    def config_items(self, scope: ConfigScope) -> list[ConfigItem]:
        found = configured(scope)
        items = []
        for config in [*found.servers, *found.untrusted]:
            note = config.describe()
            if config in found.untrusted:
                note += " — not started: the project is not trusted"
            elif config.problem:
                note += f" — {config.problem}"
            items.append(
                ConfigItem(
                    "mcp",
                    config.name,
                    config.source,
                    config.enabled,
                    SWITCH_KEY,
                    note,
                    self.switcher(config.name),
                )
            )
        return items

    def switcher(self, name: str) -> Any:
        def switch(on: bool) -> None:
            if not self.active:
                return
            self.set_enabled(name, on)

        return switch

    def set_enabled(self, name: str, on: bool) -> None:
        from dataclasses import replace

        self.servers.servers = [replace(s, enabled=on) if s.name == name else s for s in self.servers.servers]
        self.reconcile()

    async def reconnect(self, name: str) -> ServerConnection | None:
        conn = pool().get(name)
        if conn is not None:
            await conn.stop()
            pool().pop(name, None)
            self.forget(name)
        self.said.pop(name, None)
        self.reconcile()
        return pool().get(name)


def sandbox_note(conn: ServerConnection) -> str:
    """For a sandboxed server that failed: where it ran and how to run it outside."""
    if conn.sandboxed is None:
        return ""
    return f' (it runs in the sandbox: {conn.sandboxed}; "sandbox": false in its entry runs it outside)'


def _verb(state: str) -> str:
    return "needs authorization" if state == "needs-auth" else "failed"


def _safe_file(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "server"


def _prompt_description(server: str, prompt: dict[str, Any]) -> str:
    args = [a for a in prompt.get("arguments") or [] if isinstance(a, dict) and a.get("name")]
    usage = " ".join(f"<{a['name']}>" if a.get("required") else f"[{a['name']}]" for a in args)
    text = str(prompt.get("description") or prompt.get("title") or "")
    return f"{text} (MCP {server}{', ' + usage if usage else ''})".strip()


def prompt_arguments(arguments: list[dict[str, Any]], text: str) -> tuple[dict[str, str], str | None]:
    """``/prompt a b`` (positional, in the prompt's order; the last takes the rest) or ``key=value`` words."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    names = [str(a["name"]) for a in arguments]
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            values[key] = value
        else:
            positional.append(word)
    free = [n for n in names if n not in values]
    for i, word in enumerate(positional):
        if i >= len(free):
            if free:
                values[free[-1]] += " " + word
                continue
            return values, f"takes no more arguments ({', '.join(names) or 'none'})"
        values[free[i]] = word
    missing = [str(a["name"]) for a in arguments if a.get("required") and a["name"] not in values]
    if missing:
        usage = " ".join(f"<{n}>" for n in names)
        return values, f"missing {', '.join(missing)} (usage: {usage})"
    return values, None

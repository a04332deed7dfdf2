"""MCP server configuration as users already write it: ``mcpServers`` in caddie's settings (user and
project) and a project's ``.mcp.json`` (Claude Code's format). Pure: settings objects in, servers out.

Each entry is ``{"command", "args", "env", "cwd"}`` (stdio) or ``{"url", "headers"}`` (streamable HTTP;
``"type": "sse"`` for a server that only speaks the older SSE transport). ``${VAR}`` and ``${VAR:-default}``
expand from the environment in every string, as in Claude Code. caddie's own keys: ``disabled``,
``timeout`` (ms per request, default 10 minutes), ``startupTimeout`` (ms, default 30 s), ``sandbox``
(``false``: run outside the sandbox), ``oauth`` (``{"clientId", "clientSecret", "scopes", "callbackPort"}``),
``protocol`` (``auto``: try the 2026-07-28 protocol first; default: the initialize handshake).

Precedence by name (a later source replaces the whole entry): user settings → ``.mcp.json`` → project
settings. Project servers (the last two) start only in a trusted project; ``disabledMcpServers`` (a list of
names, user or project settings) switches servers off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
Origin = Literal["user", "project", "mcp.json"]

ORIGIN_LABELS: dict[Origin, str] = {
    "user": "user settings",
    "project": "project settings",
    "mcp.json": "project .mcp.json",
}
SWITCH_KEY = "disabledMcpServers"
DEFAULT_TIMEOUT_MS = 600_000
DEFAULT_STARTUP_TIMEOUT_MS = 30_000
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True)
class OAuthConfig:
    client_id: str | None = None
    client_secret: str | None = None
    scopes: str | None = None
    callback_port: int | None = None


@dataclass(frozen=True, slots=True)
class ServerConfig:
    name: str
    transport: Transport
    origin: Origin
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    startup_timeout_ms: int = DEFAULT_STARTUP_TIMEOUT_MS
    sandbox: bool = True
    oauth: OAuthConfig | None = None
    protocol: str = "legacy"
    """``legacy`` (the initialize handshake, 2025-11-25 and before: what servers speak today) or ``auto``
    (try 2026-07-28's ``server/discover`` first)."""
    enabled: bool = True
    problem: str | None = None
    """Why this entry cannot be started (a missing variable, no command); shown instead of starting it."""

    @property
    def project(self) -> bool:
        return self.origin != "user"

    @property
    def source(self) -> str:
        return ORIGIN_LABELS[self.origin]

    def describe(self) -> str:
        """One line for people: the command or the URL."""
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return f"{self.url} ({self.transport})"


@dataclass(slots=True)
class ServerList:
    servers: list[ServerConfig] = field(default_factory=list)
    untrusted: list[ServerConfig] = field(default_factory=list)
    """Project servers of a project that is not trusted: listed, never started."""
    warnings: list[str] = field(default_factory=list)

    def by_name(self, name: str) -> ServerConfig | None:
        return next((s for s in [*self.servers, *self.untrusted] if s.name == name), None)


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from ``env``; names with no value and no default go to ``missing``."""

    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if value is not None and (value or m.group(2) is None):
            return value
        if m.group(2) is not None:
            return m.group(2)
        missing.append(m.group(1))
        return ""

    return _VAR.sub(one, text)


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _string_map(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict) and all(isinstance(v, str | int | float | bool) for v in value.values()):
        return {str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in value.items()}  # fmt: skip
    return None


def _ms(entry: Mapping[str, Any], key: str, default: int, where: str, warnings: list[str]) -> int:
    value = entry.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    warnings.append(f"{where}: {key} must be a positive number of milliseconds; using {default}")
    return default


def parse_server(
    name: str, entry: Any, origin: Origin, env: Mapping[str, str], warnings: list[str]
) -> ServerConfig | None:
    """One ``mcpServers`` entry; None (with a warning) when it is not an object."""
    where = f'MCP server "{name}" ({ORIGIN_LABELS[origin]})'
    if not isinstance(entry, dict):
        warnings.append(f"{where} must be an object with a command or a url; ignored")
        return None
    missing: list[str] = []
    problem: str | None = None
    kind = entry.get("type") or entry.get("transport")
    url = entry.get("url") if isinstance(entry.get("url"), str) else entry.get("serverUrl")
    command = entry.get("command")
    transport: Transport
    if kind in ("http", "streamable-http", "streamableHttp"):
        transport = "http"
    elif kind == "sse":
        transport = "sse"
    elif kind in (None, "stdio"):
        transport = "stdio" if command is not None or url is None else "http"
    else:
        transport = "stdio"
        problem = f'unknown type "{kind}" (use stdio, http or sse)'
    args = _strings(entry.get("args", []))
    env_map = _string_map(entry.get("env", {}))
    headers = _string_map(entry.get("headers", {}))
    if args is None:
        problem = problem or "args must be a list of strings"
    if env_map is None:
        problem = problem or "env must be an object of strings"
    if headers is None:
        problem = problem or "headers must be an object of strings"
    if transport == "stdio" and not (isinstance(command, str) and command.strip()):
        problem = problem or "needs a command (or a url)"
    if transport != "stdio" and not (isinstance(url, str) and url.strip()):
        problem = problem or f"needs a url for type {transport}"
    cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
    oauth_entry = entry.get("oauth")
    oauth = None
    if isinstance(oauth_entry, dict):
        port = oauth_entry.get("callbackPort")
        oauth = OAuthConfig(
            _opt_str(oauth_entry.get("clientId"), env, missing),
            _opt_str(oauth_entry.get("clientSecret"), env, missing),
            " ".join(oauth_entry["scopes"]) if _strings(oauth_entry.get("scopes")) else
            _opt_str(oauth_entry.get("scopes"), env, missing),
            port if isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 else None,
        )  # fmt: skip
    config = ServerConfig(
        name=name,
        transport=transport,
        origin=origin,
        command=expand(command, env, missing) if isinstance(command, str) else "",
        args=tuple(expand(a, env, missing) for a in args or ()),
        env=tuple((k, expand(v, env, missing)) for k, v in (env_map or {}).items()),
        cwd=expand(cwd, env, missing) if cwd else None,
        url=expand(url, env, missing) if isinstance(url, str) else "",
        headers=tuple((k, expand(v, env, missing)) for k, v in (headers or {}).items()),
        timeout_ms=_ms(entry, "timeout", DEFAULT_TIMEOUT_MS, where, warnings),
        startup_timeout_ms=_ms(entry, "startupTimeout", DEFAULT_STARTUP_TIMEOUT_MS, where, warnings),
        sandbox=entry.get("sandbox", True) is not False,
        oauth=oauth,
        protocol="auto" if entry.get("protocol") == "auto" else "legacy",
        enabled=entry.get("disabled", False) is not True and entry.get("enabled", True) is not False,
    )
    if missing and problem is None:
        names = ", ".join(dict.fromkeys(missing))
        problem = f"environment variable {names} is not set (the config uses ${{{missing[0]}}})"
    if problem is not None:
        return _with(config, problem=problem)
    return config


def _opt_str(value: Any, env: Mapping[str, str], missing: list[str]) -> str | None:
    return expand(value, env, missing) if isinstance(value, str) else None


def _with(config: ServerConfig, **changes: Any) -> ServerConfig:
    from dataclasses import replace

    return replace(config, **changes)


def _entries(block: Any, where: str, warnings: list[str]) -> dict[str, Any]:
    if block is None:
        return {}
    if not isinstance(block, dict):
        warnings.append(f"{where}: mcpServers must be an object of servers by name; ignored")
        return {}
    return block


def _names(value: Any) -> set[str]:
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def collect_servers(
    user: Mapping[str, Any],
    project: Mapping[str, Any],
    mcp_json: Mapping[str, Any] | None,
    *,
    trusted: bool,
    env: Mapping[str, str],
) -> ServerList:
    """Every configured server, by precedence; project ones in ``untrusted`` when the project is not trusted."""
    out = ServerList()
    layers: list[tuple[Origin, dict[str, Any]]] = [
        ("user", _entries(user.get("mcpServers"), "user settings", out.warnings)),
        ("mcp.json", _entries((mcp_json or {}).get("mcpServers"), ".mcp.json", out.warnings)),
        ("project", _entries(project.get("mcpServers"), "project settings", out.warnings)),
    ]
    chosen: dict[str, ServerConfig] = {}
    for origin, entries in layers:
        for name, entry in entries.items():
            if not name or not isinstance(name, str):
                continue
            config = parse_server(name, entry, origin, env, out.warnings)
            if config is not None:
                chosen[name] = config
    off = _names(user.get(SWITCH_KEY)) | _names(project.get(SWITCH_KEY))
    for config in chosen.values():
        if config.name in off:
            config = _with(config, enabled=False)
        (out.untrusted if config.project and not trusted else out.servers).append(config)
    return out

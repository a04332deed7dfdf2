"""Names MCP things get in caddie (Claude Code's conventions), and ``@server:uri`` mentions. Pure.

A tool is ``mcp__<server>__<tool>``, a prompt the command ``/mcp__<server>__<prompt>``; characters a model
API does not accept in a tool name become ``_``, and a name longer than 64 characters (the limit of
OpenAI's and Anthropic's APIs) is cut and given a short hash so two long names stay apart.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PREFIX = "mcp__"
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_.-]+):(\S+)")


def safe(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def _fit(name: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def tool_name(server: str, tool: str) -> str:
    return _fit(f"{PREFIX}{safe(server)}__{safe(tool)}")


def command_name(server: str, prompt: str) -> str:
    return _fit(f"{PREFIX}{safe(server)}__{safe(prompt)}")


def server_pattern(server: str) -> str:
    """The glob naming every tool of ``server`` (``mcp__github__*``)."""
    return f"{PREFIX}{safe(server)}__*"


@dataclass(frozen=True, slots=True)
class Mention:
    server: str
    uri: str
    start: int
    end: int


def find_mentions(text: str, servers: set[str]) -> list[Mention]:
    """``@server:uri`` references in ``text`` to a server in ``servers`` (a trailing ``.,;:)`` is not part
    of the URI). ``user@host:path``-like text is not a mention (the ``@`` must start a word)."""
    found: list[Mention] = []
    for m in _MENTION.finditer(text):
        server, uri = m.group(1), m.group(2)
        if server not in servers:
            continue
        stripped = uri.rstrip(".,;:)!?\"'")
        if not stripped:
            continue
        found.append(Mention(server, stripped, m.start(), m.start(2) + len(stripped)))
    return found

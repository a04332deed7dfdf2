"""Which tools registered after start-up become active: ``--tools`` / settings ``tools`` and
``--exclude-tools`` applied to tools extensions add at run time (MCP servers' tools, once connected).

Extensions announce such tools with ``api.expect_tools(pattern)``; the user may name them (or glob them,
``mcp__github__*``) before they exist. Pure: the session asks ``admits(name)`` when a tool appears.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True, slots=True)
class ToolSelection:
    allow: tuple[str, ...] | None = None
    """``--tools`` (or settings ``tools``) names and globs; None: not given."""
    exclude: tuple[str, ...] = ()
    """``--exclude-tools`` names and globs."""
    expected: tuple[str, ...] = field(default_factory=tuple)
    """Patterns extensions announced with ``expect_tools``."""

    def admits(self, name: str) -> bool:
        """Whether a tool registered at run time becomes active. An announced tool needs to be named when
        ``--tools`` is given; any other late tool is active as extension tools always are (unless excluded)."""
        if _matches(name, self.exclude):
            return False
        if self.allow is None or _matches(name, self.allow):
            return True
        return not _matches(name, self.expected)

    def announced(self, name: str) -> bool:
        """``name`` (a tool name or a glob over them) falls under a pattern an extension announced."""
        return _matches(name, self.expected)


def unannounced(names: Sequence[str], known: Iterable[str], selection: ToolSelection) -> list[str]:
    """The names in ``names`` that are neither a known tool nor announced by an extension."""
    have = set(known)
    return [n for n in names if n not in have and not selection.announced(n)]

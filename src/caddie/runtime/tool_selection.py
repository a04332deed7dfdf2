"""Which tools exist for a session and which become active when registered after start-up: ``--tools``
(an allowlist over every tool, as Pi's: a tool it does not name does not exist for the run; ``-nt`` is the
empty allowlist) and ``--exclude-tools`` (those never exist).

Extensions announce tools they register later with ``api.expect_tools(pattern)`` (MCP servers' tools, once
connected); the user may name them (or glob them, ``mcp__github__*``) before they exist. Pure: the session
asks ``admits(name)`` for every tool it would offer.
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
        """Whether the tool exists for this session (not excluded; named by the allowlist when there is
        one). A tool registered at run time that it admits becomes active, as extension tools always are."""
        if _matches(name, self.exclude):
            return False
        return self.allow is None or _matches(name, self.allow)

    def announced(self, name: str) -> bool:
        """``name`` (a tool name or a glob over them) falls under a pattern an extension announced."""
        return _matches(name, self.expected)


def unannounced(names: Sequence[str], known: Iterable[str], selection: ToolSelection) -> list[str]:
    """The names in ``names`` that are neither a known tool nor announced by an extension."""
    have = set(known)
    return [n for n in names if n not in have and not selection.announced(n)]

"""Where a tool, command, prompt template or skill came from — Pi's ``sourceInfo``, decided as Pi decides it.

``scope`` says which configuration brought it in: ``user`` (``~/.caddie/agent``, the user settings),
``project`` (``<project>/.caddie``, the project settings) or ``temporary`` (this run only: ``-e``,
``--skill``, ``--prompt-template``, built-in tools, the bundled extensions, the SDK, an extension's
``resources_discover``). ``origin`` is ``package`` for what an installed package brought, else ``top-level``.
``source`` is ``auto`` (found in a standard folder), ``local`` (a settings entry or a path), ``cli`` (``-e``),
the package's source as written in settings, ``builtin``, ``bundled``, ``sdk``, ``entry-point`` or
``extension:<name>``. ``base_dir`` is the folder it belongs to, when it belongs to one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

SourceScope = Literal["user", "project", "temporary"]
SourceOrigin = Literal["package", "top-level"]


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Pi's ``SourceInfo`` under Python names (``base_dir`` for ``baseDir``)."""

    path: str
    source: str
    scope: SourceScope = "temporary"
    origin: SourceOrigin = "top-level"
    base_dir: str | None = None

    def to_json(self) -> dict[str, str]:
        """Pi's JSON shape (camelCase; ``baseDir`` only when there is one)."""
        out = {"path": self.path, "source": self.source, "scope": self.scope, "origin": self.origin}
        if self.base_dir is not None:
            out["baseDir"] = self.base_dir
        return out


UNDECIDED = SourceInfo("", "")
"""The default of fields a host fills in later (a built-in tool's, a command's from its path)."""


def builtin_tool_source(name: str) -> SourceInfo:
    return SourceInfo(f"<builtin:{name}>", "builtin")


def sdk_tool_source(name: str) -> SourceInfo:
    """A tool given to ``caddie.sdk.create_session(custom_tools=…)``."""
    return SourceInfo(f"<sdk:{name}>", "sdk")


def extension_source(path: str) -> SourceInfo:
    """What an extension of ``path`` is when nothing more is known: a synthetic path (``<sdk:name>``,
    ``bundled:goal``, ``entry-point:…``) is ``temporary`` with its prefix as the source; a file is ``local``
    with its folder as the base."""
    if path.startswith("<") and path.endswith(">"):
        return SourceInfo(path, path[1:-1].split(":")[0] or "temporary")
    if path.startswith(("bundled:", "entry-point:", "package:")):
        return SourceInfo(path, path.split(":")[0])
    return SourceInfo(path, "local", base_dir=os.path.dirname(path) if os.path.isabs(path) else None)


def resource_source(path: str) -> SourceInfo:
    """A skill or prompt template loaded from a path given for this run (Pi: ``local``, ``temporary``, its
    folder as the base)."""
    return SourceInfo(path, "local", base_dir=os.path.dirname(path))


def command_source(path: str, from_extension: bool) -> SourceInfo:
    """A slash command's source when none was given: an extension's command is the extension's, a template
    or skill is the file it was read from."""
    return extension_source(path) if from_extension else resource_source(path)

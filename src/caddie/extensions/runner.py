"""Runs extension handlers: dispatch in load order, sync or async, fail-open (except ``tool_call``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caddie.tools.base import ToolDefinition

if TYPE_CHECKING:
    from caddie.extensions.api import CommandSpec, ExtensionAPI, Handler


@dataclass
class Extension:
    """One loaded extension: where it came from and what it registered."""

    path: str
    name: str
    handlers: dict[str, list[Handler]] = field(default_factory=dict)
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    api: ExtensionAPI | None = None

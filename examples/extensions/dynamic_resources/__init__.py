"""Skills and prompt templates an extension brings along (Pi's dynamic-resources example): on
``resources_discover`` it offers the ``SKILL.md`` and the ``repo-summary.md`` template next to it, so
``/skill:dynamic-resources`` and ``/repo-summary`` work wherever the extension is loaded."""

from __future__ import annotations

from pathlib import Path

from caddie.extensions.api import (
    ExtensionAPI,
    ExtensionContext,
    ResourcesDiscoverEvent,
    ResourcesDiscoverResult,
)

HERE = Path(__file__).parent


def register(api: ExtensionAPI) -> None:
    def discover(event: ResourcesDiscoverEvent, ctx: ExtensionContext) -> ResourcesDiscoverResult:
        return ResourcesDiscoverResult(
            skill_paths=[str(HERE / "SKILL.md")], prompt_paths=[str(HERE / "repo-summary.md")]
        )

    api.on("resources_discover", discover)

"""Point the model at ``.claude/rules/`` (Pi's claude-rules example): the rule files found there at start-up
are listed in the system prompt, and the model reads the ones a task needs with ``read``."""

from __future__ import annotations

from pathlib import Path

from caddie.extensions.api import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    ExtensionAPI,
    ExtensionContext,
)


def find_markdown_files(root: Path) -> list[str]:
    """Every ``.md`` file under ``root``, as paths relative to it (sorted)."""
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.md") if p.is_file())


def register(api: ExtensionAPI) -> None:
    rules: list[str] = []

    def on_start(event: object, ctx: ExtensionContext) -> None:
        rules[:] = find_markdown_files(Path(ctx.cwd) / ".claude" / "rules")
        if rules:
            ctx.ui.notify(f"Found {len(rules)} rule(s) in .claude/rules/", "info")

    def before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        if not rules:
            return None
        listing = "\n".join(f"- .claude/rules/{name}" for name in rules)
        return BeforeAgentStartResult(
            system_prompt=event.system_prompt
            + f"""

## Project Rules

The following project rules are available in .claude/rules/:

{listing}

When working on tasks related to these rules, use the read tool to load the relevant rule files for guidance.
"""
        )

    api.on("session_start", on_start)
    api.on("before_agent_start", before)

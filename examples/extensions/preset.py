"""Named presets of model, thinking level, tools and instructions (Pi's preset example).

Presets live in ``~/.caddie/agent/presets.json`` and ``<project>/.caddie/presets.json`` (the project's win
by name)::

    {"plan": {"provider": "anthropic", "model": "claude-sonnet-4-5", "thinkingLevel": "high",
              "tools": ["read", "grep", "find", "ls"], "instructions": "You are in PLANNING MODE. ..."}}

``caddie --preset plan`` starts with one, ``/preset`` picks one (or ``(none)``: back to how things were),
``/preset plan`` switches directly, Ctrl+Shift+U cycles. The active preset's instructions are appended to
the system prompt; its name is saved in the session, so a resumed session keeps it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie.extensions.api import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CommandContext,
    CustomEntry,
    ExtensionAPI,
    ExtensionContext,
    Model,
)

log = logging.getLogger(__name__)
NONE = "(none)"


def load_presets(agent_dir: str, cwd: str) -> dict[str, dict[str, Any]]:
    """Global presets, then the project's over them (by name). A broken file is logged and skipped."""
    merged: dict[str, dict[str, Any]] = {}
    for path in (Path(agent_dir) / "presets.json", Path(cwd) / ".caddie" / "presets.json"):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            log.warning("Failed to load presets from %s: %s", path, e)
            continue
        if isinstance(data, dict):
            merged.update({k: v for k, v in data.items() if isinstance(v, dict)})
    return merged


def describe(preset: dict[str, Any]) -> str:
    parts = []
    if preset.get("provider") and preset.get("model"):
        parts.append(f"{preset['provider']}/{preset['model']}")
    if preset.get("thinkingLevel"):
        parts.append(f"thinking:{preset['thinkingLevel']}")
    if preset.get("tools"):
        parts.append(f"tools:{','.join(preset['tools'])}")
    if preset.get("instructions"):
        text = str(preset["instructions"])
        parts.append(f'"{text[:27]}..."' if len(text) > 30 else f'"{text}"')
    return " | ".join(parts)


@dataclass
class Original:
    model: Model | None
    thinking_level: str
    tools: list[str]


def register(api: ExtensionAPI) -> None:
    presets: dict[str, dict[str, Any]] = {}
    active: dict[str, Any] = {"name": None, "preset": None}
    original: list[Original] = []

    api.register_flag("preset", "Preset configuration to use")

    def no_presets(ctx: ExtensionContext) -> None:
        agent = ctx.config_scope().agent_dir
        ctx.ui.notify(
            f"No presets defined. Add presets to {Path(agent) / 'presets.json'} or "
            f"{Path(ctx.cwd) / '.caddie' / 'presets.json'}",
            "warning",
        )

    def update_status(ctx: ExtensionContext) -> None:
        ctx.ui.set_status("preset", f"preset:{active['name']}" if active["name"] else None)

    async def apply(name: str, preset: dict[str, Any], ctx: ExtensionContext) -> None:
        if active["name"] is None:
            original[:] = [Original(ctx.model, api.get_thinking_level(), api.get_active_tools())]
        provider, model_id = preset.get("provider"), preset.get("model")
        if provider and model_id:
            model = ctx.model_registry.find(provider, model_id)
            if model is None:
                ctx.ui.notify(f'Preset "{name}": Model {provider}/{model_id} not found', "warning")
            elif not await api.set_model(model):
                ctx.ui.notify(f'Preset "{name}": No API key for {provider}/{model_id}', "warning")
        if preset.get("thinkingLevel"):
            api.set_thinking_level(str(preset["thinkingLevel"]))
        wanted = [str(t) for t in preset.get("tools") or []]
        if wanted:
            known = {t.name for t in api.get_all_tools()}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                ctx.ui.notify(f'Preset "{name}": Unknown tools: {", ".join(unknown)}', "warning")
            if any(t in known for t in wanted):
                api.set_active_tools([t for t in wanted if t in known])
        active["name"], active["preset"] = name, preset

    async def clear(ctx: ExtensionContext) -> None:
        active["name"] = active["preset"] = None
        if original:
            if original[0].model is not None:
                await api.set_model(original[0].model)
            api.set_thinking_level(original[0].thinking_level)
            api.set_active_tools(original[0].tools)
        else:
            api.set_active_tools(["read", "bash", "edit", "write"])
        ctx.ui.notify("Preset cleared, defaults restored", "info")
        update_status(ctx)

    async def switch(name: str, ctx: ExtensionContext) -> None:
        if name == NONE:
            await clear(ctx)
            return
        await apply(name, presets[name], ctx)
        ctx.ui.notify(f'Preset "{name}" activated', "info")
        update_status(ctx)

    async def command(args: str, ctx: CommandContext) -> None:
        name = args.strip()
        if name:
            if name not in presets:
                available = ", ".join(presets) or "(none defined)"
                ctx.ui.notify(f'Unknown preset "{name}". Available: {available}', "error")
                return
            await switch(name, ctx)
            return
        if not presets:
            no_presets(ctx)
            return
        labels = {
            (f"{n} (active)" if n == active["name"] else n) + (f" — {describe(p)}" if describe(p) else ""): n
            for n, p in presets.items()
        }
        labels[f"{NONE} — Clear active preset, restore defaults"] = NONE
        chosen = await ctx.ui.select("Select Preset", list(labels))
        if chosen is not None:
            await switch(labels[chosen], ctx)

    async def cycle(ctx: ExtensionContext) -> None:
        if not presets:
            no_presets(ctx)
            return
        order = [NONE, *sorted(presets)]
        current = active["name"] or NONE
        await switch(order[(order.index(current) + 1) % len(order)], ctx)

    def before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        instructions = (active["preset"] or {}).get("instructions")
        return (
            BeforeAgentStartResult(system_prompt=f"{event.system_prompt}\n\n{instructions}")
            if instructions
            else None
        )

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        presets.clear()
        presets.update(load_presets(ctx.config_scope().agent_dir, ctx.cwd))
        flag = api.get_flag("preset")
        if isinstance(flag, str) and flag:
            if flag in presets:
                await apply(flag, presets[flag], ctx)
                ctx.ui.notify(f'Preset "{flag}" activated', "info")
            else:
                available = ", ".join(presets) or "(none defined)"
                ctx.ui.notify(f'Unknown preset "{flag}". Available: {available}', "warning")
        else:
            saved = [
                e
                for e in ctx.session.entries()
                if isinstance(e, CustomEntry) and e.custom_type == "preset-state"
            ]
            name = saved[-1].data.get("name") if saved and isinstance(saved[-1].data, dict) else None
            if name in presets:  # the name only: model and tools are the session's own
                active["name"], active["preset"] = name, presets[name]
        update_status(ctx)

    def remember(event: object, ctx: ExtensionContext) -> None:
        if active["name"]:
            api.append_entry("preset-state", {"name": active["name"]})

    api.register_shortcut("ctrl+shift+u", cycle, "Cycle presets")
    api.register_command("preset", command, "Switch preset configuration")
    api.on("before_agent_start", before)
    api.on("session_start", on_start)
    api.on("turn_start", remember)

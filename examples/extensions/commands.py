"""List every slash command of the session (Pi's commands example): ``/commands`` shows the extensions'
commands, prompt templates and skills grouped by source (``/commands prompt`` shows one source), and picking
one offers to show the file it comes from. It is built on ``api.get_commands()``."""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI, SlashCommandInfo

SOURCES = (("extension", "Extensions"), ("prompt", "Prompts"), ("skill", "Skills"))


def listing(commands: list[SlashCommandInfo], source: str = "") -> list[str]:
    """The picker's rows: a ``--- Label ---`` row before each source's commands, ``/name - description``."""
    rows: list[str] = []
    for key, label in SOURCES:
        if source and key != source:
            continue
        group = [c for c in commands if c.source == key]
        if group:
            rows.append(f"--- {label} ---")
            rows += [f"/{c.name} - {c.description}" if c.description else f"/{c.name}" for c in group]
    return rows


def register(api: ExtensionAPI) -> None:
    async def show(args: str, ctx: CommandContext) -> None:
        source = args.strip()
        if source and source not in dict(SOURCES):
            ctx.ui.notify(f"Unknown source {source!r}: use extension, prompt or skill", "error")
            return
        commands = api.get_commands()
        rows = listing(commands, source)
        if not rows:
            ctx.ui.notify(f"No {source} commands found" if source else "No commands found", "info")
            return
        picked = await ctx.ui.select("Available Commands", rows)
        if picked is None or picked.startswith("---"):
            return
        name = picked.split(" - ")[0].removeprefix("/")
        command = next((c for c in commands if c.name == name), None)
        where = command.source_info.path if command is not None else ""
        if command is not None and await ctx.ui.confirm(command.name, f"View source path?\n{where}"):
            ctx.ui.notify(where, "info")

    api.register_command(
        "commands",
        show,
        description="List available slash commands",
        get_argument_completions=lambda prefix: [s for s, _ in SOURCES if s.startswith(prefix)],
    )

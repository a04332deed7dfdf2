"""Compact at a size you choose (Pi's trigger-compact example): once the context grows past 100,000 tokens
the session compacts, and ``/trigger-compact [instructions]`` compacts now."""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI, ExtensionContext

COMPACT_THRESHOLD_TOKENS = 100_000


def trigger(ctx: ExtensionContext, instructions: str | None = None) -> None:
    if ctx.has_ui:
        ctx.ui.notify("Compaction started", "info")

    def done(entry: object) -> None:
        if ctx.has_ui:
            ctx.ui.notify("Compaction completed", "info")

    def failed(error: Exception) -> None:
        if ctx.has_ui:
            ctx.ui.notify(f"Compaction failed: {error}", "error")

    ctx.compact(instructions, done, failed)


def register(api: ExtensionAPI) -> None:
    previous: list[int | None] = []

    def on_turn_end(event: object, ctx: ExtensionContext) -> None:
        usage = ctx.get_context_usage()
        tokens = usage.tokens if usage is not None else None
        if tokens is None:
            return
        crossed = bool(previous) and previous[-1] is not None and previous[-1] <= COMPACT_THRESHOLD_TOKENS
        previous[:] = [tokens]
        if crossed and tokens > COMPACT_THRESHOLD_TOKENS:
            trigger(ctx)

    def command(args: str, ctx: CommandContext) -> None:
        trigger(ctx, args.strip() or None)

    api.on("turn_end", on_turn_end)
    api.register_command("trigger-compact", command, "Trigger compaction immediately")

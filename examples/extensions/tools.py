"""Switch tools on and off (Pi's tools example): ``/tools`` lists every tool with its state; pick one to
flip it, pick "Done" to close. The choice is saved in the session and follows the tree (``/tree``,
``/fork``), so each branch keeps the tools it had."""

from __future__ import annotations

from caddie.extensions.api import CommandContext, CustomEntry, ExtensionAPI, ExtensionContext

DONE = "Done"


def register(api: ExtensionAPI) -> None:
    enabled: set[str] = set()

    def apply() -> None:
        order = [t.name for t in api.get_all_tools()]
        api.set_active_tools([name for name in order if name in enabled])

    def restore(ctx: ExtensionContext) -> None:
        names = {t.name for t in api.get_all_tools()}
        saved: list[str] | None = None
        for entry in ctx.session.branch():
            if (
                isinstance(entry, CustomEntry)
                and entry.custom_type == "tools-config"
                and isinstance(entry.data, dict)
            ):
                saved = [str(n) for n in entry.data.get("enabledTools", [])]
        enabled.clear()
        if saved is None:
            enabled.update(api.get_active_tools())
            return
        enabled.update(n for n in saved if n in names)
        apply()

    async def tools(args: str, ctx: CommandContext) -> None:
        if ctx.mode != "tui":
            ctx.ui.notify("/tools requires TUI mode", "error")
            return
        while True:
            labels = {f"{'☑' if t.name in enabled else '☐'} {t.name}": t.name for t in api.get_all_tools()}
            choice = await ctx.ui.select("Tool Configuration", [*labels, DONE])
            if choice is None or choice == DONE:
                return
            name = labels[choice]
            enabled.symmetric_difference_update({name})
            apply()
            api.append_entry("tools-config", {"enabledTools": sorted(enabled)})

    api.register_command("tools", tools, "Enable/disable tools")
    api.on("session_start", lambda event, ctx: restore(ctx))
    api.on("session_tree", lambda event, ctx: restore(ctx))

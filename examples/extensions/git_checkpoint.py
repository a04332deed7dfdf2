"""Code checkpoints you can go back to (Pi's git-checkpoint example): before every turn the working tree is
saved with ``git stash create`` (nothing in your tree changes), keyed by the session entry it follows; a
``/fork`` from such an entry offers to put the code back as it was then (``git stash apply``)."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext, SessionBeforeForkEvent


def register(api: ExtensionAPI) -> None:
    checkpoints: dict[str, str] = {}
    current: list[str] = []

    def remember_leaf(event: object, ctx: ExtensionContext) -> None:
        leaf = ctx.session.leaf_entry()
        if leaf is not None:
            current[:] = [leaf.id]

    async def checkpoint(event: object, ctx: ExtensionContext) -> None:
        made = await api.exec("git", ["stash", "create"], cwd=ctx.cwd)
        ref = made.stdout.strip()
        if ref and current:
            checkpoints[current[0]] = ref

    async def offer_restore(event: SessionBeforeForkEvent, ctx: ExtensionContext) -> None:
        ref = checkpoints.get(event.entry_id)
        if ref is None or not ctx.has_ui:
            return
        choice = await ctx.ui.select(
            "Restore code state?", ["Yes, restore code to that point", "No, keep current code"]
        )
        if choice is not None and choice.startswith("Yes"):
            await api.exec("git", ["stash", "apply", ref], cwd=ctx.cwd)
            ctx.ui.notify("Code restored to checkpoint", "info")

    api.on("tool_result", remember_leaf)
    api.on("turn_start", checkpoint)
    api.on("session_before_fork", offer_restore)
    api.on("agent_settled", lambda event, ctx: checkpoints.clear())

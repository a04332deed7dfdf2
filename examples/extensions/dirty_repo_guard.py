"""Keep the session while the git repository has uncommitted changes (Pi's dirty-repo-guard example):
``/new``, ``/resume`` and ``/fork`` ask first (and are refused without a UI). Outside a git repository
nothing changes."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext, SessionBeforeSwitchResult


def register(api: ExtensionAPI) -> None:
    async def check(ctx: ExtensionContext, action: str) -> SessionBeforeSwitchResult | None:
        status = await api.exec("git", ["status", "--porcelain"], cwd=ctx.cwd)
        if status.code != 0:
            return None  # not a git repository
        changed = [line for line in status.stdout.strip().splitlines() if line]
        if not changed:
            return None
        if not ctx.has_ui:
            return SessionBeforeSwitchResult(cancel=True)
        choice = await ctx.ui.select(
            f"You have {len(changed)} uncommitted file(s). {action} anyway?",
            ["Yes, proceed anyway", "No, let me commit first"],
        )
        if choice != "Yes, proceed anyway":
            ctx.ui.notify("Commit your changes first", "warning")
            return SessionBeforeSwitchResult(cancel=True)
        return None

    async def before_switch(event: object, ctx: ExtensionContext) -> SessionBeforeSwitchResult | None:
        reason = getattr(event, "reason", "new")
        return await check(ctx, "new session" if reason == "new" else "switch session")

    async def before_fork(event: object, ctx: ExtensionContext) -> SessionBeforeSwitchResult | None:
        return await check(ctx, "fork")

    api.on("session_before_switch", before_switch)
    api.on("session_before_fork", before_fork)

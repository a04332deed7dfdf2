"""The status on the editor's border (Pi's border-status-editor example): the footer and the working line
go away; instead a spinner turns on the editor's top border while the agent works, and its bottom border
says the model, the thinking level, how full the context is, the directory and the git branch.

It puts a ``CustomEditor`` in place of caddie's (``ui.set_editor_component``) that types as caddie's does and
only sets ``mode_label`` (the top border) and ``status_label`` (the bottom one); ``tui.request_render()``
draws them again as the spinner turns. ``ui.set_footer`` with a component that draws nothing hides the
footer, ``ui.set_working_visible(False)`` the working line.

Load it with ``caddie -e examples/extensions/border_status_editor.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from caddie.extensions.api import (
    CustomEditor,
    ExtensionAPI,
    ExtensionContext,
    KeybindingsView,
    KeyInput,
    ThemeView,
    TuiHandle,
)

SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]


def short_cwd(cwd: str) -> str:
    home = str(Path.home())
    return "~" + cwd[len(home) :] if cwd.startswith(home) else cwd


def context_label(ctx: ExtensionContext) -> str:
    usage = ctx.get_context_usage()
    if usage is None or usage.percent is None or not usage.context_window:
        return "ctx ?"
    return f"ctx {round(usage.percent)}%/{usage.context_window / 1000:.0f}k"


class EmptyFooter:
    def render(self, width: int) -> list[str]:
        return []


class Status:
    """What the border shows, kept by the extension and read by the editor."""

    def __init__(self) -> None:
        self.working = False
        self.frame = 0
        self.git_branch: str | None = None
        self.editors: list[BorderStatusEditor] = []

    def redraw(self) -> None:
        for editor in self.editors:
            editor.update_labels()
            editor.tui.request_render()


class BorderStatusEditor(CustomEditor):
    def __init__(
        self,
        tui: TuiHandle,
        theme: ThemeView,
        keybindings: KeybindingsView,
        ctx: ExtensionContext,
        api: ExtensionAPI,
        status: Status,
    ) -> None:
        super().__init__(tui, theme, keybindings)
        self.ctx, self.api, self.status = ctx, api, status
        self.update_labels()

    def update_labels(self) -> None:
        ctx, theme = self.ctx, self.ctx.ui.theme
        model = f"{ctx.model.provider}/{ctx.model.id}" if ctx.model is not None else "no model"
        spinner = SPINNER[self.status.frame % len(SPINNER)]
        self.mode_label = theme.fg("accent", f" {spinner} ") if self.status.working else None
        branch = f" ({self.status.git_branch})" if self.status.git_branch else ""
        self.status_label = theme.fg(
            "muted",
            f" {model} · {self.api.get_thinking_level()} · {context_label(ctx)} · {short_cwd(ctx.cwd)}{branch} ",
        )

    def handle_input(self, key: KeyInput) -> None:
        super().handle_input(key)
        self.update_labels()


def register(api: ExtensionAPI) -> None:
    status = Status()
    spinning: list[asyncio.Task[None]] = []

    async def spin() -> None:
        while True:
            await asyncio.sleep(0.08)
            status.frame += 1
            status.redraw()

    def stop_spinning() -> None:
        while spinning:
            spinning.pop().cancel()

    async def on_agent_start(event: object, ctx: ExtensionContext) -> None:
        status.working = True
        stop_spinning()
        spinning.append(asyncio.ensure_future(spin()))
        status.redraw()

    async def on_settled(event: object, ctx: ExtensionContext) -> None:
        status.working = False
        stop_spinning()
        status.redraw()

    async def on_turn_end(event: object, ctx: ExtensionContext) -> None:
        status.redraw()  # the context grew

    async def on_shutdown(event: object, ctx: ExtensionContext) -> None:
        stop_spinning()
        status.editors.clear()

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        if not ctx.ui.supports("editor_component"):
            return
        ctx.ui.set_working_visible(False)
        ctx.ui.set_footer(lambda tui, theme: EmptyFooter())

        def make(tui: TuiHandle, theme: ThemeView, keybindings: KeybindingsView) -> BorderStatusEditor:
            editor = BorderStatusEditor(tui, theme, keybindings, ctx, api, status)
            status.editors[:] = [editor]
            return editor

        ctx.ui.set_editor_component(make)
        result = await api.exec("git", ["branch", "--show-current"], cwd=ctx.cwd, timeout=5)
        status.git_branch = (result.stdout.strip() or None) if result.code == 0 else None
        status.redraw()

    api.on("session_start", on_start)
    api.on("agent_start", on_agent_start)
    api.on("agent_settled", on_settled)
    api.on("turn_end", on_turn_end)
    api.on("session_shutdown", on_shutdown)

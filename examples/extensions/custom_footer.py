"""A footer of your own (Pi's custom-footer example): ``/footer`` swaps caddie's footer for one line with the
branch's tokens in and out, its cost, the model and the git branch; ``/footer`` again restores caddie's.

The footer is a component (``render(width) -> lines``) that ``ui.set_footer`` draws in place of caddie's.
Pi hands its footer a ``footerData`` with the git branch; caddie's footer factory gets ``(tui, theme)``, so
this one asks git itself (``api.exec``) at the session's start and after every turn, then
``tui.request_render()`` draws the footer again.

Load it with ``caddie -e examples/extensions/custom_footer.py``.
"""

from __future__ import annotations

from rich.text import Text

from caddie.extensions.api import (
    AssistantMessage,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    ThemeView,
    TuiHandle,
)


def short_count(n: int) -> str:
    return str(n) if n < 1000 else f"{n / 1000:.1f}k"


def visible_width(line: str) -> int:
    return Text.from_ansi(line).cell_len


def spread(left: str, right: str, width: int) -> str:
    """``left`` and ``right`` at the two ends of ``width`` cells (at least one space between)."""
    pad = max(1, width - visible_width(left) - visible_width(right))
    return left + " " * pad + right


def branch_totals(ctx: ExtensionContext) -> tuple[int, int, float]:
    """Input tokens, output tokens and cost of the assistant's replies on the current branch."""
    tokens_in = tokens_out = 0
    cost = 0.0
    for entry in ctx.session.branch():
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            usage = entry.message.usage
            tokens_in += usage.input
            tokens_out += usage.output
            cost += usage.cost.total
    return tokens_in, tokens_out, cost


class TokenFooter:
    def __init__(self, ctx: ExtensionContext, theme: ThemeView, git_branch: list[str | None]) -> None:
        self.ctx, self.theme, self.git_branch = ctx, theme, git_branch

    def render(self, width: int) -> list[str]:
        tokens_in, tokens_out, cost = branch_totals(self.ctx)
        left = self.theme.fg("dim", f"↑{short_count(tokens_in)} ↓{short_count(tokens_out)} ${cost:.3f}")
        model = self.ctx.model.id if self.ctx.model is not None else "no-model"
        branch = f" ({self.git_branch[0]})" if self.git_branch[0] else ""
        return [spread(left, self.theme.fg("dim", f"{model}{branch}"), width)]


def register(api: ExtensionAPI) -> None:
    enabled = [False]
    git_branch: list[str | None] = [None]
    screens: list[TuiHandle] = []

    async def refresh_branch(ctx: ExtensionContext) -> None:
        result = await api.exec("git", ["branch", "--show-current"], cwd=ctx.cwd, timeout=5)
        git_branch[0] = (result.stdout.strip() or None) if result.code == 0 else None
        for tui in screens:
            tui.request_render()

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        await refresh_branch(ctx)

    async def on_turn_end(event: object, ctx: ExtensionContext) -> None:
        await refresh_branch(ctx)  # a turn may have switched branches (git checkout in bash)

    async def footer(args: str, ctx: CommandContext) -> None:
        enabled[0] = not enabled[0]
        if not enabled[0]:
            ctx.ui.set_footer(None)
            screens.clear()
            ctx.ui.notify("Default footer restored", "info")
            return

        def make(tui: TuiHandle, theme: ThemeView) -> TokenFooter:
            screens[:] = [tui]
            return TokenFooter(ctx, theme, git_branch)

        ctx.ui.set_footer(make)
        ctx.ui.notify("Custom footer enabled", "info")

    api.on("session_start", on_start)
    api.on("turn_end", on_turn_end)
    api.register_command("footer", footer, "Toggle custom footer")

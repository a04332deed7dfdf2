"""A footer of your own (Pi's custom-footer example): ``/footer`` swaps caddie's footer for one line with the
branch's tokens in and out, its cost, the model and the git branch; ``/footer`` again restores caddie's.

The footer is a component (``render(width) -> lines``) that ``ui.set_footer`` draws in place of caddie's.
Its factory takes Pi's third argument, the footer data: the git branch (``get_git_branch()``), and
``on_branch_change(callback)`` so that a ``git checkout`` redraws it (``tui.request_render()``); the
component's ``dispose()`` stops listening when the footer is replaced.

Load it with ``caddie -e examples/extensions/custom_footer.py``.
"""

from __future__ import annotations

from typing import Any

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
    def __init__(self, ctx: ExtensionContext, tui: TuiHandle, theme: ThemeView, footer_data: Any) -> None:
        self.ctx, self.theme, self.footer_data = ctx, theme, footer_data
        self.dispose = footer_data.on_branch_change(tui.request_render)
        """Called when the footer goes: stops listening for branch changes."""

    def render(self, width: int) -> list[str]:
        tokens_in, tokens_out, cost = branch_totals(self.ctx)
        left = self.theme.fg("dim", f"↑{short_count(tokens_in)} ↓{short_count(tokens_out)} ${cost:.3f}")
        model = self.ctx.model.id if self.ctx.model is not None else "no-model"
        git_branch = self.footer_data.get_git_branch()
        branch = f" ({git_branch})" if git_branch else ""
        return [spread(left, self.theme.fg("dim", f"{model}{branch}"), width)]


def register(api: ExtensionAPI) -> None:
    enabled = [False]

    async def footer(args: str, ctx: CommandContext) -> None:
        enabled[0] = not enabled[0]
        if enabled[0]:
            ctx.ui.set_footer(lambda tui, theme, footer_data: TokenFooter(ctx, tui, theme, footer_data))
            ctx.ui.notify("Custom footer enabled", "info")
        else:
            ctx.ui.set_footer(None)
            ctx.ui.notify("Default footer restored", "info")

    api.register_command("footer", footer, "Toggle custom footer")

"""A tour of ``ctx.ui`` in the terminal UI: components, the footer and header, a picker in place of the editor,
an overlay, the working line, themes, autocomplete, key hooks, tool renderers and dialogs dismissed by a signal.

Load it with ``caddie -e examples/extensions/ui_tour.py`` and try:
- ``/ui-panel``: a live panel above the editor (a component; ``/ui-panel off`` removes it);
- ``/ui-footer`` / ``/ui-header``: the footer and the transcript's first block drawn by the extension (``off``
  restores caddie's);
- ``/ui-pick``: a list in place of the editor (Up/Down, Enter, Esc) whose choice comes back to the command;
- ``/ui-overlay``: a box floating over the conversation (``q`` closes it);
- ``/ui-working``: the working line's spinner, message and visibility while the agent works;
- ``/ui-thinking <label>``: what a collapsed thinking block says;
- ``/ui-theme [name]``: the themes, and switching to one;
- ``/ui-tools``: expand or collapse tool output (as Ctrl+O does);
- ``/ui-paste``: a large paste into the editor (it collapses to a ``[paste #1 …]`` marker);
- ``/ui-ask``: a confirmation that closes itself after 5 s (counting down), or at once on F8 (its signal);
- ``#`` in the editor offers issue numbers (an autocomplete provider over caddie's own);
- F7 anywhere shows how many keys the extension has seen (a key hook that consumes F7);
- the ``roll_dice`` tool draws its call and result its own way (``render_call`` / ``render_result``).
In print, json, RPC and ACP modes the same calls answer "unavailable" (``ui.supports(feature)`` is False).
"""

from __future__ import annotations

import random
from typing import Any

from caddie.extensions.api import (
    AbortController,
    AutocompleteProvider,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    KeyInput,
    OverlayHandle,
    OverlayOptions,
    Suggestion,
    Suggestions,
    TextContent,
    ThemeView,
    ToolDefinition,
    ToolResult,
    TuiHandle,
    matches_key,
)

ISSUES = {"12": "Crash on resume", "27": "The interactive UI", "31": "MCP servers"}


class Panel:
    """A widget component: a counter the command bumps, drawn with the theme's colours."""

    def __init__(self, tui: TuiHandle, theme: ThemeView) -> None:
        self.tui, self.theme = tui, theme
        self.clicks = 0

    def bump(self) -> None:
        self.clicks += 1
        self.tui.request_render()  # draw again: the state changed outside handle_input

    def render(self, width: int) -> list[str]:
        bar = "█" * min(self.clicks, max(1, width - 20))
        return [
            self.theme.fg("accent", f"ui-tour panel · {self.clicks} bumps ") + self.theme.fg("muted", bar)
        ]


class Picker:
    """``ui.custom``: a list in place of the editor; Enter answers the highlighted item, Esc None."""

    def __init__(self, tui: TuiHandle, theme: ThemeView, items: list[str], done: Any) -> None:
        self.tui, self.theme, self.items, self.done = tui, theme, items, done
        self.index = 0

    def render(self, width: int) -> list[str]:
        lines = [self.theme.bold("Pick a colour (↑↓, enter, esc)")]
        for i, item in enumerate(self.items):
            marker = "›" if i == self.index else " "
            text = f"{marker} {item}"
            lines.append(self.theme.fg("accent", text) if i == self.index else text)
        return lines

    def handle_input(self, key: KeyInput) -> None:
        if matches_key(key, "up"):
            self.index = (self.index - 1) % len(self.items)
        elif matches_key(key, "down"):
            self.index = (self.index + 1) % len(self.items)
        elif matches_key(key, "enter"):
            self.done(self.items[self.index])
        elif matches_key(key, "escape"):
            self.done(None)


class Box:
    """``ui.custom(..., overlay=True)``: a note floating over the conversation; ``q`` closes it."""

    def __init__(self, theme: ThemeView, done: Any) -> None:
        self.theme, self.done = theme, done

    def render(self, width: int) -> list[str]:
        return [self.theme.bold("ui-tour overlay"), "The conversation stays visible behind me.", "q closes"]

    def handle_input(self, key: KeyInput) -> None:
        if matches_key(key, "q"):
            self.done("closed")


def register(api: ExtensionAPI) -> None:
    panel: list[Panel] = []
    keys_seen = [0]
    asking: list[AbortController] = []

    # -- components ------------------------------------------------------------------------------------
    async def ui_panel(args: str, ctx: CommandContext) -> None:
        if args.strip() == "off":
            ctx.ui.set_widget("ui-tour", None)
            panel.clear()
            return
        if not panel:

            def make(tui: TuiHandle, theme: ThemeView) -> Panel:
                panel[:] = [Panel(tui, theme)]  # made again when the theme changes: a fresh one
                return panel[0]

            ctx.ui.set_widget("ui-tour", make, "aboveEditor")
        else:
            panel[0].bump()

    async def ui_footer(args: str, ctx: CommandContext) -> None:
        if args.strip() == "off":
            ctx.ui.set_footer(None)
            return
        model = ctx.model.ref if ctx.model is not None else "no model"

        class Footer:
            def render(self, width: int) -> list[str]:
                return [ctx.ui.theme.fg("muted", f"ui-tour footer · {model} · {ctx.cwd}")[: width + 40]]

        ctx.ui.set_footer(lambda tui, theme: Footer())

    async def ui_header(args: str, ctx: CommandContext) -> None:
        if args.strip() == "off":
            ctx.ui.set_header(None)
            return

        class Header:
            def render(self, width: int) -> list[str]:
                return [ctx.ui.theme.bold("ui-tour header"), "Everything below is the conversation."]

        ctx.ui.set_header(lambda tui, theme: Header())

    async def ui_pick(args: str, ctx: CommandContext) -> None:
        colours = ["red", "green", "blue"]
        picked = await ctx.ui.custom(lambda tui, theme, keys, done: Picker(tui, theme, colours, done))
        ctx.ui.notify(f"picked {picked}" if picked else "nothing picked")

    async def ui_overlay(args: str, ctx: CommandContext) -> None:
        handles: list[OverlayHandle] = []
        answer = await ctx.ui.custom(
            lambda tui, theme, keys, done: Box(theme, done),
            overlay=True,
            overlay_options=OverlayOptions(anchor="top-right", width=44),
            on_handle=handles.append,
        )
        ctx.ui.notify(f"overlay {answer}")

    # -- the working line, thinking, tools, the editor --------------------------------------------------
    async def ui_working(args: str, ctx: CommandContext) -> None:
        what = args.strip()
        if what == "hide":
            ctx.ui.set_working_visible(False)
        elif what == "reset":
            ctx.ui.set_working_visible(True)
            ctx.ui.set_working_indicator(None)
            ctx.ui.set_working_message(None)
        else:
            ctx.ui.set_working_visible(True)
            ctx.ui.set_working_indicator(["◐", "◓", "◑", "◒"], 120)
            ctx.ui.set_working_message("Touring…")

    async def ui_thinking(args: str, ctx: CommandContext) -> None:
        ctx.ui.set_hidden_thinking_label(args.strip() or None)

    async def ui_tools(args: str, ctx: CommandContext) -> None:
        ctx.ui.set_tools_expanded(not ctx.ui.get_tools_expanded())
        ctx.ui.notify(f"tool output {'expanded' if ctx.ui.get_tools_expanded() else 'collapsed'}")

    async def ui_paste(args: str, ctx: CommandContext) -> None:
        ctx.ui.paste_to_editor("\n".join(f"line {i}" for i in range(1, 41)))

    async def ui_theme(args: str, ctx: CommandContext) -> None:
        name = args.strip()
        if not name:
            names = ", ".join(t.name for t in ctx.ui.get_all_themes())
            ctx.ui.notify(f"theme {ctx.ui.theme.name}; themes: {names}")
            return
        result = ctx.ui.set_theme(name)
        ctx.ui.notify(f"theme {name}" if result.success else f"no: {result.error}")

    # -- a dialog dismissed by a signal ------------------------------------------------------------------
    async def ui_ask(args: str, ctx: CommandContext) -> None:
        controller = AbortController()
        asking.append(controller)
        ok = await ctx.ui.confirm("Ship it?", "Closes by itself in 5 s.", timeout=5, signal=controller.signal)
        if controller in asking:
            asking.remove(controller)
        ctx.ui.notify(f"answer {ok}")

    for name, handler in {
        "ui-panel": ui_panel, "ui-footer": ui_footer, "ui-header": ui_header, "ui-pick": ui_pick,
        "ui-overlay": ui_overlay, "ui-working": ui_working, "ui-thinking": ui_thinking, "ui-tools": ui_tools,
        "ui-paste": ui_paste, "ui-theme": ui_theme, "ui-ask": ui_ask,
    }.items():  # fmt: skip
        api.register_command(name, handler, f"ui tour: {name.removeprefix('ui-')}")

    # -- autocomplete, key hooks (once the UI is there) ---------------------------------------------------
    class IssueNumbers:
        """``#`` offers issue numbers; anything else goes to the provider below (caddie's own)."""

        def __init__(self, below: AutocompleteProvider) -> None:
            self.below = below

        def get_suggestions(self, lines: list[str], line: int, column: int) -> Any:
            before = lines[line][:column]
            word = before.rsplit(" ", 1)[-1]
            if not word.startswith("#"):
                return self.below.get_suggestions(lines, line, column)
            items = [
                Suggestion(f"#{n}", f"#{n}", title) for n, title in ISSUES.items() if n.startswith(word[1:])
            ]
            return Suggestions(word, items)

    ui_context: list[ExtensionContext] = []

    def count_keys(key: KeyInput) -> bool:
        """Every key comes here first, even while a dialog is open; True consumes it."""
        keys_seen[0] += 1
        if matches_key(key, "f7") and ui_context:
            ui_context[0].ui.notify(f"{keys_seen[0]} keys seen")
            return True
        if matches_key(key, "f8") and asking:  # closes /ui-ask's dialog through its signal
            asking.pop().abort()
            return True
        return False

    async def on_start(event: Any, ctx: ExtensionContext) -> None:
        if not ctx.ui.supports("terminal_input"):
            return  # print, json, RPC, ACP: no keys, no editor
        ui_context[:] = [ctx]
        ctx.ui.add_autocomplete_provider(IssueNumbers)
        ctx.ui.on_terminal_input(count_keys)

    api.on("session_start", on_start)

    # -- a tool that draws itself ------------------------------------------------------------------------
    async def roll(tool_call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        sides = int(params.get("sides", 6))
        value = random.randint(1, sides)
        return ToolResult([TextContent(str(value))], {"sides": sides, "value": value})

    def render_call(args: Any, theme: ThemeView) -> str:
        return theme.fg("accent", f"🎲 rolling a d{args.get('sides', 6)}")

    def render_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
        value = result.details.get("value") if isinstance(result.details, dict) else None
        text = f"   rolled {value}"
        return theme.bold(text) + (f" (of {result.details['sides']})" if options.expanded else "")

    api.register_tool(
        ToolDefinition(
            name="roll_dice",
            label="Roll dice",
            description="Roll a die with the given number of sides.",
            parameters={"type": "object", "properties": {"sides": {"type": "integer"}}},
            execute=roll,
            render_call=render_call,
            render_result=render_result,
        )
    )

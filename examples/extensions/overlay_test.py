"""An overlay with inline inputs and hard-to-draw text (Pi's overlay-test example): ``/overlay-test`` floats
a box over the conversation with a menu — Search and Run take typed text in place, ↑↓ move, Enter picks,
Esc closes — above lines of wide characters, colours and emoji that must keep the box's right edge straight.
The pick comes back to the command (``Run: "make test"``).

``ui.custom(factory, overlay=True)`` shows the component floating; caddie draws the box around it and
measures each row in terminal cells, so wide characters (two cells each), escape sequences (none) and
emoji do not push the box's edge.

Load it with ``caddie -e examples/extensions/overlay_test.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import (
    CommandContext,
    ExtensionAPI,
    KeyInput,
    OverlayOptions,
    ThemeView,
    matches_key,
)


@dataclass(slots=True)
class Item:
    label: str
    takes_text: bool
    text: str = ""
    cursor: int = 0


class OverlayTest:
    def __init__(self, theme: ThemeView, done: Any) -> None:
        self.theme, self.done = theme, done
        self.items = [Item("Search", True), Item("Run", True), Item("Settings", False), Item("Cancel", False)]
        self.selected = 0

    def handle_input(self, key: KeyInput) -> None:
        item = self.items[self.selected]
        if matches_key(key, "escape"):
            self.done(None)
        elif matches_key(key, "enter"):
            self.done((item.label, item.text if item.takes_text else None))
        elif matches_key(key, "up"):
            self.selected = max(0, self.selected - 1)
        elif matches_key(key, "down"):
            self.selected = min(len(self.items) - 1, self.selected + 1)
        elif item.takes_text:
            self.edit(item, key)

    @staticmethod
    def edit(item: Item, key: KeyInput) -> None:
        if matches_key(key, "backspace") and item.cursor > 0:
            item.text = item.text[: item.cursor - 1] + item.text[item.cursor :]
            item.cursor -= 1
        elif matches_key(key, "left"):
            item.cursor = max(0, item.cursor - 1)
        elif matches_key(key, "right"):
            item.cursor = min(len(item.text), item.cursor + 1)
        elif key.character and len(key.character) == 1 and key.character.isprintable():
            item.text = item.text[: item.cursor] + key.character + item.text[item.cursor :]
            item.cursor += 1

    def item_line(self, index: int, item: Item) -> str:
        t, chosen = self.theme, index == self.selected
        prefix = " ▶ " if chosen else "   "
        if not item.takes_text:
            return prefix + (t.fg("accent", item.label) if chosen else t.fg("text", item.label))
        label = t.fg("accent" if chosen else "text", f"{item.label}:")
        shown = item.text
        if chosen:  # the cursor as an inverted cell
            under = shown[item.cursor] if item.cursor < len(shown) else " "
            shown = shown[: item.cursor] + t.inverse(under) + shown[item.cursor + 1 :]
        return f"{prefix}{label} {shown}"

    def render(self, width: int) -> list[str]:
        t = self.theme
        lines = [
            " " + t.fg("accent", "🧪 Overlay Test"),
            "",
            " " + t.fg("dim", "─── Edge Cases (the right edge stays straight) ───"),
            " Wide: " + t.fg("warning", "中文日本語한글テスト漢字繁體简体ひらがなカタカナ"),
            " Styled: "
            + " ".join(t.fg(tok, tok.upper()) for tok in ("error", "success", "warning", "accent", "dim")),
            " Emoji: 🚀 💻 🎉 🔥 😀 🎯 🌟 💡 🎨 🔧 📦 🏆 🌈 🎪 🎭 🎬 🎮 🎲",
            "",
            " " + t.fg("dim", "─── Actions ───"),
            *(self.item_line(i, item) for i, item in enumerate(self.items)),
            "",
            " " + t.fg("dim", "↑↓ navigate • type to input • Enter select • Esc cancel"),
        ]
        return lines


def register(api: ExtensionAPI) -> None:
    async def overlay_test(args: str, ctx: CommandContext) -> None:
        picked = await ctx.ui.custom(
            lambda tui, theme, keys, done: OverlayTest(theme, done),
            overlay=True,
            overlay_options=OverlayOptions(anchor="center", width=72),
        )
        if picked is not None:
            action, query = picked
            ctx.ui.notify(f'{action}: "{query}"' if query else action, "info")

    api.register_command("overlay-test", overlay_test, "Test overlay rendering with edge cases")

"""A small vim mode for the editor (``ui.set_editor_component`` with a ``CustomEditor``), as Pi's
modal-editor example: Esc leaves insert mode, and in normal mode ``h j k l`` move, ``w b`` jump words,
``0 $`` go to the line's start and end, ``x`` deletes a character, ``i a A I`` go back to inserting.
The mode is shown on the editor's border. ``/vim`` switches it on and off.

Load it with ``caddie -e examples/extensions/vim_mode.py``. Keys the mode does not use (Enter, Ctrl+C,
Ctrl+P, Tab …) go to caddie's editor as always.
"""

from __future__ import annotations

from caddie.extensions.api import (
    CommandContext,
    CustomEditor,
    ExtensionAPI,
    ExtensionContext,
    KeybindingsView,
    KeyInput,
    ThemeView,
    TuiHandle,
)

NORMAL_KEYS = {
    "h": ["left"], "j": ["down"], "k": ["up"], "l": ["right"], "w": ["ctrl+right"], "b": ["ctrl+left"],
    "0": ["ctrl+a"], "$": ["ctrl+e", "left"], "x": ["delete"],
}  # fmt: skip
"""Normal mode's motions, as the built-in editor's keys (Ctrl+A / Ctrl+E: the line's start and end; Home and
End also scroll the conversation). As in vim, ``$`` stops on the last character."""


class VimEditor(CustomEditor):
    def __init__(self, tui: TuiHandle, theme: ThemeView, keybindings: KeybindingsView) -> None:
        super().__init__(tui, theme, keybindings)
        self.mode_label = "INSERT"

    def handle_input(self, key: KeyInput) -> None:
        if self.mode_label == "INSERT":
            if key.key == "escape":
                self.mode_label = "NORMAL"
                return
            super().handle_input(key)
            return
        char = key.character or ""
        if char in NORMAL_KEYS:
            for name in NORMAL_KEYS[char]:
                super().handle_input(KeyInput(name))
        elif char in ("i", "I"):
            if char == "I":
                super().handle_input(KeyInput("ctrl+a"))
            self.mode_label = "INSERT"
        elif char in ("a", "A"):
            super().handle_input(KeyInput("ctrl+e" if char == "A" else "right"))
            self.mode_label = "INSERT"
        elif char and char.isprintable():
            return  # other letters do nothing in normal mode (never typed)
        else:
            super().handle_input(key)  # Esc, Enter, Ctrl+C, arrows…: caddie's editor as always


def register(api: ExtensionAPI) -> None:
    on = [True]

    def use(ctx: ExtensionContext) -> None:
        ctx.ui.set_editor_component(VimEditor if on[0] else None)

    async def start(event: object, ctx: ExtensionContext) -> None:
        use(ctx)

    async def vim(args: str, ctx: CommandContext) -> None:
        on[0] = not on[0]
        use(ctx)
        ctx.ui.notify(f"vim mode {'on' if on[0] else 'off'}")

    api.on("session_start", start)
    api.register_command("vim", vim, "switch the vim mode of the editor on or off")

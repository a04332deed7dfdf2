"""What the application's keys do, by Pi's binding id (``app.interrupt``, ``app.tools.expand`` …).

The editor routes a key to an id (keymap.py, ``keybindings.json``) and the app hands the id here. Keys for
the editor's own text (``tui.editor.*``) stay in editor.py; the transcript's (``tui.altScreen.*``) go to
the conversation.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from caddie.modes.interactive.conversation import BashBlock, ExpandableBlock, ThinkingBlock
from caddie.modes.interactive.host import Shell

if TYPE_CHECKING:
    from caddie.modes.interactive.dialogs import CancellableScreen

DOUBLE_PRESS_S = 1.0
"""Two Ctrl+C within this many seconds quit; two Esc on an empty editor (within half of it) open /tree."""


class KeyActionsHost(Shell, Protocol):
    """What the key actions need beyond the ``Shell``."""

    def modal(self) -> CancellableScreen | None:
        """The dialog on top, if any."""
        ...

    def run_command(self, name: str, args: str = "") -> None:
        """Run a built-in command in the background (as typing ``/name args`` does)."""
        ...

    def suspend_process(self) -> None: ...

    def set_expanded(self, group: str, expanded: bool) -> None:
        """Expand or collapse every block of ``group`` (``tools`` or ``thinking``)."""
        ...


class KeyActions:
    """Application key actions, by binding id; see the module docstring."""

    def __init__(
        self,
        host: KeyActionsHost,
        cycle_thinking: Callable[[], None],
        cycle_model: Callable[[str], Awaitable[None]],
        edit_externally: Callable[[], Awaitable[None]],
        paste_image: Callable[[], Awaitable[None]],
    ) -> None:
        self.host = host
        self.cycle_thinking = cycle_thinking
        self.cycle_model = cycle_model
        self.edit_externally = edit_externally
        self.paste_image = paste_image
        self.last_ctrl_c = 0.0
        self.last_escape = 0.0
        self._by_id: dict[str, Callable[[], None]] = {
            "app.interrupt": self.interrupt,
            "app.clear": self.clear,
            "app.exit": host.request_quit,
            "caddie.app.quit": host.request_quit,
            "app.suspend": host.suspend_process,
            "app.editor.external": lambda: host.spawn(self.edit_externally()),
            "app.clipboard.pasteImage": lambda: host.spawn(self.paste_image()),
            "app.message.copy": lambda: host.run_command("copy"),
            "app.message.dequeue": self.dequeue,
            "app.tools.expand": self.toggle_tools,
            "app.thinking.toggle": self.toggle_thinking,
            "app.thinking.cycle": self.cycle_thinking,
            "app.model.select": lambda: host.run_command("model"),
            "app.model.cycleForward": lambda: host.spawn(self.cycle_model("forward")),
            "app.model.cycleBackward": lambda: host.spawn(self.cycle_model("backward")),
            "app.session.new": lambda: host.run_command("new"),
            "app.session.tree": lambda: host.run_command("tree"),
            "app.session.fork": lambda: host.run_command("fork"),
            "app.session.resume": lambda: host.run_command("resume"),
        }

    def handles(self, binding_id: str) -> bool:
        return binding_id in self._by_id

    def run(self, binding_id: str) -> None:
        action = self._by_id.get(binding_id)
        if action is not None and (self.host.modal() is None or binding_id == "app.clear"):
            action()

    def clear(self) -> None:
        """Ctrl+C: close a dialog; else clear the editor, and quit when pressed twice within a second."""
        host = self.host
        modal = host.modal()
        if modal is not None:
            modal.action_cancel()
            return
        now = time.monotonic()
        if now - self.last_ctrl_c < DOUBLE_PRESS_S:
            self.last_ctrl_c = 0.0
            host.request_quit()
            return
        self.last_ctrl_c = now
        host.editor.set_text("")
        host.show_status(f"Press {host.keys.hint('app.clear')} again to quit")

    def interrupt(self) -> None:
        """Esc: abort the agent (or a compaction) and put queued messages back; twice on an empty editor:
        /tree."""
        host = self.host
        session = host.session
        state = session.state() if session is not None else None
        if (
            session is not None
            and state is not None
            and (state.is_streaming or state.pending_message_count or state.is_compacting)
        ):
            steering, follow_up = session.clear_queues()
            session.abort()
            self.restore([*steering, *follow_up])
            return
        now = time.monotonic()
        if not host.editor.text.strip() and now - self.last_escape < DOUBLE_PRESS_S / 2:
            self.last_escape = 0.0
            host.run_command("tree")
            return
        self.last_escape = now

    def dequeue(self) -> None:
        session = self.host.session
        if session is not None:
            steering, follow_up = session.clear_queues()
            if not steering and not follow_up:
                self.host.show_status("No queued messages to restore")
                return
            self.restore([*steering, *follow_up])

    def restore(self, texts: Sequence[str]) -> None:
        """Queued messages back into the editor, before what is typed there."""
        if not texts:
            return
        editor = self.host.editor
        current = editor.text
        restored = "\n\n".join(texts)
        editor.set_text(restored + ("\n\n" + current if current.strip() else ""))

    def toggle_tools(self) -> None:
        view = self.host.view
        view.tools_expanded = not view.tools_expanded
        self.host.set_expanded("tools", view.tools_expanded)

    def toggle_thinking(self) -> None:
        view = self.host.view
        view.thinking_expanded = not view.thinking_expanded
        self.host.set_expanded("thinking", view.thinking_expanded)


def expand_blocks(blocks: Sequence[ExpandableBlock | BashBlock], group: str, expanded: bool) -> None:
    """Set every block of ``group`` (``tools``: tool calls, shell commands, summaries, skills; ``thinking``)."""
    for block in blocks:
        if isinstance(block, BashBlock):
            if group == "tools":
                block.set_expanded(expanded)
        elif block.group == group or (group == "thinking" and isinstance(block, ThinkingBlock)):
            block.set_expanded(expanded)

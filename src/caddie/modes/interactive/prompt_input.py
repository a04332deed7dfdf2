"""What Enter does with the editor's text: a shell command (``!cmd``, ``!!cmd``), a built-in command, or a
message to the agent (steering or a follow-up while it works); the editor's ``@image`` attachments go with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

from caddie.ai.providers.preload import wait_preloaded
from caddie.errors import UsageError
from caddie.modes.interactive.commands import BUILTIN_NAMES, parse_command
from caddie.modes.interactive.conversation import RunningLine
from caddie.modes.interactive.host import Shell

if TYPE_CHECKING:
    from caddie.ai.messages import ImageContent

Behavior = Literal["steer", "follow_up"] | None


class PromptInputHost(Shell, Protocol):
    """What the prompt input needs beyond the ``Shell``."""

    def run_command(self, name: str, args: str = "") -> None: ...

    def note_user_bash(self, started: float | None) -> None:
        """When the user's shell command started (its block shows the duration), None once it ended."""
        ...


class PromptInput:
    """See the module docstring."""

    def __init__(
        self, host: PromptInputHost, take_images: Callable[[str], tuple[str, list[ImageContent]]]
    ) -> None:
        self.host = host
        self.take_images = take_images
        """The text to send and the images the editor holds for it (paste markers resolved)."""

    def submit(self, text: str, follow_up: bool) -> None:
        """Enter (or Alt+Enter while the agent works) in the editor."""
        host = self.host
        if not text.strip():
            return
        if host.session is None:
            host.show_status("Startup is still in progress")
            return
        host.editor.prompt_history.add(text)
        host.editor.set_text("")
        host.conversation.follow()
        self.handle(text, follow_up=follow_up)

    def handle(self, text: str, follow_up: bool = False) -> None:
        """What Enter does with ``text``: shell command, built-in command, or a message."""
        host = self.host
        if text.startswith("!"):
            exclude = text.startswith("!!")
            command = text[2:] if exclude else text[1:]
            if command.strip():
                host.spawn(self.user_bash(command.strip(), exclude))
                return
        parsed = parse_command(text.strip())
        if parsed is not None and parsed[0] in BUILTIN_NAMES:
            host.run_command(*parsed)
            return
        behavior: Behavior = None
        if host.busy:
            behavior = "follow_up" if follow_up else "steer"
        host.spawn(self.prompt(text, behavior))

    async def user_bash(self, command: str, exclude: bool) -> None:
        host = self.host
        session = host.session
        assert session is not None
        if session.is_streaming:  # its output must not land in the middle of the agent's turn
            host.show_status(f"!{command} runs when the agent has finished")
            await session.wait_for_idle()
        running = RunningLine(f"$ {command}")
        host.conversation.add(running)
        host.note_user_bash(time.monotonic())
        try:
            await session.run_bash(command, exclude_from_context=exclude)
        finally:
            host.note_user_bash(None)
            host.conversation.remove_block(running)

    async def prompt(self, text: str, behavior: Behavior = None) -> None:
        host = self.host
        session = host.session
        assert session is not None
        store, messages = session.store, session.messages
        if session.model is not None and behavior is None:
            await wait_preloaded(session.model.api)  # never import an SDK on the event loop
        sent, images = self.take_images(text)
        try:
            await session.prompt(sent, images or None, streaming_behavior=behavior)
        except UsageError as e:
            host.show_error(str(e))
            if session.model is None and not host.editor.text.strip():
                host.editor.set_text(text)  # nothing was sent: keep the prompt for after /model
        if session.store is not store or session.messages is not messages:
            await host.render_session()  # an extension command switched, forked or navigated the session

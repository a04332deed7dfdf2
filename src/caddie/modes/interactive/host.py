"""The seams of the interactive app: what its parts need from it, as Protocols, and the view options they share.

The app (app.py, ``CaddieApp``) is composed of parts that each do one job: the transcript (session events
to widgets), the command handlers (``/new``, ``/model``, ``/settings`` …), the key actions, the prompt
input and the start-up. Each part is handed the app as the Protocol below, never as the concrete class:
the parts import nothing of each other, and app.py is the one place that wires them together.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.screen import ModalScreen

    from caddie.models import ModelRegistry
    from caddie.modes.interactive.commands import CommandInfo
    from caddie.modes.interactive.conversation import Conversation
    from caddie.modes.interactive.editor import PromptEditor
    from caddie.modes.interactive.footer import WorkingLine
    from caddie.modes.interactive.keymap import Keybindings
    from caddie.modes.interactive.ui import TextualUI
    from caddie.runtime.request import SessionRequest
    from caddie.runtime.session import AgentSession


@dataclass
class Startup:
    """What the command line asked the interactive mode to do."""

    request: SessionRequest
    resume_picker: bool = False
    initial_prompts: list[str] = field(default_factory=list)
    typed_ahead: str = ""
    """Keys typed before the app started that were read with the terminal's answers (terminal_background):
    the editor starts with them."""


@dataclass
class ViewOptions:
    """How the transcript is drawn right now (Ctrl+O, Ctrl+T, extensions' ``ctx.ui`` settings)."""

    tools_expanded: bool = False
    thinking_expanded: bool = False
    hidden_thinking_label: str | None = None
    """``ui.set_hidden_thinking_label``: what a collapsed thinking block says instead of "Thinking"."""
    image_kind: str = "halfcell"
    """How images are drawn (images.py: ``kitty``, ``halfcell`` or ``off``)."""
    image_width: int = 60
    """``terminal.imageWidthCells``."""
    header: Any = None
    """``ui.set_header``: a component factory drawn in place of caddie's startup header (None: caddie's)."""


class Shell(Protocol):
    """What the command handlers, key actions and start-up need from the app."""

    session: AgentSession | None
    registry: ModelRegistry | None
    startup: Startup
    ui: TextualUI
    editor: PromptEditor
    conversation: Conversation
    working: WorkingLine
    view: ViewOptions
    keys: Keybindings

    @property
    def busy(self) -> bool:
        """The agent is working (a run is streaming)."""
        ...

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any:
        """Show a modal screen; its result, or ``default`` when dismissed empty or after ``timeout`` s."""
        ...

    def show_info(self, content: RenderableType | str, level: str = "info") -> None:
        """A block of caddie's own output in the transcript (``level``: info, warning or error)."""
        ...

    def show_error(self, message: str) -> None: ...

    def show_status(self, message: str) -> None:
        """A short confirmation ("Model: …") as a dim line in the transcript, replacing the one just before."""
        ...

    def spawn(self, work: Awaitable[Any]) -> None:
        """Run UI-started work in the background; a failure becomes an error line."""
        ...

    async def render_session(self) -> None:
        """Redraw the transcript from the session (after /new, /resume, /tree, /fork …)."""
        ...

    def refresh_footer(self) -> None: ...

    def require_idle(self, what: str) -> bool:
        """True when the agent is idle; otherwise says to wait before ``what``."""
        ...

    def request_quit(self) -> None: ...

    def command_infos(self) -> list[CommandInfo]: ...

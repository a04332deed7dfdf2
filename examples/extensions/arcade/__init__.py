"""Pi's two terminal games, sharing one game loop (loop.py): ``/snake`` (snake.py, Pi's snake example) and
``/invaders`` (space_invaders.py, Pi's space-invaders example). Each plays in place of the editor, pauses
into the session with Esc and resumes where it stopped.

Load them with ``caddie -e examples/extensions/arcade``.
"""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI

from . import snake, space_invaders


def register(api: ExtensionAPI) -> None:
    snake.register(api)
    space_invaders.register(api)

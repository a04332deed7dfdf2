"""What the arcade games share: a ``ui.custom`` component that steps its game on a timer and redraws
(``tui.request_render()``), pauses into the session (a ``custom`` entry) and resumes from it, and the command
that starts or resumes a game.

Keys every game has: Esc pauses (the game is kept in the session and ``/<command>`` resumes it, even after
``caddie --continue``); Q quits and forgets it; while paused, any key resumes and Esc or Q leave (the saved
game stays); once the game is over, the game's restart keys start a new one.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Generic, Protocol, TypeVar

from caddie.extensions.api import (
    CommandContext,
    CustomEntry,
    ExtensionAPI,
    KeyInput,
    ThemeView,
    TuiHandle,
    matches_key,
)


class ArcadeGame(Protocol):
    """A game's state: a dataclass (saved with ``asdict``) that moves one tick at a time."""

    high_score: int

    @property
    def over(self) -> bool: ...

    def step(self, rng: random.Random) -> None: ...


G = TypeVar("G", bound=ArcadeGame)


class GameScreen(Generic[G]):
    """The ``ui.custom`` component of a game. A game subclasses it with ``render(width)``, ``play(key, char)``
    (its own keys) and ``restart()`` (the game after the restart keys)."""

    tick_seconds = 0.1
    restart_keys: tuple[str, ...] = ("r",)

    def __init__(
        self,
        game: G,
        tui: TuiHandle,
        theme: ThemeView,
        save: Callable[[G | None], None],
        done: Callable[[Any], None],
        paused: bool = False,
    ) -> None:
        self.game = game
        self.tui = tui
        self.theme = theme
        self.save = save
        """Keep the game in the session (None forgets it)."""
        self.done = done
        self.paused = paused
        self.rng = random.Random()
        self.ticking: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.ticking.append(asyncio.ensure_future(self.run()))

    def stop(self) -> None:
        while self.ticking:
            self.ticking.pop().cancel()

    def dispose(self) -> None:
        """Taken off the screen (by the game's own keys or from outside, e.g. when the session ends): the
        tick stops, so no task keeps stepping a game nobody sees."""
        self.stop()

    async def run(self) -> None:
        while not self.game.over:
            await asyncio.sleep(self.tick_seconds)
            self.game.step(self.rng)
            self.tui.request_render()

    def leave(self, keep: bool) -> None:
        """Close the game: kept in the session (a pause) or forgotten."""
        self.stop()
        self.save(self.game if keep else None)
        self.done(None)

    def handle_input(self, key: KeyInput) -> None:
        char = (key.character or "").lower()
        if self.paused:
            self.paused = False
            if matches_key(key, "escape") or char == "q":
                self.done(None)  # the saved game stays
            else:
                self.start()
        elif matches_key(key, "escape"):
            self.leave(keep=True)
        elif char == "q":
            self.leave(keep=False)
        elif self.game.over and char in self.restart_keys:
            self.game = self.restart()
            self.save(None)
            self.stop()
            self.start()
        else:
            self.play(key, char)

    # -- what a game adds ------------------------------------------------------------------------------
    def restart(self) -> G:
        raise NotImplementedError

    def play(self, key: KeyInput, char: str) -> None:
        raise NotImplementedError

    def render(self, width: int) -> list[str]:
        raise NotImplementedError


def register_game(
    api: ExtensionAPI,
    command: str,
    title: str,
    save_type: str,
    new_game: Callable[[], G],
    saved_game: Callable[[dict[str, Any]], G],
    screen: Callable[..., GameScreen[G]],
) -> None:
    """``/command`` ("Play <title>!"): a new game, or the one paused last in this session (``save_type``
    entries)."""

    async def play(args: str, ctx: CommandContext) -> None:
        if not ctx.ui.supports("custom"):
            ctx.ui.notify(f"{title} requires the terminal UI", "error")
            return
        saves = [
            e for e in ctx.session.entries() if isinstance(e, CustomEntry) and e.custom_type == save_type
        ]
        saved = saves[-1].data if saves else None

        def save(game: G | None) -> None:
            api.append_entry(save_type, asdict(game) if game is not None else None)  # type: ignore[call-overload]

        def component(tui: TuiHandle, theme: ThemeView, keys: Any, done: Any) -> GameScreen[G]:
            game = saved_game(saved) if isinstance(saved, dict) else new_game()
            made = screen(game, tui, theme, save, done, paused=isinstance(saved, dict))
            if not made.paused:
                made.start()
            return made

        await ctx.ui.custom(component)

    api.register_command(command, play, f"Play {title}!")

"""Snake in place of the editor (Pi's snake example): ``/snake`` starts a game — arrows or WASD steer, food
(◆) makes the snake longer and scores 10, walls and the snake's own body end the game (R restarts). Esc
pauses and keeps the game in the session (a ``custom`` entry), so ``/snake`` later resumes it — even after
``caddie --continue``; Q quits and forgets it. The high score survives restarts.

A ``ui.custom`` component that moves by itself: a timer steps the game and calls ``tui.request_render()``.

Load it with ``caddie -e examples/extensions/snake.py``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from caddie.extensions.api import (
    CommandContext,
    CustomEntry,
    ExtensionAPI,
    KeyInput,
    ThemeView,
    TuiHandle,
    matches_key,
)

WIDTH, HEIGHT = 40, 15
TICK_SECONDS = 0.1
SAVE_TYPE = "snake-save"
MOVES = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}
KEYS = {"up": "up", "w": "up", "down": "down", "s": "down", "left": "left", "a": "left", "right": "right",
        "d": "right"}  # fmt: skip


@dataclass(slots=True)
class Game:
    snake: list[tuple[int, int]]
    food: tuple[int, int]
    direction: str = "right"
    next_direction: str = "right"
    score: int = 0
    game_over: bool = False
    high_score: int = 0

    @classmethod
    def new(cls, high_score: int = 0, rng: random.Random | None = None) -> Game:
        x, y = WIDTH // 2, HEIGHT // 2
        snake = [(x, y), (x - 1, y), (x - 2, y)]
        return cls(snake, free_cell(snake, rng or random.Random()), high_score=high_score)

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> Game:
        game = cls(**data)
        game.snake = [tuple(p) for p in game.snake]  # type: ignore[misc]  # JSON gives lists
        game.food = tuple(game.food)  # type: ignore[assignment]
        return game

    def steer(self, direction: str) -> None:
        if direction != OPPOSITE[self.direction]:
            self.next_direction = direction

    def step(self, rng: random.Random | None = None) -> None:
        """One tick: move, eat, or crash."""
        if self.game_over:
            return
        self.direction = self.next_direction
        dx, dy = MOVES[self.direction]
        head = (self.snake[0][0] + dx, self.snake[0][1] + dy)
        if not (0 <= head[0] < WIDTH and 0 <= head[1] < HEIGHT) or head in self.snake:
            self.game_over = True
            return
        self.snake.insert(0, head)
        if head == self.food:
            self.score += 10
            self.high_score = max(self.high_score, self.score)
            self.food = free_cell(self.snake, rng or random.Random())
        else:
            self.snake.pop()


def free_cell(snake: list[tuple[int, int]], rng: random.Random) -> tuple[int, int]:
    while True:
        cell = (rng.randrange(WIDTH), rng.randrange(HEIGHT))
        if cell not in snake:
            return cell


@dataclass(slots=True)
class Board:
    """The ``ui.custom`` component: draws the game, steps it on a timer, reads the keys."""

    game: Game
    tui: TuiHandle
    theme: ThemeView
    save: Any
    """``save(game or None)``: keep the game in the session (None forgets it)."""
    done: Any
    paused: bool = False
    ticking: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        self.ticking.append(asyncio.ensure_future(self.run()))

    def stop(self) -> None:
        while self.ticking:
            self.ticking.pop().cancel()

    async def run(self) -> None:
        while not self.game.game_over:
            await asyncio.sleep(TICK_SECONDS)
            self.game.step()
            self.tui.request_render()

    def close(self, keep: bool) -> None:
        self.stop()
        self.save(self.game if keep else None)
        self.done(None)

    def handle_input(self, key: KeyInput) -> None:
        char = (key.character or "").lower()
        if self.paused:
            if matches_key(key, "escape") or char == "q":
                self.stop()
                self.done(None)  # the saved game stays
            else:
                self.paused = False
                self.start()
            return
        if matches_key(key, "escape"):
            self.close(keep=True)
        elif char == "q":
            self.close(keep=False)
        elif self.game.game_over and char in ("r", " "):
            self.game = Game.new(self.game.high_score)
            self.save(None)
            self.stop()
            self.start()
        elif key.key in KEYS or char in KEYS:
            self.game.steer(KEYS.get(key.key) or KEYS[char])

    def render(self, width: int) -> list[str]:
        t, game = self.theme, self.game
        cells = min(WIDTH, max(4, (width - 4) // 2))
        inner = cells * 2
        title = (
            f"{t.bold(t.fg('success', 'SNAKE'))} │ Score: {t.bold(str(game.score))} │ High: {game.high_score}"
        )
        if self.paused:
            footer = f"{t.bold(t.fg('warning', 'PAUSED'))} Press any key to continue, Q to quit"
        elif game.game_over:
            footer = f"{t.bold(t.fg('error', 'GAME OVER!'))} Press R to restart, Q to quit"
        else:
            footer = "↑↓←→ or WASD to move, ESC pause, Q quit"
        lines = [t.fg("dim", f"╭{'─' * inner}╮"), title, t.fg("dim", f"├{'─' * inner}┤")]
        for y in range(HEIGHT):
            row = ""
            for x in range(cells):
                if (x, y) == game.snake[0]:
                    row += t.fg("success", "██")
                elif (x, y) in game.snake:
                    row += t.fg("success", "▓▓")
                elif (x, y) == game.food:
                    row += t.fg("error", "◆ ")
                else:
                    row += "  "
            lines.append(t.fg("dim", "│") + row + t.fg("dim", "│"))
        return [*lines, t.fg("dim", f"├{'─' * inner}┤"), footer, t.fg("dim", f"╰{'─' * inner}╯")]


def register(api: ExtensionAPI) -> None:
    async def snake(args: str, ctx: CommandContext) -> None:
        if not ctx.ui.supports("custom"):
            ctx.ui.notify("Snake requires the terminal UI", "error")
            return
        saves = [
            e for e in ctx.session.entries() if isinstance(e, CustomEntry) and e.custom_type == SAVE_TYPE
        ]
        saved = saves[-1].data if saves else None

        def save(game: Game | None) -> None:
            api.append_entry(SAVE_TYPE, asdict(game) if game is not None else None)

        def board(tui: TuiHandle, theme: ThemeView, keys: Any, done: Any) -> Board:
            game = Game.from_saved(saved) if isinstance(saved, dict) else Game.new()
            made = Board(game, tui, theme, save, done, paused=isinstance(saved, dict))
            if not made.paused:
                made.start()
            return made

        await ctx.ui.custom(board)

    api.register_command("snake", snake, "Play Snake!")

"""Snake in place of the editor (Pi's snake example): ``/snake`` starts a game — arrows or WASD steer, food
(◆) makes the snake longer and scores 10, walls and the snake's own body end the game (R restarts). Esc
pauses and keeps the game in the session (a ``custom`` entry), so ``/snake`` later resumes it — even after
``caddie --continue``; Q quits and forgets it. The high score survives restarts.

A ``ui.custom`` component that moves by itself: the arcade's loop (loop.py) steps the game on a timer and
calls ``tui.request_render()``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import ExtensionAPI, KeyInput

from .loop import GameScreen, register_game

WIDTH, HEIGHT = 40, 15
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

    @property
    def over(self) -> bool:
        return self.game_over

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


class Board(GameScreen[Game]):
    """The ``ui.custom`` component: the arcade's loop, and snake's keys and drawing."""

    restart_keys = ("r", " ")

    def restart(self) -> Game:
        return Game.new(self.game.high_score)

    def play(self, key: KeyInput, char: str) -> None:
        if key.key in KEYS or char in KEYS:
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
    register_game(api, "snake", "Snake", SAVE_TYPE, Game.new, Game.from_saved, Board)

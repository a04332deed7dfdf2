"""Space Invaders in place of the editor (Pi's space-invaders example): ``/invaders`` starts a game — ← →
(or A/D) move the ship, Space (or F) fires, the invaders march sideways and drop a row at each edge, shoot
back, and wear down the four shields. Three lives; clearing the wave goes on to a faster level (R), being
hit three times or invaded ends the game (R restarts). Esc pauses and keeps the game in the session, so
``/invaders`` resumes it; Q quits and forgets it.

Pi's version uses the Kitty keyboard protocol's key releases to keep moving while a key is held; caddie's
components see key presses only (``KeyInput``), so each press (and the terminal's key repeat) moves the
ship two cells.

A ``ui.custom`` component on a timer (``tui.request_render()`` each tick): the arcade's loop (loop.py), as
snake.py's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import ExtensionAPI, KeyInput, matches_key

from .loop import GameScreen, register_game

WIDTH, HEIGHT = 60, 24
PLAYER_Y = HEIGHT - 2
SHIELD_Y = PLAYER_Y - 5
SAVE_TYPE = "invaders-save"
SHIELD_X = [8, 22, 36, 50]
POINTS = [10, 20, 30]
SPRITES = ["◇", "◆", "▼"]


def marching_pace(alive: int) -> int:
    """Ticks between the invaders' steps as they thin out (they hurry)."""
    return 1 if alive <= 5 else 2 if alive <= 10 else 3 if alive <= 20 else 1_000


@dataclass(slots=True)
class Alien:
    x: int
    y: int
    kind: int
    alive: bool = True


@dataclass(slots=True)
class Bullet:
    x: int
    y: int
    up: bool


@dataclass(slots=True)
class Game:
    player_x: int = WIDTH // 2
    lives: int = 3
    aliens: list[Alien] = field(default_factory=list)
    bullets: list[Bullet] = field(default_factory=list)
    shields: list[list[list[bool]]] = field(default_factory=list)
    """Four shields of 3 rows × 4 cells, at ``SHIELD_X``."""
    direction: int = 1
    dropping: bool = False
    move_every: int = 18
    ticks: int = 0
    score: int = 0
    high_score: int = 0
    level: int = 1
    game_over: bool = False
    victory: bool = False

    @classmethod
    def new(cls, high_score: int = 0, level: int = 1) -> Game:
        aliens = [Alien(4 + col * 5, 2 + row * 2, 2 if row == 0 else 1 if row < 3 else 0)
                  for row in range(5) for col in range(11)]  # fmt: skip
        shields = [[[True] * 4, [True] * 4, [True, False, False, True]] for _ in SHIELD_X]
        return cls(aliens=aliens, shields=shields, high_score=high_score, level=level,
                   move_every=max(5, 20 - level * 2))  # fmt: skip

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> Game:
        game = cls(**data)
        game.aliens = [Alien(**a) for a in data["aliens"]]
        game.bullets = [Bullet(**b) for b in data["bullets"]]
        return game

    @property
    def over(self) -> bool:
        return self.game_over or self.victory

    def move(self, step: int) -> None:
        self.player_x = min(WIDTH - 2, max(1, self.player_x + step))

    def fire(self) -> None:
        if not any(b.up for b in self.bullets):  # one shot in the air at a time
            self.bullets.append(Bullet(self.player_x, PLAYER_Y - 1, True))

    def step(self, rng: random.Random) -> None:
        """One tick: bullets fly, the invaders march every few ticks and shoot now and then."""
        if self.over:
            return
        self.ticks += 1
        for bullet in self.bullets:
            bullet.y += -1 if bullet.up else 1
        self.bullets = [b for b in self.bullets if 0 <= b.y < HEIGHT]
        if self.ticks % self.move_every == 0:
            self.march()
        if self.ticks % 15 == 0:
            self.alien_shoots(rng)
        self.collide()
        if not any(a.alive for a in self.aliens):
            self.victory = True

    def march(self) -> None:
        alive = [a for a in self.aliens if a.alive]
        if not alive:
            return
        if self.dropping:
            for alien in alive:
                alien.y += 1
            self.dropping = False
            if max(a.y for a in alive) >= PLAYER_Y - 1:
                self.game_over = True  # invaded
        elif (self.direction > 0 and max(a.x for a in alive) >= WIDTH - 3) or (
            self.direction < 0 and min(a.x for a in alive) <= 2
        ):
            self.direction, self.dropping = -self.direction, True
        else:
            for alien in alive:
                alien.x += self.direction
        self.move_every = min(self.move_every, marching_pace(len(alive)))

    def alien_shoots(self, rng: random.Random) -> None:
        lowest: dict[int, Alien] = {}
        for alien in (a for a in self.aliens if a.alive):
            if alien.x not in lowest or alien.y > lowest[alien.x].y:
                lowest[alien.x] = alien
        if lowest and sum(1 for b in self.bullets if not b.up) < 3:
            shooter = rng.choice(list(lowest.values()))
            self.bullets.append(Bullet(shooter.x, shooter.y + 1, False))

    def collide(self) -> None:
        spent: list[Bullet] = []
        for bullet in self.bullets:
            if bullet.up:
                hit = next(
                    (a for a in self.aliens if a.alive and abs(bullet.x - a.x) <= 1 and bullet.y == a.y), None
                )
                if hit is not None:
                    hit.alive = False
                    spent.append(bullet)
                    self.score += POINTS[hit.kind]
                    self.high_score = max(self.high_score, self.score)
                    continue
            elif abs(bullet.x - self.player_x) <= 1 and bullet.y == PLAYER_Y:
                spent.append(bullet)
                self.lives -= 1
                self.game_over = self.lives <= 0
                continue
            for shield, left in zip(self.shields, SHIELD_X, strict=True):
                row, col = bullet.y - SHIELD_Y, bullet.x - left
                if 0 <= row < 3 and 0 <= col < 4 and shield[row][col]:
                    shield[row][col] = False
                    spent.append(bullet)
                    break
        self.bullets = [b for b in self.bullets if not any(b is s for s in spent)]


class Screen(GameScreen[Game]):
    """The ``ui.custom`` component: the arcade's loop, and the invaders' keys and drawing."""

    tick_seconds = 0.05

    def restart(self) -> Game:
        """After a victory the next level, else level 1 again."""
        return Game.new(self.game.high_score, self.game.level + 1 if self.game.victory else 1)

    def play(self, key: KeyInput, char: str) -> None:
        if matches_key(key, "left") or char == "a":
            self.game.move(-2)
        elif matches_key(key, "right") or char == "d":
            self.game.move(2)
        elif matches_key(key, "space") or char in (" ", "f"):
            self.game.fire()

    def render(self, width: int) -> list[str]:
        t, game = self.theme, self.game
        grid = [[" "] * WIDTH for _ in range(HEIGHT)]
        for shield, left in zip(game.shields, SHIELD_X, strict=True):
            for row, cells in enumerate(shield):
                for col, whole in enumerate(cells):
                    if whole:
                        grid[SHIELD_Y + row][left + col] = t.fg("success", "█")
        for alien in (a for a in game.aliens if a.alive and 0 <= a.y < HEIGHT):
            grid[alien.y][alien.x] = t.fg(["accent", "warning", "error"][alien.kind], SPRITES[alien.kind])
        for bullet in game.bullets:
            grid[bullet.y][bullet.x] = t.fg("warning", "|") if bullet.up else t.fg("error", "!")
        grid[PLAYER_Y][game.player_x - 1 : game.player_x + 2] = [t.fg("success", c) for c in "▲█▲"]
        head = (f"{t.bold('SPACE INVADERS')} │ Score: {t.bold(str(game.score))} │ High: {game.high_score} │ "
                f"Lv: {game.level} │ {t.fg('error', '♥' * game.lives)}")  # fmt: skip
        if self.paused:
            foot = f"{t.bold('PAUSED')} Press any key to continue, Q to quit"
        elif game.victory:
            foot = f"{t.bold('VICTORY!')} Press R for level {game.level + 1}, Q to quit"
        elif game.game_over:
            foot = f"{t.bold('GAME OVER!')} Press R to restart, Q to quit"
        else:
            foot = "←→ or AD to move, SPACE/F to fire, ESC pause, Q quit"
        rule = t.fg("dim", "─" * WIDTH)
        return [head, rule, *("".join(row) for row in grid), rule, foot]


def register(api: ExtensionAPI) -> None:
    register_game(api, "invaders", "Space Invaders", SAVE_TYPE, Game.new, Game.from_saved, Screen)

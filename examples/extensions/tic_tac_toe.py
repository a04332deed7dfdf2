"""Tic-tac-toe against the agent (Pi's tic-tac-toe example), and why a tool may need ``execution_mode=
"sequential"``. ``/tic-tac-toe`` shows the board in place of the editor: arrows move your cursor, Enter
places your X, Esc (or Q) puts the board away. Each X is sent to the model as a message that starts its turn;
the model plays O with the ``tic_tac_toe`` tool, ONE action per call: ``move_up/down/left/right`` (its own
cursor, 300 ms each) and ``play``. To reach a cell it emits the moves and the ``play`` as separate calls in
one response — which only lands on the intended cell because the tool runs its calls one after another
(``execution_mode="sequential"``); in parallel the ``play`` (no delay) would finish before the moves.

The board lives in the tools' result details, so it follows the session tree (``/tree``, resuming); the
model gets the rules in its system prompt while a game is on, and ``tic_tac_toe_see_board`` restates the
board. (As in Pi, ``before_agent_start`` only runs for prompts you type, so the rules reach the model in
the system prompt then; a move's turn carries its instructions in the move message itself.) The moves and the
end of the game are drawn by message renderers.

Load it with ``caddie -e examples/extensions/tic_tac_toe.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CommandContext,
    CustomMessage,
    ExtensionAPI,
    ExtensionContext,
    KeyInput,
    MessageEntry,
    MessageRenderOptions,
    TextContent,
    ThemeView,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolResultMessage,
    TuiHandle,
    matches_key,
)

PLAIN = ThemeView("plain", {})
"""No colours: a message renderer's string is shown as plain text."""
MOVE_SECONDS = 0.3
"""How long each move of the agent's cursor takes (what makes parallel calls race)."""
HOME = (0, 0)
"""Where the agent's cursor goes back to after a successful play (so most plays need moves first)."""
MOVE_MESSAGE, GAME_OVER_MESSAGE = "tic-tac-toe-move", "tic-tac-toe-game-over"
LINES = [[(r, c) for c in range(3)] for r in range(3)] + [[(r, c) for r in range(3)] for c in range(3)] + [
    [(0, 0), (1, 1), (2, 2)], [(0, 2), (1, 1), (2, 0)]]  # fmt: skip
STEPS = {"move_up": (-1, 0), "move_down": (1, 0), "move_left": (0, -1), "move_right": (0, 1)}
RULES = """
## Tic-Tac-Toe (you are Player O)

A tic-tac-toe game is in progress. The human is Player X and plays in the terminal; you are Player O and play
with the `tic_tac_toe` tool. When the human plays you get a message with the board and YOUR cursor (it stays
where it is between turns and goes back to (0,0) only after a successful `play`).

`tic_tac_toe` takes ONE action per call: `move_up` / `move_down` / `move_left` / `move_right` move your cursor
one cell (clamped at the edges); `play` places O under it (an error if the cell is taken: move and retry).
To play at (r, c) from (r0, c0), emit the moves and then `play` as separate tool calls in the SAME response,
without waiting for results and without text between them. `tic_tac_toe_see_board` restates the board.

Strategy: win if two O's and an empty cell make a line; else block X's two in a line; else prefer the
center, then corners, then edges.
"""


def winner(board: list[list[str]]) -> str:
    """``win_X``, ``win_O``, ``draw`` or ``playing``."""
    for line in LINES:
        marks = {board[r][c] for r, c in line}
        if len(marks) == 1 and marks != {" "}:
            return f"win_{marks.pop()}"
    return "draw" if all(cell != " " for row in board for cell in row) else "playing"


@dataclass(slots=True)
class Game:
    board: list[list[str]] = field(default_factory=lambda: [[" "] * 3 for _ in range(3)])
    agent_cursor: tuple[int, int] = HOME
    status: str = "playing"
    turn: str = "X"

    def details(self) -> dict[str, Any]:
        return {"board": [list(row) for row in self.board], "agentCursor": list(self.agent_cursor),
                "status": self.status, "turn": self.turn}  # fmt: skip

    @classmethod
    def from_details(cls, details: dict[str, Any]) -> Game:
        row, col = details["agentCursor"]
        return cls([list(r) for r in details["board"]], (row, col), details["status"], details["turn"])

    def ascii(self) -> str:
        """The board for the model, its cursor marked ``<>``."""
        rows = []
        for r in range(3):
            cells = [f"<{self.board[r][c]}>" if (r, c) == self.agent_cursor else f" {self.board[r][c]} "
                     for c in range(3)]  # fmt: skip
            rows.append("|".join(cells))
        return "\n---+---+---\n".join(rows)


def outcome_label(status: str) -> str:
    return {"win_X": "Player X (human) wins", "win_O": "Player O (agent) wins", "draw": "Draw"}.get(
        status, "Game over"
    )


def board_lines(game: Game, theme: ThemeView, cursor: tuple[int, int] | None) -> list[str]:
    """The 3×3 grid; ``cursor`` (the user's) in inverse video."""
    lines = []
    for r in range(3):
        cells = []
        for c in range(3):
            mark = game.board[r][c]
            text = f" {mark} "
            text = (
                theme.fg("accent", text)
                if mark == "X"
                else theme.fg("warning", text)
                if mark == "O"
                else text
            )
            cells.append(theme.inverse(text) if (r, c) == cursor else text)
        lines.append(" " + "│".join(cells))
        if r < 2:
            lines.append(" ───┼───┼───")
    return lines


class Board:
    """The ``ui.custom`` component: your cursor and X's; it shows the agent's moves as they happen."""

    def __init__(self, state: Game, tui: TuiHandle, theme: ThemeView, play: Any, done: Any) -> None:
        self.state, self.tui, self.theme, self.play, self.done = state, tui, theme, play, done
        self.cursor = (1, 1)

    def handle_input(self, key: KeyInput) -> None:
        char = (key.character or "").lower()
        if matches_key(key, "escape") or char == "q":
            self.done(None)
            return
        if self.state.status != "playing" or self.state.turn != "X":
            return
        steps = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
        if key.key in steps:
            dr, dc = steps[key.key]
            self.cursor = (min(2, max(0, self.cursor[0] + dr)), min(2, max(0, self.cursor[1] + dc)))
        elif matches_key(key, "enter") or char == " ":
            r, c = self.cursor
            if self.state.board[r][c] == " ":
                self.play(r, c)

    def render(self, width: int) -> list[str]:
        t, game = self.theme, self.state
        if game.status != "playing":
            status = t.bold(outcome_label(game.status)) + " — Esc to close"
        elif game.turn == "X":
            status = "Your turn (X): arrows move, Enter plays, Esc closes"
        else:
            status = t.fg("warning", f"Agent's turn (O), its cursor at {game.agent_cursor}")
        mine = self.cursor if game.turn == "X" and game.status == "playing" else None
        return [t.bold(" Tic-Tac-Toe"), "", *board_lines(game, t, mine), "", " " + status]


def register(api: ExtensionAPI) -> None:
    game = [Game()]
    active = [False]
    boards: list[Board] = []

    def redraw() -> None:
        for board in boards:
            board.state = game[0]
            board.tui.request_render()

    def rebuild(ctx: ExtensionContext) -> None:
        """The game as the current branch's tool results left it."""
        game[0], active[0] = Game(), False
        for entry in ctx.session.branch():
            message = entry.message if isinstance(entry, MessageEntry) else None
            if not isinstance(message, ToolResultMessage) or not message.tool_name.startswith("tic_tac_toe"):
                continue
            if isinstance(message.details, dict) and "board" in message.details:
                game[0] = Game.from_details(message.details)
        redraw()

    async def on_session(event: object, ctx: ExtensionContext) -> None:
        rebuild(ctx)

    def game_over() -> None:
        active[0] = False
        text = f"Game over: {outcome_label(game[0].status)}."
        api.send_message(GAME_OVER_MESSAGE, text, details=game[0].details())

    async def before_start(
        event: BeforeAgentStartEvent, ctx: ExtensionContext
    ) -> BeforeAgentStartResult | None:
        return BeforeAgentStartResult(system_prompt=event.system_prompt + RULES) if active[0] else None

    async def tic_tac_toe(args: str, ctx: CommandContext) -> None:
        if not ctx.ui.supports("custom"):
            ctx.ui.notify("Tic-tac-toe requires the terminal UI", "error")
            return
        rebuild(ctx)
        if game[0].status != "playing":
            game[0] = Game()
        active[0] = True
        api.set_session_name("Tic-Tac-Toe")

        def user_plays(row: int, col: int) -> None:
            state = game[0]
            state.board[row][col] = "X"
            state.status = winner(state.board)
            if state.status != "playing":
                game_over()
            else:
                state.turn = "O"
                api.send_message(
                    MOVE_MESSAGE,
                    f"Player X played at (row={row}, col={col}). It is now Player O's turn.\n\n"
                    f"Board (your cursor marked with <>):\n{state.ascii()}\n\n"
                    f"Your cursor is at (row={state.agent_cursor[0]}, col={state.agent_cursor[1]}). Decide your "
                    "target cell, then emit every move_* and the final play as separate tic_tac_toe tool calls "
                    "in THIS response.",
                    details=state.details(),
                    trigger_turn=True,
                )
            redraw()

        def make(tui: TuiHandle, theme: ThemeView, keys: Any, done: Any) -> Board:
            board = Board(game[0], tui, theme, user_plays, done)
            boards[:] = [board]
            return board

        await ctx.ui.custom(make)
        boards.clear()
        active[0] = game[0].status == "playing" and game[0].turn == "O"  # the agent may still be playing

    async def act(
        tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
    ) -> ToolResult:
        action, state = params.get("action"), game[0]
        if action in STEPS:
            await asyncio.sleep(MOVE_SECONDS)
            dr, dc = STEPS[action]
            r, c = state.agent_cursor
            state.agent_cursor = (min(2, max(0, r + dr)), min(2, max(0, c + dc)))
            text = f"Moved {action.removeprefix('move_')}. Cursor: {state.agent_cursor}"
        elif action == "play":
            if state.status != "playing":
                raise ToolError(f"Game is over ({state.status}).")
            if state.turn != "O":
                raise ToolError("It is not your turn.")
            r, c = state.agent_cursor
            if state.board[r][c] != " ":
                raise ToolError(f"Cell ({r},{c}) is already {state.board[r][c]}. Your cursor is still at "
                                f"({r},{c}). Move to an empty cell and retry play.")  # fmt: skip
            state.board[r][c] = "O"
            state.status = winner(state.board)
            state.agent_cursor = HOME
            text = f"Placed O at ({r},{c})."
            if state.status == "playing":
                state.turn = "X"
                text += f" Cursor reset to {HOME}. Your turn, X!"
            else:
                game_over()
        else:
            raise ToolError(
                f"Unknown action {action!r}: use move_up, move_down, move_left, move_right or play."
            )
        redraw()
        return ToolResult([TextContent(text)], state.details())

    async def see_board(tool_call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        state = game[0]
        text = (f"Board (your cursor marked with <>):\n{state.ascii()}\n\nYour cursor: {state.agent_cursor}\n"
                f"Status: {state.status}\nTurn: {'Player O (you)' if state.turn == 'O' else 'Player X'}")  # fmt: skip
        return ToolResult([TextContent(text)], state.details())

    def render_move(message: CustomMessage, options: MessageRenderOptions) -> str:
        details = message.details if isinstance(message.details, dict) else None
        if details is None:
            return "Player X played"
        return "Player X played → next: O (agent)\n" + "\n".join(
            board_lines(Game.from_details(details), PLAIN, None)
        )

    def render_game_over(message: CustomMessage, options: MessageRenderOptions) -> str:
        details = message.details if isinstance(message.details, dict) else {}
        return f"🏁 {outcome_label(str(details.get('status', '')))}"

    api.on("session_start", on_session)
    api.on("session_tree", on_session)
    api.on("before_agent_start", before_start)
    api.register_command("tic-tac-toe", tic_tac_toe, "Play tic-tac-toe against the agent")
    api.register_message_renderer(MOVE_MESSAGE, render_move)
    api.register_message_renderer(GAME_OVER_MESSAGE, render_game_over)
    api.register_tool(
        ToolDefinition(
            name="tic_tac_toe",
            label="Tic-Tac-Toe",
            description="Execute ONE tic-tac-toe action as Player O. `action` is exactly one of: move_up, "
            "move_down, move_left, move_right (move YOUR cursor one cell, clamped at edges), or play (place O "
            "under YOUR cursor; errors if the cell is not empty). To play at (r, c) from your cursor (r0, c0), "
            "emit the moves and then play as separate tool calls in the SAME response. Your cursor persists "
            "between turns and is reset to (0,0) only after a successful play.",
            parameters={
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["move_up", "move_down", "move_left", "move_right", "play"],
                    }
                },
                "required": ["action"],
            },
            execute=act,
            prompt_snippet="Play a tic-tac-toe action (move_up/down/left/right or play) as Player O",
            prompt_guidelines=[
                "When it is your tic-tac-toe turn, decide the target cell first, then emit every move_* plus the "
                "final play as separate tic_tac_toe tool calls in a SINGLE assistant response.",
                "Never ask the user for the board: it is in their move message; tic_tac_toe_see_board restates it.",
            ],
            execution_mode="sequential",
            render_call=lambda args, theme: (
                theme.fg("toolTitle", theme.bold("tic_tac_toe ")) + str(args.get("action", ""))
            ),
        )
    )
    api.register_tool(
        ToolDefinition(
            name="tic_tac_toe_see_board",
            label="See Board",
            description="Return the current tic-tac-toe board and YOUR cursor (Player O). No arguments.",
            parameters={"type": "object", "properties": {}},
            execute=see_board,
            prompt_snippet="Inspect the tic-tac-toe board and your cursor",
        )
    )

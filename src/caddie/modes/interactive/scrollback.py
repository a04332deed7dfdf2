"""What stays in the terminal after the interactive UI closes.

The UI draws on the alternate screen, which the terminal throws away on exit. So that the work is not
gone from view, the last exchange (your last message and everything after it) is printed to the normal
screen afterwards, followed by the command that resumes the session — as Pi leaves its transcript and
``To resume this session: pi --session <id>``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.config.launch import launch_command
from caddie.modes.interactive.markdown import chat_markdown
from caddie.modes.interactive.render import content_text, one_line, summarize_tool_call

MAX_EXCHANGE_MESSAGES = 200


def last_exchange(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """The last user message and everything after it (all of it when there is no user message)."""
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            start = index
            break
    return list(messages[start:])[-MAX_EXCHANGE_MESSAGES:]


def exchange_renderable(messages: Sequence[AgentMessage], cwd: str | None = None) -> RenderableType:
    """The exchange as the transcript showed it, compactly: messages, answers, one line per tool call."""
    parts: list[RenderableType] = []
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    for message in messages:
        if isinstance(message, UserMessage):
            parts.append(Padding(Text(content_text(message.content)), (0, 1), style="reverse"))
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text.strip():
                    parts.append(chat_markdown(block.text))
                elif isinstance(block, ToolCall):
                    summary = summarize_tool_call(block.name, block.arguments, cwd)
                    result = results.get(block.id)
                    line = Text("● ", style="red" if result is not None and result.is_error else "green")
                    line.append(summary.label, style="bold")
                    if summary.subject:
                        line.append(" " + summary.subject)
                    parts.append(line)
            if message.stop_reason == "error":
                parts.append(Text(f"Error: {message.error_message or 'the request failed'}", style="red"))
            elif message.stop_reason == "aborted":
                parts.append(Text("Aborted.", style="yellow"))
        elif isinstance(message, BashExecutionMessage):
            parts.append(Text(f"$ {one_line(message.command, 200)}", style="bold"))
        elif isinstance(message, CustomMessage) and message.display:
            parts.append(Text(f"[{message.custom_type}] {one_line(content_text(message.content), 200)}"))
    spaced: list[RenderableType] = []
    for part in parts:
        if spaced:
            spaced.append(Text(""))
        spaced.append(part)
    return Group(*spaced)


def resume_command(session_id: str, session_dir: str | None = None, caddie: str | None = None) -> str:
    """``caddie --session <id>`` (with ``--session-dir`` when the sessions live somewhere special), started
    the way this caddie was (``uv run caddie``, ``python -m caddie``…)."""
    args = [caddie or launch_command()]
    if session_dir:
        args += ["--session-dir", shlex.quote(session_dir)]
    args += ["--session", session_id]
    return " ".join(args)


def print_farewell(
    console: Console,
    messages: Sequence[AgentMessage],
    *,
    cwd: str | None,
    session_id: str | None,
    session_dir: str | None = None,
    caddie: str | None = None,
) -> None:
    """Print the last exchange and how to resume (``session_id`` None: the session was not saved;
    ``caddie``: the command that starts caddie, by default the way this process was started)."""
    exchange = last_exchange(messages)
    if exchange:
        console.print(exchange_renderable(exchange, cwd))
        console.print()
    if session_id is not None:
        line = Text("To resume this session:", style="dim")
        line.append(" " + resume_command(session_id, session_dir, caddie))
        console.print(line, soft_wrap=True)

"""Ask caddie about a project from a program: stream the answer, show the tools it runs, give it a tool.

    uv run python examples/sdk/ask.py [--model provider/id] [--cwd DIR] "what does this project do?"

A small use of ``caddie.sdk`` (docs/sdk.md): one session in memory, an event subscriber that prints the
reply as it streams and a line per tool call, a tool of this program's own (``count_lines``), and an
extension given as a function that keeps the model from deleting files. Settings, models and credentials
are the ``caddie`` command's (``~/.caddie/agent``). Exit status: 0 answered, 1 the request failed, 2 no
session could be made (the reason is one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from caddie.sdk import (
    AssistantMessage,
    CaddieError,
    ExtensionAPI,
    ExtensionContext,
    MessageUpdateEvent,
    NoticeEvent,
    SessionEvent,
    ToolCallEvent,
    ToolCallResult,
    ToolDefinition,
    ToolError,
    ToolExecutionStartEvent,
    ToolResult,
    open_session,
    text_result,
)


class CountLinesArgs(BaseModel):
    path: str = Field(description="A file, relative to the project")


def count_lines_tool(root: Path) -> ToolDefinition:
    async def execute(
        call_id: str, args: CountLinesArgs, signal: Any, on_update: Any, ctx: Any
    ) -> ToolResult:
        target = (root / args.path).resolve()
        if not target.is_file() or not target.is_relative_to(root):
            raise ToolError(f"No file {args.path} in the project.")
        with target.open("rb") as f:
            return text_result(f"{args.path}: {sum(1 for _ in f)} lines")

    return ToolDefinition(
        name="count_lines",
        label="Count lines",
        description="Count the lines of a file in the project.",
        parameters=CountLinesArgs,
        execute=execute,
        prompt_snippet="Count the lines of a file",
    )


def no_deleting(api: ExtensionAPI) -> None:
    """An extension given as a function: the model may not run ``rm``."""

    def guard(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        command = str(event.input.get("command", "")) if event.tool_name == "bash" else ""
        if "rm " in f" {command}":
            return ToolCallResult(block=True, reason="This program does not let the model delete files.")
        return None

    api.on("tool_call", guard)


def show(event: SessionEvent) -> None:
    if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
        print(event.assistant_message_event.delta, end="", flush=True)
    elif isinstance(event, ToolExecutionStartEvent):
        print(f"[{event.tool_name}]", file=sys.stderr, flush=True)
    elif isinstance(event, NoticeEvent):
        print(f"({event.level}: {event.message})", file=sys.stderr, flush=True)


async def ask(question: str, cwd: Path, model: str | None) -> int:
    async with open_session(
        cwd,
        model=model,
        custom_tools=[count_lines_tool(cwd)],
        extensions=[no_deleting],
        on_event=show,
    ) as session:
        await session.prompt(question)
        print()
        last = session.messages[-1]
        if isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted"):
            print(f"ask: {last.error_message}", file=sys.stderr)
            return 1
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Ask caddie about a project.")
    parser.add_argument("question")
    parser.add_argument("--model", help="provider/id (default: caddie's default model)")
    parser.add_argument("--cwd", default=".", help="the project (default: here)")
    args = parser.parse_args()
    try:
        return asyncio.run(ask(args.question, Path(args.cwd).resolve(), args.model))
    except CaddieError as e:  # no model, no key, an unknown model: one sentence
        print(f"ask: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

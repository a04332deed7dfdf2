"""Shared helpers for the tool tests: run a built-in tool the way the agent loop does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from caddie.ai.abort import AbortController, AbortSignal
from caddie.tools import ToolArgumentError, ToolDefinition, ToolError, ToolResult, validate_arguments


class Outcome:
    def __init__(self, result: ToolResult | None, error: str | None) -> None:
        self.result = result
        self.error = error

    @property
    def text(self) -> str:
        if self.error is not None:
            return self.error
        assert self.result is not None
        return "\n".join(getattr(block, "text", "") for block in self.result.content)

    @property
    def details(self) -> Any:
        assert self.result is not None
        return self.result.details


async def run_tool(
    tool: ToolDefinition,
    args: dict[str, Any],
    *,
    signal: AbortSignal | None = None,
    on_update: Callable[[ToolResult], None] | None = None,
    ctx: Any = None,
) -> Outcome:
    """Validate, execute, and turn a raised error into its text (as the loop does)."""
    try:
        params = validate_arguments(tool, args)
        result = await tool.execute(
            "call-1", params, signal or AbortController().signal, on_update or (lambda _: None), ctx
        )
    except (ToolArgumentError, ToolError) as exc:
        return Outcome(None, str(exc))
    return Outcome(result, None)


@pytest.fixture
def run() -> Callable[..., Outcome]:
    """Synchronous wrapper: ``run(tool, args, **kw)``."""

    def runner(tool: ToolDefinition, args: dict[str, Any], **kw: Any) -> Outcome:
        return asyncio.run(run_tool(tool, args, **kw))

    return runner

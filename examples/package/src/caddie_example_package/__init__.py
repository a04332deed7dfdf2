"""The extension half of the example package: a ``/greet`` command and a ``word_count`` tool.

caddie finds it through the ``caddie.extensions`` entry point in ``pyproject.toml`` and calls
``register(api)``; the skill and the prompt template next to this file need no code.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    ToolDefinition,
    ToolResult,
    text_result,
)


class WordCountParams(BaseModel):
    text: str = Field(description="The text whose words to count")


def register(api: ExtensionAPI) -> None:
    async def greet(args: str, ctx: CommandContext) -> None:
        ctx.ui.notify(f"Hello, {args.strip() or 'world'}! (from caddie-example-package)", "info")

    api.register_command("greet", greet, description="Say hello (example package)")

    async def word_count(
        call_id: str, params: WordCountParams, signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
    ) -> ToolResult:
        return text_result(f"{len(params.text.split())} words")

    api.register_tool(
        ToolDefinition(
            name="word_count",
            label="Word count",
            description="Count the words in a text.",
            parameters=WordCountParams,
            execute=word_count,
            prompt_snippet="Count the words in a text",
        )
    )

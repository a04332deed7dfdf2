"""Let the model ask you a question with choices (Pi's question example): the ``question`` tool shows the
options plus "Type something." for your own answer, and returns what you picked or wrote. (Pi draws its own
list with an inline editor; this uses caddie's select and input dialogs.)"""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolResult,
)

OTHER = "Type something."


class Option(BaseModel):
    label: str = Field(description="Display label for the option")
    description: str | None = Field(None, description="Optional description shown below label")


class QuestionParams(BaseModel):
    question: str = Field(description="The question to ask the user")
    options: list[Option] = Field(description="Options for the user to choose from")


def register(api: ExtensionAPI) -> None:
    async def ask(
        tool_call_id: str,
        params: QuestionParams,
        signal: AbortSignal,
        on_update: OnUpdate,
        ctx: ExtensionContext,
    ) -> ToolResult:
        labels = [o.label for o in params.options]
        details: dict[str, object] = {"question": params.question, "options": labels, "answer": None}
        if ctx.mode != "tui":
            return ToolResult(
                [TextContent("Error: UI not available (running in non-interactive mode)")], details=details
            )
        if not labels:
            return ToolResult([TextContent("Error: No options provided")], details=details)
        shown = {
            (f"{n}. {o.label} — {o.description}" if o.description else f"{n}. {o.label}"): (n, o.label)
            for n, o in enumerate(params.options, 1)
        }
        while True:
            choice = await ctx.ui.select(params.question, [*shown, OTHER])
            if choice is None:
                return ToolResult([TextContent("User cancelled the selection")], details=details)
            if choice != OTHER:
                number, label = shown[choice]
                return ToolResult(
                    [TextContent(f"User selected: {number}. {label}")], details={**details, "answer": label}
                )
            written = await ctx.ui.input(params.question, "Your answer")
            if written is not None and written.strip():  # an empty answer goes back to the options
                return ToolResult(
                    [TextContent(f"User wrote: {written}")],
                    details={**details, "answer": written, "wasCustom": True},
                )

    api.register_tool(
        ToolDefinition(
            name="question",
            label="Question",
            description=(
                "Ask the user a question and let them pick from options. Use when you need user input to proceed."
            ),
            parameters=QuestionParams,
            execute=ask,
            execution_mode="sequential",
        )
    )

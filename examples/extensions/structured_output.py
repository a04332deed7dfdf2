"""A final, machine-readable answer (Pi's structured-output example): the ``structured_output`` tool takes a
headline, a summary and action items, keeps them as the result's ``details``, and ends the run on the tool
call (``terminate``), so no extra model turn is paid for."""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import AbortSignal, ExtensionAPI, OnUpdate, TextContent, ToolDefinition, ToolResult


class StructuredOutput(BaseModel):
    headline: str = Field(description="Short title for the result")
    summary: str = Field(description="One-paragraph summary")
    actionItems: list[str] = Field(description="Concrete next steps or key bullets")  # Pi's field name


async def execute(
    tool_call_id: str, params: StructuredOutput, signal: AbortSignal, on_update: OnUpdate, ctx: object
) -> ToolResult:
    return ToolResult(
        [TextContent(f"Saved structured output: {params.headline}")],
        details=params.model_dump(),
        terminate=True,
    )


def register(api: ExtensionAPI) -> None:
    api.register_tool(
        ToolDefinition(
            name="structured_output",
            label="Structured Output",
            description=(
                "Return a final structured answer. Use this as your last action when the user asks for "
                "structured output or a machine-readable summary."
            ),
            parameters=StructuredOutput,
            execute=execute,  # receives the validated model
            prompt_snippet="Emit a final structured answer as a terminating tool result",
            prompt_guidelines=[
                "Use structured_output as your final action when the user asks for structured output, "
                "JSON-like output, or a machine-readable summary.",
                "After calling structured_output, do not emit another assistant response in the same turn.",
            ],
        )
    )

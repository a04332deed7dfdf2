"""The smallest custom tool (Pi's hello example): ``hello(name)`` greets."""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import AbortSignal, ExtensionAPI, OnUpdate, TextContent, ToolDefinition, ToolResult


class HelloParams(BaseModel):
    name: str = Field(description="Name to greet")


async def hello(
    tool_call_id: str, params: HelloParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
) -> ToolResult:
    return ToolResult([TextContent(f"Hello, {params.name}!")], details={"greeted": params.name})


def register(api: ExtensionAPI) -> None:
    api.register_tool(
        ToolDefinition(
            name="hello",
            label="Hello",
            description="A simple greeting tool",
            parameters=HelloParams,
            execute=hello,
        )
    )

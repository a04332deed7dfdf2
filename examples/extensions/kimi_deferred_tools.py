"""Tools the model finds when it needs them (Pi's kimi-deferred-tools example): only ``tool_search`` is
active at first; searching for a calculator activates ``Calculator`` from the next request on. (Pi also
speaks Kimi's native deferred-loading protocol; caddie uses the fallback every model understands: the
active tool list changes.)"""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import AbortSignal, ExtensionAPI, OnUpdate, TextContent, ToolDefinition, ToolResult


class CalculatorParams(BaseModel):
    expr: str = Field(description="An expression such as 100 + 500")


class SearchParams(BaseModel):
    query: str = Field(description="Capability to search for")


def register(api: ExtensionAPI) -> None:
    async def calculate(
        tool_call_id: str, params: CalculatorParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
    ) -> ToolResult:
        return ToolResult([TextContent("42")], details={})  # Pi's demo answer: the point is finding the tool

    async def search(
        tool_call_id: str, params: SearchParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
    ) -> ToolResult:
        if "calc" not in params.query.lower():
            return ToolResult(
                [TextContent("The relevant tools do not exist.")], details={"matches": [], "added": []}
            )
        active = api.get_active_tools()
        added = [] if "Calculator" in active else ["Calculator"]
        if added:
            api.set_active_tools([*active, *added])
        return ToolResult(
            [TextContent("Success. Found 1 matching tool(s)")],
            details={"matches": ["Calculator"], "added": added},
            added_tool_names=added,
        )

    api.register_tool(
        ToolDefinition(
            name="Calculator",
            label="Calculator",
            description="Evaluate a simple arithmetic expression.",
            parameters=CalculatorParams,
            execute=calculate,
        )
    )
    api.register_tool(
        ToolDefinition(
            name="tool_search",
            label="Tool Search",
            description="Find and activate tools for a capability.",
            prompt_snippet="Search for additional tools when the active tools cannot perform the task",
            parameters=SearchParams,
            execute=search,
        )
    )
    api.on("session_start", lambda event, ctx: api.set_active_tools(["tool_search"]))

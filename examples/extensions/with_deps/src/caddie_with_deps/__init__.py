"""An extension with a third-party dependency (Pi's with-deps example): ``parse_duration`` turns "2 days",
"1h 30m" or "5m" into milliseconds with pytimeparse, which the package declares in its pyproject.toml.

Pi resolves an extension's npm dependencies from its own ``node_modules``; in caddie an extension with
dependencies is a package, and ``caddie install ./examples/extensions/with_deps`` gives it an environment
of its own with them (docs/packages.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from pytimeparse import parse  # type: ignore[import-untyped]

from caddie.extensions.api import AbortSignal, ExtensionAPI, OnUpdate, TextContent, ToolDefinition, ToolResult


class DurationParams(BaseModel):
    duration: str = Field(description="Duration string like '2 days', '1h', '5m'")


async def parse_duration(
    tool_call_id: str, params: DurationParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
) -> ToolResult:
    seconds = parse(params.duration)
    if seconds is None:
        raise ValueError(f'Invalid duration: "{params.duration}"')
    milliseconds = round(seconds * 1000)
    return ToolResult([TextContent(f"{params.duration} = {milliseconds} milliseconds")], details={})


def register(api: ExtensionAPI) -> None:
    api.register_tool(
        ToolDefinition(
            name="parse_duration",
            label="Parse Duration",
            description="Parse a human-readable duration string (e.g., '2 days', '1h', '5m') to milliseconds",
            parameters=DurationParams,
            execute=parse_duration,
        )
    )

"""Reload extensions from a command (Pi's reload-runtime example): ``/reload-runtime`` reloads them at once.
The ``reload_runtime`` tool queues ``/reload-runtime`` with ``send_user_message(..., "follow_up")``; as in
Pi, a message an extension sends is not run as a command, so the text reaches the model as the next user
message (a run cannot reload the extensions it is running on) and the user types the command."""

from __future__ import annotations

from pydantic import BaseModel

from caddie.extensions.api import (
    AbortSignal,
    CommandContext,
    ExtensionAPI,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolResult,
)


class NoParams(BaseModel):
    pass


def register(api: ExtensionAPI) -> None:
    async def reload(args: str, ctx: CommandContext) -> None:
        await ctx.reload()

    async def queue_reload(
        tool_call_id: str, params: NoParams, signal: AbortSignal, on_update: OnUpdate, ctx: object
    ) -> ToolResult:
        api.send_user_message("/reload-runtime", "follow_up")
        return ToolResult([TextContent("Queued /reload-runtime as a follow-up command.")], details={})

    api.register_command("reload-runtime", reload, "Reload extensions, skills, prompts and context files")
    api.register_tool(
        ToolDefinition(
            name="reload_runtime",
            label="Reload Runtime",
            description="Reload extensions, skills, prompts and context files",
            parameters=NoParams,
            execute=queue_reload,
        )
    )

"""Let a command or the model end caddie cleanly (Pi's shutdown-command example): ``/quit``, and the tools
``finish_and_exit`` and ``deploy_and_exit``, call ``ctx.shutdown()``: caddie ends once the current work is
done (in print and json modes too)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolResult,
)


class NoParams(BaseModel):
    pass


class DeployParams(BaseModel):
    environment: str = Field(description="Target environment (e.g., production, staging)")


async def finish(
    tool_call_id: str, params: NoParams, signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
) -> ToolResult:
    ctx.shutdown()
    return ToolResult([TextContent("Shutdown requested. Exiting after this response.")], details={})


async def deploy(
    tool_call_id: str, params: DeployParams, signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
) -> ToolResult:
    on_update(ToolResult([TextContent(f"Deploying to {params.environment}...")], details={}))
    on_update(ToolResult([TextContent("Deployment complete, exiting...")], details={}))
    ctx.shutdown()
    return ToolResult([TextContent("Done! Shutdown requested.")], details={"environment": params.environment})


def register(api: ExtensionAPI) -> None:
    def quit_command(args: str, ctx: CommandContext) -> None:
        ctx.shutdown()

    api.register_command("quit", quit_command, "Exit caddie cleanly")
    api.register_tool(
        ToolDefinition(
            name="finish_and_exit",
            label="Finish and Exit",
            description="Complete a task and exit caddie",
            parameters=NoParams,
            execute=finish,
        )
    )
    api.register_tool(
        ToolDefinition(
            name="deploy_and_exit",
            label="Deploy and Exit",
            description="Deploy the application and exit caddie",
            parameters=DeployParams,
            execute=deploy,
        )
    )

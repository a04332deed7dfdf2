"""Replace a built-in tool (Pi's tool-override example): this ``read`` logs every file the model reads to
``~/.caddie/agent/read-access.log`` and refuses secrets (``.env``, credentials, ``~/.ssh`` …). ``/read-log``
shows the last 20 lines of the log. A tool registered under a built-in's name takes its place."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

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
    truncate_head,
    with_file_mutation_queue,
)

BLOCKED = (
    re.compile(r"\.env$"),
    re.compile(r"\.env\..+$"),
    re.compile(r"secrets?\.(json|yaml|yml|toml)$", re.IGNORECASE),
    re.compile(r"credentials?\.(json|yaml|yml|toml)$", re.IGNORECASE),
    re.compile(r"/\.ssh/"),
    re.compile(r"/\.aws/"),
    re.compile(r"/\.gnupg/"),
)


class ReadParams(BaseModel):
    path: str = Field(description="Path to the file to read (relative or absolute)")
    offset: int | None = Field(None, description="Line number to start reading from (1-indexed)")
    limit: int | None = Field(None, description="Maximum number of lines to read")


def is_blocked(path: str) -> bool:
    return any(pattern.search(path) for pattern in BLOCKED)


def log_file(ctx: ExtensionContext) -> Path:
    return Path(ctx.config_scope().agent_dir) / "read-access.log"


async def log_access(ctx: ExtensionContext, path: str, allowed: bool, reason: str = "") -> None:
    line = f"[{datetime.now(UTC).isoformat()}] {'ALLOWED' if allowed else 'BLOCKED'}: {path}"
    line += f" ({reason})\n" if reason else "\n"
    target = log_file(ctx)

    async def append() -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as log:
            log.write(line)

    try:
        await with_file_mutation_queue(str(target), append)
    except OSError:
        pass  # a log that cannot be written must not stop the read


async def read(
    tool_call_id: str, params: ReadParams, signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
) -> ToolResult:
    path = str((Path(ctx.cwd) / params.path).resolve())
    if is_blocked(path):
        await log_access(ctx, path, False, "matches blocked pattern")
        return ToolResult(
            [
                TextContent(
                    f'Access denied: "{params.path}" matches a blocked pattern (sensitive file). This tool blocks '
                    "access to .env files, secrets, credentials, and SSH/AWS/GPG directories."
                )
            ],
            details={"blocked": True},
        )
    await log_access(ctx, path, True)
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except OSError as e:
        return ToolResult([TextContent(f"Error reading file: {e.strerror or e}")], details={"error": True})
    start = max(0, params.offset - 1) if params.offset else 0
    end = start + params.limit if params.limit else len(lines)
    text = truncate_head("\n".join(lines[start:end])).content
    return ToolResult([TextContent(text)], details={"lines": len(lines)})


def register(api: ExtensionAPI) -> None:
    api.register_tool(
        ToolDefinition(
            name="read",
            label="read (audited)",
            description=(
                "Read the contents of a file with access logging. Some sensitive paths (.env, secrets, "
                "credentials) are blocked."
            ),
            parameters=ReadParams,
            execute=read,
        )
    )

    def show_log(args: str, ctx: CommandContext) -> None:
        try:
            lines = log_file(ctx).read_text(encoding="utf-8").strip().split("\n")[-20:]
        except OSError:
            ctx.ui.notify("No access log found", "info")
            return
        ctx.ui.notify("Recent file access:\n" + "\n".join(lines), "info")

    api.register_command("read-log", show_log, "View the file access log")

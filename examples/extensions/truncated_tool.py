"""A custom tool that keeps its output within bounds (Pi's truncated-tool example): ``rg`` wraps ripgrep and
cuts its output at 2000 lines or 50KB, whichever comes first (caddie's own limits), saving the whole output
to a temp file the model is told about. Do the same in any tool whose output can grow."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    AbortSignal,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolResult,
    format_size,
    truncate_head,
)


class RgParams(BaseModel):
    pattern: str = Field(description="Search pattern (regex)")
    path: str | None = Field(None, description="Directory to search (default: current directory)")
    glob: str | None = Field(None, description="File glob pattern, e.g. '*.ts'")


def register(api: ExtensionAPI) -> None:
    async def rg(
        tool_call_id: str, params: RgParams, signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
    ) -> ToolResult:
        args = ["--line-number", "--color=never", *(["--glob", params.glob] if params.glob else [])]
        found = await api.exec(
            "rg", [*args, "--", params.pattern, params.path or "."], cwd=ctx.cwd, signal=signal
        )
        details: dict[str, Any] = {"pattern": params.pattern, "path": params.path, "glob": params.glob}
        if found.code == 1 or (found.code == 0 and not found.stdout.strip()):
            return ToolResult([TextContent("No matches found")], details={**details, "matchCount": 0})
        if found.code != 0:
            raise ToolError(f"ripgrep failed: {found.stderr.strip() or f'exit code {found.code}'}")
        output = found.stdout
        details["matchCount"] = sum(1 for line in output.split("\n") if line.strip())
        cut = truncate_head(output, max_lines=DEFAULT_MAX_LINES, max_bytes=DEFAULT_MAX_BYTES)
        text = cut.content
        if cut.truncated:
            saved = Path(tempfile.mkdtemp(prefix="caddie-rg-")) / "output.txt"
            saved.write_text(output, encoding="utf-8")
            details["truncation"] = cut.to_json()
            details["fullOutputPath"] = str(saved)
            text += (
                f"\n\n[Output truncated: showing {cut.output_lines} of {cut.total_lines} lines"
                f" ({format_size(cut.output_bytes)} of {format_size(cut.total_bytes)})."
                f" {cut.total_lines - cut.output_lines} lines ({format_size(cut.total_bytes - cut.output_bytes)})"
                f" omitted. Full output saved to: {saved}]"
            )
        return ToolResult([TextContent(text)], details=details)

    api.register_tool(
        ToolDefinition(
            name="rg",
            label="ripgrep",
            description=(
                f"Search file contents using ripgrep. Output is truncated to {DEFAULT_MAX_LINES} lines or "
                f"{format_size(DEFAULT_MAX_BYTES)} (whichever is hit first). If truncated, full output is saved "
                "to a temp file."
            ),
            parameters=RgParams,
            execute=rg,
        )
    )

"""Compact looks for the built-in tools (Pi's built-in-tool-renderer example): ``read``, ``bash``, ``edit``
and ``write`` keep doing what they do, but the conversation shows them in one line each — the line count of
a read, the exit code of a command, the ``+added / -removed`` of an edit — with the details under Ctrl+O.

A tool draws itself with ``render_call(args, theme)`` and ``render_result(result, options, theme)``. Rather
than building new tools, this takes the session's own (``api.get_all_tools()``, so a sandbox or settings
that shaped them still apply) and registers each again under its name with the two renderers added.

Load it with ``caddie -e examples/extensions/built_in_tool_renderer.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ThemeView, ToolResult

EXIT_CODE = re.compile(r"exited with code (\d+)\s*$")


def output_of(result: ToolResult) -> str:
    first = result.content[0] if result.content else None
    return getattr(first, "text", "") or ""


def truncated(result: ToolResult) -> dict[str, Any] | None:
    details = result.details if isinstance(result.details, dict) else {}
    truncation = details.get("truncation")
    return truncation if isinstance(truncation, dict) and truncation.get("truncated") else None


def title(theme: ThemeView, name: str, subject: str) -> str:
    return theme.fg("toolTitle", theme.bold(name)) + theme.fg("accent", subject)


# -- read ----------------------------------------------------------------------------------------------
def read_call(args: dict[str, Any], theme: ThemeView) -> str:
    text = title(theme, "read ", str(args.get("path", "")))
    parts = [f"{key}={args[key]}" for key in ("offset", "limit") if args.get(key)]
    return text + (theme.fg("dim", f" ({', '.join(parts)})") if parts else "")


def read_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
    if options.is_partial:
        return theme.fg("warning", "Reading...")
    lines = output_of(result).split("\n")
    text = theme.fg("success", f"{len(lines)} lines")
    cut = truncated(result)
    if cut:
        text += theme.fg("warning", f" (truncated from {cut.get('totalLines')})")
    if options.expanded:
        text += "".join("\n" + theme.fg("dim", line) for line in lines[:15])
        if len(lines) > 15:
            text += "\n" + theme.fg("muted", f"... {len(lines) - 15} more lines")
    return text


# -- bash ----------------------------------------------------------------------------------------------
def bash_call(args: dict[str, Any], theme: ThemeView) -> str:
    command = str(args.get("command", ""))
    text = title(theme, "$ ", command if len(command) <= 80 else command[:77] + "...")
    return text + (theme.fg("dim", f" (timeout: {args['timeout']}s)") if args.get("timeout") else "")


def bash_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
    if options.is_partial:
        return theme.fg("warning", "Running...")
    output = output_of(result)
    match = EXIT_CODE.search(output)
    code = int(match.group(1)) if match else 0
    count = sum(1 for line in output.split("\n") if line.strip())
    text = theme.fg("success", "done") if code == 0 else theme.fg("error", f"exit {code}")
    text += theme.fg("dim", f" ({count} lines)")
    if truncated(result):
        text += theme.fg("warning", " [truncated]")
    if options.expanded:
        lines = output.split("\n")
        text += "".join("\n" + theme.fg("dim", line) for line in lines[:20])
        if len(lines) > 20:
            text += "\n" + theme.fg("muted", "... more output")
    return text


# -- edit ----------------------------------------------------------------------------------------------
def edit_call(args: dict[str, Any], theme: ThemeView) -> str:
    return title(theme, "edit ", str(args.get("path", "")))


def diff_counts(diff: str) -> tuple[int, int]:
    """Added and removed lines of a diff (``+2 new`` / ``-2 old``: the marker, then the line number)."""
    lines = diff.split("\n")
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return added, removed


def edit_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
    if options.is_partial:
        return theme.fg("warning", "Editing...")
    output = output_of(result)
    diff = result.details.get("diff") if isinstance(result.details, dict) else None
    if not isinstance(diff, str) or not diff:
        is_error = not output.startswith("Successfully")
        return theme.fg("error", output.split("\n")[0]) if is_error else theme.fg("success", "Applied")
    added, removed = diff_counts(diff)
    text = theme.fg("success", f"+{added}") + theme.fg("dim", " / ") + theme.fg("error", f"-{removed}")
    if options.expanded:
        lines = diff.split("\n")
        text += "".join("\n" + theme.fg("dim", line) for line in lines[:30])
        if len(lines) > 30:
            text += "\n" + theme.fg("muted", f"... {len(lines) - 30} more diff lines")
    return text


# -- write ---------------------------------------------------------------------------------------------
def write_call(args: dict[str, Any], theme: ThemeView) -> str:
    lines = len(str(args.get("content", "")).split("\n"))
    return title(theme, "write ", str(args.get("path", ""))) + theme.fg("dim", f" ({lines} lines)")


def write_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
    if options.is_partial:
        return theme.fg("warning", "Writing...")
    output = output_of(result)
    return theme.fg("success", "Written") if output.startswith("Success") else theme.fg("error", output)


RENDERERS: dict[str, tuple[Callable[..., str], Callable[..., str]]] = {
    "read": (read_call, read_result),
    "bash": (bash_call, bash_result),
    "edit": (edit_call, edit_result),
    "write": (write_call, write_result),
}


def register(api: ExtensionAPI) -> None:
    async def restyle(event: object, ctx: ExtensionContext) -> None:
        for tool in api.get_all_tools():
            if tool.name in RENDERERS:
                render_call, render_result = RENDERERS[tool.name]
                shell = "self" if tool.name == "edit" else tool.render_shell  # the diff stats without the box
                api.register_tool(
                    replace(tool, render_call=render_call, render_result=render_result, render_shell=shell)
                )

    api.on("session_start", restyle)

"""A minimal look for the built-in tools (Pi's minimal-mode example): collapsed, a tool shows only its call
(``read src/app.py:10-40``, ``$ make test``) and none of its output; Ctrl+O (expand tool output) shows the
whole output. The tools themselves work as always.

Like built_in_tool_renderer.py, it registers the session's own tools (``api.get_all_tools()``) again with a
``render_call`` and a ``render_result`` added: every built-in (read, bash, edit, write, find, grep, ls).

Load it with ``caddie -e examples/extensions/minimal_mode.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ThemeView, ToolResult


def short_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path.startswith(home) else path


def head(theme: ThemeView, name: str, subject: str) -> str:
    return f"{theme.fg('toolTitle', theme.bold(name))} {subject}"


def read_call(args: dict[str, Any], theme: ThemeView) -> str:
    text = theme.fg("accent", short_path(str(args.get("path") or ""))) or theme.fg("muted", "...")
    if args.get("offset") is not None or args.get("limit") is not None:
        start = args.get("offset") or 1
        end = start + args["limit"] - 1 if args.get("limit") is not None else ""
        text += theme.fg("warning", f":{start}{f'-{end}' if end else ''}")
    return head(theme, "read", text)


def bash_call(args: dict[str, Any], theme: ThemeView) -> str:
    timeout = theme.fg("muted", f" (timeout {args['timeout']}s)") if args.get("timeout") else ""
    return theme.fg("toolTitle", theme.bold(f"$ {args.get('command') or '...'}")) + timeout


def path_call(name: str) -> Callable[[dict[str, Any], ThemeView], str]:
    def draw(args: dict[str, Any], theme: ThemeView) -> str:
        text = theme.fg("accent", short_path(str(args.get("path") or ".")))
        if name == "write":
            text += theme.fg("muted", f" ({len(str(args.get('content', '')).split(chr(10)))} lines)")
        return head(theme, name, text)

    return draw


def search_call(name: str) -> Callable[[dict[str, Any], ThemeView], str]:
    def draw(args: dict[str, Any], theme: ThemeView) -> str:
        pattern = theme.fg("accent", str(args.get("pattern", "")))
        where = theme.fg("muted", f" in {short_path(str(args.get('path') or '.'))}")
        return head(theme, name, (f"/{pattern}/" if name == "grep" else pattern) + where)

    return draw


def output_only_when_expanded(result: ToolResult, options: Any, theme: ThemeView) -> str:
    """Collapsed: nothing under the call. Expanded: the whole output."""
    if not options.expanded:
        return ""
    first = result.content[0] if result.content else None
    text = (getattr(first, "text", "") or "").strip("\n")
    return "\n".join(theme.fg("muted", line) for line in text.split("\n")) if text else ""


CALLS: dict[str, Callable[[dict[str, Any], ThemeView], str]] = {
    "read": read_call,
    "bash": bash_call,
    "edit": path_call("edit"),
    "write": path_call("write"),
    "ls": path_call("ls"),
    "find": search_call("find"),
    "grep": search_call("grep"),
}


def register(api: ExtensionAPI) -> None:
    async def minimal(event: object, ctx: ExtensionContext) -> None:
        for tool in api.get_all_tools():
            if tool.name in CALLS:
                api.register_tool(
                    replace(tool, render_call=CALLS[tool.name], render_result=output_only_when_expanded)
                )

    api.on("session_start", minimal)

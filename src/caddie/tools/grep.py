"""The ``grep`` tool: search file contents, ``path:line: text`` per match (``path-line- text`` for context).

Uses ripgrep when ``rg`` is on PATH (exactly as Pi invokes it), otherwise a pure-Python search with the
same output: hidden files included, .gitignore respected inside git repositories, binary files skipped,
symlinks not followed. At most 100 matches (``limit``) and 50 KB; lines over 500 characters are cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.jscompat import js_number, js_trim
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.files import check_sandbox
from caddie.tools.paths import resolve_to_cwd
from caddie.tools.truncate import (
    DEFAULT_MAX_BYTES,
    GREP_MAX_LINE_LENGTH,
    format_size,
    truncate_head,
    truncate_line,
)
from caddie.tools.walk import WalkOptions, walk

DEFAULT_GREP_LIMIT = 100
UNLIMITED_LINES = 2**53 - 1
GREP_DESCRIPTION = (
    "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects "
    f".gitignore. Output is truncated to {DEFAULT_GREP_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever "
    f"is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)
GREP_PROMPT_SNIPPET = "Search file contents for patterns (respects .gitignore)"
GREP_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
        "glob": {
            "type": "string",
            "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'",
        },
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
    },
}


@dataclass(slots=True)
class GrepMatch:
    file_path: str
    line_number: int
    line_text: str | None


@dataclass(slots=True)
class _Search:
    matches: list[GrepMatch]
    count: int
    limit_reached: bool


def find_rg() -> str | None:
    """ripgrep on PATH, if any."""
    return shutil.which("rg")


# --------------------------------------------------------------------------------------------------
# Backends


async def _search_with_rg(
    rg: str,
    pattern: str,
    search_path: str,
    *,
    glob: str | None,
    ignore_case: bool,
    literal: bool,
    limit: float,
    signal: AbortSignal | None,
    readable: Callable[[str], bool] | None = None,
) -> _Search:
    args = ["--json", "--line-number", "--color=never", "--hidden"]
    if ignore_case:
        args.append("--ignore-case")
    if literal:
        args.append("--fixed-strings")
    if glob:
        args += ["--glob", glob]
    args += ["--", pattern, search_path]
    try:
        proc = await asyncio.create_subprocess_exec(
            rg,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ToolError(f"Failed to run ripgrep: {exc}") from exc
    assert proc.stdout is not None and proc.stderr is not None
    matches: list[GrepMatch] = []
    count = 0
    limit_reached = False
    killed_for_limit = False
    aborted = False

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()

    def on_abort() -> None:
        nonlocal aborted
        aborted = True
        stop()

    remove = signal.add_listener(on_abort) if signal is not None else None
    stderr_task = asyncio.ensure_future(proc.stderr.read())
    try:
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                break
            line = raw.decode("utf-8", "replace")
            if not js_trim(line) or count >= limit:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict) or event.get("type") != "match":
                continue
            data = event.get("data") or {}
            file_path = (data.get("path") or {}).get("text")
            if readable is not None and isinstance(file_path, str) and not readable(file_path):
                continue
            count += 1
            line_number = data.get("line_number")
            line_text = (data.get("lines") or {}).get("text")
            if file_path and isinstance(line_number, int):
                matches.append(GrepMatch(file_path, line_number, line_text))
            if count >= limit:
                limit_reached = True
                if proc.returncode is None:
                    killed_for_limit = True
                    stop()
        code = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace")
    finally:
        if remove is not None:
            remove()
        if proc.returncode is None:
            stop()
    if aborted:
        raise ToolError("Operation aborted")
    if not killed_for_limit and code not in (0, 1):
        raise ToolError(js_trim(stderr) or f"ripgrep exited with code {code}")
    return _Search(matches, count, limit_reached)


def _search_in_python(
    pattern: str,
    search_path: str,
    is_directory: bool,
    *,
    glob: str | None,
    ignore_case: bool,
    literal: bool,
    limit: float,
    signal: AbortSignal | None,
    readable: Callable[[str], bool] | None = None,
) -> _Search:
    try:
        regex = re.compile(re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"regex parse error: {exc}") from exc
    files: Iterator[str]
    if is_directory:
        options = WalkOptions(".rgignore", require_git=True, override_globs=[glob] if glob else [])
        files = (e.path for e in walk(search_path, options) if not e.is_dir and not e.is_symlink)
    else:
        files = iter([search_path])

    matches: list[GrepMatch] = []
    for file_path in files:
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        if readable is not None and not readable(file_path):
            continue
        try:
            with open(file_path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if b"\0" in data and is_directory:
            continue  # binary file
        lines = data.decode("utf-8", "replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        for index, line in enumerate(lines):
            if regex.search(line):
                matches.append(GrepMatch(file_path, index + 1, line + "\n"))
                if len(matches) >= limit:
                    return _Search(matches, len(matches), True)
    return _Search(matches, len(matches), False)


# --------------------------------------------------------------------------------------------------
# Formatting


def format_matches(
    search: _Search, search_path: str, is_directory: bool, context: int, limit: float
) -> ToolResult:
    def rel(file_path: str) -> str:
        if is_directory:
            relative = os.path.relpath(file_path, search_path)
            if relative and relative != "." and not relative.startswith(".."):
                return relative.replace("\\", "/")
        return os.path.basename(file_path)

    cache: dict[str, list[str]] = {}

    def file_lines(file_path: str) -> list[str]:
        if file_path not in cache:
            try:
                with open(file_path, "rb") as fh:
                    content = fh.read().decode("utf-8", "replace")
                cache[file_path] = content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            except OSError:
                cache[file_path] = []
        return cache[file_path]

    lines_truncated = False
    output: list[str] = []
    for match in search.matches:
        if context == 0 and match.line_text is not None:
            text = match.line_text.replace("\r\n", "\n").replace("\r", "")
            text = text.removesuffix("\n")
            cut, was_cut = truncate_line(text)
            lines_truncated = lines_truncated or was_cut
            output.append(f"{rel(match.file_path)}:{match.line_number}: {cut}")
            continue
        lines = file_lines(match.file_path)
        name = rel(match.file_path)
        if not lines:
            output.append(f"{name}:{match.line_number}: (unable to read file)")
            continue
        start = max(1, match.line_number - context) if context > 0 else match.line_number
        end = min(len(lines), match.line_number + context) if context > 0 else match.line_number
        current = start
        while current <= end:
            line = lines[current - 1] if 0 < current <= len(lines) else ""
            cut, was_cut = truncate_line(line.replace("\r", ""))
            lines_truncated = lines_truncated or was_cut
            sep = ":" if current == match.line_number else "-"
            output.append(f"{name}{sep}{current}{sep} {cut}")
            current += 1

    truncation = truncate_head("\n".join(output), max_lines=UNLIMITED_LINES)
    text = truncation.content
    details: dict[str, Any] = {}
    notices: list[str] = []
    if search.limit_reached:
        notices.append(
            f"{js_number(limit)} matches limit reached. Use limit={js_number(limit * 2)} for more, or refine pattern"
        )
        details["matchLimitReached"] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_json()
    if lines_truncated:
        notices.append(
            f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        )
        details["linesTruncated"] = True
    if notices:
        text += f"\n\n[{'. '.join(notices)}]"
    return ToolResult([TextContent(text)], details or None)


# --------------------------------------------------------------------------------------------------
# Tool


def create_grep_tool(cwd: str, *, use_rg: bool = True, guard: FileGuard | None = None) -> ToolDefinition:
    """``use_rg=False`` forces the pure-Python search even when ``rg`` is on PATH; ``guard``: the sandbox's
    path policy (matches in files it does not let the model read are left out)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        pattern: str = params["pattern"]
        search_dir: str | None = params.get("path")
        glob: str | None = params.get("glob")
        ignore_case = bool(params.get("ignoreCase"))
        literal = bool(params.get("literal"))
        context_param: float | None = params.get("context")
        limit_param: float | None = params.get("limit")

        search_path = resolve_to_cwd(search_dir or ".", cwd)
        check_sandbox(guard, search_path)
        readable = guard.read_filter(search_path) if guard is not None else None
        try:
            is_directory = stat.S_ISDIR(os.stat(search_path).st_mode)
        except OSError:
            raise ToolError(f"Path not found: {search_path}") from None
        context = int(context_param) if context_param and context_param > 0 else 0
        limit = max(1, DEFAULT_GREP_LIMIT if limit_param is None else limit_param)

        rg = find_rg() if use_rg else None
        if rg is not None:
            search = await _search_with_rg(
                rg, pattern, search_path, glob=glob, ignore_case=ignore_case, literal=literal, limit=limit,
                signal=signal, readable=readable,
            )  # fmt: skip
        else:
            search = await asyncio.to_thread(
                _search_in_python, pattern, search_path, is_directory, glob=glob, ignore_case=ignore_case,
                literal=literal, limit=limit, signal=signal, readable=readable,
            )  # fmt: skip
        if search.count == 0:
            return ToolResult([TextContent("No matches found")], None)
        return format_matches(search, search_path, is_directory, context, limit)

    return ToolDefinition(
        name="grep",
        label="grep",
        description=GREP_DESCRIPTION,
        parameters=GREP_PARAMETERS,
        execute=execute,
        prompt_snippet=GREP_PROMPT_SNIPPET,
    )

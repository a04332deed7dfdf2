"""The ``find`` tool: paths matching a glob, relative to the search directory (``dir/`` for directories).

Uses ``fd`` (or Debian's ``fdfind``) when on PATH, invoked as Pi invokes it, otherwise a pure-Python walk
with the same output. A pattern without ``/`` matches file names; with ``/`` it matches the whole path.
Hidden files are included, .gitignore is respected, at most 1000 results (``limit``) and 50 KB.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import subprocess
from typing import Any

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.jscompat import js_number, js_trim
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.files import check_sandbox
from caddie.tools.operations import FindOperations
from caddie.tools.paths import resolve_to_cwd
from caddie.tools.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head
from caddie.tools.walk import WalkOptions, compile_glob, walk

DEFAULT_FIND_LIMIT = 1000
GLOB_IGNORE = ("**/node_modules/**", "**/.git/**")
"""What ``FindOperations.glob`` is asked to leave out (Pi's list)."""
UNLIMITED_LINES = 2**53 - 1
FIND_DESCRIPTION = (
    "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects "
    f".gitignore. Output is truncated to {DEFAULT_FIND_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB (whichever "
    "is hit first)."
)
FIND_PROMPT_SNIPPET = "Find files by glob pattern (respects .gitignore)"
FIND_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
        },
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    },
}


@functools.lru_cache(maxsize=8)
def fd_supports_no_require_git(path: str) -> bool:
    """fd releases before 8.7 lack ``--no-require-git``, which Pi passes outside git repositories."""
    try:
        help_text = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "--no-require-git" in help_text


def find_fd() -> str | None:
    """``fd`` (or Debian's ``fdfind``) on PATH, if any."""
    return shutil.which("fd") or shutil.which("fdfind")


def _inside_git_repo(path: str) -> bool:
    current = path
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _effective_pattern(pattern: str) -> tuple[str, bool]:
    """fd matches names unless the pattern has a ``/``; full paths need a leading ``**/`` to match."""
    if "/" not in pattern:
        return pattern, False
    if not pattern.startswith("/") and not pattern.startswith("**/") and pattern != "**":
        return f"**/{pattern}", True
    return pattern, True


def relativize(result: str, search_path: str) -> str:
    trailing = result.endswith("/")
    relative = os.path.relpath(result, search_path) if result.startswith("/") else result
    if relative == ".":
        relative = ""
    return f"{relative}/" if trailing and not relative.endswith("/") else relative


async def _run_fd(
    fd: str, pattern: str, search_path: str, limit: float, signal: AbortSignal | None
) -> list[str]:
    args = ["--glob", "--color=never", "--hidden"]
    if not _inside_git_repo(search_path):
        args.append("--no-require-git")
    args += ["--max-results", js_number(limit)]
    effective, full_path = _effective_pattern(pattern)
    if full_path:
        args.append("--full-path")
    args += ["--", effective, search_path]
    try:
        proc = await asyncio.create_subprocess_exec(
            fd,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ToolError(f"Failed to run fd: {exc}") from exc

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()

    remove = signal.add_listener(stop) if signal is not None else None
    try:
        stdout, stderr = await proc.communicate()
    finally:
        if remove is not None:
            remove()
    if signal is not None and signal.aborted:
        raise ToolError("Operation aborted")
    lines = stdout.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    output = "\n".join(lines)
    if proc.returncode != 0 and not output:
        raise ToolError(
            js_trim(stderr.decode("utf-8", "replace")) or f"fd exited with code {proc.returncode}"
        )
    return lines


def _find_in_python(pattern: str, search_path: str, limit: float, signal: AbortSignal | None) -> list[str]:
    if limit != int(limit) or limit < 0:
        raise ToolError(
            f"error: Invalid value '{js_number(limit)}' for '--max-results <count>': invalid digit found in string"
            "\n\nFor more information try '--help'"
        )
    if not os.path.isdir(search_path):
        raise ToolError(
            f"[fd error]: Search path '{search_path}' is not a directory.\n[fd error]: No valid search paths given."
        )
    effective, full_path = _effective_pattern(pattern)
    regex = compile_glob(effective, ignore_case=not any(ch.isupper() for ch in pattern))
    results: list[str] = []
    for entry in walk(search_path, WalkOptions(".fdignore", require_git=False)):
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        subject = entry.path if full_path else os.path.basename(entry.path)
        if not regex.match(subject):
            continue
        results.append(entry.path + ("/" if entry.is_dir and not entry.is_symlink else ""))
        if limit and len(results) >= limit:
            break
    return results


def _absolute(result: str, search_path: str) -> str:
    return result if result.startswith("/") else os.path.join(search_path, result)


def create_find_tool(
    cwd: str, *, use_fd: bool = True, operations: FindOperations | None = None, guard: FileGuard | None = None
) -> ToolDefinition:
    """The ``find`` tool for ``cwd``. ``use_fd=False`` forces the pure-Python walk even when ``fd`` is on
    PATH; ``operations``: where files are searched (None: this machine's disk; see
    ``caddie.tools.operations``); ``guard``: the sandbox's path policy (paths it does not let the model read
    are left out)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        pattern: str = params["pattern"]
        search_dir: str | None = params.get("path")
        limit_param: float | None = params.get("limit")
        search_path = resolve_to_cwd(search_dir or ".", cwd)
        check_sandbox(guard, search_path)
        readable = guard.read_filter(search_path) if guard is not None else None
        limit: float = DEFAULT_FIND_LIMIT if limit_param is None else limit_param

        fd = find_fd() if use_fd and operations is None else None
        if fd is not None and not _inside_git_repo(search_path) and not fd_supports_no_require_git(fd):
            fd = None  # this fd cannot honour .gitignore outside a repository the way Pi asks it to
        if operations is not None:
            if not await operations.exists(search_path):
                raise ToolError(f"Path not found: {search_path}")
            lines = await operations.glob(pattern, search_path, ignore=list(GLOB_IGNORE), limit=int(limit))
            if signal is not None and signal.aborted:
                raise ToolError("Operation aborted")
        elif fd is not None:
            lines = await _run_fd(fd, pattern, search_path, limit, signal)
        else:
            lines = await asyncio.to_thread(_find_in_python, pattern, search_path, limit, signal)
        if readable is not None:
            lines = [
                line for line in lines if not line.strip() or readable(_absolute(line.strip(), search_path))
            ]
        if not "\n".join(lines):
            return ToolResult([TextContent("No files found matching pattern")], None)

        relativized: list[str] = []
        for raw in lines:
            line = js_trim(raw.removesuffix("\r"))
            if line:
                relativized.append(relativize(line, search_path))
        truncation = truncate_head("\n".join(relativized), max_lines=UNLIMITED_LINES)
        text = truncation.content
        details: dict[str, Any] = {}
        notices: list[str] = []
        if len(relativized) >= limit:
            notices.append(
                f"{js_number(limit)} results limit reached. Use limit={js_number(limit * 2)} for more, or refine "
                "pattern"
            )
            details["resultLimitReached"] = limit
        if truncation.truncated:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation.to_json()
        if notices:
            text += f"\n\n[{'. '.join(notices)}]"
        return ToolResult([TextContent(text)], details or None)

    return ToolDefinition(
        name="find",
        label="find",
        description=FIND_DESCRIPTION,
        parameters=FIND_PARAMETERS,
        execute=execute,
        prompt_snippet=FIND_PROMPT_SNIPPET,
    )

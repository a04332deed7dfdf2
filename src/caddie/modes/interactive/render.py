"""Pure formatting for the terminal UI: tool-call summaries, result previews, diffs, numbers and sizes.

Nothing here touches Textual; every function turns plain data into text or a Rich ``Text`` so that the
widgets stay thin and these rules are testable on their own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserContent,
)

COLLAPSED_LINES = 6
"""Lines of a tool result shown while tool output is collapsed (Ctrl+O shows all)."""
EXPANDED_LINE_CAP = 2000
"""Even expanded, a result longer than this is cut (the full text is in the session file)."""

_EXIT_CODE = re.compile(r"Command exited with code (-?\d+)\s*$")
_SKILL_BLOCK = re.compile(
    r'^<skill name="([^"]+)" location="([^"]+)">\n(.*?)\n</skill>(?:\n\n(.+))?$', re.DOTALL
)


def content_text(content: str | list[UserContent] | list[Any]) -> str:
    """The text of a message's content (images become ``[image]``)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append("[image]")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class SkillInvocation:
    """A user message made by ``/skill:name args``: the skill's text and what the user typed after it."""

    name: str
    location: str
    content: str
    user_text: str | None


def skill_invocation(text: str) -> SkillInvocation | None:
    """The skill block ``/skill:name`` expands to (resources/skills.py), or None for any other text."""
    match = _SKILL_BLOCK.match(text)
    if match is None:
        return None
    name, location, content, after = match.groups()
    return SkillInvocation(name, location, content, (after or "").strip() or None)


def short_path(path: str, cwd: str | None = None) -> str:
    """``path`` relative to ``cwd`` when inside it, with the home directory as ``~`` otherwise."""
    if cwd:
        try:
            return str(Path(path).relative_to(cwd)) if Path(path).is_absolute() else path
        except ValueError:
            pass
    home = str(Path.home())
    if path == home or path.startswith(home + "/"):
        return "~" + path[len(home) :]
    return path


def format_count(n: int) -> str:
    """Compact token counts: 950, 1.2k, 34k, 1.5M."""
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{round(n / 1000)}k"
    if n < 10_000_000:
        return f"{n / 1_000_000:.1f}M"
    return f"{round(n / 1_000_000)}M"


def format_cost(dollars: float) -> str:
    return f"${dollars:.3f}" if dollars < 10 else f"${dollars:.2f}"


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


# --------------------------------------------------------------------------------------------------
# Tool calls


@dataclass(slots=True)
class ToolSummary:
    """How one tool call is introduced: a verb-like label and the argument that matters."""

    label: str
    subject: str


def read_range(args: dict[str, Any]) -> str:
    """``:10-29`` for offset 10 / limit 20, ``:10-`` for an offset alone, ``:1-20`` for a limit alone."""
    offset = _number(args.get("offset"))
    limit = _number(args.get("limit"))
    if offset is None and limit is None:
        return ""
    start = offset if offset is not None else 1
    if limit is None:
        return f":{start}-"
    return f":{start}-{start + max(limit, 1) - 1}"


def summarize_tool_call(name: str, args: Any, cwd: str | None = None) -> ToolSummary:
    a: dict[str, Any] = args if isinstance(args, dict) else {}
    path = str(a.get("path") or a.get("file_path") or "")
    shown = short_path(path, cwd) if path else ""
    if name == "read":
        return ToolSummary("read", f"{shown}{read_range(a)}")
    if name == "bash":
        return ToolSummary("$", str(a.get("command", "")).strip())
    if name in ("edit", "write"):
        extra = ""
        if name == "write" and isinstance(a.get("content"), str):
            count = a["content"].count("\n") + (0 if a["content"].endswith("\n") else 1)
            extra = f" ({count} line{'s' if count != 1 else ''})"
        return ToolSummary(name, f"{shown}{extra}")
    if name in ("grep", "find", "ls"):
        pattern = str(a.get("pattern", "") or "")
        where = shown or "."
        return ToolSummary(name, f"{pattern} in {where}" if pattern else where)
    if not a:
        return ToolSummary(name, "")
    rendered = json.dumps(a, ensure_ascii=False, separators=(", ", ": "))
    return ToolSummary(name, rendered if len(rendered) <= 200 else rendered[:199] + "…")


def bash_exit_code(text: str, is_error: bool) -> int | None:
    """The exit code a bash result reports: 0 for success, N from "Command exited with code N", else None."""
    match = _EXIT_CODE.search(text.rstrip())
    if match:
        return int(match.group(1))
    return None if is_error else 0


@dataclass(slots=True)
class Preview:
    lines: list[str]
    hidden: int
    """How many lines were left out (0 when everything is shown)."""
    from_end: bool


def preview_lines(text: str, expanded: bool, from_end: bool = False, limit: int = COLLAPSED_LINES) -> Preview:
    """The lines of a result to show: a few (head, or tail for shell output) collapsed, all expanded."""
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    cap = EXPANDED_LINE_CAP if expanded else limit
    if len(lines) <= cap:
        return Preview(lines, 0, from_end)
    if from_end:
        return Preview(lines[-cap:], len(lines) - cap, True)
    return Preview(lines[:cap], len(lines) - cap, False)


def diff_text(diff: str) -> Text:
    """Pi's numbered display diff with added lines green and removed lines red."""
    out = Text()
    for i, line in enumerate(diff.split("\n")):
        if i:
            out.append("\n")
        if line.startswith("+"):
            out.append(line, style="green")
        elif line.startswith("-"):
            out.append(line, style="red")
        else:
            out.append(line, style="dim")
    return out


def usage_totals(messages: list[AgentMessage]) -> tuple[int, int, int, int, float]:
    """Input, output, cache-read and cache-write tokens and dollars over assistant replies and tool results."""
    inp = out = cr = cw = 0
    cost = 0.0
    for m in messages:
        usage = m.usage if isinstance(m, AssistantMessage | ToolResultMessage) else None
        if usage is None:
            continue
        inp += usage.input
        out += usage.output
        cr += usage.cache_read
        cw += usage.cache_write
        cost += usage.cost.total
    return inp, out, cr, cw, cost


def any_usage_estimated(messages: list[AgentMessage]) -> bool:
    """Whether some reply's usage is caddie's estimate (its server reported none): totals get "≈"."""
    return any(
        isinstance(m, AssistantMessage | ToolResultMessage)
        and m.usage is not None
        and m.usage.estimated is True
        for m in messages
    )


def one_line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def markdown_split_point(text: str) -> int:
    """Where a long streaming text can be cut so the head never changes again: just after the last blank
    line that is outside a code fence (0 when there is none)."""
    fence: str | None = None
    cut = 0
    offset = 0
    previous_blank = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        offset += len(line)
        blank = not stripped
        if fence is None and blank and not previous_blank and line.endswith("\n") and offset < len(text):
            cut = offset
        previous_blank = blank
    return cut

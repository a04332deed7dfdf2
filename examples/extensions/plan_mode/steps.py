"""Plan mode's pure parts: which shell commands only look, and the numbered steps of a plan."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

DESTRUCTIVE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\brm\b",
        r"\brmdir\b",
        r"\bmv\b",
        r"\bcp\b",
        r"\bmkdir\b",
        r"\btouch\b",
        r"\bchmod\b",
        r"\bchown\b",
        r"\bchgrp\b",
        r"\bln\b",
        r"\btee\b",
        r"\btruncate\b",
        r"\bdd\b",
        r"\bshred\b",
        r"(^|[^<])>(?!>)",
        r">>",
        r"\bnpm\s+(install|uninstall|update|ci|link|publish)",
        r"\byarn\s+(add|remove|install|publish)",
        r"\bpnpm\s+(add|remove|install|publish)",
        r"\bpip\s+(install|uninstall)",
        r"\bapt(-get)?\s+(install|remove|purge|update|upgrade)",
        r"\bbrew\s+(install|uninstall|upgrade)",
        r"\bgit\s+(add|commit|push|pull|merge|rebase|reset|checkout|branch\s+-[dD]|stash|cherry-pick|revert|tag|init|clone)",
        r"\bsudo\b",
        r"\bsu\b",
        r"\bkill\b",
        r"\bpkill\b",
        r"\bkillall\b",
        r"\breboot\b",
        r"\bshutdown\b",
        r"\bsystemctl\s+(start|stop|restart|enable|disable)",
        r"\bservice\s+\S+\s+(start|stop|restart)",
        r"\b(vim?|nano|emacs|code|subl)\b",
    )
]
_SAFE_WORDS = [
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "find",
    "ls",
    "pwd",
    "echo",
    "printf",
    "wc",
    "sort",
    "uniq",
    "diff",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "which",
    "whereis",
    "type",
    "env",
    "printenv",
    "uname",
    "whoami",
    "id",
    "date",
    "cal",
    "uptime",
    "ps",
    "top",
    "htop",
    "free",
    "jq",
    "awk",
    "rg",
    "fd",
    "bat",
    "eza",
]
SAFE = [re.compile(rf"^\s*{w}\b") for w in _SAFE_WORDS] + [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*git\s+(status|log|diff|show|branch|remote|config\s+--get)",
        r"^\s*git\s+ls-",
        r"^\s*npm\s+(list|ls|view|info|search|outdated|audit)",
        r"^\s*yarn\s+(list|info|why|audit)",
        r"^\s*node\s+--version",
        r"^\s*python\s+--version",
        r"^\s*curl\s",
        r"^\s*wget\s+-O\s*-",
        r"^\s*sed\s+-n",
    )
]


def is_safe_command(command: str) -> bool:
    """Only looks: on the allowlist and free of anything that writes, installs or kills."""
    return not any(p.search(command) for p in DESTRUCTIVE) and any(p.search(command) for p in SAFE)


@dataclass
class Step:
    step: int
    text: str
    completed: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_LEADING_VERB = re.compile(
    r"^(Use|Run|Execute|Create|Write|Read|Check|Verify|Update|Modify|Add|Remove|Delete|Install)\s+(the\s+)?",
    re.IGNORECASE,
)


def clean_step_text(text: str) -> str:
    cleaned = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", text)
    cleaned = re.sub(r"`([^`]+)`", r"\1", cleaned)
    cleaned = _LEADING_VERB.sub("", cleaned)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    if cleaned:
        cleaned = cleaned[0].upper() + cleaned[1:]
    return cleaned[:47] + "..." if len(cleaned) > 50 else cleaned


def extract_steps(message: str) -> list[Step]:
    """The numbered items under a ``Plan:`` header."""
    header = re.search(r"\*{0,2}Plan:\*{0,2}\s*\n", message, re.IGNORECASE)
    if header is None:
        return []
    steps: list[Step] = []
    for match in re.finditer(r"^\s*(\d+)[.)]\s+\*{0,2}([^*\n]+)", message[header.end() :], re.MULTILINE):
        text = re.sub(r"\*{1,2}$", "", match.group(2).strip()).strip()
        if len(text) > 5 and not text.startswith(("`", "/", "-")):
            cleaned = clean_step_text(text)
            if len(cleaned) > 3:
                steps.append(Step(len(steps) + 1, cleaned))
    return steps


def done_steps(message: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"\[DONE:(\d+)\]", message, re.IGNORECASE)]


def mark_completed(message: str, steps: list[Step]) -> int:
    """Mark the steps ``[DONE:n]`` names; returns how many markers there were."""
    found = done_steps(message)
    for number in found:
        for step in steps:
            if step.step == number:
                step.completed = True
    return len(found)

"""The file ledger of a hidden span: files read, files modified, side-effecting shell commands.

It goes into the rewind note so the resumed model neither re-reads what it already learned nor blindly redoes
a write that persists on disk. Read/write tool calls are classified by name; a bash command is "read-only"
only when every segment is provably so, otherwise the whole command is listed (high recall) and only
confident paths are reported as modified (high precision).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import AgentMessage, AssistantMessage, ToolCall, utf16_sort_key

READ_TOOLS = frozenset({"read", "grep", "rg", "glob", "find", "ls"})
WRITE_TOOLS = frozenset({"write", "edit"})

READ_ONLY_COMMANDS = frozenset(
    [
        "ls",
        "tree",
        "file",
        "stat",
        "readlink",
        "realpath",
        "du",
        "df",
        "free",
        "find",
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "tac",
        "nl",
        "wc",
        "echo",
        "printf",
        "seq",
        "column",
        "fold",
        "rev",
        "pwd",
        "whoami",
        "id",
        "uname",
        "uptime",
        "tty",
        "arch",
        "nproc",
        "getconf",
        "which",
        "type",
        "command",
        "whereis",
        "hash",
        "env",
        "printenv",
        "locale",
        "diff",
        "cmp",
        "comm",
        "test",
        "[",
        "uniq",
        "cut",
        "paste",
        "tr",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "basename",
        "dirname",
        "sleep",
        "true",
        "false",
    ]
)
FILE_MUTATING_COMMANDS = frozenset(
    [
        "rm",
        "rmdir",
        "mv",
        "cp",
        "mkdir",
        "touch",
        "chmod",
        "chown",
        "chgrp",
        "ln",
        "tee",
        "truncate",
        "install",
        "patch",
        "sed",
        "split",
        "csplit",
        "curl",
        "wget",
    ]
)
DEVICE_PATHS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full", "/dev/zero"})

_REDIRECT = re.compile(r"(?:[0-9]?&?>{1,2}\|?)\s*(?!&|=)([^\s;|&<>]+)")
_FIND_MUTATING = re.compile(r"(?:^|\s)-(?:delete|exec|ok|okdir|fls|fprint|fprint0)(?=\s|$|=)")
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
_SCP = re.compile(r"[^/\s@]+@[^:\s]+:")
_SED_PROGRAM = re.compile(r"[a-z]/.*/[a-z]*")
_EXTENSION = re.compile(r".*\.[a-zA-Z0-9]{1,8}")
_RELATIVE = re.compile(r"\.\.?(/|$)")
_DOTFILE = re.compile(r"\.[A-Za-z_]")
_OPERATORS = re.compile(r"[<>|&;]+")
_NUMBER = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class FileLedger:
    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()
    bash_side_effects: tuple[str, ...] = ()

    def to_json(self) -> dict[str, list[str]]:
        return {
            "readFiles": list(self.read_files),
            "modifiedFiles": list(self.modified_files),
            "bashSideEffects": list(self.bash_side_effects),
        }

    @property
    def has_side_effects(self) -> bool:
        return bool(self.modified_files or self.bash_side_effects)


@dataclass
class _Buckets:
    read: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)
    bash: set[str] = field(default_factory=set)


def extract_file_ledger(messages: Sequence[AgentMessage], indices: Iterable[int]) -> FileLedger:
    """Scan the tool calls of the assistant messages at ``indices`` (out-of-range indices are ignored)."""
    buckets = _Buckets()
    for i in indices:
        if not 0 <= i < len(messages):
            continue
        msg = messages[i]
        if not isinstance(msg, AssistantMessage):
            continue
        for block in msg.content:
            if isinstance(block, ToolCall):
                _classify(block.name, block.arguments, buckets)
    return FileLedger(_sorted(buckets.read), _sorted(buckets.modified), _sorted(buckets.bash))


def _sorted(items: set[str]) -> tuple[str, ...]:
    return tuple(sorted(items, key=utf16_sort_key))


def _classify(name: str, args: Mapping[str, Any], buckets: _Buckets) -> None:
    if name in READ_TOOLS:
        path = _path_arg(args)
        if path:
            buckets.read.add(path)
    elif name in WRITE_TOOLS:
        path = _path_arg(args)
        if path:
            buckets.modified.add(path)
    elif name == "bash":
        command = args.get("command") if isinstance(args, Mapping) else None
        if not isinstance(command, str) or not command or is_read_only_bash(command):
            return
        buckets.bash.add(command)
        buckets.modified.update(write_paths(command))


def _path_arg(args: object) -> str:
    if not isinstance(args, Mapping):
        return ""
    for key in ("path", "file_path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def is_read_only_bash(command: str) -> bool:
    """Every non-blank top-level segment is a read-only command without an output redirect."""
    for segment in split_top_level(command):
        if segment.strip() and not _segment_read_only(segment):
            return False
    return True


def _segment_read_only(segment: str) -> bool:
    if _REDIRECT.search(segment):
        return False
    name = command_name(segment)
    if name not in READ_ONLY_COMMANDS:
        return False
    return not (name == "find" and _FIND_MUTATING.search(segment))


def write_paths(command: str) -> list[str]:
    """Confident modified paths: redirect targets, plus path-like arguments of file-mutating commands."""
    paths: dict[str, None] = {}
    for match in _REDIRECT.finditer(command):
        target = _strip_quotes(match.group(1))
        if target and target not in DEVICE_PATHS:
            paths[target] = None
    for segment in split_top_level(command):
        if command_name(segment) not in FILE_MUTATING_COMMANDS:
            continue
        for token in shell_tokens(segment):
            t = _strip_quotes(token)
            if looks_like_file_path(t) and t not in DEVICE_PATHS:
                paths[t] = None
    return list(paths)


def looks_like_file_path(token: str) -> bool:
    t = _strip_quotes(token)
    if not t or t in (".", ".."):
        return False
    if (
        t.startswith("-")
        or _URL.match(t)
        or _SCP.match(t)
        or _NUMBER.fullmatch(t)
        or _OPERATORS.fullmatch(t)
        or (t.startswith("&") and t[1:2] in tuple("0123456789"))
        or _SED_PROGRAM.fullmatch(t)
    ):
        return False
    return "/" in t or bool(_EXTENSION.fullmatch(t)) or bool(_RELATIVE.match(t)) or bool(_DOTFILE.match(t))


def split_top_level(command: str) -> list[str]:
    """Split on ``&&``, ``||``, ``|``, ``;`` and newlines outside single or double quotes."""
    segments: list[str] = []
    current: list[str] = []
    in_single = in_double = False
    i = 0
    n = len(command)
    while i < n:
        c = command[i]
        if c == "'" and not in_double:
            in_single = not in_single
        elif c == '"' and not in_single:
            in_double = not in_double
        elif not in_single and not in_double:
            pair = command[i : i + 2]
            if pair in ("&&", "||"):
                segments.append("".join(current))
                current = []
                i += 2
                continue
            if c in "|;\n":
                segments.append("".join(current))
                current = []
                i += 1
                continue
        current.append(c)
        i += 1
    segments.append("".join(current))
    return segments


def command_name(segment: str) -> str:
    """The first word that is not a ``VAR=value`` assignment, unquoted, as a basename (``/usr/bin/ls`` → ``ls``)."""
    for raw in segment.split():
        if _ENV_ASSIGNMENT.match(raw):
            continue
        word = _strip_quotes(raw)
        if word:
            return word.split("/")[-1]
    return ""


def shell_tokens(segment: str) -> list[str]:
    """Whitespace-separated words with their quotes removed (quoted whitespace stays inside a word)."""
    out: list[str] = []
    current: list[str] = []
    in_single = in_double = False
    for c in segment:
        if c == "'" and not in_double:
            in_single = not in_single
        elif c == '"' and not in_single:
            in_double = not in_double
        elif c.isspace() and not in_single and not in_double:
            if current:
                out.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        out.append("".join(current))
    return out


def _strip_quotes(token: str) -> str:
    start = 1 if token[:1] in ("'", '"') else 0
    end = len(token) - 1 if len(token) > start and token[-1:] in ("'", '"') else len(token)
    return token[start:end]

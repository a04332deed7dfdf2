"""Slash commands as the editor sees them: the built-in table, key help, and completion candidates.

Completion is a pure function of the editor text and the known commands, so it is tested without a
screen. Built-in commands win over an extension command of the same name (as in Pi).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_COMPLETIONS = 50


@dataclass(frozen=True, slots=True)
class CommandInfo:
    name: str
    description: str
    source: str = "builtin"
    """``builtin`` or the path of the extension that registered it."""
    arguments: Callable[[str], Sequence[str]] | None = None
    """Completions for the text after ``/name `` (None: the command takes no suggestions)."""


BUILTIN_COMMANDS: tuple[CommandInfo, ...] = (
    CommandInfo("model", "Switch the model (picker, or /model provider/id)"),
    CommandInfo("thinking", "Set the thinking level (picker, or /thinking high)"),
    CommandInfo("new", "Start a new session"),
    CommandInfo("resume", "Pick a previous session of this project to resume"),
    CommandInfo("tree", "Move to any point of this session's tree and continue from there"),
    CommandInfo("fork", "Start a new session from an earlier user message"),
    CommandInfo("compact", "Summarize older messages to free context (/compact [instructions])"),
    CommandInfo("session", "Show the session file, id, messages, tokens and cost"),
    CommandInfo("context", "Show the context window by category, the largest items, what mulligan saved"),
    CommandInfo("copy", "Copy the last answer to the clipboard"),
    CommandInfo(
        "settings", "Change common settings (thinking, queues, compaction, retry, theme, extensions)"
    ),
    CommandInfo("name", "Set the session's display name (/name my task)"),
    CommandInfo("export", "Export the session to an HTML file (/export [file])"),
    CommandInfo("reload", "Reload extensions"),
    CommandInfo("login", "Store an API key for a provider in auth.json (/login [provider])"),
    CommandInfo("logout", "Remove a stored API key (/logout [provider])"),
    CommandInfo("hotkeys", "Show all keyboard shortcuts"),
    CommandInfo("help", "Show commands and how to use caddie"),
    CommandInfo("quit", "Quit caddie"),
)
BUILTIN_NAMES = frozenset(c.name for c in BUILTIN_COMMANDS)

HOTKEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message (while the agent works: queue it as steering)"),
    ("Shift+Enter, Ctrl+J", "insert a newline"),
    ("Alt+Enter", "insert a newline (while the agent works: queue a follow-up)"),
    ("Esc", "abort the agent and put queued messages back in the editor; close a menu"),
    ("Esc Esc", "with an empty editor: open /tree"),
    ("Ctrl+C", "clear the editor; twice quickly: quit"),
    ("Ctrl+D", "quit (when the editor is empty)"),
    ("Up, Down", "prompt history (at the first / last line of the editor)"),
    ("Tab", "complete a slash command, its argument, or the path before the cursor"),
    ("@", "fuzzy-find a file of the project and insert its path"),
    ("Ctrl+W, Alt+Backspace", "delete the word before the cursor (into the kill ring)"),
    ("Alt+D", "delete the word after the cursor (into the kill ring)"),
    ("Ctrl+U, Ctrl+K", "delete to the start / end of the line (into the kill ring)"),
    ("Ctrl+Y, Alt+Y", "paste the last deleted text; right after, cycle to older ones"),
    ("Ctrl+-", "undo"),
    ("Ctrl+G", "edit the message in $VISUAL / $EDITOR"),
    ("Ctrl+X", "copy the last answer to the clipboard (/copy)"),
    ("Ctrl+Z", "suspend caddie (fg brings it back)"),
    ("Alt+Up", "put queued messages back in the editor"),
    ("Ctrl+O", "expand or collapse tool output"),
    ("Ctrl+T", "expand or collapse thinking"),
    ("Ctrl+L", "choose a model"),
    ("Ctrl+P, Shift+Ctrl+P", "switch to the next / previous model (of --models or enabledModels)"),
    ("Shift+Tab", "cycle the thinking level"),
    ("PageUp, PageDown", "scroll the conversation (scrolling up pauses following new output)"),
    ("Ctrl+Home, Ctrl+End", "jump to the start / the end of the conversation (the end follows again)"),
    ("!cmd", "run a shell command; its output goes into the context"),
    ("!!cmd", "run a shell command without adding it to the context"),
)


@dataclass(frozen=True, slots=True)
class Completion:
    value: str
    """The whole editor text after accepting this completion."""
    label: str
    description: str = ""
    cursor: int | None = None
    """Where the cursor goes after accepting (an index into ``value``; None: the end)."""
    kind: str = "command"
    """``command`` (Enter accepts and sends) or ``path`` (Enter and Tab only accept)."""


def merge_commands(extension: Sequence[CommandInfo]) -> list[CommandInfo]:
    """Built-ins first, then extension commands whose names do not collide with a built-in."""
    seen = set(BUILTIN_NAMES)
    merged = list(BUILTIN_COMMANDS)
    for command in extension:
        if command.name not in seen:
            seen.add(command.name)
            merged.append(command)
    return merged


def resource_commands(entries: Sequence[tuple[str, str, str]]) -> list[CommandInfo]:
    """Prompt templates and ``skill:`` commands as menu entries; the description says where each is from."""
    return [
        CommandInfo(name, f"{description}  ({source})" if description else f"({source})", source)
        for name, description, source in entries
    ]


def parse_command(text: str) -> tuple[str, str] | None:
    """``("model", "openai/gpt-5")`` for ``/model openai/gpt-5``; None when the text is not a command."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, args = text[1:].partition(" ")
    if not name or "\n" in name:
        return None
    return name, args.strip()


def _rank(candidates: Sequence[str], prefix: str) -> list[str]:
    low = prefix.lower()
    starts = [c for c in candidates if c.lower().startswith(low)]
    contains = [c for c in candidates if low and low in c.lower() and c not in starts]
    return [*starts, *contains]


def complete(text: str, commands: Sequence[CommandInfo]) -> list[Completion]:
    """Candidates for the editor text: command names after ``/``, then the command's own arguments."""
    if not text.startswith("/") or "\n" in text:
        return []
    head, space, rest = text[1:].partition(" ")
    if not space:
        by_name = {c.name: c for c in commands}
        names = _rank([c.name for c in commands], head)
        return [Completion(f"/{n}", f"/{n}", by_name[n].description) for n in names[:MAX_COMPLETIONS]]
    command = next((c for c in commands if c.name == head), None)
    if command is None or command.arguments is None:
        return []
    try:
        options = [str(o) for o in command.arguments(rest)]
    except Exception:  # an extension's completer must not break typing
        return []
    ranked = _rank(options, rest.strip()) if rest.strip() else options
    return [Completion(f"/{head} {o}", o) for o in ranked[:MAX_COMPLETIONS]]

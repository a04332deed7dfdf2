"""Slash commands as the editor sees them: the built-in table, key help, and completion candidates.

Completion is a pure function of the editor text and the known commands, so it is tested without a
screen. Built-in commands win over an extension command of the same name (as in Pi).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from caddie.modes.interactive.keymap import Keybindings

MAX_COMPLETIONS = 50


class ExtensionCommand(Protocol):
    """What the menu needs of a command an extension registered."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def source(self) -> str: ...

    @property
    def get_argument_completions(self) -> Callable[[str], Sequence[str]] | None: ...


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
    CommandInfo("rewind", "Go back to before an earlier prompt: the conversation, the files, or both"),
    CommandInfo("compact", "Summarize older messages to free context (/compact [instructions])"),
    CommandInfo("session", "Show the session file, id, messages, tokens and cost"),
    CommandInfo("context", "Show the context window by category, the largest items, what mulligan saved"),
    CommandInfo("copy", "Copy the last answer to the clipboard"),
    CommandInfo(
        "settings", "Change common settings (thinking, queues, compaction, retry, theme, extensions)"
    ),
    CommandInfo("name", "Set the session's display name (/name my task)"),
    CommandInfo(
        "export", "Export the session to an HTML file, or its JSONL (/export [file.html|file.jsonl])"
    ),
    CommandInfo("clone", "Copy the current branch into a new session"),
    CommandInfo("import", "Import a session JSONL file into this project and resume it (/import file.jsonl)"),
    CommandInfo("share", "Upload the session as a secret GitHub gist (needs the gh command)"),
    CommandInfo("trust", "Trust this project from the next start (/trust [parent|no])"),
    CommandInfo("reload", "Reload extensions"),
    CommandInfo("login", "Store an API key for a provider in auth.json (/login [provider])"),
    CommandInfo("logout", "Remove a stored API key (/logout [provider])"),
    CommandInfo("scoped-models", "Enable, disable and reorder the models Ctrl+P cycles among (ctrl+s saves)"),
    CommandInfo("llama", "Manage llama.cpp router models: load, unload, download (see /login llama.cpp)"),
    CommandInfo("hotkeys", "Show all keyboard shortcuts"),
    CommandInfo("changelog", "Show changelog entries"),
    CommandInfo("help", "Show commands and how to use caddie"),
    CommandInfo("quit", "Quit caddie"),
)
HIDDEN_COMMANDS = frozenset({"debug"})
"""Built-ins that work but are not offered (Pi's hidden ``/debug``)."""
BUILTIN_NAMES = frozenset(c.name for c in BUILTIN_COMMANDS) | HIDDEN_COMMANDS

HOTKEYS: tuple[tuple[tuple[str, ...] | str, str], ...] = (
    (("tui.input.submit",), "send the message (while the agent works: queue it as steering)"),
    (("tui.input.newLine",), "insert a newline"),
    (("app.message.followUp",), "insert a newline (while the agent works: queue a follow-up)"),
    (("app.interrupt",), "abort the agent and put queued messages back in the editor; close a menu"),
    ("Esc Esc", "with an empty editor: open /tree"),
    (("app.clear",), "clear the editor; twice quickly: quit"),
    (("app.exit",), "quit (when the editor is empty)"),
    (("caddie.app.quit",), "quit"),
    (("tui.editor.cursorUp", "tui.editor.cursorDown"), "prompt history (at the first / last line of the editor)"),
    (("tui.editor.historyPrevious", "tui.editor.historyNext"), "previous / next prompt from the history"),
    (("tui.input.tab",), "complete a slash command, its argument, or the path before the cursor"),
    ("@", "fuzzy-find a file of the project and insert its path"),
    (("tui.editor.cursorWordLeft", "tui.editor.cursorWordRight"), "a word left / right"),
    (("tui.editor.cursorLineStart", "tui.editor.cursorLineEnd"), "start / end of the line"),
    (("tui.editor.jumpForward", "tui.editor.jumpBackward"), "jump to the next typed character (forward / backward)"),
    (("tui.editor.pageUp", "tui.editor.pageDown"), "move a page up / down in a long message"),
    (("tui.editor.deleteWordBackward",), "delete the word before the cursor (into the kill ring)"),
    (("tui.editor.deleteWordForward",), "delete the word after the cursor (into the kill ring)"),
    (("tui.editor.deleteToLineStart", "tui.editor.deleteToLineEnd"), "delete to the start / end of the line (kill ring)"),
    (("tui.editor.yank", "tui.editor.yankPop"), "paste the last deleted text; right after, cycle to older ones"),
    (("tui.editor.undo",), "undo"),
    (("app.clipboard.pasteImage",), "paste an image (or text) from the clipboard"),
    (("app.editor.external",), "edit the message in $VISUAL / $EDITOR"),
    (("app.message.copy",), "copy the last answer to the clipboard (/copy)"),
    (("app.suspend",), "suspend caddie (fg brings it back)"),
    (("app.message.dequeue",), "put queued messages back in the editor"),
    (("app.tools.expand",), "expand or collapse tool output"),
    (("app.thinking.toggle",), "expand or collapse thinking"),
    (("app.model.select",), "choose a model"),
    (("app.model.cycleForward", "app.model.cycleBackward"), "switch to the next / previous model (of --models or enabledModels)"),
    (("app.thinking.cycle",), "cycle the thinking level"),
    (("tui.altScreen.pageUp", "tui.altScreen.pageDown"), "scroll the conversation (scrolling up pauses following new output)"),
    (("tui.altScreen.top", "tui.altScreen.bottom"), "jump to the start / the end of the conversation (the end follows again)"),
    (("tui.altScreen.previousPrompt", "tui.altScreen.nextPrompt"), "jump to the previous / next message of yours"),
    (("tui.altScreen.search",), "search the conversation (Enter next, Shift+Enter previous, Esc closes)"),
    (("app.session.new", "app.session.resume", "app.session.tree", "app.session.fork"), "/new, /resume, /tree, /fork (unbound unless keybindings.json binds them)"),
    ("!cmd", "run a shell command; its output goes into the context"),
    ("!!cmd", "run a shell command without adding it to the context"),
)  # fmt: skip
"""/hotkeys: binding ids (their keys come from keybindings.json or Pi's defaults) or fixed text, and what
they do."""


def hotkey_rows(keys: Keybindings) -> list[tuple[str, str]]:
    """The /hotkeys table with the keys as bound right now."""
    rows = []
    for what, description in HOTKEYS:
        if isinstance(what, str):
            rows.append((what, description))
            continue
        described = [keys.describe(binding_id) for binding_id in what]
        shown = [d for d in described if d != "unbound"]
        rows.append((" / ".join(shown) if shown else "unbound", description))
    return rows


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


def available_commands(
    extension: Iterable[ExtensionCommand],
    resources: Sequence[tuple[str, str, str]],
    model_refs: list[str] | None,
    thinking_levels: list[str],
) -> list[CommandInfo]:
    """Every command the editor offers: the built-ins (``/model`` and ``/thinking`` with their arguments),
    then the extensions' commands, prompt templates and skills."""
    infos = [
        CommandInfo(c.name, c.description or "", c.source, c.get_argument_completions) for c in extension
    ]
    merged = merge_commands([*infos, *resource_commands(resources)])
    arguments: dict[str, list[str]] = {"thinking": thinking_levels}
    if model_refs is not None:
        arguments["model"] = model_refs
    return [
        CommandInfo(c.name, c.description, c.source, _constant(arguments[c.name]))
        if c.name in arguments
        else c
        for c in merged
    ]


def _constant(values: list[str]) -> Callable[[str], Sequence[str]]:
    return lambda _prefix: values


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

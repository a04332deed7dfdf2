"""``caddie export`` and ``/export``: a session tree as one self-contained HTML page that works offline.

Everything is rendered here, on the server side, into static markup (inline CSS and a little inline JS for
expanding, collapsing and jumping; no network, no external files), so the page is readable even with
scripts off and can be checked by parsing it. What it shows:

- every entry of every branch, in tree order: a fork becomes one collapsible block per branch (the active
  branch, root → leaf, open and marked ``on-path``); a sidebar outlines the whole tree;
- messages: user text and images, assistant text, thinking (collapsed) and tool calls; tool results
  collapsed; bash runs; extension messages; compactions and branch summaries with their summary, kept
  boundary and file lists; labels, model and thinking-level changes, extension state entries;
- what mulligan did, read generically from its persisted ``custom`` entries (no import of the extension):
  ``mulligan:rewind`` hides ``data.hideEntryIds`` (shown dimmed, marked "hidden from the model"),
  ``mulligan:shrink`` replaces the content of ``data.pinnedEntryId`` by ``data.replacement`` (shown as what
  the model sees, original collapsed), ``mulligan:cancel`` retracts the marker whose ``data.id`` is its
  ``data.targetId``. Every element of an entry carries ``data-entry-id``; mulligan effects carry the
  classes ``mulligan-hidden`` / ``mulligan-shrunk`` and ``data-marker``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    message_to_json,
    text_of,
)
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
)
from caddie.session.store import SessionStore, TreeNode

REWIND = "mulligan:rewind"
SHRINK = "mulligan:shrink"
CANCEL = "mulligan:cancel"
_SNIPPET = 80


def export_session_html(store: SessionStore, out_path: str | Path | None = None) -> Path:
    """Write the session as HTML; default ``<session file stem>.html`` in the current directory."""
    if out_path is not None:
        target = Path(out_path).expanduser()
    elif store.path is not None:
        target = Path.cwd() / f"{store.path.stem}.html"
    else:
        target = Path.cwd() / f"caddie-session-{store.session_id}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_session_html(store), encoding="utf-8")
    return target


# ==================================================================================================
# Mulligan's markers, read generically


@dataclass(slots=True)
class MulliganEffects:
    hidden_by: dict[str, list[str]] = field(default_factory=dict)
    """Entry id → the rewind marker entries (active ones) that hide it."""
    shrunk_by: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Entry id → (shrink marker entry id, replacement text); the newest active shrink wins."""
    cancelled_markers: dict[str, str] = field(default_factory=dict)
    """Marker entry id → the cancel entry that retracted it."""


def mulligan_effects(entries: Iterable[SessionEntry]) -> MulliganEffects:
    markers: list[CustomEntry] = []
    cancels: dict[str, str] = {}  # marker uuid → cancel entry id
    for entry in entries:
        if not isinstance(entry, CustomEntry) or not isinstance(entry.data, Mapping):
            continue
        if entry.custom_type in (REWIND, SHRINK):
            markers.append(entry)
        elif entry.custom_type == CANCEL:
            target = entry.data.get("targetId")
            if isinstance(target, str) and target:
                cancels[target] = entry.id
    effects = MulliganEffects()
    for marker in markers:
        assert isinstance(marker.data, Mapping)
        uuid = marker.data.get("id")
        if isinstance(uuid, str) and uuid in cancels:
            effects.cancelled_markers[marker.id] = cancels[uuid]
            continue
        if marker.custom_type == REWIND:
            hide = marker.data.get("hideEntryIds")
            for target in hide if isinstance(hide, list) else ():
                if isinstance(target, str) and target:
                    effects.hidden_by.setdefault(target, []).append(marker.id)
        else:
            pinned = marker.data.get("pinnedEntryId")
            replacement = marker.data.get("replacement")
            if isinstance(pinned, str) and pinned:
                effects.shrunk_by[pinned] = (marker.id, replacement if isinstance(replacement, str) else "")
    return effects


# ==================================================================================================
# Rendering


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{_e(cls)}">{_e(text)}</pre>' if cls else f"<pre>{_e(text)}</pre>"


def _snippet(text: str, limit: int = _SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _entry_link(entry_id: str, text: str | None = None) -> str:
    return f'<a class="entry-link" href="#e-{_e(entry_id)}">{_e(text or entry_id)}</a>'


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)
    except (TypeError, ValueError):
        return str(value)


def _time(ts: str | float | None) -> str:
    if isinstance(ts, int | float) and ts > 0:
        try:
            return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, OSError, ValueError):
            return ""
    if isinstance(ts, str):
        return ts.replace("T", " ").replace("Z", " UTC")
    return ""


def _user_content(content: str | Sequence[UserContent]) -> str:
    if isinstance(content, str):
        return f'<div class="text">{_e(content)}</div>'
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(f'<div class="text">{_e(block.text)}</div>')
        elif isinstance(block, ImageContent):
            data = block.data
            try:
                base64.b64decode(data, validate=True)
            except ValueError:
                parts.append('<div class="meta">(an image that could not be decoded)</div>')
                continue
            parts.append(
                f'<img class="image" alt="image" src="data:{_e(block.mime_type)};base64,{_e(data)}">'
            )
    return "".join(parts)


def entry_title(entry: SessionEntry) -> str:
    """A one-line description (for the sidebar and fork headers)."""
    if isinstance(entry, MessageEntry):
        m = entry.message
        if isinstance(m, UserMessage):
            return "User: " + _snippet(text_of(m.content))
        if isinstance(m, AssistantMessage):
            text = m.text()
            calls = m.tool_calls()
            if text:
                return "Assistant: " + _snippet(text)
            if calls:
                return "Assistant → " + ", ".join(c.name for c in calls)
            if m.error_message:
                return "Assistant (error): " + _snippet(m.error_message)
            return "Assistant"
        if isinstance(m, ToolResultMessage):
            return f"Result: {m.tool_name}"
        if isinstance(m, BashExecutionMessage):
            return "$ " + _snippet(m.command)
        return m.role
    if isinstance(entry, CustomMessageEntry):
        return f"[{entry.custom_type}] " + _snippet(text_of(entry.content))
    if isinstance(entry, CompactionEntry):
        return f"Compaction ({entry.tokens_before:,} tokens before)"
    if isinstance(entry, BranchSummaryEntry):
        return "Branch summary"
    if isinstance(entry, CustomEntry):
        return f"[{entry.custom_type}]"
    if isinstance(entry, LabelEntry):
        return f"Label {entry.label!r}" if entry.label else "Label cleared"
    if isinstance(entry, ModelChangeEntry):
        return f"Model: {entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f"Thinking: {entry.thinking_level}"
    if isinstance(entry, SessionInfoEntry):
        return f"Name: {entry.name or '(cleared)'}"
    return f"({entry.type})"


def _kind(entry: SessionEntry) -> str:
    if isinstance(entry, MessageEntry):
        return entry.message.role
    return entry.type or "unknown"


class _Renderer:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.entries = store.entries()
        self.by_id = {e.id: e for e in self.entries}
        self.path_ids = {e.id for e in store.branch()}
        self.labels = store.labels()
        self.effects = mulligan_effects(self.entries)
        self.marker_entries = {
            e.data["id"]: e.id
            for e in self.entries
            if isinstance(e, CustomEntry)
            and isinstance(e.data, Mapping)
            and isinstance(e.data.get("id"), str)
        }
        self.sizes: dict[str, int] = {}

    # -- one entry ----------------------------------------------------------------------------------
    def entry(self, entry: SessionEntry) -> str:
        classes = ["entry", f"entry-{_kind(entry)}"]
        if entry.id in self.path_ids:
            classes.append("on-path")
        badges: list[str] = []
        label = self.labels.get(entry.id)
        if label:
            badges.append(f'<span class="badge label">{_e(label)}</span>')
        hidden = self.effects.hidden_by.get(entry.id)
        shrunk = self.effects.shrunk_by.get(entry.id)
        marker_attr = ""
        if hidden:
            classes.append("mulligan-hidden")
            marker_attr = f' data-marker="{_e(hidden[0])}"'
            links = ", ".join(_entry_link(m, "rewind") for m in hidden)
            badges.append(f'<span class="badge mulligan">hidden from the model by mulligan ({links})</span>')
        elif shrunk:
            classes.append("mulligan-shrunk")
            marker_attr = f' data-marker="{_e(shrunk[0])}"'
            badges.append(
                f'<span class="badge mulligan">shrunk by mulligan ({_entry_link(shrunk[0], "shrink")})</span>'
            )
        body = self.body(entry)
        if shrunk and not hidden:
            body = (
                '<div class="shrunk-view"><div class="meta">The model sees:</div>'
                f"{_pre(shrunk[1], 'replacement')}</div>"
                f'<details class="original"><summary>Original content</summary>{body}</details>'
            )
        head = (
            f'<div class="entry-head"><span class="kind">{_e(self.kind_label(entry))}</span>'
            f'<span class="time">{_e(_time(entry.timestamp))}</span>'
            f'<a class="anchor" href="#e-{_e(entry.id)}">#{_e(entry.id)}</a>{"".join(badges)}</div>'
        )
        return (
            f'<article id="e-{_e(entry.id)}" class="{" ".join(classes)}" data-entry-id="{_e(entry.id)}" '
            f'data-parent-id="{_e(entry.parent_id or "")}" data-type="{_e(_kind(entry))}"{marker_attr}>'
            f"{head}{body}</article>"
        )

    def kind_label(self, entry: SessionEntry) -> str:
        if isinstance(entry, MessageEntry):
            m = entry.message
            if isinstance(m, AssistantMessage):
                return f"Assistant · {m.provider}/{m.model}"
            if isinstance(m, ToolResultMessage):
                return f"Tool result · {m.tool_name}"
            return {"user": "User", "bashExecution": "Shell", "custom": "Extension message"}.get(
                m.role, m.role
            )
        if isinstance(entry, CustomMessageEntry):
            return f"Extension message · {entry.custom_type}"
        if isinstance(entry, CustomEntry):
            return f"Extension state · {entry.custom_type}"
        return {
            "compaction": "Compaction",
            "branch_summary": "Branch summary",
            "label": "Label",
            "model_change": "Model change",
            "thinking_level_change": "Thinking level",
            "session_info": "Session name",
        }.get(entry.type, entry.type or "entry")

    def body(self, entry: SessionEntry) -> str:
        if isinstance(entry, MessageEntry):
            return self.message(entry.message)
        if isinstance(entry, CustomMessageEntry):
            note = "" if entry.display else '<div class="meta">(not displayed in the terminal UI)</div>'
            return note + _user_content(entry.content)
        if isinstance(entry, CompactionEntry):
            return self.compaction(entry)
        if isinstance(entry, BranchSummaryEntry):
            origin = "the start" if entry.from_id == "root" else _entry_link(entry.from_id)
            return (
                f'<div class="meta">Summary of the branch left at {origin}</div>'
                f'<details class="summary"><summary>Summary</summary>{_pre(entry.summary)}</details>'
                + self.file_lists(entry.details)
            )
        if isinstance(entry, CustomEntry):
            return self.custom(entry)
        if isinstance(entry, LabelEntry):
            what = f"“{_e(entry.label)}”" if entry.label else "cleared"
            return f'<div class="meta">Label {what} on {_entry_link(entry.target_id)}</div>'
        if isinstance(entry, ModelChangeEntry):
            return f'<div class="meta">{_e(entry.provider)}/{_e(entry.model_id)}</div>'
        if isinstance(entry, ThinkingLevelChangeEntry):
            return f'<div class="meta">{_e(entry.thinking_level)}</div>'
        if isinstance(entry, SessionInfoEntry):
            return f'<div class="meta">{_e(entry.name or "(cleared)")}</div>'
        if isinstance(entry, UnknownEntry):
            return f'<details class="data"><summary>Data</summary>{_pre(_json_text(entry.raw))}</details>'
        return ""

    def message(self, m: Any) -> str:
        if isinstance(m, UserMessage):
            return f'<div class="msg user">{_user_content(m.content)}</div>'
        if isinstance(m, AssistantMessage):
            return self.assistant(m)
        if isinstance(m, ToolResultMessage):
            return self.tool_result(m)
        if isinstance(m, BashExecutionMessage):
            excluded = (
                ' <span class="meta">(kept out of the context)</span>' if m.exclude_from_context else ""
            )
            code = "" if m.exit_code in (0, None) else f' <span class="meta">exit {m.exit_code}</span>'
            return (
                f'<div class="msg bash"><div class="command">$ {_e(m.command)}{excluded}{code}</div>'
                f'<details class="bash-output"><summary>Output</summary>{_pre(m.output)}</details></div>'
            )
        return f'<details class="data"><summary>Message</summary>{_pre(_json_text(message_to_json(m)))}</details>'

    def assistant(self, m: AssistantMessage) -> str:
        parts: list[str] = []
        for block in m.content:
            if isinstance(block, ThinkingContent):
                text = "(redacted)" if block.redacted and not block.thinking else block.thinking
                parts.append(f'<details class="thinking"><summary>Thinking</summary>{_pre(text)}</details>')
            elif isinstance(block, TextContent):
                parts.append(f'<div class="text">{_e(block.text)}</div>')
            elif isinstance(block, ToolCall):
                parts.append(
                    f'<div class="tool-call" data-tool-call-id="{_e(block.id)}">'
                    f'<span class="tool-name">{_e(block.name)}</span>'
                    f"{_pre(_json_text(block.arguments), 'args')}</div>"
                )
        if m.stop_reason in ("error", "aborted"):
            parts.append(
                f'<div class="error">{_e(m.stop_reason)}: {_e(m.error_message or "no details")}</div>'
            )
        u = m.usage
        if u.total_tokens or u.input or u.output:
            parts.append(
                f'<div class="meta usage">{u.input:,} in · {u.output:,} out · {u.cache_read:,} cache read'
                f" · {u.cache_write:,} cache write</div>"
            )
        return f'<div class="msg assistant">{"".join(parts)}</div>'

    def tool_result(self, m: ToolResultMessage) -> str:
        text = text_of(m.content)
        images = [b for b in m.content if isinstance(b, ImageContent)]
        lines = text.count("\n") + 1 if text else 0
        size = f"{lines} line{'s' if lines != 1 else ''}" + (f", {len(images)} image(s)" if images else "")
        error = " error" if m.is_error else ""
        return (
            f'<details class="tool-result{error}" data-tool-call-id="{_e(m.tool_call_id)}">'
            f"<summary>{'Error from' if m.is_error else 'Result of'} {_e(m.tool_name)} · {_e(size)}</summary>"
            f"{_user_content(m.content)}</details>"
        )

    def compaction(self, entry: CompactionEntry) -> str:
        kept = (
            _entry_link(entry.first_kept_entry_id)
            if entry.first_kept_entry_id in self.by_id
            else _e(entry.first_kept_entry_id or "?")
        )
        source = " (written by an extension)" if entry.from_hook else ""
        return (
            f'<div class="meta">Compacted {entry.tokens_before:,} tokens of context{source}; '
            f"kept from {kept}</div>"
            f'<details class="summary"><summary>Summary</summary>{_pre(entry.summary)}</details>'
            + self.file_lists(entry.details)
        )

    @staticmethod
    def file_lists(details: Any) -> str:
        if not isinstance(details, Mapping):
            return ""
        out: list[str] = []
        for key, title in (("readFiles", "Read files"), ("modifiedFiles", "Modified files")):
            files = details.get(key)
            if isinstance(files, list) and files:
                items = "".join(f"<li>{_e(f)}</li>" for f in files)
                out.append(
                    f'<div class="files {key}"><span class="meta">{title}:</span><ul>{items}</ul></div>'
                )
        return "".join(out)

    def custom(self, entry: CustomEntry) -> str:
        data = entry.data
        cancelled = self.effects.cancelled_markers.get(entry.id)
        if entry.custom_type in (REWIND, SHRINK) and isinstance(data, Mapping):
            status = (
                f'<div class="meta cancelled">Cancelled by {_entry_link(cancelled)}</div>'
                if cancelled
                else ""
            )
            if entry.custom_type == REWIND:
                ids = [i for i in data.get("hideEntryIds") or () if isinstance(i, str)]
                targets = ", ".join(_entry_link(i) for i in ids) or "(not pinned to entries)"
                note = data.get("note")
                note_html = (
                    "<dl class='note'>"
                    + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in note.items())
                    + "</dl>"
                    if isinstance(note, Mapping)
                    else ""
                )
                return (
                    f'<div class="mulligan-marker rewind">Rewind ({_e(data.get("granularity") or "?")}) '
                    f"hides {targets}</div>{status}{note_html}" + self.raw_data(data)
                )
            pinned = data.get("pinnedEntryId")
            target = _entry_link(pinned) if isinstance(pinned, str) and pinned else "(not pinned)"
            replacement = data.get("replacement")
            return (
                f'<div class="mulligan-marker shrink">Shrink of {target}</div>{status}'
                + (_pre(replacement, "replacement") if isinstance(replacement, str) else "")
                + self.raw_data(data)
            )
        if entry.custom_type == CANCEL and isinstance(data, Mapping):
            target_uuid = data.get("targetId")
            marker = self.marker_entries.get(target_uuid) if isinstance(target_uuid, str) else None
            what = _entry_link(marker) if marker else _e(target_uuid)
            return f'<div class="mulligan-marker cancel">Cancels {what}</div>'
        return self.raw_data(data)

    @staticmethod
    def raw_data(data: Any) -> str:
        if data is None:
            return ""
        return f'<details class="data"><summary>Data</summary>{_pre(_json_text(data))}</details>'

    # -- the tree -----------------------------------------------------------------------------------
    def branch_header(self, node: TreeNode, number: int) -> str:
        size = self.sizes.get(node.entry.id, 1)
        active = node.entry.id in self.path_ids
        state = " · active" if active else ""
        return (
            f'<details class="branch{" active" if active else ""}" data-branch-head="{_e(node.entry.id)}"'
            f"{' open' if active else ''}><summary>Branch {number}{state} · {size} entries · "
            f"{_e(entry_title(node.entry))}</summary>"
        )

    def count_subtrees(self, roots: list[TreeNode]) -> None:
        order: list[TreeNode] = []
        stack = list(roots)
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(node.children)
        for node in reversed(order):  # children before their parents
            self.sizes[node.entry.id] = 1 + sum(self.sizes[c.entry.id] for c in node.children)

    def conversation(self, roots: list[TreeNode]) -> str:
        self.count_subtrees(roots)
        out: list[str] = []
        stack: list[TreeNode | str] = []

        def push_fork(children: list[TreeNode]) -> None:
            out.append('<div class="fork">')
            stack.append("</div>")
            for number in range(len(children), 0, -1):
                child = children[number - 1]
                stack.append("</details>")
                stack.append(child)
                stack.append(self.branch_header(child, number))

        if len(roots) == 1:
            stack.append(roots[0])
        elif roots:
            push_fork(roots)
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            out.append(self.entry(item.entry))
            if len(item.children) == 1:
                stack.append(item.children[0])
            elif item.children:
                push_fork(item.children)
        return "".join(out)

    def outline(self, roots: list[TreeNode]) -> str:
        """Nested lists: a chain is a run of lines; a fork holds one list per branch."""
        out: list[str] = ["<ul>"]
        stack: list[TreeNode | str] = []

        def push_fork(children: list[TreeNode]) -> None:
            out.append('<li class="fork"><ul>')
            stack.append("</ul></li>")
            for child in reversed(children):
                stack.append("</ul></li>")
                stack.append(child)
                stack.append('<li class="branch"><ul>')

        if len(roots) == 1:
            stack.append(roots[0])
        elif roots:
            push_fork(roots)
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            entry = item.entry
            classes = [f"t-{_kind(entry)}"]
            if entry.id in self.path_ids:
                classes.append("on-path")
            if entry.id in self.effects.hidden_by:
                classes.append("mulligan-hidden")
            if entry.id in self.effects.shrunk_by:
                classes.append("mulligan-shrunk")
            out.append(
                f'<li class="{" ".join(classes)}">'
                f'<a href="#e-{_e(entry.id)}" data-target="{_e(entry.id)}">{_e(entry_title(entry))}</a></li>'
            )
            if len(item.children) == 1:
                stack.append(item.children[0])
            elif item.children:
                push_fork(item.children)
        out.append("</ul>")
        return "".join(out)

    # -- the page -----------------------------------------------------------------------------------
    def page(self) -> str:
        store = self.store
        roots = store.tree()
        messages = [e for e in self.entries if isinstance(e, MessageEntry)]
        assistants = [e.message for e in messages if isinstance(e.message, AssistantMessage)]
        tool_calls = sum(len(m.tool_calls()) for m in assistants)
        parents = {e.parent_id for e in self.entries if e.parent_id}
        leaves = sum(1 for e in self.entries if e.id not in parents)
        compactions = sum(1 for e in self.entries if isinstance(e, CompactionEntry))
        first_user = next(
            (text_of(e.message.content) for e in messages if isinstance(e.message, UserMessage)), ""
        )
        name = store.session_name()
        title = name or _snippet(first_user, 60) or f"Session {store.session_id}"
        cost = sum(m.usage.cost.total for m in assistants)
        facts = [
            ("Session", store.session_id),
            ("Working directory", store.cwd),
            ("Started", _time(store.header.timestamp)),
            ("File", store.session_file or "(in memory)"),
            ("Entries", f"{len(self.entries):,}"),
            ("Messages", f"{len(messages):,}"),
            ("Tool calls", f"{tool_calls:,}"),
            ("Branches", f"{leaves:,}"),
            ("Compactions", f"{compactions:,}"),
            ("Hidden by mulligan", f"{len(self.effects.hidden_by):,}"),
            ("Shrunk by mulligan", f"{len(self.effects.shrunk_by):,}"),
        ]
        if cost:
            facts.append(("Cost", f"${cost:.4f}"))
        if store.header.parent_session:
            facts.append(("Forked from", store.header.parent_session))
        facts_html = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="caddie"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body>"
            f'<aside id="sidebar"><div class="sidebar-title">Session tree</div>'
            f'<nav id="tree">{self.outline(roots)}</nav></aside>'
            f'<main id="content"><header id="session-header"><h1>{_e(title)}</h1>'
            f'<dl class="facts">{facts_html}</dl><div class="controls">'
            '<button type="button" data-action="expand">Expand all</button>'
            '<button type="button" data-action="collapse">Collapse all</button>'
            '<button type="button" data-action="toggle-hidden">Hide mulligan-hidden entries</button>'
            "</div></header>"
            f'<section id="conversation" data-leaf-id="{_e(store.leaf_id or "")}">'
            f"{self.conversation(roots)}</section></main>"
            f"<script>{_JS}</script></body></html>\n"
        )


def render_session_html(store: SessionStore) -> str:
    """The HTML page for ``store`` (see the module docstring)."""
    return _Renderer(store).page()


_CSS = """
:root{--bg:#f7f7f8;--card:#fff;--fg:#1d1d1f;--muted:#6b6b76;--line:#dedee3;--accent:#3b6fd8;
--user:#eef3ff;--tool:#f4f4f6;--err:#b3261e;--warn:#fff4d6;--hidden:#fdecec;--shrunk:#eef8ee}
@media (prefers-color-scheme:dark){:root{--bg:#17171b;--card:#202026;--fg:#e6e6ea;--muted:#9a9aa6;
--line:#34343c;--accent:#7aa2f7;--user:#222a3d;--tool:#26262d;--err:#f28b82;--warn:#3a3320;
--hidden:#3a2326;--shrunk:#213326}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;display:flex;min-height:100vh}
#sidebar{width:300px;flex:none;border-right:1px solid var(--line);padding:12px;position:sticky;top:0;
height:100vh;overflow:auto;font-size:12px}
.sidebar-title{font-weight:600;margin-bottom:8px}#tree ul{list-style:none;margin:0;padding-left:12px}
#tree>ul{padding-left:0}#tree li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#tree a{color:var(--muted);text-decoration:none}#tree li.on-path>a{color:var(--fg);font-weight:600}
#tree li.mulligan-hidden>a{text-decoration:line-through}
#content{flex:1;min-width:0;padding:16px 24px;max-width:1100px}
h1{font-size:20px;margin:0 0 8px}.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;
margin:0 0 12px;color:var(--muted)}.facts dd{margin:0;color:var(--fg);word-break:break-all}
.controls button{margin-right:6px;background:var(--card);color:var(--fg);border:1px solid var(--line);
border-radius:6px;padding:3px 10px;cursor:pointer}
.entry{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:8px 0;padding:8px 12px}
.entry:not(.on-path){opacity:.85}.entry:target{outline:2px solid var(--accent)}
.entry-head{display:flex;gap:10px;align-items:baseline;font-size:12px;color:var(--muted);flex-wrap:wrap}
.entry-head .kind{font-weight:600;color:var(--fg)}.anchor{color:var(--muted);text-decoration:none}
.entry-user{background:var(--user)}.entry-toolResult{background:var(--tool)}
.entry-label,.entry-model_change,.entry-thinking_level_change,.entry-session_info,.entry-custom{padding:4px 12px;
font-size:12px}
.text{white-space:pre-wrap;word-wrap:break-word;margin:4px 0}
pre{white-space:pre-wrap;word-wrap:break-word;background:var(--tool);border-radius:6px;padding:6px 8px;
margin:4px 0;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;max-height:480px;overflow:auto}
.tool-call{border-left:3px solid var(--accent);padding-left:8px;margin:6px 0}.tool-name{font-weight:600}
details>summary{cursor:pointer;color:var(--muted)}.tool-result.error>summary,.error{color:var(--err)}
.meta{color:var(--muted);font-size:12px}.badge{border-radius:10px;padding:0 8px;font-size:11px}
.badge.label{background:var(--warn)}.badge.mulligan{background:var(--hidden);color:var(--fg)}
.mulligan-hidden{background:var(--hidden)}.mulligan-hidden .msg,.mulligan-hidden .text{opacity:.6;
text-decoration:line-through}.mulligan-shrunk{background:var(--shrunk)}
.mulligan-marker{font-weight:600}.cancelled{text-decoration:line-through}
.entry-compaction,.entry-branch_summary{border-style:dashed;background:var(--warn)}
.fork{border-left:2px solid var(--line);padding-left:10px;margin:8px 0}
.branch>summary{font-weight:600;color:var(--fg);margin:4px 0}.branch.active>summary{color:var(--accent)}
.image{max-width:100%;max-height:360px;border-radius:6px}.files ul{margin:0;padding-left:18px}
body.hide-hidden .mulligan-hidden{display:none}
@media (max-width:800px){#sidebar{display:none}}
"""

_JS = """
(function(){
  function openAncestors(el){for(var p=el&&el.parentElement;p;p=p.parentElement){
    if(p.tagName==='DETAILS'){p.open=true;}}}
  function jump(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
    var el=document.getElementById(id);if(el){openAncestors(el);el.scrollIntoView({block:'center'});}}
  window.addEventListener('hashchange',jump);jump();
  document.querySelectorAll('button[data-action]').forEach(function(b){
    b.addEventListener('click',function(){var a=b.getAttribute('data-action');
      if(a==='expand'||a==='collapse'){document.querySelectorAll('#conversation details').forEach(
        function(d){d.open=(a==='expand');});}
      else if(a==='toggle-hidden'){var on=document.body.classList.toggle('hide-hidden');
        b.textContent=on?'Show mulligan-hidden entries':'Hide mulligan-hidden entries';}});});
})();
"""

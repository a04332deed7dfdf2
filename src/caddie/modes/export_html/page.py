"""The session tree as one HTML page: every entry of every branch, rendered for a person to read.

Static markup with inline CSS and a little inline JS (search, toggles, the download link, jumping to an
entry); nothing is fetched. Every entry is an ``<article id="e-<entry id>">`` with ``data-entry-id``; the
active branch's entries carry ``on-path``; extension state (``custom`` entries) carries ``bookkeeping`` and
is hidden until the reader asks for it; what the model is not sent as it is carries ``model-hidden`` or
``model-replaced`` with ``data-visibility`` and ``data-cause`` — as the extensions answered it (see
``visibility.py``), never guessed here.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
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
from caddie.extensions.api import EntryVisibility
from caddie.modes.export_html.assets import CSS, JS
from caddie.modes.export_html.blocks import (
    code,
    diff_block,
    e,
    edit_diff,
    entry_kind,
    entry_link,
    entry_title,
    fields,
    highlight_css,
    json_text,
    markdown,
    pre,
    snippet,
    time_text,
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

HIGHLIGHT_BUDGET = 150_000
"""Characters of tool output and written files highlighted per page (Markdown code is always highlighted);
the rest is shown plain, so a long session still exports in seconds."""
LONG_LINES = 20
LONG_CHARS = 2_000
"""A result longer than this starts collapsed."""
_PATH_TOOLS = ("read", "write", "edit", "ls", "find", "grep")


def _is_long(text: str) -> bool:
    return len(text) > LONG_CHARS or text.count("\n") >= LONG_LINES


def _lines(text: str) -> str:
    n = text.count("\n") + 1 if text else 0
    return f"{n} line{'s' if n != 1 else ''}"


def _images(content: str | Sequence[UserContent]) -> str:
    if isinstance(content, str):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, ImageContent):
            try:
                base64.b64decode(block.data, validate=True)
            except ValueError:
                parts.append('<div class="meta">(an image that could not be decoded)</div>')
                continue
            parts.append(
                f'<img class="image" alt="image" src="data:{e(block.mime_type)};base64,{e(block.data)}">'
            )
    return "".join(parts)


def _rich_content(content: str | Sequence[UserContent]) -> str:
    """User-side content: text as Markdown, then images."""
    text = text_of(content if isinstance(content, str) else list(content))
    return (markdown(text) if text else "") + _images(content)


class Renderer:
    def __init__(
        self,
        store: SessionStore,
        visibility: Mapping[str, EntryVisibility],
        jsonl: bytes,
        savings_html: str = "",
        theme_css: str = "",
    ) -> None:
        self.savings_html = savings_html
        self.theme_css = theme_css
        """The end of the stylesheet from the theme's ``export`` colours (assets.theme_css)."""
        self.store = store
        self.visibility = visibility
        self.jsonl = jsonl
        self.entries = store.entries()
        self.by_id = {x.id: x for x in self.entries}
        self.path_ids = {x.id for x in store.branch()}
        self.labels = store.labels()
        self.calls: dict[str, ToolCall] = {}
        self.results: dict[str, ToolResultMessage] = {}
        for entry in self.entries:
            if isinstance(entry, MessageEntry):
                m = entry.message
                if isinstance(m, AssistantMessage):
                    for call in m.tool_calls():
                        self.calls.setdefault(call.id, call)
                elif isinstance(m, ToolResultMessage):
                    self.results.setdefault(m.tool_call_id, m)
        self.sizes: dict[str, int] = {}
        self.budget = HIGHLIGHT_BUDGET
        self.highlighted: set[str] = set()

    def may_highlight(self, text: str) -> bool:
        """Within the page's budget (a text highlighted before costs nothing: it is cached)."""
        if text in self.highlighted:
            return True
        if len(text) > self.budget:
            return False
        self.budget -= len(text)
        self.highlighted.add(text)
        return True

    # -- one entry ----------------------------------------------------------------------------------
    def entry(self, entry: SessionEntry) -> str:
        kind = entry_kind(entry)
        classes = ["entry", f"entry-{kind}"]
        if entry.id in self.path_ids:
            classes.append("on-path")
        if isinstance(entry, CustomEntry):
            classes.append("bookkeeping")
        badges: list[str] = []
        label = self.labels.get(entry.id)
        if label:
            badges.append(f'<span class="badge label">{e(label)}</span>')
        attrs = ""
        body = self.body(entry)
        seen = self.visibility.get(entry.id)
        if seen is not None:
            classes.append(f"model-{seen.state}")
            if isinstance(self.by_id.get(seen.cause_entry_id or ""), CompactionEntry):
                classes.append("compacted")
            attrs = f' data-visibility="{e(seen.state)}"'
            cause = ""
            if seen.cause_entry_id:
                attrs += f' data-cause="{e(seen.cause_entry_id)}"'
                cause = " · " + entry_link(seen.cause_entry_id, "why")
            what = "not sent to the model" if seen.state == "hidden" else "sent to the model in another form"
            badges.append(f'<span class="badge visibility">{what}: {e(seen.reason)}{cause}</span>')
            if seen.state == "replaced" and seen.replacement is not None:
                body = (
                    '<div class="model-view"><div class="meta">The model is sent:</div>'
                    f"{self.message(seen.replacement, collapse=False)}</div>"
                    f'<details class="original"><summary>Original</summary>{body}</details>'
                )
        head = (
            f'<div class="entry-head"><span class="kind">{e(self.kind_label(entry))}</span>'
            f'<span class="time">{e(time_text(entry.timestamp))}</span>'
            f'<a class="anchor" href="#e-{e(entry.id)}">#{e(entry.id)}</a>{"".join(badges)}</div>'
        )
        return (
            f'<article id="e-{e(entry.id)}" class="{" ".join(classes)}" data-entry-id="{e(entry.id)}" '
            f'data-parent-id="{e(entry.parent_id or "")}" data-type="{e(kind)}"{attrs}>'
            f"{head}{body}</article>"
        )

    def kind_label(self, entry: SessionEntry) -> str:
        if isinstance(entry, MessageEntry):
            m = entry.message
            if isinstance(m, AssistantMessage):
                return f"Assistant · {m.provider}/{m.model}"
            if isinstance(m, ToolResultMessage):
                return f"Tool result · {m.tool_name}"
            if isinstance(m, CustomMessage):
                return f"Extension message · {m.custom_type}"
            return {"user": "User", "bashExecution": "Shell"}.get(m.role, m.role)
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
            return note + _rich_content(entry.content) + self.details_block(entry.details, "Details")
        if isinstance(entry, CompactionEntry):
            return self.compaction(entry)
        if isinstance(entry, BranchSummaryEntry):
            origin = "the start" if entry.from_id == "root" else entry_link(entry.from_id)
            return (
                f'<div class="meta">Summary of the branch left at {origin}</div>'
                f'<details class="summary" open><summary>Summary</summary>{markdown(entry.summary)}</details>'
                + self.file_lists(entry.details)
            )
        if isinstance(entry, CustomEntry):
            data = entry.data
            if isinstance(data, Mapping):
                return fields(data, links=self.by_id)  # entry ids in extension state link to the entries
            return "" if data is None else pre(json_text(data))
        if isinstance(entry, LabelEntry):
            what = f"“{e(entry.label)}”" if entry.label else "cleared"
            return f'<div class="meta">Label {what} on {entry_link(entry.target_id)}</div>'
        if isinstance(entry, ModelChangeEntry):
            return f'<div class="meta">{e(entry.provider)}/{e(entry.model_id)}</div>'
        if isinstance(entry, ThinkingLevelChangeEntry):
            return f'<div class="meta">{e(entry.thinking_level)}</div>'
        if isinstance(entry, SessionInfoEntry):
            return f'<div class="meta">{e(entry.name or "(cleared)")}</div>'
        if isinstance(entry, UnknownEntry):
            return self.details_block(entry.raw, "Data")
        return ""

    @staticmethod
    def details_block(value: Any, title: str) -> str:
        if value is None:
            return ""
        inner = fields(value) if isinstance(value, Mapping) else pre(json_text(value))
        return f'<details class="data"><summary>{e(title)}</summary>{inner}</details>'

    # -- messages -----------------------------------------------------------------------------------
    def message(self, m: AgentMessage, *, collapse: bool = True) -> str:
        if isinstance(m, UserMessage):
            return f'<div class="msg user">{_rich_content(m.content)}</div>'
        if isinstance(m, AssistantMessage):
            return self.assistant(m)
        if isinstance(m, ToolResultMessage):
            return self.tool_result(m, original=collapse)
        if isinstance(m, CustomMessage):
            return f'<div class="msg custom">{_rich_content(m.content)}</div>'
        if isinstance(m, BashExecutionMessage):
            excluded = (
                ' <span class="meta">(kept out of the context)</span>' if m.exclude_from_context else ""
            )
            status = (
                "" if m.exit_code in (0, None) else f' <span class="meta error">exit {m.exit_code}</span>'
            )
            output = (
                self.collapsible(
                    code(m.output, cls="output"), f"Output · {_lines(m.output)}", m.output, collapse
                )
                if m.output
                else '<div class="meta">(no output)</div>'
            )
            return (
                f'<div class="msg bash">{code(m.command, lang="bash", cls="command")}{excluded}{status}'
                f"{output}</div>"
            )
        if isinstance(m, CompactionSummaryMessage | BranchSummaryMessage):
            return markdown(m.summary)
        return self.details_block(message_to_json(m), "Message")

    def assistant(self, m: AssistantMessage) -> str:
        parts: list[str] = []
        for block in m.content:
            if isinstance(block, ThinkingContent):
                text = "(redacted)" if block.redacted and not block.thinking else block.thinking
                parts.append(
                    f'<details class="thinking"><summary>Thinking</summary>{markdown(text)}</details>'
                )
            elif isinstance(block, TextContent):
                parts.append(markdown(block.text))
            elif isinstance(block, ToolCall):
                parts.append(self.tool_call(block))
        if m.stop_reason in ("error", "aborted"):
            parts.append(f'<div class="error">{e(m.stop_reason)}: {e(m.error_message or "no details")}</div>')
        u = m.usage
        if u.total_tokens or u.input or u.output:
            approx, why = ("≈", " (estimated: the server reported no usage)") if u.estimated else ("", "")
            parts.append(
                f'<div class="meta usage">{approx}{u.input:,} in · {approx}{u.output:,} out · {u.cache_read:,} cache read'
                f" · {u.cache_write:,} cache write{why}</div>"
            )
        return f'<div class="msg assistant">{"".join(parts)}</div>'

    def tool_call(self, call: ToolCall) -> str:
        args = call.arguments
        if not isinstance(args, Mapping):
            body = pre(json_text(args), "args")
            subject = ""
        else:
            body, subject = self.tool_arguments(call.name, args, call.id)
        head = f'<div class="tool-head"><span class="tool-name">{e(call.name)}</span>{subject}</div>'
        return f'<div class="tool-call" data-tool-call-id="{e(call.id)}">{head}{body}</div>'

    def tool_arguments(self, name: str, args: Mapping[str, Any], call_id: str) -> tuple[str, str]:
        """(the body, a subject shown next to the tool name) for one call's arguments."""
        path = args.get("path")
        subject = ""
        if name in _PATH_TOOLS and isinstance(path, str):
            subject = f' <span class="tool-path">{e(path)}</span>'
        if name == "bash" and isinstance(args.get("command"), str):
            return code(args["command"], lang="bash", cls="command") + fields(args, skip=["command"]), ""
        if name == "read" and isinstance(path, str):
            offset, limit = args.get("offset"), args.get("limit")
            if isinstance(offset, int) or isinstance(limit, int):
                start = offset if isinstance(offset, int) else 1
                end = f"{start + limit - 1}" if isinstance(limit, int) else "end"
                subject += f' <span class="meta">lines {start}–{end}</span>'
            return fields(args, skip=["path", "offset", "limit"]), subject
        if name == "write" and isinstance(path, str) and isinstance(args.get("content"), str):
            content: str = args["content"]
            block = self.collapsible(
                code(content, path=path, highlight=self.may_highlight(content)),
                f"Content · {_lines(content)}",
                content,
                True,
            )
            return block + fields(args, skip=["path", "content"]), subject
        edits = args.get("edits")
        if name == "edit" and isinstance(path, str) and isinstance(edits, list):
            result = self.results.get(call_id)
            details = result.details if result is not None and not result.is_error else None
            patch = details.get("patch") if isinstance(details, Mapping) else None
            diff = patch if isinstance(patch, str) and patch else edit_diff(path, edits)
            block = diff_block(diff) if diff else fields({"edits": edits})
            return block + fields(args, skip=["path", "edits"]), subject
        return fields(args, skip=["path"] if subject else ()), subject

    def tool_result(self, m: ToolResultMessage, original: bool = True) -> str:
        """A result (``original=False``: what an extension sends instead, shown open and plain)."""
        text = text_of(m.content)
        call = self.calls.get(m.tool_call_id)
        path = None
        if original and call is not None and m.tool_name == "read" and isinstance(call.arguments, Mapping):
            value = call.arguments.get("path")
            path = value if isinstance(value, str) else None
        body = (
            code(text, path=path, highlight=path is not None and self.may_highlight(text)) if text else ""
        ) + _images(m.content)
        title = f"{'Error from' if m.is_error else 'Result of'} {m.tool_name} · {_lines(text)}"
        error = " error" if m.is_error else ""
        return (
            f'<div class="tool-result{error}" data-tool-call-id="{e(m.tool_call_id)}">'
            f"{self.collapsible(body, title, text, original)}</div>"
        )

    @staticmethod
    def collapsible(body: str, title: str, text: str, collapse: bool) -> str:
        """Long content in a closed ``<details>``; short content shown as it is, under its title."""
        if collapse and _is_long(text):
            return f'<details class="long"><summary>{e(title)}</summary>{body}</details>'
        return f'<div class="short">{body}</div>'

    def compaction(self, entry: CompactionEntry) -> str:
        kept = (
            entry_link(entry.first_kept_entry_id)
            if entry.first_kept_entry_id in self.by_id
            else e(entry.first_kept_entry_id or "?")
        )
        source = " (written by an extension)" if entry.from_hook else ""
        return (
            f'<div class="meta">Compacted {entry.tokens_before:,} tokens of context{source}; '
            f"kept from {kept}</div>"
            f'<details class="summary"><summary>Summary</summary>{markdown(entry.summary)}</details>'
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
                items = "".join(f"<li>{e(f)}</li>" for f in files)
                out.append(
                    f'<div class="files {key}"><span class="meta">{title}:</span><ul>{items}</ul></div>'
                )
        return "".join(out)

    # -- the tree -----------------------------------------------------------------------------------
    def branch_header(self, node: TreeNode, number: int) -> str:
        size = self.sizes.get(node.entry.id, 1)
        active = node.entry.id in self.path_ids
        state = " · active" if active else ""
        return (
            f'<details class="branch{" active" if active else ""}" data-branch-head="{e(node.entry.id)}"'
            f"{' open' if active else ''}><summary>Branch {number}{state} · {size} entries · "
            f"{e(entry_title(node.entry))}</summary>"
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
            classes = [f"t-{entry_kind(entry)}"]
            if entry.id in self.path_ids:
                classes.append("on-path")
            if isinstance(entry, CustomEntry):
                classes.append("bookkeeping")
            seen = self.visibility.get(entry.id)
            if seen is not None:
                classes.append(f"model-{seen.state}")
            out.append(
                f'<li class="{" ".join(classes)}" data-entry-id="{e(entry.id)}">'
                f'<a href="#e-{e(entry.id)}" data-target="{e(entry.id)}">{e(entry_title(entry))}</a></li>'
            )
            if len(item.children) == 1:
                stack.append(item.children[0])
            elif item.children:
                push_fork(item.children)
        out.append("</ul>")
        return "".join(out)

    # -- the page -----------------------------------------------------------------------------------
    def page(self, file_label: str, download_name: str) -> str:
        store = self.store
        roots = store.tree()
        messages = [x for x in self.entries if isinstance(x, MessageEntry)]
        assistants = [x.message for x in messages if isinstance(x.message, AssistantMessage)]
        tool_calls = sum(len(m.tool_calls()) for m in assistants)
        parents = {x.parent_id for x in self.entries if x.parent_id}
        leaves = sum(1 for x in self.entries if x.id not in parents)
        compactions = sum(1 for x in self.entries if isinstance(x, CompactionEntry))
        bookkeeping = sum(1 for x in self.entries if isinstance(x, CustomEntry))
        first_user = next(
            (text_of(x.message.content) for x in messages if isinstance(x.message, UserMessage)), ""
        )
        title = store.session_name() or snippet(first_user, 60) or f"Session {store.session_id}"
        cost = sum(m.usage.cost.total for m in assistants)
        states = [v.state for v in self.visibility.values()]
        compacted = sum(
            1
            for v in self.visibility.values()
            if isinstance(self.by_id.get(v.cause_entry_id or ""), CompactionEntry)
        )
        facts = [
            ("Session", store.session_id),
            ("Working directory", store.cwd),
            ("Started", time_text(store.header.timestamp)),
            ("File", file_label),
            ("Entries", f"{len(self.entries):,}"),
            ("Messages", f"{len(messages):,}"),
            ("Tool calls", f"{tool_calls:,}"),
            ("Branches", f"{leaves:,}"),
            ("Compactions", f"{compactions:,}"),
            ("Summarized by compactions", f"{compacted:,}"),
            ("Hidden from the model", f"{states.count('hidden') - compacted:,}"),
            ("Sent in another form", f"{states.count('replaced'):,}"),
        ]
        estimated = [m for m in assistants if m.usage.estimated]
        if cost:
            facts.append(("Cost", f"{'≈' if estimated else ''}${cost:.4f}"))
        if estimated:
            tokens_in = sum(m.usage.input for m in assistants)
            tokens_out = sum(m.usage.output for m in assistants)
            facts.append(
                (
                    "Tokens",
                    f"≈{tokens_in:,} in · ≈{tokens_out:,} out (estimated for {len(estimated):,} of "
                    f"{len(assistants):,} replies: the server reported no usage)",
                )
            )
        if store.header.parent_session:
            facts.append(("Forked from", store.header.parent_session))
        facts_html = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts)
        data_url = "data:application/x-ndjson;base64," + base64.b64encode(self.jsonl).decode("ascii")
        controls = (
            '<div class="controls">'
            '<input type="search" id="search" placeholder="Search entries ( / )" autocomplete="off" '
            'aria-label="Search entries">'
            '<span id="search-status" class="meta"></span>'
            '<button type="button" data-action="expand">Expand all</button>'
            '<button type="button" data-action="collapse">Collapse all</button>'
            f'<label><input type="checkbox" id="show-bookkeeping"> Extension state ({bookkeeping:,})</label>'
            '<label><input type="checkbox" id="hide-unseen"> Hide what the model is not sent</label>'
            f'<a id="download-jsonl" class="button" download="{e(download_name)}" href="{data_url}">'
            "Download .jsonl</a></div>"
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="caddie"><title>{e(title)}</title>'
            f"<style>{CSS}{highlight_css()}{self.theme_css}</style></head><body>"
            f'<aside id="sidebar"><div class="sidebar-title">Session tree</div>'
            f'<nav id="tree">{self.outline(roots)}</nav></aside>'
            f'<main id="content"><header id="session-header"><h1>{e(title)}</h1>'
            f'<dl class="facts">{facts_html}</dl>{self.savings_html}{controls}</header>'
            f'<section id="conversation" data-leaf-id="{e(store.leaf_id or "")}">'
            f"{self.conversation(roots)}</section></main>"
            f"<script>{JS}</script></body></html>\n"
        )

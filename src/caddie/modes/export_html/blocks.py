"""The pieces of the export page: Markdown, highlighted code, diffs, values as readable fields, entry titles.

Markdown goes through markdown-it-py (CommonMark plus tables and strikethrough, raw HTML escaped, images
shown as links so the page never loads anything) and code through Pygments. Everything returned here is
HTML that is safe to place in the page: every piece of session text is escaped.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
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
)

HIGHLIGHT_LIMIT = 50_000
"""Longer code is shown plain: Pygments runs at a few thousand lines a second, and exporting must stay quick."""
_FORMATTER = HtmlFormatter(nowrap=True)


def e(text: object) -> str:
    """Escape for text and attribute values."""
    return escape(str(text), quote=True)


def pre(text: str, cls: str = "") -> str:
    return f'<pre class="{e(cls)}">{e(text)}</pre>' if cls else f"<pre>{e(text)}</pre>"


def snippet(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return str(value)


# ==================================================================================================
# Code


@functools.lru_cache(maxsize=256)
def _lexer_by_name(lang: str) -> Lexer | None:
    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


_ONE_PER_CLASS: dict[type[Lexer], Lexer] = {}


@functools.lru_cache(maxsize=1024)
def _lexer_for_name(name: str) -> Lexer | None:
    try:
        lexer = get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return _ONE_PER_CLASS.setdefault(type(lexer), lexer)  # one instance: highlighted text is cached by it


def lexer_for(lang: str | None = None, path: str | None = None) -> Lexer | None:
    """The lexer for a language name, else for a file name (by its last path component)."""
    if lang:
        return _lexer_by_name(lang)
    name = path.rsplit("/", 1)[-1] if path else ""
    return _lexer_for_name(name) if name else None


@functools.lru_cache(maxsize=128)
def _highlighted(text: str, lexer: Lexer) -> str:
    """Cached: a session often reads the same file again and again."""
    body: str = pygments_highlight(text, lexer, _FORMATTER)
    if not text.endswith("\n") and body.endswith("\n"):
        body = body[:-1]
    return body


def code(
    text: str, *, lang: str | None = None, path: str | None = None, cls: str = "", highlight: bool = True
) -> str:
    """A ``<pre>`` block, highlighted when asked, the language (or a file name) is known and the text not huge."""
    lexer = lexer_for(lang, path) if highlight and len(text) <= HIGHLIGHT_LIMIT else None
    classes = " ".join(c for c in ("code", cls) if c)
    if lexer is None:
        return f'<pre class="{classes}"><code>{e(text)}</code></pre>'
    language = e(lexer.aliases[0] if lexer.aliases else lexer.name)
    return f'<pre class="{classes} hl" data-lang="{language}"><code>{_highlighted(text, lexer)}</code></pre>'


def diff_block(diff_text: str) -> str:
    """A unified diff, one block-level line each, classed ``add``/``del``/``hunk``/``file``/``ctx``."""
    lines: list[str] = []
    for line in diff_text.splitlines():
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        lines.append(f'<span class="d-{cls}">{e(line) or " "}</span>')
    return f'<pre class="code diff"><code>{"".join(lines)}</code></pre>'


def edit_diff(path: str, edits: Sequence[Mapping[str, Any]]) -> str:
    """The replacements of an ``edit`` call as one unified diff (used when the result carries no patch)."""
    hunks: list[str] = []
    for edit in edits:
        old = edit.get("oldText")
        new = edit.get("newText")
        if not isinstance(old, str) or not isinstance(new, str):
            continue
        lines = list(
            difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="")
        )
        hunks.extend(lines[2:])  # each edit's hunks, under one file header
    if not hunks:
        return ""
    return "\n".join([f"--- a/{path}", f"+++ b/{path}", *hunks])


@functools.cache
def token_rules(dark: bool) -> str:
    """Pygments' token colours for ``.hl`` blocks (no backgrounds: those come from the page's colours)."""
    defs: str = HtmlFormatter(style="github-dark" if dark else "default").get_style_defs(".hl")  # type: ignore[no-untyped-call]
    return "\n".join(line for line in defs.splitlines() if line.startswith(".hl ."))


def highlight_css() -> str:
    """The token colours: a light style, and a dark one for dark colour schemes."""
    return f"{token_rules(False)}\n@media (prefers-color-scheme:dark){{\n{token_rules(True)}\n}}\n"


# ==================================================================================================
# Markdown


def _fence_highlight(text: str, lang: str, attrs: str) -> str:
    return code(text, lang=lang or None)


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image reference becomes a link: the page must not fetch anything."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    return f'<a class="image-link" href="{e(src)}">[image: {e(alt or src)}]</a>'


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence_highlight})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    return md


def markdown(text: str) -> str:
    """Markdown as HTML (raw HTML in the text is shown as text, never as markup)."""
    return f'<div class="md">{_markdown().render(text)}</div>'


# ==================================================================================================
# Values as fields


def _scalar(value: Any, links: Collection[str]) -> str:
    if isinstance(value, str):
        if value in links:
            return f'<a class="value entry-link" href="#e-{e(value)}">{e(value)}</a>'
        if "\n" in value or len(value) > 160:
            return pre(value, "value")
        return f'<span class="value str">{e(value)}</span>'
    return f'<code class="value">{e(json.dumps(value))}</code>'


def value_html(value: Any, depth: int = 0, links: Collection[str] = ()) -> str:
    """A JSON value for a person: text as text, numbers and booleans inline, lists and objects nested.

    A string in ``links`` (entry ids) becomes a link to that entry.
    """
    if depth > 5:
        return pre(json_text(value), "value")
    if isinstance(value, Mapping):
        return fields(value, depth + 1, links=links) if value else '<code class="value">{}</code>'
    if isinstance(value, list):
        if not value:
            return '<code class="value">[]</code>'
        items = "".join(f"<li>{value_html(v, depth + 1, links)}</li>" for v in value)
        return f'<ol class="value list" start="0">{items}</ol>'
    return _scalar(value, links)


def fields(
    values: Mapping[str, Any], depth: int = 0, skip: Sequence[str] = (), links: Collection[str] = ()
) -> str:
    """Keys and values as a definition list (``skip`` leaves out keys shown elsewhere)."""
    rows = "".join(
        f"<dt>{e(k)}</dt><dd>{value_html(v, depth, links)}</dd>" for k, v in values.items() if k not in skip
    )
    return f'<dl class="fields">{rows}</dl>' if rows else ""


# ==================================================================================================
# Entries in one line


def time_text(ts: str | float | None) -> str:
    if isinstance(ts, int | float) and ts > 0:
        try:
            return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except (OverflowError, OSError, ValueError):
            return ""
    if isinstance(ts, str):
        return ts.replace("T", " ").replace("Z", " UTC")
    return ""


def entry_link(entry_id: str, text: str | None = None) -> str:
    return f'<a class="entry-link" href="#e-{e(entry_id)}">{e(text or entry_id)}</a>'


def entry_kind(entry: SessionEntry) -> str:
    if isinstance(entry, MessageEntry):
        return entry.message.role
    return entry.type or "unknown"


def entry_title(entry: SessionEntry) -> str:
    """A one-line description (for the sidebar and fork headers)."""
    if isinstance(entry, MessageEntry):
        m = entry.message
        if isinstance(m, UserMessage):
            return "User: " + snippet(text_of(m.content))
        if isinstance(m, AssistantMessage):
            text = m.text()
            calls = m.tool_calls()
            if text:
                return "Assistant: " + snippet(text)
            if calls:
                return "Assistant → " + ", ".join(c.name for c in calls)
            if m.error_message:
                return "Assistant (error): " + snippet(m.error_message)
            return "Assistant"
        if isinstance(m, ToolResultMessage):
            return f"Result: {m.tool_name}"
        if isinstance(m, BashExecutionMessage):
            return "$ " + snippet(m.command)
        if isinstance(m, CustomMessage):
            return f"[{m.custom_type}] " + snippet(text_of(m.content))
        return m.role
    if isinstance(entry, CustomMessageEntry):
        return f"[{entry.custom_type}] " + snippet(text_of(entry.content))
    if isinstance(entry, CustomEntry):
        return f"State: {entry.custom_type}"
    if isinstance(entry, CompactionEntry):
        return f"Compaction ({entry.tokens_before:,} tokens)"
    if isinstance(entry, BranchSummaryEntry):
        return "Branch summary: " + snippet(entry.summary)
    if isinstance(entry, LabelEntry):
        return f"Label: {entry.label or '(cleared)'}"
    if isinstance(entry, ModelChangeEntry):
        return f"Model: {entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f"Thinking: {entry.thinking_level}"
    if isinstance(entry, SessionInfoEntry):
        return f"Name: {entry.name or '(cleared)'}"
    return f"({entry.type})"

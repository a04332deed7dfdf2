"""The arithmetic of the window: what each part of a request weighs, by category, and which entry each message
comes from (pure functions over messages; see the package docstring for the counting rules)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
    UserMessage,
    bash_execution_to_text,
    text_of,
)
from caddie.ai.model import Model, Tool
from caddie.ai.tokens import IMAGE_CHARS
from caddie.extensions.api import EntryVisibility, Savings
from caddie.jscompat import utf16_len
from caddie.modes.savings import savings_json

CHARS_PER_TOKEN = 4
TOP_ITEMS = 10

# category key → (label, colour); tool results get one category per tool (``tool:<name>``)
CATEGORY_STYLE: dict[str, tuple[str, str]] = {
    "system": ("System prompt", "grey62"),
    "tools": ("Tool schemas", "medium_purple"),
    "user": ("User messages", "green"),
    "assistant": ("Assistant (text, tool calls)", "dodger_blue1"),
    "thinking": ("Thinking", "orchid"),
    "extension": ("Extension messages", "gold1"),
    "summary": ("Compaction summary", "dark_orange"),
    "branch": ("Branch summary", "dark_orange3"),
    "free": ("Free space", "grey23"),
    "reserve": ("Compaction reserve", "grey37"),
}
TOOL_COLOURS = ("cyan", "turquoise2", "sea_green2", "steel_blue1", "aquamarine1", "light_sky_blue1")


def _chars_of_content(content: str | Sequence[object]) -> tuple[int, int]:
    """(text chars, thinking chars) of a content value; tool calls count name + compact JSON arguments."""
    if isinstance(content, str):
        return utf16_len(content), 0
    text = thinking = 0
    for block in content:
        if isinstance(block, TextContent):
            text += utf16_len(block.text)
        elif isinstance(block, ThinkingContent):
            thinking += utf16_len(block.thinking)
        elif isinstance(block, ToolCall):
            text += utf16_len(block.name) + utf16_len(compact_json(block.arguments))
        elif isinstance(block, ImageContent):
            text += IMAGE_CHARS
    return text, thinking


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_schema_chars(tools: Sequence[Tool]) -> int:
    """The tool schemas as one compact JSON list of ``{name, description, parameters}``."""
    if not tools:
        return 0
    payload = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    return utf16_len(compact_json(payload))


def message_parts(message: AgentMessage) -> list[tuple[str, int]]:
    """(category key, chars) for one message as the model is sent it (host roles as their user text)."""
    if isinstance(message, UserMessage):
        return [("user", _chars_of_content(message.content)[0])]
    if isinstance(message, AssistantMessage):
        text, thinking = _chars_of_content(message.content)
        return [("assistant", text), ("thinking", thinking)]
    if isinstance(message, ToolResultMessage):
        return [(f"tool:{message.tool_name}", _chars_of_content(message.content)[0])]
    if isinstance(message, CustomMessage):
        return [("extension", _chars_of_content(message.content)[0])]
    if isinstance(message, BashExecutionMessage):
        return [("user", 0 if message.exclude_from_context else utf16_len(bash_execution_to_text(message)))]
    if isinstance(message, CompactionSummaryMessage):
        from caddie.ai.messages import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX

        return [
            (
                "summary",
                utf16_len(COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX),
            )
        ]
    assert isinstance(message, BranchSummaryMessage)
    from caddie.ai.messages import BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX

    return [("branch", utf16_len(BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX))]


def tokens_of(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def category_label(key: str) -> str:
    if key.startswith("tool:"):
        return f"Tool results: {key[5:]}"
    return CATEGORY_STYLE.get(key, (key, ""))[0]


def category_colour(key: str, tool_index: int = 0) -> str:
    if key.startswith("tool:"):
        return TOOL_COLOURS[tool_index % len(TOOL_COLOURS)]
    return CATEGORY_STYLE.get(key, ("", "white"))[1]


@dataclass(frozen=True, slots=True)
class Category:
    key: str
    label: str
    chars: int
    tokens: int
    """Scaled to the provider's count when ``ContextStats.basis == "reported"``, else ``estimated_tokens``."""
    estimated_tokens: int
    colour: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "chars": self.chars,
            "tokens": self.tokens,
            "estimatedTokens": self.estimated_tokens,
        }


@dataclass(frozen=True, slots=True)
class Item:
    """One message of the window."""

    entry_id: str | None
    """The session entry it comes from (usable in ``mulligan_shrink``'s targets and ``/tree``); None for
    messages an extension injected for this request only (nudges)."""
    category: str
    title: str
    chars: int
    tokens: int
    tool_call_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "entryId": self.entry_id,
            "category": self.category,
            "title": self.title,
            "chars": self.chars,
            "tokens": self.tokens,
        }
        if self.tool_call_id:
            out["toolCallId"] = self.tool_call_id
        return out


@dataclass(frozen=True, slots=True)
class Withheld:
    """An entry an extension does not send as it is (hidden, or replaced by something shorter)."""

    entry_id: str
    state: str
    """``hidden`` or ``replaced``."""
    reason: str
    original_tokens: int
    sent_tokens: int
    cause_entry_id: str | None

    @property
    def saved_tokens(self) -> int:
        return self.original_tokens - self.sent_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "entryId": self.entry_id,
            "state": self.state,
            "reason": self.reason,
            "originalTokens": self.original_tokens,
            "sentTokens": self.sent_tokens,
            "savedTokens": self.saved_tokens,
            "causeEntryId": self.cause_entry_id,
        }


@dataclass(frozen=True, slots=True)
class ContextStats:
    categories: list[Category]
    """The categories of what is sent (non-empty ones), largest first."""
    items: list[Item]
    """The largest messages, largest first (at most ``TOP_ITEMS``)."""
    withheld: list[Withheld]
    used_tokens: int
    estimated_tokens: int
    context_window: int
    reserve_tokens: int
    basis: str
    """``reported`` (scaled to the provider's count at the last request) or ``estimated``."""
    reported_tokens: int | None
    """The provider's count of the last request (input + cache read + cache write), when known."""
    model: str | None
    messages: int
    savings: list[Savings] = field(default_factory=list)
    """What the loaded extensions saved the bill on this branch (their ``savings`` answers)."""
    basis_reason: str = ""
    """Why the figures are estimates (when ``basis == "estimated"``)."""
    notes: list[str] = field(default_factory=list)

    @property
    def free_tokens(self) -> int:
        return max(0, self.context_window - self.used_tokens - self.reserve_tokens)

    def window_categories(self) -> list[Category]:
        """The sent categories plus free space and the compaction reserve (when the window is known)."""
        out = list(self.categories)
        if self.context_window > 0:
            reserve = min(self.reserve_tokens, max(0, self.context_window - self.used_tokens))
            if reserve:
                out.append(Category("reserve", category_label("reserve"), 0, reserve, reserve, "grey37"))
            out.append(
                Category("free", category_label("free"), 0, self.free_tokens, self.free_tokens, "grey23")
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "contextWindow": self.context_window,
            "usedTokens": self.used_tokens,
            "estimatedTokens": self.estimated_tokens,
            "reportedTokens": self.reported_tokens,
            "basis": self.basis,
            "basisReason": self.basis_reason,
            "reserveTokens": self.reserve_tokens,
            "freeTokens": self.free_tokens,
            "messages": self.messages,
            "categories": [c.to_json() for c in self.window_categories()],
            "largest": [i.to_json() for i in self.items],
            "withheld": [w.to_json() for w in self.withheld],
            "savings": [savings_json(s) for s in self.savings],
            "notes": self.notes,
        }


def _title(message: AgentMessage) -> str:
    def clip(text: str, width: int = 60) -> str:
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 1] + "…"

    if isinstance(message, UserMessage):
        return f"user: {clip(text_of(message.content))}"
    if isinstance(message, AssistantMessage):
        calls = [b for b in message.content if isinstance(b, ToolCall)]
        if calls:
            first = calls[0]
            args = clip(compact_json(first.arguments), 50)
            more = f" +{len(calls) - 1}" if len(calls) > 1 else ""
            return f"assistant → {first.name}({args}){more}"
        return f"assistant: {clip(message.text())}"
    if isinstance(message, ToolResultMessage):
        return f"{message.tool_name} result: {clip(text_of(message.content), 50)}"
    if isinstance(message, CustomMessage):
        return f"{message.custom_type}: {clip(text_of(message.content), 50)}"
    if isinstance(message, BashExecutionMessage):
        return f"!{clip(message.command, 50)}"
    if isinstance(message, CompactionSummaryMessage):
        return "compaction summary"
    return "branch summary"


def _same(a: AgentMessage, b: AgentMessage) -> bool:
    return a is b or a == b


def attribute_entries(
    sent: Sequence[AgentMessage],
    branch_messages: Sequence[AgentMessage],
    entry_ids: Sequence[str],
    visibility: Mapping[str, EntryVisibility],
) -> list[str | None]:
    """The entry id of each sent message: the branch's messages in order, minus the hidden ones, a replaced
    one matching its replacement; anything else (an injected nudge) has none."""
    expected: list[tuple[AgentMessage, str]] = []
    for message, entry_id in zip(branch_messages, entry_ids, strict=True):
        answer = visibility.get(entry_id)
        if answer is not None and answer.state == "hidden":
            continue
        if answer is not None and answer.state == "replaced" and answer.replacement is not None:
            expected.append((answer.replacement, entry_id))
        else:
            expected.append((message, entry_id))
    out: list[str | None] = []
    used = [False] * len(expected)
    keys: list[str | None] = [None] * len(expected)
    j = 0

    def claim(k: int) -> None:
        nonlocal j
        used[k] = True
        out.append(expected[k][1])
        j = max(j, k + 1)

    for message in sent:
        # the next one in order; else an equal one anywhere (moved); else the same message re-rendered
        # (same role and timestamp, e.g. a note the filter rewrites in place); else injected for this request
        k = next((k for k in range(j, len(expected)) if not used[k] and _same(expected[k][0], message)), None)
        if k is None:
            k = next(
                (k for k in range(len(expected)) if not used[k] and _same(expected[k][0], message)), None
            )
        if k is None:
            stamp = getattr(message, "timestamp", None)
            k = next(
                (
                    k
                    for k in range(len(expected))
                    if not used[k]
                    and stamp is not None
                    and type(expected[k][0]) is type(message)
                    and getattr(expected[k][0], "timestamp", None) == stamp
                ),
                None,
            )
        if k is None:
            key = _content_key(message)
            for c in range(len(expected)):
                if used[c]:
                    continue
                if keys[c] is None:
                    keys[c] = _content_key(expected[c][0])  # computed once, only when a message needs it
                if keys[c] == key:
                    k = c
                    break
        if k is None:
            out.append(None)
        else:
            claim(k)
    return out


def _content_key(message: AgentMessage) -> str:
    """The message without its timestamp (the in-memory copy of an extension message and its entry may
    carry timestamps a few milliseconds apart)."""
    from caddie.ai.messages import message_to_json

    data = message_to_json(message)
    data.pop("timestamp", None)
    return compact_json(data)


def compute_context_stats(
    *,
    system_prompt: str,
    tools: Sequence[Tool],
    sent: Sequence[AgentMessage],
    sent_entry_ids: Sequence[str | None],
    branch_messages: Sequence[AgentMessage],
    entry_ids: Sequence[str],
    visibility: Mapping[str, EntryVisibility],
    model: Model | None,
    reserve_tokens: int,
    savings: Sequence[Savings] = (),
    changed_after: Callable[[str | None], bool] | None = None,
) -> ContextStats:
    """Categories, the largest items and what is withheld, for one request (see the module docstring).

    ``changed_after(entry_id)``: whether what is sent changed after that entry (an extension began to hide or
    shrink something, a compaction): then the provider's count of the last request describes another view
    and is not used to scale the estimates."""
    chars: dict[str, int] = {"system": utf16_len(system_prompt), "tools": tool_schema_chars(tools)}
    items: list[Item] = []
    for message, entry_id in zip(sent, sent_entry_ids, strict=True):
        total = 0
        parts = message_parts(message)
        for key, n in parts:
            chars[key] = chars.get(key, 0) + n
            total += n
        if total:
            main = max(parts, key=lambda p: p[1])[0]
            call_id = message.tool_call_id if isinstance(message, ToolResultMessage) else None
            items.append(Item(entry_id, main, _title(message), total, tokens_of(total), call_id))

    estimated = {k: tokens_of(v) for k, v in chars.items() if v}
    estimated_total = sum(estimated.values())

    # the provider's count of the last request, and this view's estimate of that same request
    reported: int | None = None
    scale = 1.0
    basis_reason = "no provider-reported usage on this branch yet"
    last_index = next(
        (
            i
            for i in range(len(sent) - 1, -1, -1)
            if isinstance(sent[i], AssistantMessage) and _usable(sent[i])  # type: ignore[arg-type]
        ),
        None,
    )
    if last_index is not None:
        last = sent[last_index]
        assert isinstance(last, AssistantMessage)
        u = last.usage
        count = u.input + u.cache_read + u.cache_write
        before = utf16_len(system_prompt) + tool_schema_chars(tools)
        before += sum(n for m in sent[:last_index] for _, n in message_parts(m))
        if last.api == "faux":
            basis_reason = "the scripted faux model reports its own estimate, not a provider's count"
        elif u.estimated:
            basis_reason = (
                f"the model's server reports no usage (caddie estimated the last request at {count:,} tokens)"
            )
        elif changed_after is not None and changed_after(sent_entry_ids[last_index]):
            basis_reason = (
                f"what is sent changed since the last request (reported: {count:,} tokens), "
                "so that count no longer describes it"
            )
        elif count > 0 and before > 0:
            reported = count
            scale = count / tokens_of(before)
    basis = "reported" if reported is not None else "estimated"

    categories: list[Category] = []
    tool_names = sorted(k for k in estimated if k.startswith("tool:"))
    for key, est in estimated.items():
        tokens = round(est * scale)
        colour = category_colour(key, tool_names.index(key) if key in tool_names else 0)
        categories.append(Category(key, category_label(key), chars[key], tokens, est, colour))
    categories.sort(key=lambda c: -c.tokens)
    items.sort(key=lambda i: -i.chars)

    by_id = {eid: m for m, eid in zip(branch_messages, entry_ids, strict=True)}
    withheld: list[Withheld] = []
    for entry_id, answer in visibility.items():
        if answer.state not in ("hidden", "replaced") or entry_id not in by_id:
            continue
        original = tokens_of(sum(n for _, n in message_parts(by_id[entry_id])))
        now = 0
        if answer.state == "replaced" and answer.replacement is not None:
            now = tokens_of(sum(n for _, n in message_parts(answer.replacement)))
        withheld.append(Withheld(entry_id, answer.state, answer.reason, original, now, answer.cause_entry_id))

    return ContextStats(
        categories=categories,
        items=items[:TOP_ITEMS],
        withheld=withheld,
        used_tokens=sum(c.tokens for c in categories),
        estimated_tokens=estimated_total,
        context_window=model.context_window if model is not None else 0,
        reserve_tokens=reserve_tokens,
        basis=basis,
        reported_tokens=reported,
        basis_reason=basis_reason if reported is None else "",
        model=model.ref if model is not None else None,
        messages=len(sent),
        savings=list(savings),
    )


def _usable(message: AssistantMessage) -> bool:
    u = message.usage
    return message.stop_reason not in ("error", "aborted") and (u.input + u.cache_read + u.cache_write) > 0

"""How RPC mode encodes what it sends: session events, models, compaction results and ``get_tree`` nodes as Pi
writes them (fields Pi leaves undefined are omitted, not null)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from caddie.ai.model import Model
from caddie.modes.serialize import event_to_json, to_json
from caddie.runtime.session_api import SessionStats
from caddie.session.entries import entry_to_json
from caddie.session.store import TreeNode


def rpc_event(event: Any) -> dict[str, Any]:
    """A session event as Pi's RPC mode writes it: fields Pi leaves undefined are omitted, not null."""
    out = event_to_json(event)
    kind = out.get("type")
    if kind in ("turn_start", "turn_end"):  # Pi's turn events carry no index or time
        out.pop("turnIndex", None)
        out.pop("timestamp", None)
    elif kind in ("session_info_changed", "bash_execution_update"):
        out = {k: v for k, v in out.items() if v is not None}
    elif kind in ("tool_execution_update", "tool_execution_end"):
        for key in ("partialResult", "result"):
            value = out.get(key)
            if isinstance(value, dict) and value.get("details") is None:
                value.pop("details", None)
    elif kind == "compaction_end":
        if isinstance(out.get("result"), dict):
            out["result"] = compaction_result_json(out["result"])
        if out.get("errorMessage") is None:
            out.pop("errorMessage", None)
    return out


def model_json(model: Model) -> dict[str, Any]:
    """A model as Pi serialises it: optional fields that are unset are left out."""
    data = to_json(model)
    return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


def compaction_result_json(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if v is not None or k == "details"}


def stats_json(stats: SessionStats) -> dict[str, Any]:
    """Pi's ``getSessionStats`` shape (``sessionFile`` left out for an in-memory session)."""
    tokens = stats.tokens
    out: dict[str, Any] = {}
    if stats.session_file is not None:
        out["sessionFile"] = stats.session_file
    out.update(
        sessionId=stats.session_id,
        userMessages=stats.user_messages,
        assistantMessages=stats.assistant_messages,
        toolCalls=stats.tool_calls,
        toolResults=stats.tool_results,
        totalMessages=stats.total_messages,
        tokens={
            "input": tokens.input,
            "output": tokens.output,
            "cacheRead": tokens.cache_read,
            "cacheWrite": tokens.cache_write,
            "total": tokens.total,
        },
        cost=stats.cost,
    )
    if stats.tokens_estimated:  # caddie's addition: some usage is estimated (its server reported none)
        out["tokensEstimated"] = True
    usage = stats.context_usage
    if usage is not None:
        out["contextUsage"] = {
            "tokens": usage.tokens,
            "contextWindow": usage.context_window,
            "percent": usage.percent,
        }
        if usage.estimated:
            out["contextUsage"]["estimated"] = True
    return out


def tree_json(roots: Sequence[TreeNode], label_times: dict[str, str]) -> str:
    """Pi's ``get_tree`` nodes (``entry``, ``children``, ``label``, ``labelTimestamp``) as JSON text, built
    with an explicit stack so depth costs no recursion."""

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    parts = ["["]
    stack: list[tuple[Iterator[TreeNode], str, list[bool]]] = [(iter(roots), "]", [True])]
    while stack:
        children, closing, first = stack[-1]
        node = next(children, None)
        if node is None:
            stack.pop()
            parts.append(closing)
            continue
        if not first[0]:
            parts.append(",")
        first[0] = False
        tail: dict[str, Any] = {}
        if node.label is not None:
            tail["label"] = node.label
            if node.entry.id in label_times:
                tail["labelTimestamp"] = label_times[node.entry.id]
        parts.append(dumps({"entry": entry_to_json(node.entry)})[:-1] + ',"children":[')
        stack.append((iter(node.children), "]" + ("," + dumps(tail)[1:] if tail else "}"), [True]))
    return "".join(parts)

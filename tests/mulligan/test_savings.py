"""mulligan's savings, computed from the session, against what the fake server actually received.

The same scripted session runs twice through ``caddie -p``: with mulligan (the model rewinds one bloated
``cat`` and shrinks another) and with mulligan disabled (the same work, no mulligan calls). For every request
the two runs share, the savings the session reports minus mulligan's own overhead equal the difference between
the two requests the server recorded; every request's ``sent`` figures equal what the server got with the
markers; prices follow the model's input and cache-read rates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model, ModelCost
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.savings import SavingsTracker, compute_savings
from caddie.session.entries import MessageEntry
from caddie.session.store import SessionStore
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

COST = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
MODEL = Model(id="fake-model", name="fake-model", api="openai-completions", provider="fake", cost=COST)
NOTE = {
    "what_happened": "Dumped all of big.txt; only its first lines mattered.",
    "true_current_state": "big.txt holds 700 numbered lines.",
    "next": "Read the first lines with head -n 3.",
}
NO_NUDGES = {"mulligan": {"nudges": {"bloatReminder": False, "perTurnDrift": False}}}


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000)
        yield Caddie(home, project, llm)


def units(text: str) -> int:
    """Characters as mulligan counts them (UTF-16 code units, like JavaScript's ``length``)."""
    return len(text.encode("utf-16-le")) // 2


def wire_tokens(message: dict[str, Any]) -> int:
    """mulligan's per-message estimate (characters / 4, rounded up), counted on a message as sent."""
    content = message.get("content")
    if isinstance(content, str):
        chars = units(content)
    elif isinstance(content, list):
        chars = sum(units(p.get("text", "")) for p in content)
    else:
        chars = 0
    for call in message.get("tool_calls") or []:
        arguments = json.dumps(json.loads(call["function"]["arguments"]), separators=(",", ":"))
        chars += units(call["function"]["name"]) + units(arguments)
    return math.ceil(chars / 4)


def conversation(request: fl.RecordedRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m["role"] not in ("system", "developer")]


def request_tokens(request: fl.RecordedRequest) -> int:
    return sum(wire_tokens(m) for m in conversation(request))


def request_cost(request: fl.RecordedRequest, previous: fl.RecordedRequest | None) -> float:
    """The prefix shared with the previous request at the cache-read rate, the rest at the input rate."""
    now = conversation(request)
    before = conversation(previous) if previous is not None else []
    shared = 0
    for a, b in zip(now, before, strict=False):
        if a != b:
            break
        shared += 1
    cached = sum(wire_tokens(m) for m in now[:shared])
    fresh = sum(wire_tokens(m) for m in now[shared:])
    return (cached * COST.cache_read + fresh * COST.input) / 1e6


def run(caddie: Caddie, settings: dict[str, Any], replies: list[fl.Reply]) -> list[fl.RecordedRequest]:
    (caddie.home / "agent" / "settings.json").write_text(json.dumps(settings))
    before = len(caddie.llm.llm_requests)
    caddie.llm.push(*replies)
    result = caddie.run("-p", "--model", "fake/fake-model", "What do big.txt and big2.txt hold?")
    assert result.returncode == 0, result.stderr
    assert caddie.llm.pending == 0
    return caddie.llm.llm_requests[before:]


def test_savings_equal_the_difference_the_server_recorded(caddie: Caddie) -> None:
    (caddie.project / "big.txt").write_text("".join(f"line {i:05d} {'.' * 24}\n" for i in range(700)))
    (caddie.project / "big2.txt").write_text("".join(f"row {i:05d} {'-' * 22}\n" for i in range(600)))
    work = [
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, id="c_rw"),
        fl.tool_call("bash", {"command": "head -n 3 big.txt"}, id="c_head"),
        fl.tool_call("bash", {"command": "cat big2.txt"}, id="c_cat2"),
        fl.tool_call(
            "mulligan_shrink",
            {"target": {"by_tool_call_id": "c_cat2"}, "replacement": "big2.txt: 600 rows 'row NNNNN ---'."},
            id="c_sh",
        ),
        fl.tool_call("bash", {"command": "wc -l big.txt big2.txt"}, id="c_wc"),
        fl.tool_call("bash", {"command": "echo checked"}, id="c_echo"),
        fl.text("big.txt holds numbered lines, big2.txt numbered rows."),
    ]
    with_mulligan = run(caddie, NO_NUDGES, work)
    without = run(
        caddie,
        {"disabledExtensions": ["mulligan"]},
        [r for r in work if not r.tool_calls or not r.tool_calls[0].name.startswith("mulligan_")],
    )
    assert len(with_mulligan) == 8 and len(without) == 6

    [session_file] = caddie.session_files()[:1]
    store = SessionStore.open(session_file, repair=False)
    savings = compute_savings(store.entries(), store.branch(), model=MODEL)
    assert savings.requests_total == 8
    # the rewind takes effect on the third request, the shrink on the sixth: requests 3..8 are changed
    assert len(savings.requests) == 6
    answered_by = [
        e.id
        for e in store.branch()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    ]
    index = [answered_by.index(r.entry_id) for r in savings.requests]
    assert index == [2, 3, 4, 5, 6, 7]

    # with the markers: exactly what the server received (tokens and price)
    for r, i in zip(savings.requests, index, strict=True):
        assert r.sent_tokens == request_tokens(with_mulligan[i])
        assert r.sent_cost == pytest.approx(request_cost(with_mulligan[i], with_mulligan[i - 1]))

    # without mulligan: the requests the two runs share (on request i ↔ off request j)
    pairs = {3: 2, 4: 3, 6: 4, 7: 5}
    by_index = dict(zip(index, savings.requests, strict=True))
    for i, j in pairs.items():
        r = by_index[i]
        assert r.saved_tokens > 0
        assert (
            request_tokens(without[j]) - request_tokens(with_mulligan[i])
            == r.saved_tokens - r.overhead_tokens
        )
        # mulligan's own messages sit in the cached prefix of these requests
        off_cost = request_cost(without[j], without[j - 1])
        assert r.unfiltered_cost == pytest.approx(off_cost + r.overhead_tokens * COST.cache_read / 1e6)
    big = math.ceil(len((caddie.project / "big.txt").read_text()) / 4)
    assert by_index[3].saved_tokens >= big  # the whole cat is gone (its call too)
    assert savings.tokens == sum(r.saved_tokens for r in savings.requests) > 5 * big
    assert savings.cost > 0 and savings.priced
    # the first request after the rewind: without the marker, only mulligan's call, result and note would
    # be new (input rate) and the hidden cat a cache read; with it, the same three are new after the prompt
    first = by_index[2]
    assert first.unfiltered_cost == pytest.approx(
        (first.unfiltered_tokens - first.overhead_tokens) * COST.cache_read / 1e6
        + first.overhead_tokens * COST.input / 1e6
    )
    assert first.saved_cost == pytest.approx(first.saved_tokens * COST.cache_read / 1e6)

    # no price without a model; mulligan disabled in settings: nothing was filtered, nothing saved
    unpriced = compute_savings(store.entries(), store.branch())
    assert unpriced.tokens == savings.tokens and unpriced.cost == 0 and not unpriced.priced
    assert all(r.saved_cost is None for r in unpriced.requests)
    off = compute_savings(store.entries(), store.branch(), config=MulliganConfig(enabled=False))
    assert off.requests == () and off.tokens == 0 and off.requests_total == 8


def test_no_markers_no_savings_and_no_cache_price_means_input_rate() -> None:
    from caddie.session.store import SessionStore as Store

    store = Store.in_memory()
    store.append_message(UserMessage("go"))
    for n in range(3):
        call = ToolCall(f"c{n}", "bash", {"command": "echo x"})
        store.append_message(
            AssistantMessage(
                [call], api="openai-completions", provider="fake", model="m", stop_reason="toolUse"
            )
        )
        store.append_message(ToolResultMessage(f"c{n}", "bash", [TextContent("x" * 4000)], is_error=False))
    store.append_message(
        AssistantMessage([TextContent("done")], api="openai-completions", provider="fake", model="m")
    )
    plain = compute_savings(store.entries(), store.branch(), model=MODEL)
    assert plain.requests == () and plain.requests_total == 4

    # a shrink of the first result, written as the tool writes it (pinned to the result's entry)
    first_result = next(
        e for e in store.branch() if isinstance(getattr(e, "message", None), ToolResultMessage)
    )
    store.move_leaf(store.branch()[-2].id)  # before the last assistant message: a new branch from there
    store.append_custom(
        "mulligan:shrink",
        {
            "schema": "pi-mulligan",
            "v": 1,
            "kind": "shrink",
            "id": "s1",
            "seq": 1,
            "ts": 1,
            "target": {"by_tool_call_id": "c0"},
            "replacement": "4000 x",
            "pinnedEntryId": first_result.id,
        },
    )
    store.append_message(
        AssistantMessage([TextContent("ok")], api="openai-completions", provider="fake", model="m")
    )
    flat = Model(id="m", name="m", api="openai-completions", provider="fake", cost=ModelCost(input=2.0))
    savings = compute_savings(store.entries(), store.branch(), model=lambda p, m: flat if m == "m" else None)
    [r] = savings.requests
    assert r.saved_tokens == 1000 - math.ceil(len("<context-shrunk>\n4000 x\n</context-shrunk>") / 4)
    assert r.overhead_tokens == 0
    assert r.saved_cost == pytest.approx(r.saved_tokens * 2.0 / 1e6)
    assert savings.cost == pytest.approx(r.saved_cost)


def _assistant(text: str = "", call: ToolCall | None = None) -> AssistantMessage:
    content: list[TextContent | ThinkingContent | ToolCall] = [call] if call else [TextContent(text)]
    return AssistantMessage(content, api="openai-completions", provider="fake", model="m")


def _shrink_entry(store: SessionStore, pinned: str, seq: int) -> None:
    data = {"schema": "pi-mulligan", "v": 1, "kind": "shrink", "id": f"s{seq}", "seq": seq, "ts": seq}
    data.update(target={"by_tool_call_id": "x"}, replacement="short", pinnedEntryId=pinned)
    store.append_custom("mulligan:shrink", data)


def test_compaction_keeps_a_shrink_whose_target_it_kept_and_drops_one_it_summarised() -> None:
    store = SessionStore.in_memory()
    tracker = SavingsTracker()  # kept up to date after every append, as a footer would
    snapshots = []

    def step(entry_id: str) -> str:
        snapshots.append(tracker.update(store.entries(), store.branch()))
        return entry_id

    step(store.append_message(UserMessage("go")))
    ids = []
    for n in range(2):
        ids.append(step(store.append_message(_assistant(call=ToolCall(f"c{n}", "bash", {"command": "x"})))))
        ids.append(step(store.append_message(ToolResultMessage(f"c{n}", "bash", [TextContent("y" * 4000)]))))
    _shrink_entry(store, ids[1], 1)  # the first result
    _shrink_entry(store, ids[3], 2)  # the second result
    step(store.append_message(_assistant("before")))
    step(store.append_compaction("summary of the start", first_kept_entry_id=ids[2], tokens_before=2100))
    step(store.append_message(UserMessage("more")))
    step(store.append_message(_assistant("after")))

    savings = compute_savings(store.entries(), store.branch())
    assert snapshots[-1] == savings
    assert [len(s.requests) for s in snapshots] == [0, 0, 0, 0, 0, 1, 1, 1, 2]
    before, after = savings.requests
    saving = 1000 - math.ceil(len("<context-shrunk>\nshort\n</context-shrunk>") / 4)
    assert before.saved_tokens == 2 * saving  # both results shrunk
    assert after.saved_tokens == saving  # the compaction summarised the first result away; the second is kept
    assert after.unfiltered_tokens < before.unfiltered_tokens


def test_the_tracker_starts_over_on_another_branch() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("go"))
    call = store.append_message(_assistant(call=ToolCall("c0", "bash", {"command": "x"})))
    result = store.append_message(ToolResultMessage("c0", "bash", [TextContent("y" * 4000)]))
    _shrink_entry(store, result, 1)
    store.append_message(_assistant("one"))
    tracker = SavingsTracker()
    assert len(tracker.update(store.entries(), store.branch()).requests) == 1
    store.move_leaf(call)  # back before the result: a branch without it
    store.append_message(ToolResultMessage("c0", "bash", [TextContent("short")]))
    store.append_message(_assistant("two"))
    again = tracker.update(store.entries(), store.branch())
    assert again == compute_savings(store.entries(), store.branch())
    assert again.requests == () and again.requests_total == 2


def test_the_footer_totals_and_the_tracker_agree_with_a_fresh_computation_after_every_append() -> None:
    store = SessionStore.in_memory()
    tracker = SavingsTracker(model=MODEL)  # advanced after every append, as the footer does
    checked = 0

    def step(entry_id: str) -> str:
        nonlocal checked
        tracker.advance(store.entries(), store.branch())
        fresh = compute_savings(store.entries(), store.branch(), model=MODEL)
        assert tracker.totals() == (fresh.tokens, fresh.cost, fresh.priced)
        assert tracker.savings() == fresh
        checked += 1
        return entry_id

    step(store.append_message(UserMessage("go")))
    results = []
    for n in range(4):
        step(store.append_message(_assistant(call=ToolCall(f"c{n}", "bash", {"command": "x"}))))
        results.append(
            step(store.append_message(ToolResultMessage(f"c{n}", "bash", [TextContent("y" * 800)])))
        )
        if n == 1:
            _shrink_entry(store, results[0], 1)  # markers appear mid-session: the branch is indexed from here
    step(store.append_message(_assistant("before")))
    _shrink_entry(store, results[2], 2)
    step(store.append_message(_assistant("more")))
    step(store.append_compaction("summary", first_kept_entry_id=results[1], tokens_before=900))
    for text in ("after", "again"):
        step(store.append_message(UserMessage(text)))
        step(store.append_message(_assistant(text)))
    assert checked == 16 and tracker.totals()[0] > 0 and tracker.totals()[2]

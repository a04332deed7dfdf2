"""mulligan's savings, computed from the session, against what the fake server actually received and billed.

The same scripted session runs twice through ``caddie -p``: with mulligan at its defaults (its four tool schemas on
every request, the bloat reminder and drift line, the model rewinds one bloated ``cat`` and shrinks another, each
call in a reply of its own) and with mulligan disabled (the same work, no mulligan calls). The server bills each
request as ``ceil(characters / 4)`` of everything it carries and reports the prefix it shares with the previous
request as a cache read. Per request, the session's figures equal what the server received (messages, nudges,
schemas); in total, the net figure ``caddie context --stats --json`` shows (the ``savings`` event's answer) is
the difference of the two bills, tokens and dollars, within 1%.
"""

from __future__ import annotations

import dataclasses
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

COST = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=0.0)
MODEL = Model(id="fake-model", name="fake-model", api="openai-completions", provider="fake", cost=COST)
NOTE = {
    "what_happened": "Dumped all of big.txt; only its first lines mattered.",
    "true_current_state": "big.txt holds 700 numbered lines.",
    "next": "Read the first lines with head -n 3.",
}


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        cost = {"input": COST.input, "output": COST.output, "cacheRead": COST.cache_read, "cacheWrite": 0}
        llm.write_models_json(
            home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000, cost=cost
        )
        yield Caddie(home, project, llm)


def units(text: str) -> int:
    """Characters as mulligan counts them (UTF-16 code units, like JavaScript's ``length``)."""
    return len(text.encode("utf-16-le")) // 2


def message_chars(message: dict[str, Any]) -> int:
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
    return chars


def tools_chars(request: fl.RecordedRequest, prefix: str = "") -> int:
    tools = [t for t in request.body.get("tools") or [] if t["function"]["name"].startswith(prefix)]
    return units(json.dumps(tools, separators=(",", ":"), ensure_ascii=False)) if tools else 0


def conversation(request: fl.RecordedRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m["role"] not in ("system", "developer")]


def message_tokens(request: fl.RecordedRequest) -> int:
    """mulligan's per-message estimate (characters / 4, rounded up per message) of the conversation sent."""
    return sum(math.ceil(message_chars(m) / 4) for m in conversation(request))


def billed(request: fl.RecordedRequest) -> int:
    """What the server bills: every character the request carries (system prompt, tools, messages) / 4."""
    return math.ceil((tools_chars(request) + sum(message_chars(m) for m in request.messages)) / 4)


def cached(request: fl.RecordedRequest, previous: fl.RecordedRequest | None) -> int:
    """The prefix a cache would serve: the tools and the messages shared with the previous request."""
    if previous is None or request.body.get("tools") != previous.body.get("tools"):
        return 0
    chars = tools_chars(request)
    for a, b in zip(request.messages, previous.messages, strict=False):
        if a != b:
            break
        chars += message_chars(a)
    return math.ceil(chars / 4)


OUTPUT = 20
"""Output tokens each reply reports."""


def dollars(requests: list[fl.RecordedRequest]) -> float:
    """The bill: input (cache reads at their rate) and the replies' output."""
    total = 0.0
    for i, r in enumerate(requests):
        hit = cached(r, requests[i - 1] if i else None)
        total += (hit * COST.cache_read + (billed(r) - hit) * COST.input + OUTPUT * COST.output) / 1e6
    return total


class Billing:
    """Replies from a script, each reporting the usage the server bills for its request (cache reads too)."""

    def __init__(self, replies: list[fl.Reply]) -> None:
        self.replies = list(replies)
        self.previous: fl.RecordedRequest | None = None

    def __call__(self, request: fl.RecordedRequest) -> fl.Reply:
        hit = cached(request, self.previous)
        self.previous = request
        reply = self.replies.pop(0)
        reply.usage = fl.UsageSpec(input=billed(request) - hit, output=OUTPUT, cache_read=hit)
        return reply


def run(caddie: Caddie, settings: dict[str, Any], replies: list[fl.Reply]) -> list[fl.RecordedRequest]:
    (caddie.home / "agent" / "settings.json").write_text(json.dumps(settings))
    before = len(caddie.llm.llm_requests)
    billing = Billing(replies)
    caddie.llm.push(*[billing] * len(replies))
    result = caddie.run("-p", "--model", "fake/fake-model", "What do big.txt and big2.txt hold?")
    assert result.returncode == 0, result.stderr
    assert caddie.llm.pending == 0
    return caddie.llm.llm_requests[before:]


def script() -> list[fl.Reply]:
    return [
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


def test_the_net_figure_is_the_difference_of_the_two_bills(caddie: Caddie) -> None:
    (caddie.project / "big.txt").write_text("".join(f"line {i:05d} {'.' * 24}\n" for i in range(700)))
    (caddie.project / "big2.txt").write_text("".join(f"row {i:05d} {'-' * 22}\n" for i in range(600)))
    with_mulligan = run(caddie, {}, script())
    without = run(
        caddie,
        {"disabledExtensions": ["mulligan"]},
        [r for r in script() if not r.tool_calls[:1] or not r.tool_calls[0].name.startswith("mulligan_")],
    )
    assert len(with_mulligan) == 8 and len(without) == 6
    schema_chars = tools_chars(with_mulligan[0], "mulligan_")
    assert schema_chars > 4000 and all(tools_chars(r, "mulligan_") == schema_chars for r in with_mulligan)
    assert tools_chars(without[0], "mulligan_") == 0
    # the bloat reminder rode on the cats' results, and the drift line on the request after the first one
    assert any("KB added to your context" in json.dumps(r.messages) for r in with_mulligan)
    assert any("Previous turn " in json.dumps(r.messages) for r in with_mulligan)

    [session_file] = caddie.session_files()[:1]
    store = SessionStore.open(session_file, repair=False)
    schema = math.ceil(schema_chars / 4)
    savings = compute_savings(store.entries(), store.branch(), model=MODEL, schema=schema)
    assert savings.requests_total == 8 and savings.cached
    answered_by = [
        e.id
        for e in store.branch()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    ]
    assert [r.entry_id for r in savings.requests] == answered_by
    # the rewind takes effect on the third request, the shrink on the sixth
    assert [r.lighter for r in savings.requests] == [False, False, True, True, True, True, True, True]

    # with mulligan: what the server received (messages and nudges; a result with its reminder goes over the
    # wire as one text, its two parts joined by a newline the estimate does not count), and the schemas
    for r, request in zip(savings.requests, with_mulligan, strict=True):
        assert 0 <= message_tokens(request) - (r.sent_tokens + r.nudge_tokens) <= 1
        assert r.schema_tokens == schema
    # the requests that follow a reply calling only mulligan have no counterpart; the others are paired
    assert [r.extra for r in savings.requests] == [False, False, True, False, False, True, False, False]
    pairs = {0: 0, 1: 1, 3: 2, 4: 3, 6: 4, 7: 5}
    for i, j in pairs.items():
        assert savings.requests[i].without_tokens == message_tokens(without[j])
    assert savings.requests[2].without_tokens is None and savings.requests[2].net_tokens() < 0

    # in total: the net figure the views show is the difference of the bills, within 1%
    (caddie.home / "agent" / "settings.json").write_text("{}")  # mulligan loaded, as when the session ran
    shown = caddie.run("context", "--stats", "--json", str(session_file))
    assert shown.returncode == 0, shown.stderr
    [report] = json.loads(shown.stdout)["savings"]
    bill = sum(map(billed, without)) - sum(map(billed, with_mulligan))
    assert bill > 10_000
    assert abs(report["tokens"] - bill) <= 0.01 * bill
    assert report["grossTokens"] == savings.gross_tokens > report["tokens"]  # the gross leaves out its costs
    money = dollars(without) - dollars(with_mulligan)  # cache reads are cheap: the dollars saved are few
    assert report["cached"] and money > 0 and abs(report["cost"] - money) <= 0.01 * dollars(without)
    assert report["status"].startswith("mulligan \u2212")
    # without prices there are tokens and no dollars; with mulligan disabled nothing is filtered, and the
    # schemas alone make the figure a cost
    unpriced = compute_savings(store.entries(), store.branch(), schema=schema)
    assert unpriced.tokens == savings.tokens and unpriced.cost == 0 and not unpriced.priced
    off = compute_savings(store.entries(), store.branch(), config=MulliganConfig(enabled=False))
    assert off.gross_tokens == 0 and off.lighter == 0 and off.requests_total == 8


def test_no_markers_no_gross_and_the_schemas_are_a_cost() -> None:
    store = SessionStore.in_memory()
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
    plain = compute_savings(store.entries(), store.branch(), model=MODEL, schema=300)
    assert plain.lighter == 0 and plain.requests_total == 4 and plain.gross_tokens == 0
    assert plain.tokens == -4 * 300 and plain.cost < 0
    # "when-needed": no schema until the tools were brought in
    needed = MulliganConfig.model_validate({"tools": "when-needed"})
    assert compute_savings(store.entries(), store.branch(), schema=300, config=needed).tokens == 0

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
    r = savings.requests[-1]
    assert r.lighter and savings.lighter == 1
    assert r.gross_tokens == 1000 - math.ceil(len("<context-shrunk>\n4000 x\n</context-shrunk>") / 4)
    assert r.net_tokens() == r.gross_tokens and r.overhead_tokens == 0
    assert not savings.cached  # no request reported a cache read: every token at the input rate
    assert r.net_cost(savings.cached) == pytest.approx(r.gross_tokens * 2.0 / 1e6)
    assert savings.cost == pytest.approx(r.gross_tokens * 2.0 / 1e6)


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
    assert [s.lighter for s in snapshots] == [0, 0, 0, 0, 0, 1, 1, 1, 2]
    before, after = [r for r in savings.requests if r.lighter]
    saving = 1000 - math.ceil(len("<context-shrunk>\nshort\n</context-shrunk>") / 4)
    assert before.gross_tokens == 2 * saving  # both results shrunk
    assert after.gross_tokens == saving  # the compaction summarised the first result away; the second is kept
    assert after.unfiltered_tokens < before.unfiltered_tokens


def test_the_tracker_starts_over_on_another_branch() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("go"))
    call = store.append_message(_assistant(call=ToolCall("c0", "bash", {"command": "x"})))
    result = store.append_message(ToolResultMessage("c0", "bash", [TextContent("y" * 4000)]))
    _shrink_entry(store, result, 1)
    store.append_message(_assistant("one"))
    tracker = SavingsTracker()
    assert tracker.update(store.entries(), store.branch()).lighter == 1
    store.move_leaf(call)  # back before the result: a branch without it
    store.append_message(ToolResultMessage("c0", "bash", [TextContent("short")]))
    store.append_message(_assistant("two"))
    again = tracker.update(store.entries(), store.branch())
    assert again == compute_savings(store.entries(), store.branch())
    assert again.lighter == 0 and again.requests_total == 2


def test_the_footer_totals_and_the_tracker_agree_with_a_fresh_computation_after_every_append() -> None:
    store = SessionStore.in_memory()
    tracker = SavingsTracker(model=MODEL, schema=120, base=900)  # advanced after every append, as the footer
    checked = 0

    def step(entry_id: str) -> str:
        nonlocal checked
        tracker.advance(store.entries(), store.branch())
        fresh = compute_savings(store.entries(), store.branch(), model=MODEL, schema=120, base=900)
        tokens, cost, priced = tracker.totals()
        assert (tokens, priced) == (fresh.tokens, fresh.priced) and cost == pytest.approx(fresh.cost)
        summary, expected = tracker.summary(), fresh.totals()
        assert tracker.savings() == fresh and summary.cost == pytest.approx(expected.cost)
        assert dataclasses.replace(summary, cost=0.0) == dataclasses.replace(expected, cost=0.0)
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
    assert checked == 16 and tracker.summary().gross_tokens > 0 and tracker.totals()[2]

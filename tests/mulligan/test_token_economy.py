"""The token-economy benchmark's machinery, exercised on one small episode (the full run: bench/token_economy).

The same episode — a whole-file ``cat`` of a big log, then ordinary work — runs through the real ``caddie -p``
against the fake server with mulligan off and on. With mulligan, the model gets the bloat reminder, rewinds the
``cat`` behind a note in the same reply as its next step, and every later request is billed less; the waste is
billed once, not on every request.
"""

from __future__ import annotations

import dataclasses

import pytest
from bench.token_economy.episodes import NO_WASTE, episode, work
from bench.token_economy.runner import billed_tokens, request_chars, run_episode, seen_once_chars


def test_one_episode_both_ways_mulligan_bills_fewer_input_tokens() -> None:
    ep = dataclasses.replace(episode("log-cat"), work=work("k", 10, "pricing"))
    off = run_episode(ep, "off", timeout=120)
    on = run_episode(ep, "on", timeout=120)
    needed = run_episode(ep, "on", tools_mode="when-needed", timeout=120)

    assert on.nudged and on.mulligan_calls == ["mulligan_rewind"]
    assert not off.nudged and off.mulligan_calls == [] and off.mulligan_schema == 0
    assert on.mulligan_schema > 0
    # prompt, cat, grep, 10 work turns, answer; with mulligan the rewind rides with the grep (parallel calls)
    assert off.requests == on.requests == 13
    assert on.answer == off.answer == ep.answer

    waste = off.billed[1] - off.billed[0]  # what the cat's call and result added
    assert waste > 10_000
    # until the rewind both carry the waste; afterwards only the run without mulligan does
    assert 0 < on.billed[1] - on.billed[0] - waste < 100  # the same call and result, plus the reminder
    for before, after in zip(off.billed[2:], on.billed[2:], strict=True):
        assert before - after > waste * 0.8
    assert on.total < off.total * 0.5
    # what the session reports it saved (caddie context --stats --json) is the measured difference
    assert abs(on.reported["tokens"] - (off.total - on.total)) <= 0.01 * (off.total - on.total)
    assert on.reported["grossTokens"] > on.reported["tokens"]

    # tools "when-needed": the first request goes without mulligan's tools; they come with the reminder (on the
    # request that carries the cat's result) and stay; the model rewinds all the same, and saves a bit more
    assert needed.schema_requests == needed.requests - 1 and on.schema_requests == on.requests
    assert needed.billed[0] == off.billed[0] and needed.mulligan_calls == ["mulligan_rewind"]
    assert needed.answer == ep.answer and needed.total < on.total
    measured = off.total - needed.total
    assert abs(needed.reported["tokens"] - measured) <= 0.01 * measured


def test_a_session_without_waste_pays_for_the_schemas_only_with_tools_always() -> None:
    ep = dataclasses.replace(episode(NO_WASTE), work=work("k", 8, "pricing"))
    off = run_episode(ep, "off", timeout=120)
    always = run_episode(ep, "on", timeout=120)
    needed = run_episode(ep, "on", tools_mode="when-needed", timeout=120)
    assert off.requests == always.requests == needed.requests == 9
    assert not always.nudged and always.mulligan_calls == [] == needed.mulligan_calls
    schemas = always.mulligan_schema * always.requests  # each request rounds up once: ±1 token a request
    assert abs(always.total - off.total - schemas) <= always.requests and schemas > 0.2 * off.total
    assert needed.billed == off.billed and needed.schema_requests == 0
    # the figure the session shows says so: the schemas' cost, and nothing for when-needed
    assert always.reported["tokens"] == pytest.approx(off.total - always.total, rel=0.01)
    assert always.reported["status"].startswith("mulligan +")
    assert needed.reported["tokens"] == 0 and needed.reported["grossTokens"] == 0


def test_billing_counts_system_prompt_tools_and_messages() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "x" * 40},
            {"role": "user", "content": [{"type": "text", "text": "y" * 8}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "🔄"},
        ],
        "tools": [],
    }
    assert billed_tokens(body) == 14  # (40 + 8 + len("bash") + len("{}") + 2) / 4: 🔄 is two UTF-16 units


def test_seen_once_keeps_a_waste_result_on_its_first_request_only() -> None:
    call = {"id": "w1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"cat x"}'}}
    waste = [
        {"role": "assistant", "content": "look", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "w1", "content": "z" * 4000},
    ]
    first = {"messages": [{"role": "user", "content": "go"}, *waste], "tools": []}
    second = {"messages": [*first["messages"], {"role": "assistant", "content": "done"}], "tools": []}
    plain = {"messages": [{"role": "user", "content": "go"}], "tools": []}
    assert seen_once_chars([plain, first, second], {"w1"}) == [
        request_chars(plain),
        request_chars(first),  # the request that carries the result first: paid in full
        request_chars(second) - 4000 - len("bash") - len('{"command":"cat x"}'),
    ]

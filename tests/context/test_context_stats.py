"""``caddie context --stats`` and ``caddie session show --stats`` against what the fake server received.

A session with a bloated ``cat`` that the model shrinks runs through ``caddie -p``; ``context --stats --json``
then describes the next request. Continuing the session sends exactly that request plus the new prompt, and
the categories add up to it, part by part (system prompt, tool schemas, messages by role and by tool).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.extensions.bundled.mulligan.savings import compute_savings
from caddie.session.store import SessionStore
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

NO_NUDGES = {"mulligan": {"nudges": {"bloatReminder": False, "perTurnDrift": False}}}


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000)
        (home / "agent" / "settings.json").write_text(json.dumps(NO_NUDGES))
        yield Caddie(home, project, llm)


def units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def wire_chars(message: dict[str, Any]) -> tuple[int, int]:
    """(content chars, tool-call chars) of one message as sent (arguments as compact JSON)."""
    content = message.get("content")
    if isinstance(content, str):
        chars = units(content)
    elif isinstance(content, list):
        chars = sum(units(p.get("text", "")) for p in content)
    else:
        chars = 0
    calls = 0
    for call in message.get("tool_calls") or []:
        arguments = json.dumps(
            json.loads(call["function"]["arguments"]), separators=(",", ":"), ensure_ascii=False
        )
        calls += units(call["function"]["name"]) + units(arguments)
    return chars, calls


def by_category(request: fl.RecordedRequest) -> dict[str, int]:
    """The recorded request's characters, split the way ``--stats`` splits them."""
    body = request.body
    assert isinstance(body, dict)
    out: dict[str, int] = {}

    def add(key: str, n: int) -> None:
        if n:
            out[key] = out.get(key, 0) + n

    names = {}
    for m in request.messages:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    for m in request.messages:
        content, calls = wire_chars(m)
        if m["role"] in ("system", "developer"):
            add("system", content)
        elif m["role"] == "user":
            add("user", content)
        elif m["role"] == "assistant":
            add("assistant", content + calls)
        elif m["role"] == "tool":
            add(f"tool:{names[m['tool_call_id']]}", content)
    tools = [
        {k: t["function"][k] for k in ("name", "description", "parameters")} for t in body.get("tools") or []
    ]
    add("tools", units(json.dumps(tools, separators=(",", ":"), ensure_ascii=False)))
    return out


def test_stats_categories_add_up_to_the_request_actually_sent(caddie: Caddie) -> None:
    (caddie.project / "big.txt").write_text("".join(f"line {i:05d} {'.' * 24}\n" for i in range(700)))
    caddie.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call(
            "mulligan_shrink",
            {"target": {"by_tool_call_id": "c_cat"}, "replacement": "big.txt: 700 numbered lines."},
            id="c_sh",
        ),
        fl.tool_call("bash", {"command": "wc -l big.txt"}, id="c_wc"),
        fl.text("big.txt holds 700 numbered lines."),
    )
    first = caddie.run("-p", "--model", "fake/fake-model", "What is in big.txt?")
    assert first.returncode == 0, first.stderr

    shown = caddie.run("context", "--stats", "--json")
    assert shown.returncode == 0, shown.stderr
    stats = json.loads(shown.stdout)
    sent = {c["key"]: c["chars"] for c in stats["categories"] if c["key"] not in ("free", "reserve")}
    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file, repair=False)
    savings = compute_savings(store.entries(), store.branch())  # before the continuation adds a request

    caddie.llm.push(fl.text("ok"))
    again = caddie.run("-c", "-p", "--model", "fake/fake-model", "and now?")
    assert again.returncode == 0, again.stderr
    recorded = by_category(caddie.llm.last_request)
    recorded["user"] -= units("and now?")  # the one message the continuation adds
    assert sent == recorded
    assert set(sent) == {"system", "tools", "user", "assistant", "tool:bash", "tool:mulligan_shrink"}

    # tokens: the provider reported the last request (the fake server's usage), so categories are scaled
    assert stats["basis"] == "reported" and stats["reportedTokens"] > 0
    assert stats["usedTokens"] == sum(
        c["tokens"] for c in stats["categories"] if c["key"] not in ("free", "reserve")
    )
    window = sum(c["tokens"] for c in stats["categories"])
    assert window == stats["contextWindow"] == 100_000

    # what mulligan withholds: the cat's result, replaced; its entry id is a real entry of the session
    ids = {e.id for e in store.entries()}
    [withheld] = stats["withheld"]
    assert withheld["state"] == "replaced" and withheld["entryId"] in ids
    assert withheld["originalTokens"] > 5000 > withheld["sentTokens"]
    largest = stats["largest"]
    assert 0 < len(largest) <= 10 and all(i["entryId"] in ids for i in largest)
    assert largest == sorted(largest, key=lambda i: -i["chars"])
    # the savings /context reports are the session's own: the gross is what the markers kept off; the net
    # (what the bill shows) takes off mulligan's schemas, its call and result, and the request the shrink took
    # (in a session this short, more than the shrink saved: the figure says so)
    [report] = stats["savings"]
    assert report["source"] == "mulligan" and report["grossTokens"] == savings.gross_tokens > 5000
    assert report["tokens"] < report["grossTokens"] and report["status"].startswith("mulligan ")

    # the text view says the same in words
    text = caddie.run("context", "--stats")
    assert text.returncode == 0, text.stderr
    for label in ("System prompt", "Tool schemas", "Tool results: bash", "Free space", "Compaction reserve"):
        assert label in text.stdout
    assert withheld["entryId"] in text.stdout and "shrunk by mulligan_shrink" in text.stdout
    assert "provider-reported" in text.stdout

    # session show --stats says what context --stats says (now with the continuation)
    [report] = json.loads(caddie.run("context", "--stats", "--json").stdout)["savings"]
    show = caddie.run("session", "show", "--stats")
    assert show.returncode == 0, show.stderr
    assert f"saved          {report['status']}  ({report['details']})" in show.stdout
    assert f"gross {report['grossTokens']:,} tokens" in show.stdout


def test_json_mode_reports_savings_events(caddie: Caddie) -> None:
    (caddie.project / "big.txt").write_text("x" * 30_000 + "\n")
    caddie.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call(
            "mulligan_shrink",
            {"target": {"by_tool_call_id": "c_cat"}, "replacement": "30,000 x."},
            id="c_sh",
        ),
        fl.tool_call("bash", {"command": "echo next"}, id="c_echo"),
        fl.tool_call("bash", {"command": "echo more"}, id="c_more"),
        fl.tool_call("bash", {"command": "echo last"}, id="c_last"),
        fl.text("done"),
    )
    result = caddie.run("--mode", "json", "-p", "--model", "fake/fake-model", "look")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    savings = [
        e for e in events if e.get("type") == "extension_event" and e.get("name") == "mulligan_savings"
    ]
    assert savings, [e.get("type") for e in events]
    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file, repair=False)
    expected = compute_savings(store.entries(), store.branch())
    last = savings[-1]["data"]
    assert last["grossTokens"] == expected.gross_tokens > 20_000
    assert last["requests"] == expected.lighter and last["status"].startswith("mulligan \u2212")
    # the footer's figure is the one the views show
    [report] = json.loads(caddie.run("context", "--stats", "--json").stdout)["savings"]
    assert last["tokens"] == report["tokens"] < last["grossTokens"]


def test_export_charts_tokens_per_request_with_and_without_mulligan(caddie: Caddie) -> None:
    import re

    (caddie.project / "big.txt").write_text("y" * 24_000 + "\n")
    caddie.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call(
            "mulligan_shrink", {"target": {"by_tool_call_id": "c_cat"}, "replacement": "24,000 y."}, id="c_sh"
        ),
        fl.tool_call("bash", {"command": "echo one"}, id="c_1"),
        fl.text("done"),
    )
    assert caddie.run("-p", "--model", "fake/fake-model", "look").returncode == 0
    out = caddie.run("export", "-o", "page.html")
    assert out.returncode == 0, out.stderr
    html = (caddie.project / "page.html").read_text()
    assert '<section id="savings-mulligan"' in html and "What mulligan saved" in html
    [report] = json.loads(caddie.run("context", "--stats", "--json").stdout)["savings"]
    assert report["status"] in html and f"gross {report['grossTokens']:,} tokens" in html

    def series(label: str) -> list[int]:
        found = re.findall(rf"<title>request (\d+): ([\d,]+) tokens {label}</title>", html)
        return [int(v.replace(",", "")) for _, v in found]

    with_, without = series("with mulligan"), series("without mulligan")
    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file, repair=False)
    plain = compute_savings(store.entries(), store.branch())
    schema = with_[0] - plain.requests[0].with_tokens  # every request carried mulligan's schemas
    assert schema > 1000
    savings = compute_savings(store.entries(), store.branch(), schema=schema)
    assert with_ == [r.with_tokens for r in savings.requests] and len(with_) == 4
    # the request after the reply that only shrank has no counterpart without mulligan
    assert [r.extra for r in savings.requests] == [False, False, True, False]
    assert without == [r.without_tokens for r in savings.requests if not r.extra]
    assert savings.gross_tokens == report["grossTokens"] > 5000

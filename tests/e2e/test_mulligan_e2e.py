"""mulligan end to end: ``caddie -p`` in a subprocess, a scripted model, assertions on what the server received.

The model bloats its context with ``cat`` of big files, gets the bloat reminder, rewinds, shrinks, cancels
and audits; the user sets a checkpoint with ``/mulligan_checkpoint`` and the model rewinds to it. Every
expected text is the exact wording of the spec (/work/shared/specs/mulligan.md, A.2–A.9).
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

from caddie.ai.messages import convert_to_llm, message_from_json
from caddie.ai.model import Context, Model
from caddie.ai.providers.openai_completions import convert_messages
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

MODEL = ("--model", "fake/fake-model")
TAIL = "If wasteful, `mulligan_rewind` to undo the turn or `mulligan_shrink` to compact a result."
BLOAT_NUDGE = f"Previous turn produced 1 bloated result. {TAIL}"
NOTE = {
    "what_happened": "Dumped all of big.txt; only its first lines mattered.",
    "true_current_state": "big.txt holds 700 numbered lines.",
    "next": "Read the first lines with head -n 3.",
}
RENDERED_NOTE = (
    "## 🔄 Mulligan rewind (last_tool_call_group)\n\n"
    "**What happened:** Dumped all of big.txt; only its first lines mattered.\n\n"
    "**Current true state:** big.txt holds 700 numbered lines.\n\n"
    "**Next:** Read the first lines with head -n 3."
)
SUMMARY = "big2.txt: 600 lines 'row NNNNN' padded with dots."


def reminder(kb: int) -> str:
    return (
        f"\n---\n~{kb} KB added to your context. `mulligan_shrink` to summarize, or `mulligan_rewind` if the "
        "whole call was a mistake."
    )


def write_big_files(project: Path) -> tuple[str, str]:
    """big.txt (25 200 bytes) and big2.txt (19 800 bytes): both over bash's 16 KB bloat threshold."""
    big = "".join(f"line {i:05d} {'.' * 24}\n" for i in range(700))
    big2 = "".join(f"row {i:05d} {'-' * 22}\n" for i in range(600))
    (project / "big.txt").write_text(big)
    (project / "big2.txt").write_text(big2)
    return big, big2


def results(request: fl.RecordedRequest) -> dict[str, str]:
    """Tool results of one request by tool call id, as sent (OpenAI: text blocks joined with newlines)."""
    return {m["tool_call_id"]: m["content"] for m in request.messages if m["role"] == "tool"}


def call_ids(request: fl.RecordedRequest) -> set[str]:
    return {c["id"] for m in request.messages for c in m.get("tool_calls") or []}


def user_texts(request: fl.RecordedRequest) -> list[str]:
    out = []
    for m in request.messages:
        if m["role"] == "user":
            content = m["content"]
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def nudges(request: fl.RecordedRequest) -> list[str]:
    return [t for t in user_texts(request) if t.startswith("Previous turn ")]


def entries(caddie: Caddie) -> list[dict[str, Any]]:
    [session] = caddie.session_files()
    return [json.loads(line) for line in session.read_text().splitlines()]


def customs(all_entries: list[dict[str, Any]], custom_type: str) -> list[dict[str, Any]]:
    return [e for e in all_entries if e["type"] == "custom" and e["customType"] == custom_type]


def entry_of_call(all_entries: list[dict[str, Any]], call_id: str, role: str) -> dict[str, Any]:
    """The message entry of the assistant that issued ``call_id`` (role ``assistant``) or of its result."""
    for e in all_entries:
        if e["type"] != "message" or e["message"]["role"] != role:
            continue
        m = e["message"]
        if role == "toolResult" and m["toolCallId"] == call_id:
            return e
        if role == "assistant" and any(b.get("id") == call_id for b in m["content"]):
            return e
    raise AssertionError(f"no {role} entry for {call_id}")


def chars(content: list[dict[str, Any]]) -> int:
    return sum(len(b["text"]) for b in content if b["type"] == "text")


def wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages without the system prompt, tool-call arguments parsed."""
    out = []
    for m in copy.deepcopy(messages):
        if m["role"] in ("system", "developer"):
            continue
        for call in m.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        out.append(m)
    return out


def context_as_sent(caddie: Caddie) -> dict[str, Any]:
    """``caddie context --json``, its messages converted as the openai-completions provider sends them."""
    result = caddie.run("context", "--json")
    assert result.returncode == 0, result.stderr
    payload: dict[str, Any] = json.loads(result.stdout)
    model = Model(
        id="fake-model", name="fake-model", api="openai-completions", provider="fake", base_url=caddie.llm.url
    )
    context = Context(None, convert_to_llm([message_from_json(m) for m in payload["messages"]]))
    payload["wire"] = wire(convert_messages(model, context))
    return payload


def assert_context_is_the_next_request(caddie: Caddie, prompt: str) -> fl.RecordedRequest:
    """What ``caddie context`` shows is what the next ``-c`` request carries, plus the new prompt."""
    shown = context_as_sent(caddie)
    before = len(caddie.llm.llm_requests)
    caddie.llm.push(fl.text("noted"))
    result = caddie.run("-p", "-c", prompt)
    assert result.returncode == 0, result.stderr
    [request] = caddie.llm.llm_requests[before:]
    sent = wire(request.messages)
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": prompt}]}
    assert sent[:-1] == shown["wire"]
    assert request.system == shown["systemPrompt"]
    assert request.tool_names == shown["tools"]
    return request


# --------------------------------------------------------------------------------------------------


def test_bloat_rewind_shrink_cancel_audit(caddie: Caddie) -> None:
    big, big2 = write_big_files(caddie.project)
    caddie.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="call_cat"),
        fl.tool_call("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, id="call_rw"),
        fl.tool_call("bash", {"command": "cat big2.txt"}, id="call_cat2"),
        fl.tool_call(
            "mulligan_shrink",
            {"target": {"by_tool_call_id": "call_cat2"}, "replacement": SUMMARY, "reason": "shape only"},
            id="call_shrink",
        ),
        fl.tool_call("mulligan_cancel", {"target": {"by_tool_call_id": "call_cat2"}}, id="call_cancel"),
        fl.tool_call("mulligan_audit", {}, id="call_audit"),
        fl.tool_call(
            "mulligan_shrink",
            {"target": {"by_tool_name": "bash", "occurrence": "last"}, "replacement": SUMMARY},
            id="call_shrink_again",
        ),
        fl.text("Both files hold numbered lines."),
    )
    result = caddie.run("-p", *MODEL, "What is in big.txt and big2.txt?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Both files hold numbered lines.\n"
    reqs = caddie.llm.llm_requests
    assert len(reqs) == 8

    # 1. the big result carries the bloat reminder; the drift nudge (no delta yet, one bloated result) is last
    assert results(reqs[1])["call_cat"] == big + "\n" + reminder(25)
    assert user_texts(reqs[1])[-1] == BLOAT_NUDGE

    # 2. the rewind: exact result, the call and its result gone, the note in their place as a user message
    assert results(reqs[2])["call_rw"] == (
        "Mulligan: rewound last_tool_call_group. 2 messages will be hidden from your view starting next turn. "
        "Note left."
    )
    assert "call_cat" not in call_ids(reqs[2]) and "call_cat" not in results(reqs[2])
    assert user_texts(reqs[2]) == ["What is in big.txt and big2.txt?", RENDERED_NOTE]
    assert [m["role"] for m in reqs[2].messages] == ["system", "user", "assistant", "tool", "user"]
    assert all("call_cat" not in call_ids(r) for r in reqs[2:])

    # 3. the shrink: the next request carries the stamped summary instead of the result
    stored = entries(caddie)
    original = entry_of_call(stored, "call_cat2", "toolResult")["message"]["content"]
    assert results(reqs[3])["call_cat2"] == big2 + "\n" + reminder(19)
    shed = math.ceil(chars(original) / 4) - math.ceil(len(SUMMARY) / 4)
    assert results(reqs[4])["call_shrink"] == (
        "Mulligan: shrink recorded. Matched: yes.\n"
        f"Context updated: 1 result(s) summarized (~{shed} tokens shed). "
        "Continue exactly where you left off — no re-verification or re-reading is needed."
    )
    assert results(reqs[4])["call_cat2"] == f"<context-shrunk>\n{SUMMARY}\n</context-shrunk>"

    # 4. the cancel: the result is back verbatim, reminder included
    assert results(reqs[5])["call_cancel"] == (
        "Mulligan: marker cancelled. The transform will no longer apply from the next turn on."
    )
    assert results(reqs[5])["call_cat2"] == results(reqs[3])["call_cat2"]

    # 5. the audit
    report = results(reqs[6])["call_audit"].splitlines()
    assert report[0] == "## Mulligan audit — context you are currently carrying"
    total = re.fullmatch(r"Total \(filtered\): ~(\d+) tokens  \(estimate, confidence: medium\)", report[1])
    assert total and int(total[1]) > len(big2) // 4  # big2.txt is back in view; big.txt is not
    assert int(total[1]) < (len(big) + len(big2)) // 4
    assert report[2:6] == [
        "Active markers: 1 rewind (last_tool_call_group), 0 shrink, 0 checkpoints [], 1 cancelled (retired)",
        "Protected: will not rewind past first:user/latest:user.",
        "",
        "Top messages by size:",
    ]
    assert report[6].endswith("  toolResult  bash cat big2.txt  ⚠ above bloat threshold (16 KB)")
    assert (
        report[-1]
        == "Suggestion: the `bash cat big2.txt` result is the largest contributor. Consider mulligan_shrink."
    )

    # 6. a new shrink of the same result (by tool name) applies again
    assert results(reqs[7])["call_cat2"] == f"<context-shrunk>\n{SUMMARY}\n</context-shrunk>"

    # the nudge appeared on one request only (the rewind turn and later turns are quiet)
    assert [i for i, r in enumerate(reqs) if nudges(r)] == [1]

    # the session file: markers are custom entries, the note a custom_message, no nudge persisted
    stored = entries(caddie)
    [rewind] = customs(stored, "mulligan:rewind")
    first_shrink, second_shrink = customs(stored, "mulligan:shrink")
    [cancel] = customs(stored, "mulligan:cancel")
    assert rewind["data"]["granularity"] == "last_tool_call_group"
    assert rewind["data"]["hideEntryIds"] == [
        entry_of_call(stored, "call_cat", "assistant")["id"],
        entry_of_call(stored, "call_cat", "toolResult")["id"],
    ]
    assert rewind["data"]["note"] == NOTE and rewind["data"]["excludeToolCallId"] == "call_rw"
    result_id = entry_of_call(stored, "call_cat2", "toolResult")["id"]
    assert first_shrink["data"]["pinnedEntryId"] == second_shrink["data"]["pinnedEntryId"] == result_id
    assert first_shrink["data"]["replacement"] == SUMMARY and first_shrink["data"]["reason"] == "shape only"
    assert cancel["data"]["targetId"] == first_shrink["data"]["id"]
    for marker in (rewind, first_shrink, second_shrink, cancel):
        assert marker["data"]["schema"] == "pi-mulligan" and marker["data"]["v"] == 1
    [note] = [e for e in stored if e["type"] == "custom_message"]
    assert note["customType"] == "mulligan:note" and note["content"] == RENDERED_NOTE
    assert note["display"] is True and note["details"]["rewindId"] == rewind["id"]
    assert not [e for e in stored if e.get("customType") in ("mulligan:nudge", "mulligan:high-water")]
    assert "Previous turn" not in "".join(caddie.session_files()[0].read_text().splitlines())
    # the big output is still on disk, verbatim: nothing is ever deleted
    assert entry_of_call(stored, "call_cat", "toolResult")["message"]["content"][0]["text"] == big

    # `caddie context` shows the filtered view the next request carries (rewind and shrink applied)
    nxt = assert_context_is_the_next_request(caddie, "Anything else?")
    assert "call_cat" not in call_ids(nxt)
    assert results(nxt)["call_cat2"] == f"<context-shrunk>\n{SUMMARY}\n</context-shrunk>"
    assert RENDERED_NOTE in user_texts(nxt)


def test_checkpoint_command_and_checkpoint_rewind(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("Plan: write fix.txt."))
    assert caddie.run("-p", *MODEL, "Plan the fix.").returncode == 0
    [plan] = [e for e in entries(caddie) if e["type"] == "message" and e["message"]["role"] == "assistant"]

    # the command runs without a model call; an invalid name sets nothing
    for command in ("/mulligan_checkpoint Not Valid", "/mulligan_checkpoint before-fix"):
        result = caddie.run("-p", "-c", command)
        assert result.returncode == 0, result.stderr
    assert len(caddie.llm.llm_requests) == 1
    [label] = [e for e in entries(caddie) if e["type"] == "label"]
    assert label["targetId"] == plan["id"] and label["label"] == "mulligan:checkpoint:before-fix"

    refused = "Mulligan: refused — checkpoint 'before-fix' not found on this branch."
    note = {
        "what_happened": "Patched fix.txt before the plan was agreed.",
        "true_current_state": "fix.txt was written; nothing was agreed.",
        "next": "Ask which fix is wanted.",
    }
    caddie.llm.push(
        fl.tool_call("bash", {"command": "echo patched > fix.txt"}, id="call_fix"),
        fl.tool_call(
            "mulligan_rewind",
            {"note": note, "granularity": "checkpoint", "checkpoint": "before-fix"},
            id="call_rw",
        ),
        fl.tool_call(
            "mulligan_rewind",
            {"note": note, "granularity": "checkpoint", "checkpoint": "before-fix"},
            id="call_rw_again",
        ),
        fl.text("Rewound; which fix do you want?"),
    )
    result = caddie.run("-p", "-c", "Apply it.")
    assert result.returncode == 0, result.stderr
    reqs = caddie.llm.llm_requests[1:]
    assert len(reqs) == 4
    assert user_texts(reqs[0])[-1] == "Apply it."

    after = reqs[2]
    assert results(after)["call_rw"] == (
        "Mulligan: rewound checkpoint. 3 messages will be hidden from your view starting next turn. Note left. "
        "⚠ The hidden span modified files/ran side-effecting commands (see note). Those effects PERSIST on "
        "disk; do not blindly redo them."
    )
    rendered = (
        "## 🔄 Mulligan rewind (checkpoint)\n\n"
        "**What happened:** Patched fix.txt before the plan was agreed.\n\n"
        "**Current true state:** fix.txt was written; nothing was agreed.\n\n"
        "<files-modified>\nfix.txt\n</files-modified>\n\n"
        "<bash-side-effects>\necho patched > fix.txt\n</bash-side-effects>\n\n"
        "**Next:** Ask which fix is wanted."
    )
    # back at the checkpoint: the user's later prompt and the patch are hidden, the note follows the rewind
    assert wire(after.messages) == [
        {"role": "user", "content": [{"type": "text", "text": "Plan the fix."}]},
        {"role": "assistant", "content": "Plan: write fix.txt."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_rw",
                    "type": "function",
                    "function": {
                        "name": "mulligan_rewind",
                        "arguments": {"note": note, "granularity": "checkpoint", "checkpoint": "before-fix"},
                    },
                }
            ],
        },
        {"role": "tool", "content": results(after)["call_rw"], "tool_call_id": "call_rw"},
        {"role": "user", "content": [{"type": "text", "text": rendered}]},
    ]
    # the checkpoint was consumed
    assert results(reqs[3])["call_rw_again"] == refused
    assert (caddie.project / "fix.txt").read_text() == "patched\n"  # the effect persists

    stored = entries(caddie)
    labels = [(e["targetId"], e.get("label")) for e in stored if e["type"] == "label"]
    assert labels == [(plan["id"], "mulligan:checkpoint:before-fix"), (plan["id"], None)]
    [rewind] = customs(stored, "mulligan:rewind")
    [prompt] = [
        e for e in stored if e["type"] == "message" and e["message"]["content"][0].get("text") == "Apply it."
    ]
    assert rewind["data"]["checkpoint"] == "before-fix"
    assert rewind["data"]["hideEntryIds"] == [
        prompt["id"],
        entry_of_call(stored, "call_fix", "assistant")["id"],
        entry_of_call(stored, "call_fix", "toolResult")["id"],
    ]
    assert rewind["data"]["ledger"] == {
        "readFiles": [],
        "modifiedFiles": ["fix.txt"],
        "bashSideEffects": ["echo patched > fix.txt"],
    }

    nxt = assert_context_is_the_next_request(caddie, "Use plan B.")
    assert "Apply it." not in user_texts(nxt) and "call_fix" not in call_ids(nxt)


def test_the_drift_nudge_is_recomputed_never_stacked_never_persisted(caddie: Caddie) -> None:
    big, _ = write_big_files(caddie.project)
    caddie.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="call_cat"),
        fl.tool_call("bash", {"command": "head -n 2 big.txt"}, id="call_head"),
        fl.tool_call("bash", {"command": "echo small"}, id="call_echo"),
        fl.text("done"),
    )
    result = caddie.run("-p", *MODEL, "Look at big.txt.")
    assert result.returncode == 0, result.stderr
    reqs = caddie.llm.llm_requests
    assert len(reqs) == 4

    metrics = [e["data"] for e in customs(entries(caddie), "mulligan:turn-metric")]
    assert [m["turnIndex"] for m in metrics] == [0, 1, 2, 3]
    assert metrics[0]["deltaTokens"] is None and metrics[0]["bloatHit"] is True
    delta = metrics[1]["deltaTokens"]
    assert delta > len(big) // 4 and metrics[1]["grewOverThreshold"] is True

    # at most one nudge per request, always the last message; each request recomputes it
    assert nudges(reqs[0]) == []
    assert nudges(reqs[1]) == [BLOAT_NUDGE] == user_texts(reqs[1])[-1:]
    [drift] = nudges(reqs[2])
    assert user_texts(reqs[2])[-1] == drift and BLOAT_NUDGE not in user_texts(reqs[2])
    k = re.fullmatch(
        rf"Previous turn added ~(\d+(?:\.\d)?)k tokens to your context\. {re.escape(TAIL)}", drift
    )
    assert k and abs(float(k[1]) * 1000 - delta) <= 50
    assert nudges(reqs[3]) == []  # mean of the recent deltas fell below the threshold
    assert [m["role"] for m in reqs[3].messages].count("user") == 1

    stored = entries(caddie)
    assert not [e for e in stored if e.get("customType") in ("mulligan:nudge", "mulligan:high-water")]
    assert "Previous turn" not in caddie.session_files()[0].read_text()

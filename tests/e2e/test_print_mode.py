"""``caddie -p`` end to end: a real subprocess, real tools on real files, a fake OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from caddie.session.store import SessionStore
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


def test_a_multi_turn_task_reads_edits_and_runs_a_file(caddie: Caddie) -> None:
    (caddie.project / "greet.py").write_text('print("hello wrld")\n')
    caddie.llm.push(
        fl.tool_call("read", {"path": "greet.py"}, id="call_read", chunk_size=7),
        fl.tool_call(
            "edit",
            {"path": "greet.py", "edits": [{"oldText": "wrld", "newText": "world"}]},
            id="call_edit",
        ),
        fl.tool_call("bash", {"command": "python3 greet.py"}, id="call_run"),
        fl.text("Fixed the typo; it now prints hello world."),
    )
    result = caddie.run("-p", "--model", "fake/fake-model", "fix the typo in greet.py and run it")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Fixed the typo; it now prints hello world.\n"
    assert (caddie.project / "greet.py").read_text() == 'print("hello world")\n'

    requests = caddie.llm.requests
    assert len(requests) == 4
    first = requests[0]
    assert first.last_user_text == "fix the typo in greet.py and run it"
    assert first.tool_names[:4] == ["read", "bash", "edit", "write"]
    assert (
        first.system is not None
        and "Available tools:" in first.system
        and str(caddie.project) in first.system
    )
    assert requests[1].tool_results == [("call_read", 'print("hello wrld")\n')]
    assert requests[2].tool_results[-1] == ("call_edit", "Successfully replaced 1 block(s) in greet.py.")
    assert requests[3].tool_results[-1] == ("call_run", "hello world\n")
    assert all(r.headers.get("authorization") == "Bearer fake-key" for r in requests)

    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file)
    roles = [m.role for m in store.build_context().messages]
    assert roles == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert "fake-key" not in session_file.read_text()


def test_the_prompt_can_come_from_stdin(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("It is a diff."))
    result = caddie.run("-p", "--model", "fake/fake-model", "what is this?", stdin="--- a\n+++ b\n")
    assert result.returncode == 0, result.stderr
    assert caddie.llm.requests[0].last_user_text == "what is this?\n\n--- a\n+++ b\n"


def test_json_mode_streams_one_event_per_line(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("Hi there", chunk_size=2))
    result = caddie.run("--mode", "json", "--model", "fake/fake-model", "hello")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["type"] == "session"
    types = [line["type"] for line in lines[1:]]
    assert types[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert types[-3:] == ["turn_end", "agent_end", "agent_settled"]
    deltas = [line["assistantMessageEvent"] for line in lines if line["type"] == "message_update"]
    assert "".join(d.get("delta", "") for d in deltas if d["type"] == "text_delta") == "Hi there"
    assert all("partial" not in d for d in deltas)
    end = [line for line in lines if line["type"] == "message_end"][-1]
    assert end["message"]["role"] == "assistant" and end["message"]["content"] == [
        {"type": "text", "text": "Hi there"}
    ]


def test_json_mode_into_a_reader_that_stops_early_ends_quietly(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("Hi there, a reply in many pieces", chunk_size=2))
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", "--mode", "json", "--model", "fake/fake-model", "hello"],
        cwd=caddie.project, env=caddie.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    code = proc.wait(60)
    stderr = proc.stderr.read().decode()
    assert json.loads(first)["type"] == "session"
    assert stderr == ""
    assert code == 0


def test_a_provider_error_exits_1_with_one_line(caddie: Caddie) -> None:
    caddie.llm.push(fl.error(401, "Incorrect API key provided: fake-key"))
    result = caddie.run("-p", "--model", "fake/fake-model", "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "401" in result.stderr
    assert "fake-key" not in result.stderr and "Traceback" not in result.stderr


def test_continue_resumes_the_latest_session(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("first answer"), fl.text("second answer"))
    assert caddie.run("-p", "--model", "fake/fake-model", "one").returncode == 0
    result = caddie.run("-p", "-c", "two")
    assert result.returncode == 0, result.stderr
    texts = [m.get("content") for m in caddie.llm.requests[1].messages]
    assert any("first answer" in json.dumps(t) for t in texts)
    assert len(caddie.session_files()) == 1


def test_no_session_writes_no_file(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("ok"))
    assert caddie.run("-p", "--no-session", "--model", "fake/fake-model", "hi").returncode == 0
    assert caddie.session_files() == []


def test_rate_limits_are_retried_honouring_retry_after(caddie: Caddie) -> None:
    import time

    caddie.llm.push(fl.error(429, "Rate limit reached", retry_after=1), fl.text("worth the wait"))
    start = time.monotonic()
    result = caddie.run("--mode", "json", "--model", "fake/fake-model", "hello")
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    retry = next(e for e in events if e["type"] == "auto_retry_start")
    assert retry["attempt"] == 1 and retry["delayMs"] == 1000 and "429" in retry["errorMessage"]
    assert any(e["type"] == "auto_retry_end" and e["success"] for e in events)
    assert len(caddie.llm.requests) == 2 and elapsed >= 1.0
    final = [e for e in events if e["type"] == "message_end"][-1]["message"]
    assert final["content"] == [{"type": "text", "text": "worth the wait"}]


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_tool_call_with_cut_off_arguments_is_never_run(caddie: Caddie, api: str) -> None:
    caddie.llm.write_models_json(caddie.home / "agent", api=api, contextWindow=100_000)
    caddie.llm.push(
        fl.tool_call("bash", '{"command": "echo ran > ran1.txt', id="call_cut"),
        fl.text("I will resend it."),
    )
    result = caddie.run("-p", "--model", "fake/fake-model", "write the file")

    assert result.returncode == 0, result.stderr
    assert not (caddie.project / "ran1.txt").exists()
    [(call_id, text)] = caddie.llm.requests[1].tool_results
    assert call_id == "call_cut"
    assert text.startswith("The bash call was not run: its arguments are not one complete JSON object (")
    assert text.endswith("Send the call again with complete arguments.")


def test_an_answer_cut_at_the_output_limit_or_empty_says_so_on_stderr(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("Once upon a time there", finish="length"), fl.text(""), fl.text("Fine."))
    cut = caddie.run("-p", "--model", "fake/fake-model", "tell a story")
    assert cut.returncode == 0 and cut.stdout == "Once upon a time there\n"
    assert cut.stderr.strip() == (
        "caddie: the answer stopped at the model's output limit; raise maxTokens for fake/fake-model in "
        "models.json if it needs more room (docs/providers.md)."
    )
    empty = caddie.run("-p", "--model", "fake/fake-model", "say nothing")
    assert empty.returncode == 0 and empty.stdout == ""
    assert empty.stderr.strip() == "caddie: the model returned an empty answer."
    fine = caddie.run("-p", "--model", "fake/fake-model", "ok?")
    assert fine.stdout == "Fine.\n" and fine.stderr == ""

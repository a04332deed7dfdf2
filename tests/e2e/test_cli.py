"""The command line: user mistakes are one clear line (exit 2), never a traceback; subcommands work."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


def one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["-p"], "no prompt given"),
        (["-p", "--model", "nosuch/model", "hi"], "Unknown model 'nosuch/model'"),
        (["-p", "--session", "/nonexistent/x.jsonl", "hi"], "No session file at /nonexistent/x.jsonl"),
        (
            ["-p", "--thinking", "extreme", "--model", "fake/fake-model", "hi"],
            "Unknown thinking level 'extreme'",
        ),
        (
            ["-p", "--tools", "read,telepathy", "--model", "fake/fake-model", "hi"],
            "Unknown tool(s): telepathy",
        ),
        (["-p", "-c", "--no-session", "hi"], "choose one of"),
        (["-p", "--resume", "hi"], "--resume shows a picker"),
        (["session", "show", "/nonexistent.jsonl"], "no session file at /nonexistent.jsonl"),
        (["session", "bogus"], "invalid choice: 'bogus'"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(caddie: Caddie, args: list[str], needle: str) -> None:
    result = caddie.run(*args)
    assert result.returncode == 2, result.stderr
    assert needle in one_line(result.stderr)


def test_no_model_configured_says_what_to_set(caddie: Caddie) -> None:
    (caddie.home / "agent" / "models.json").unlink()
    result = caddie.run("-p", "hello")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    message = result.stderr
    assert message.startswith("caddie: No model is configured.")
    assert "ANTHROPIC_API_KEY" in message and "OPENAI_API_KEY" in message and "--model" in message


def test_a_missing_or_broken_extension_warns_and_the_task_still_runs(caddie: Caddie) -> None:
    (caddie.project / "broken.py").write_text("raise ImportError('needs a module that is not installed')\n")
    caddie.llm.push(fl.text("still here"))
    result = caddie.run("-p", "-e", "missing.py", "-e", "broken.py", "--model", "fake/fake-model", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "still here\n"
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 2 and "Traceback" not in result.stderr
    assert "missing.py" in warnings[0] and "no such extension file" in warnings[0]
    assert "broken.py failed to load: ImportError: needs a module that is not installed" in warnings[1]


def test_a_corrupt_session_file_is_named_with_its_line(caddie: Caddie) -> None:
    bad = caddie.project / "bad.jsonl"
    bad.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n{broken\n{"type":"custom","id":"a","parentId":null,"timestamp":"t","customType":"x"}\n'
    )
    result = caddie.run("-p", "--session", str(bad), "--model", "fake/fake-model", "hi")
    assert result.returncode == 2
    assert one_line(result.stderr).startswith(f"caddie: {bad}:2: not valid JSON")


def test_extension_commands_run_in_print_mode_without_a_model_call(caddie: Caddie) -> None:
    (caddie.project / "hello.py").write_text(
        "def register(api):\n"
        "    async def hi(args, ctx):\n"
        "        api.append_entry('hello', {'args': args})\n"
        "    api.register_command('hello', hi, description='say hi')\n"
    )
    caddie.llm.push(fl.text("first"))
    assert caddie.run("-p", "--model", "fake/fake-model", "start").returncode == 0
    result = caddie.run("-p", "-c", "-e", "hello.py", "/hello world")
    assert result.returncode == 0, result.stderr
    assert len(caddie.llm.requests) == 1
    [session_file] = caddie.session_files()
    last = json.loads(session_file.read_text().splitlines()[-1])
    assert last["type"] == "custom" and last["customType"] == "hello" and last["data"] == {"args": "world"}


def test_session_list_show_tree_and_context(caddie: Caddie) -> None:
    # terminal escapes in stored text (a retitle, a screen clear, a colour) are shown, never obeyed
    caddie.llm.push(fl.text("The answer is \x1b[31m42\x1b[0m."))
    prompt = "What is the answer? \x1b]0;PWNED\x07\x1b[2J"
    assert caddie.run("-p", "--model", "fake/fake-model", prompt).returncode == 0
    listed = caddie.run("session", "list")
    assert listed.returncode == 0 and "What is the answer? ␛]0;PWNED␇␛[2J" in listed.stdout
    [session_file] = caddie.session_files()
    shown = caddie.run("session", "show", str(session_file))
    assert "## user\nWhat is the answer? ␛]0;PWNED␇" in shown.stdout
    assert "The answer is ␛[31m42␛[0m." in shown.stdout
    tree = caddie.run("session", "tree", str(session_file))
    assert "← leaf" in tree.stdout and "model → fake/fake-model" in tree.stdout
    for view in (listed, shown, tree, caddie.run("context", str(session_file))):
        assert "\x1b" not in view.stdout and "\x07" not in view.stdout
    context = caddie.run("context", "--json")
    assert context.returncode == 0, context.stderr
    payload = json.loads(context.stdout)
    assert [m["role"] for m in payload["messages"]] == ["user", "assistant"]
    assert payload["tools"][:4] == ["read", "bash", "edit", "write"]
    assert "Current working directory:" in payload["systemPrompt"]
    text = caddie.run("context")
    assert text.stdout.startswith("# what the model would be sent next (2 messages;")
    assert len(caddie.llm.requests) == 1  # none of these called the model


def test_help_answers_questions(caddie: Caddie) -> None:
    result = caddie.run("--help")
    assert result.returncode == 0
    for needle in (
        "--continue",
        "--session",
        "--no-session",
        "--extension",
        "--trust",
        "--tools",
        "--model",
        "--mode",
        "examples:",
        "CADDIE_DIR",
        "models.json",
    ):
        assert needle in result.stdout, needle


def test_rpc_mode_answers_commands_and_streams_events(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("pong"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", "--mode", "rpc", "--model", "fake/fake-model"],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[dict[str, object]] = []

    def send(obj: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def read_until(pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            obj: dict[str, Any] = json.loads(line)
            lines.append(obj)
            if pred(obj):
                return obj

    send({"id": "1", "type": "get_state"})
    state = read_until(lambda o: o.get("type") == "response")
    assert state["id"] == "1" and state["success"] is True and state["data"]["isStreaming"] is False
    send({"id": "2", "type": "prompt", "message": "ping"})
    read_until(lambda o: o.get("type") == "agent_settled")
    send({"id": "3", "type": "get_last_assistant_text"})
    answer = read_until(lambda o: o.get("id") == "3")
    assert answer["data"] == {"text": "pong"}
    send({"id": "4", "type": "warp_drive"})
    bad = read_until(lambda o: o.get("id") == "4")
    assert bad["success"] is False and "Unknown command" in str(bad["error"])
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    types = [o.get("type") for o in lines]
    assert "message_update" in types and "agent_end" in types


def test_rpc_extension_dialogs_use_the_ui_sub_protocol(caddie: Caddie) -> None:
    (caddie.project / "ask.py").write_text(
        "def register(api):\n"
        "    async def ask(args, ctx):\n"
        "        ok = await ctx.ui.confirm('Deploy?', 'Ship it to production')\n"
        "        name = await ctx.ui.input('Name', 'who')\n"
        "        ctx.ui.notify(f'confirmed={ok} name={name}')\n"
        "    api.register_command('ask', ask)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", "--mode", "rpc", "-e", "ask.py", "--model", "fake/fake-model"],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def next_ui_request() -> dict[str, object]:
        assert proc.stdout is not None
        while True:
            obj = json.loads(proc.stdout.readline())
            if obj.get("type") == "extension_ui_request" and obj.get("method") not in (
                "setStatus",
                "setWidget",
            ):
                return obj

    send({"id": "1", "type": "prompt", "message": "/ask"})
    confirm = next_ui_request()
    assert (
        confirm["method"] == "confirm"
        and confirm["title"] == "Deploy?"
        and confirm["message"] == "Ship it to production"
    )
    send({"type": "extension_ui_response", "id": confirm["id"], "confirmed": True})
    asked = next_ui_request()
    assert asked["method"] == "input" and asked["title"] == "Name"
    send({"type": "extension_ui_response", "id": asked["id"], "value": "Ada"})
    notice = next_ui_request()
    assert notice["method"] == "notify" and notice["message"] == "confirmed=True name=Ada"
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    assert caddie.llm.requests == []


def test_export_writes_one_offline_html_page(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("Exported <b>safely</b>."))
    assert caddie.run("-p", "--model", "fake/fake-model", "say something").returncode == 0
    result = caddie.run("export", "-o", "page.html")
    assert result.returncode == 0, result.stderr
    html = (caddie.project / "page.html").read_text()
    assert result.stdout.strip().endswith("page.html")
    assert "say something" in html and "Exported &lt;b&gt;safely&lt;/b&gt;." in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html


def test_rpc_commands_from_a_file_and_a_dialog_in_a_session_switch(caddie: Caddie) -> None:
    (caddie.project / "guard.py").write_text(
        "def register(api):\n"
        "    async def on_shutdown(event, ctx):\n"
        "        ok = await ctx.ui.confirm('Leave?', 'Switching sessions')\n"
        "        ctx.ui.notify(f'leave={ok}')\n"
        "    api.on('session_shutdown', on_shutdown)\n"
    )
    commands = caddie.project / "commands.jsonl"
    commands.write_text(
        json.dumps({"id": "1", "type": "new_session"})
        + "\n"
        + json.dumps({"id": "2", "type": "get_state"})
        + "\n"
    )
    with commands.open("rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "caddie", "--mode", "rpc", "-e", "guard.py", "--model", "fake/fake-model"],
            cwd=caddie.project,
            env=caddie.env(),
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    asked = [o for o in lines if o.get("type") == "extension_ui_request" and o.get("method") == "confirm"]
    assert asked and asked[0]["title"] == "Leave?"
    state = next(o for o in lines if o.get("id") == "2")
    assert state["success"] is True  # get_state answered while new_session waited for the dialog
    assert any(
        o.get("method") == "notify" and o.get("message") == "leave=False" for o in lines
    )  # EOF cancels it


def test_arguments_that_are_not_utf8_become_u_fffd(caddie: Caddie) -> None:
    """A byte that is not UTF-8 in an argument (Python holds it as a lone surrogate) is U+FFFD everywhere:
    the model gets it so, and the session is written (a lone surrogate used to make every write fail)."""
    caddie.llm.push(fl.text("ok"))
    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"caddie", b"-p", b"--model", b"fake/fake-model", b"half \xff here"],
        cwd=caddie.project,
        env=caddie.env(),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert caddie.llm.llm_requests[0].last_user_text == "half \ufffd here"
    [session] = caddie.session_files()
    assert "half \ufffd here" in session.read_text(encoding="utf-8")

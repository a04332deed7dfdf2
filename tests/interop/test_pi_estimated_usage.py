"""A session whose usage caddie estimated (``"estimated": true``) still opens and continues in Pi 0.84.4.

caddie (``-p``) talks to a server that reports no usage, so both of its replies carry an estimate marked in
their usage. Pi's own SessionManager must open the file and build the same conversation, and Pi must
continue it (``-p --session``) against a server that does report usage; caddie then reads the file both
wrote. Skips (with the reason) where Pi is absent; fails under ``CI=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_PACKAGE, pi_session_context, require_pi
from tests.support import fake_llm as fl


def test_pi_opens_and_continues_a_session_with_estimated_usage(tmp_path: Path) -> None:
    node = require_pi()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
    project = tmp_path / "project"
    project.mkdir()
    caddie_home = tmp_path / "caddie-home"
    sessions = tmp_path / "sessions"
    caddie_env = {**base, "CADDIE_DIR": str(caddie_home), "NO_COLOR": "1"}
    with fl.FakeLLM(default_reply=fl.text("ok")) as llm:
        llm.write_models_json(caddie_home / "agent", contextWindow=32_768)
        llm.push(
            fl.tool_call("bash", {"command": "echo hi"}, no_usage=True), fl.text("Said hi.", no_usage=True)
        )
        made = subprocess.run(
            [sys.executable, "-m", "caddie", "-p", "--session-dir", str(sessions), "--model", "fake/fake-model",
             "--no-context-files", "say hi with bash"],
            cwd=project, env=caddie_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        [file] = sorted(sessions.rglob("*.jsonl"))
        written = [json.loads(line) for line in file.read_text().splitlines()]
        replies = [
            e["message"]
            for e in written
            if e.get("type") == "message" and e["message"]["role"] == "assistant"
        ]
        assert len(replies) == 2 and all(r["usage"]["estimated"] is True for r in replies)

        pi = pi_session_context(file)
        assert pi["entryCount"] == len(written) - 1  # every entry but the header
        messages: list[dict[str, Any]] = pi["messages"]  # type: ignore[assignment]
        assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        assert messages[3]["content"][0]["text"] == "Said hi."
        assert messages[3]["usage"]["input"] == replies[1]["usage"]["input"]

        pi_agent = tmp_path / "pi-home" / "agent"
        llm.write_models_json(pi_agent, contextWindow=32_768)
        llm.push(fl.text("Pi continues.", usage=fl.UsageSpec(900, 3)))
        cont = subprocess.run(
            [node, str(PI_PACKAGE / "dist" / "cli.js"), "-p", "--session", str(file), "--no-context-files",
             "--no-skills", "--no-extensions", "--model", "fake/fake-model", "and now?"],
            cwd=project,
            env={**base, "HOME": str(tmp_path / "pi-home"), "PI_CODING_AGENT_DIR": str(pi_agent), "PI_OFFLINE": "1"},
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert cont.returncode == 0, cont.stderr[-3000:]
        assert "Pi continues." in cont.stdout
        pi_request = llm.llm_requests[-1].body
        assert isinstance(pi_request, dict)
        assert any(
            m.get("content") == "Said hi." for m in pi_request["messages"] if m.get("role") == "assistant"
        )

    shown = subprocess.run(
        [sys.executable, "-m", "caddie", "session", "show", str(file), "--stats"],
        cwd=project, env=caddie_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "requests       3" in shown.stdout and "estimated for 2 of 3 replies" in shown.stdout

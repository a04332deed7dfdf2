"""A session caddie wrote over the OpenAI Responses API carries its reasoning into the reference Pi.

caddie (``-p``, a reasoning model over ``openai-responses``) gets a reasoning item with encrypted content
and a tool call, runs the tool and finishes; the session file it wrote is then continued by Pi 0.84.4
(``--session``) against the same kind of fake server. Pi's request must carry the very reasoning items
caddie stored and sent back itself — nothing of the chain of thought lost between the two agents. Then
caddie continues the file Pi extended, and sends Pi's new reasoning item along with its own.
Skips (with the reason) where Pi is absent; fails under ``CI=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_DIR, require_pi
from tests.support import fake_llm as fl

PROVIDER = "fakeai"
MODEL = "gpt-5.5"
CHAIN = "gAAAAABo-encrypted-reasoning-chain-0123456789"
PI_CHAIN = "gAAAAABo-reasoning-pi-received-9876543210"


def reasoning_items(request: fl.RecordedRequest) -> list[dict[str, Any]]:
    body = request.body or {}
    return [i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "reasoning"]


def test_pi_continues_a_caddie_responses_session_with_the_same_reasoning_items(tmp_path: Path) -> None:
    node = require_pi()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("def main():\n    return 42\n")
    model_fields = {"reasoning": True, "contextWindow": 200_000, "maxTokens": 32_000}

    with fl.FakeLLM(default_reply=fl.text("ok")) as llm:
        llm.push(
            fl.Reply(
                thinking="The user wants a.py; read it first.",
                tool_calls=[fl.ToolCallSpec("read", {"path": "a.py"}, "call_read")],
                encrypted_reasoning=CHAIN,
            ),
            fl.text("a.py defines main(), which returns 42."),
        )
        caddie_home = tmp_path / "caddie-home"
        llm.write_models_json(
            caddie_home / "agent", provider=PROVIDER, api="openai-responses", model_id=MODEL, **model_fields
        )
        sessions = tmp_path / "sessions"
        caddie_cmd = [
            sys.executable,
            "-m",
            "caddie",
            "-p",
            "--no-context-files",
            "--session-dir",
            str(sessions),
            "--model",
            f"{PROVIDER}/{MODEL}",
            "--thinking",
            "high",
            "--tools",
            "read",
            "What does a.py do?",
        ]
        caddie_env = {
            **base,
            "CADDIE_DIR": str(caddie_home),
            "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
        }
        proc = subprocess.run(
            caddie_cmd, cwd=project, env=caddie_env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(llm.llm_requests) == 2
        caddie_replay = reasoning_items(llm.llm_requests[1])
        assert len(caddie_replay) == 1 and caddie_replay[0]["encrypted_content"] == CHAIN

        files = sorted(sessions.rglob("*.jsonl"))
        assert len(files) == 1, files
        stored = [
            json.loads(block["thinkingSignature"])
            for line in files[0].read_text().splitlines()
            if (entry := json.loads(line)).get("type") == "message"
            and entry["message"].get("role") == "assistant"
            for block in entry["message"]["content"]
            if block.get("type") == "thinking"
        ]
        assert stored == caddie_replay

        pi_agent = tmp_path / "pi-home" / "agent"
        llm.write_models_json(
            pi_agent, provider=PROVIDER, api="openai-responses", model_id=MODEL, **model_fields
        )
        llm.push(fl.thinking("It returns the constant.", "Still 42.", encrypted_reasoning=PI_CHAIN))
        pi = subprocess.run(
            [
                node,
                str(PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"),
                "-p",
                "--session",
                str(files[0]),
                "--no-context-files",
                "--no-skills",
                "--no-extensions",
                "--model",
                f"{PROVIDER}/{MODEL}",
                "--thinking",
                "high",
                "--tools",
                "read",
                "And what does it return?",
            ],
            cwd=project,
            env={
                **base,
                "HOME": str(tmp_path / "pi-home"),
                "PI_CODING_AGENT_DIR": str(pi_agent),
                "PI_OFFLINE": "1",
            },
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert pi.returncode == 0, pi.stderr[-3000:]
        pi_request = llm.llm_requests[2]

        # And back: caddie continues the session Pi extended, carrying Pi's reasoning item too.
        llm.push(fl.text("Yes."))
        again = subprocess.run(
            [*caddie_cmd[:5], "--session", str(files[0]), *caddie_cmd[7:-1], "Sure?"],
            cwd=project,
            env=caddie_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr[-3000:]
        back = llm.llm_requests[3]

    assert pi_request.path == "/v1/responses"
    assert reasoning_items(pi_request) == caddie_replay
    # The same turn as caddie sent it: reasoning, the call (with its item id) and its output.
    ours = llm.llm_requests[1].body["input"][1:]
    theirs = pi_request.body["input"][1 : 1 + len(ours)]
    assert theirs == ours
    replayed = reasoning_items(back)
    assert replayed[0] == caddie_replay[0]
    assert replayed[1]["encrypted_content"] == PI_CHAIN
    assert back.body["input"][1 : len(pi_request.body["input"])] == pi_request.body["input"][1:]

"""Side by side with the reference Pi: the same scripted conversation against the same kind of fake server.

Both agents get identical scripted model replies (tool calls on identical files); the test compares what
each sent back to the server: the tool schemas, and every tool result the model received. They must be
byte-identical, except for the name of bash's spill file. Skips (with the reason) where Pi is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_DIR, require_pi
from tests.support import fake_llm as fl

BUILTIN = ["read", "bash", "edit", "write", "grep", "find", "ls"]


def make_project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "small.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 2601)))
    (root / "wide.txt").write_text("x" * 60_000 + "\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (root / "dup.txt").write_text("same\nsame\n")
    (root / "sub").mkdir()
    (root / "sub" / "a.py").write_text("print('a')\n")
    (root / ".hidden").write_text("h\n")
    return root


def fresh(path: Path) -> Path:
    """The same path again, emptied (so absolute paths in error texts match between the two runs)."""
    shutil.rmtree(path)
    return path


def script() -> list[fl.Reply]:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read", {"path": "small.txt"}),
        ("read", {"path": "long.txt"}),
        ("read", {"path": "long.txt", "offset": 2590, "limit": 5}),
        ("read", {"path": "long.txt", "offset": 9999}),
        ("read", {"path": "wide.txt"}),
        ("read", {"path": "missing.txt"}),
        ("read", {"path": 42}),
        ("read", {}),
        ("bash", {"command": "echo out; echo err >&2"}),
        ("bash", {"command": "exit 3"}),
        ("bash", {"command": "true"}),
        ("bash", {"command": "sleep 5", "timeout": 1}),
        ("bash", {"command": "seq 1 3000"}),
        ("edit", {"path": "small.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}),
        ("edit", {"path": "small.txt", "edits": [{"oldText": "nope", "newText": "x"}]}),
        ("edit", {"path": "dup.txt", "edits": [{"oldText": "same", "newText": "other"}]}),
        ("edit", {"path": "crlf.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
        ("edit", {"path": "small.txt", "oldText": "gamma", "newText": "GAMMA"}),
        ("edit", {"path": "small.txt", "edits": [{"oldText": "alpha", "newText": "alpha"}]}),
        ("write", {"path": "new/dir/file.txt", "content": "héllo wörld\n"}),
        ("ls", {"path": "."}),
        ("ls", {"path": "nowhere"}),
        ("nosuchtool", {"x": 1}),
    ]
    replies = [fl.tool_call(name, args, id=f"call_{i}") for i, (name, args) in enumerate(calls)]
    return [*replies, fl.text("All done.")]


SPILL = re.compile(r"/\S*(?:pi|caddie)-bash-[0-9a-f-]+\.log")


def normalise(text: str) -> str:
    return SPILL.sub("<spill-file>", text)


def run_agent(cmd: list[str], env: dict[str, str], cwd: Path, agent_dir: Path) -> fl.FakeLLM:
    llm = fl.FakeLLM()
    llm.__enter__()
    llm.write_models_json(agent_dir, provider="fake", model_id="fake-model", contextWindow=200_000)
    llm.push(*script())
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    llm.__exit__(None, None, None)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return llm


def test_tool_schemas_and_every_tool_result_match_pi(tmp_path: Path) -> None:
    node = require_pi()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
    tools = ",".join(BUILTIN)

    caddie_home = tmp_path / "caddie-home"
    caddie_env = {
        **base,
        "CADDIE_DIR": str(caddie_home),
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
    }
    caddie = run_agent(
        [
            sys.executable,
            "-m",
            "caddie",
            "-p",
            "--no-session",
            "--no-context-files",
            "--model",
            "fake/fake-model",
            "--tools",
            tools,
            "go",
        ],
        {**caddie_env, "CADDIE_DIR": str(caddie_home)},
        make_project(tmp_path / "project"),
        caddie_home / "agent",
    )

    pi_agent = tmp_path / "pi-home" / "agent"
    pi_env = {
        **base,
        "PI_CODING_AGENT_DIR": str(pi_agent),
        "PI_OFFLINE": "1",
        "PATH": f"{Path(node).parent}:{base.get('PATH', '')}",
    }
    pi = run_agent(
        [
            str(PI_DIR / "node_modules" / ".bin" / "pi"),
            "-p",
            "--no-session",
            "--no-context-files",
            "--no-skills",
            "--no-extensions",
            "--model",
            "fake/fake-model",
            "--tools",
            tools,
            "go",
        ],
        pi_env,
        make_project(fresh(tmp_path / "project")),
        pi_agent,
    )

    assert len(caddie.requests) == len(pi.requests) == len(script())

    def builtin_schemas(request: fl.RecordedRequest) -> list[Any]:
        body = request.body or {}
        functions = [t.get("function", {}) for t in body.get("tools", [])]
        return [
            {k: f.get(k) for k in ("name", "description", "parameters")}
            for f in functions
            if f.get("name") in BUILTIN
        ]

    assert builtin_schemas(caddie.requests[0]) == builtin_schemas(pi.requests[0])

    mismatches: list[str] = []
    for i, (ours, theirs) in enumerate(zip(caddie.requests[1:], pi.requests[1:], strict=True)):
        got = [(cid, normalise(text)) for cid, text in ours.tool_results][-1]
        want = [(cid, normalise(text)) for cid, text in theirs.tool_results][-1]
        if got != want:
            mismatches.append(f"call {i}:\n  caddie: {got!r}\n  pi:     {want!r}")
    assert not mismatches, "\n".join(mismatches)

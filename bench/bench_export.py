"""Benchmark: ``caddie export`` of a 2,000-message session, side by side with ``pi --export`` on the same file.

    uv run python bench/bench_export.py [--turns 500] [--runs 3]

The session (written once to a temporary directory): ``turns`` × (a Markdown prompt, an assistant message
with a ``read`` call, a distinct 240-line Python result, a Markdown answer with a code block), plus a
mulligan rewind and shrink. Each run is a fresh process: for caddie that includes loading the extensions and
asking them what the model is sent. Pi 0.84.4 runs when it is installed (``CADDIE_PI_DIR``).
Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from caddie.session.store import SessionStore


def make_session(directory: Path, turns: int) -> Path:
    store = SessionStore.create(directory, directory / "sessions")
    results: list[str] = []
    for i in range(turns):
        store.append_message(UserMessage(f"Step {i}: make `f{i}` **faster**"))
        call = AssistantMessage(
            [TextContent("Reading it."), ToolCall(f"c{i}", "read", {"path": f"src/m{i}.py"})],
            "faux",
            "faux",
            "faux-1",
            stop_reason="toolUse",
        )
        store.append_message(call)
        source = "\n".join(f"def f{i}_{j}(x):\n    return x + {j}  # step {i}" for j in range(120))
        results.append(store.append_message(ToolResultMessage(f"c{i}", "read", [TextContent(source)])))
        answer = f"## Step {i}\n\n- read `m{i}.py`\n- changed one line\n\n```python\nx = f{i}_0({i})\n```\n"
        store.append_message(AssistantMessage([TextContent(answer)], "faux", "faux", "faux-1"))
    envelope = {"schema": "pi-mulligan", "v": 1}
    store.append_custom(
        "mulligan:rewind",
        {**envelope, "kind": "rewind", "seq": 1, "id": "r1", "granularity": "last_tool_call_group",
         "hideEntryIds": [results[1]]},
    )  # fmt: skip
    store.append_custom(
        "mulligan:shrink",
        {**envelope, "kind": "shrink", "seq": 2, "id": "s1", "pinnedEntryId": results[2], "replacement": "120 defs"},
    )  # fmt: skip
    assert store.path is not None
    return store.path


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "CADDIE_DIR": str(work / "home"), "PI_CODING_AGENT_DIR": str(work / "pi-home")}
        session = make_session(work, args.turns)
        print(f"session: {session.stat().st_size / 1e6:.1f} MB, {4 * args.turns} messages")
        caddie = [sys.executable, "-m", "caddie", "export", str(session), "-o", str(work / "caddie.html")]
        times = [timed(caddie, work, env) for _ in range(args.runs)]
        size = (work / "caddie.html").stat().st_size / 1e6
        print(f"caddie export: median {statistics.median(times):.2f} s ({size:.1f} MB page)")
        pi_dir = Path(os.environ.get("CADDIE_PI_DIR", Path(__file__).resolve().parents[1] / ".cache" / "pi"))
        node = pi_dir / "node_modules" / "node" / "bin" / "node"
        cli = pi_dir / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
        if node.exists() and cli.exists():
            pi = [str(node), str(cli), "--export", str(session), str(work / "pi.html")]
            times = [timed(pi, work, env) for _ in range(args.runs)]
            size = (work / "pi.html").stat().st_size / 1e6
            print(f"pi --export:   median {statistics.median(times):.2f} s ({size:.1f} MB page)")
        else:
            print("pi: not installed (set CADDIE_PI_DIR)")


if __name__ == "__main__":
    main()

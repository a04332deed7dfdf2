"""Benchmark: what three configured MCP servers cost at start-up — the first frame of the terminal UI and the
first model request of ``caddie -p`` — against the same set-up with none.

    uv run python bench/bench_mcp_startup.py [--runs 7]

The three servers are real processes of three kinds: the reference ``@modelcontextprotocol/server-everything``
(Node, ~/.cache/caddie/mcp-everything, as .ci/run installs it), the tests' small server built with the
Python SDK (``tests/mcp/small_server.py``), and the same server told to sleep 5 s before it answers (a slow
server). Runs alternate none / three, so a drift in the shared machine's speed hits both alike. Figures:

- **first frame**: spawn → the first text on a pseudo-terminal (the TUI), and **ready**: → the footer shows
  the model (the session is open);
- **first request**: ``caddie -p`` spawn → its request arriving at the fake model server, with the MCP tools
  that request carried;
- **CPU until it**: the user + system CPU the caddie process had used when its request arrived (robust to
  a busy machine, where wall times are not);
- **with --mcp-wait 30**: the same when the first request may wait for the servers — what waiting would
  cost (the slow server caps it at ~5 s), and that the tools then are in the first request.

Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pty_term import PtyProgram  # noqa: E402
from tests.mcp.helpers import EVERYTHING_JS, SMALL, node  # noqa: E402
from tests.support import fake_llm as fl  # noqa: E402

SETTLE_S = 3.0


def servers() -> dict[str, object]:
    exe = node()
    if exe is None or not EVERYTHING_JS.is_file():
        sys.exit(
            "server-everything is not installed (run .ci/run, or npm install it into ~/.cache/caddie/mcp-everything)"
        )
    return {
        "everything": {"command": exe, "args": [str(EVERYTHING_JS), "stdio"]},
        "small": {"command": sys.executable, "args": [SMALL]},
        "slow": {"command": sys.executable, "args": [SMALL, "--slow-start", "5"]},
    }


def home_with(root: Path, llm: fl.FakeLLM, configured: dict[str, object]) -> Path:
    home = root / ("three" if configured else "none")
    agent = home / "agent"
    llm.write_models_json(agent, provider="fake", model_id="fake-model", contextWindow=128_000)
    (agent / "settings.json").write_text(json.dumps({"mcpServers": configured}))
    return home


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(home), CADDIE_OLLAMA_URL="http://127.0.0.1:9", NO_COLOR="1")
    return env


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_request(home: Path, llm: fl.FakeLLM, cwd: Path, extra: list[str]) -> tuple[float, int, float]:
    llm.push(fl.text("ok"))
    before = len(llm.llm_requests)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", "--model", "fake/fake-model", "--no-session", *extra, "-p", "hi"],
        cwd=cwd,
        env=env_for(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    llm.wait_for_requests(before + 1, timeout=120)
    at = (time.perf_counter() - start) * 1000
    cpu = cpu_seconds(proc.pid) * 1000
    proc.wait(120)
    tools = [t for t in llm.llm_requests[before].tool_names if t.startswith("mcp__")]
    return at, len(tools), cpu


def first_frame(home: Path, cwd: Path) -> tuple[float, float]:
    env = env_for(home)
    env.pop("NO_COLOR")
    program = PtyProgram(
        [sys.executable, "-m", "caddie", "--model", "fake/fake-model", "--no-session"], env, str(cwd)
    )
    try:
        first = program.wait_for(lambda t: any(ch.isalnum() for ch in t))
        ready = first + program.wait_for(lambda t: "fake-model" in t)
    finally:
        program.close()
    return first * 1000, ready * 1000


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):8.0f} ms (min {min(values):.0f}, max {max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    configured = servers()
    with tempfile.TemporaryDirectory() as tmp, fl.FakeLLM() as llm:
        root = Path(tmp)
        cwd = root / "project"
        cwd.mkdir()
        homes = {"none": home_with(root, llm, {}), "three": home_with(root, llm, configured)}
        frames: dict[str, list[tuple[float, float]]] = {k: [] for k in homes}
        requests: dict[str, list[tuple[float, int, float]]] = {k: [] for k in homes}
        waited: list[tuple[float, int, float]] = []
        for run in range(args.runs + 1):  # the first round warms the caches and is not counted
            for name, home in homes.items():
                frame = first_frame(home, cwd)
                time.sleep(SETTLE_S)  # the servers of a closed UI are gone before the next run starts
                if run:
                    frames[name].append(frame)
        for run in range(args.runs + 1):
            for name, home in homes.items():
                request = first_request(home, llm, cwd, [])
                time.sleep(SETTLE_S)
                if run:
                    requests[name].append(request)
            wait = first_request(homes["three"], llm, cwd, ["--mcp-wait", "30"])
            time.sleep(SETTLE_S)
            if run:
                waited.append(wait)
        print(f"{args.runs} runs, python {sys.version.split()[0]}, {os.cpu_count()} cores")
        for name in homes:
            print(f"{name} servers:")
            print(f"  first frame   {summary([f for f, _ in frames[name]])}")
            print(f"  ready         {summary([r for _, r in frames[name]])}")
            tools = sorted({t for _, t, _ in requests[name]})
            print(f"  first request {summary([r for r, _, _ in requests[name]])}  MCP tools in it: {tools}")
            print(f"  CPU until it  {summary([c for _, _, c in requests[name]])}")
        print("three servers, --mcp-wait 30:")
        tools = sorted({t for _, t, _ in waited})
        print(f"  first request {summary([r for r, _, _ in waited])}  MCP tools in it: {tools}")
        print(f"  CPU until it  {summary([c for _, _, c in waited])}")


if __name__ == "__main__":
    main()

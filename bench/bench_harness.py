"""Benchmark: harness overhead per turn, and start-up to the first model request (caddie vs the reference Pi).

    uv run python bench/bench_harness.py [--turns 200] [--runs 5]

1. In-process, faux provider (no network): the time ``AgentSession`` spends per turn around the model call
   — loop, events, extension handlers (bundled mulligan and goal loaded), persistence — in a new session and
   in one continued from 200 messages. A turn here is one scripted tool call (to an unknown tool, which the
   loop answers at once) plus the model reply that follows. Targets: < 5 ms and < 7 ms median.
2. Subprocess, real ``openai`` SDK against the fake server (TCP_NODELAY): process start → first request
   arriving at the server, and the wall time per turn of a 20-turn scripted run; the same for Pi 0.84.4
   when it is installed (``CADDIE_PI_DIR``). Target for start-up: < 400 ms.
Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import fake_llm as fl

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, Usage
from caddie.ai.stream_events import DoneEvent, StartEvent
from caddie.runtime.factory import SessionRequest, open_session


class ScriptedStream:
    """A provider that answers instantly: odd calls ask for a tool, even calls answer (no chars/4 estimate)."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, model: Any, context: Any, options: Any) -> Any:
        self.calls += 1
        if self.calls % 2:
            content: list[Any] = [ToolCall(f"c{self.calls}", "noop", {})]
            reason = "toolUse"
        else:
            content = [TextContent("done")]
            reason = "stop"
        message = AssistantMessage(
            content, model.api, model.provider, model.id, Usage(100, 10, 0, 0, 110), reason
        )  # type: ignore[arg-type]
        yield StartEvent(message)
        yield DoneEvent(reason, message)  # type: ignore[arg-type]


async def per_turn_ms(turns: int, history: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CADDIE_DIR"] = tmp
        provider = ScriptedStream()
        build = await open_session(
            SessionRequest(
                cwd=tmp, mode="print", model="faux/faux-1", session="new", stream_fn=provider.stream
            )
        )
        session = build.session
        await session.start()
        for i in range(history // 4):  # each prompt adds user, assistant(tool), toolResult, assistant
            await session.prompt(f"warm-up {i}")
        samples = []
        for i in range(turns):
            start = time.perf_counter()
            await session.prompt(f"task {i}")
            samples.append((time.perf_counter() - start) * 1000 / 2)  # two turns per prompt
        await session.shutdown()
        return samples


def caddie_cmd(prompt: str) -> list[str]:
    return [sys.executable, "-m", "caddie", "-p", "--model", "fake/fake-model", prompt]


def pi_cmd(prompt: str, pi_dir: Path) -> list[str]:
    return [str(pi_dir / "node_modules/.bin/pi"), "-p", "--no-session", "--model", "fake/fake-model", prompt]


def run_against_server(
    cmd: list[str], env: dict[str, str], cwd: Path, turns: int, agent_dir: Path
) -> tuple[float, float]:
    """(ms from spawn to the first request, ms per turn over ``turns`` scripted tool-call turns)."""
    with fl.FakeLLM() as llm:
        llm.write_models_json(agent_dir, provider="fake", model_id="fake-model", contextWindow=128_000)
        arrivals: list[float] = []

        def reply(index: int) -> Any:
            def make(request: fl.RecordedRequest) -> fl.Reply:
                arrivals.append(time.perf_counter())
                return fl.text("done") if index == turns else fl.tool_call("noop", {}, id=f"c{index}")

            return make

        llm.push(*[reply(i) for i in range(turns + 1)])
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {proc.stderr[-2000:]}")
        first = (arrivals[0] - start) * 1000
        per_turn = (arrivals[-1] - arrivals[0]) * 1000 / turns
        return first, per_turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    for history in (0, 200):
        samples = asyncio.run(per_turn_ms(args.turns, history))
        label = "new session" if history == 0 else f"continuing {history} messages"
        print(
            f"harness per turn, {label:<26} median {statistics.median(samples):6.2f} ms   p90 "
            f"{sorted(samples)[int(len(samples) * 0.9)]:6.2f} ms"
        )

    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp) / "project"
        cwd.mkdir()
        base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
        rows: dict[str, list[tuple[float, float]]] = {"caddie": []}
        for _ in range(args.runs):
            home = Path(tmp) / "caddie-home"
            env = {**base, "CADDIE_DIR": str(home), "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
            rows["caddie"].append(run_against_server(caddie_cmd("go"), env, cwd, 20, home / "agent"))
        pi_dir = Path(
            os.environ.get("CADDIE_PI_DIR") or Path(__file__).resolve().parents[1] / ".cache" / "pi"
        )
        if (pi_dir / "node_modules/.bin/pi").exists():
            rows["pi 0.84.4"] = []
            for _ in range(args.runs):
                agent = Path(tmp) / "pi-home" / "agent"
                env = {
                    **base,
                    "PI_CODING_AGENT_DIR": str(agent),
                    "PI_OFFLINE": "1",
                    "PATH": f"{pi_dir / 'node_modules/node/bin'}:{base.get('PATH', '')}",
                }
                rows["pi 0.84.4"].append(run_against_server(pi_cmd("go", pi_dir), env, cwd, 20, agent))
        print(f"\n{'who':<10} {'start → first request (median ms)':>34} {'per turn via SDK (median ms)':>30}")
        for who, results in rows.items():
            print(
                f"{who:<10} {statistics.median(r[0] for r in results):>34.0f} {statistics.median(r[1] for r in results):>30.1f}"
            )


if __name__ == "__main__":
    main()

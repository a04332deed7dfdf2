"""Benchmark: the interactive UI in a real pseudo-terminal, caddie side by side with the reference Pi.

    uv run python bench/bench_tui.py [--runs 5]

Both programs run on a pty (100x30, answering the terminal queries a real terminal answers) against the
same fake LLM server (tests/support/fake_llm.py; caddie through the real ``openai`` SDK):

1. **First frame** — spawn → the first output with visible text, and spawn → "ready" (the model name is
   shown in the footer, so the editor can be used).
   The programs take turns, run by run.
2. **Key echo while the first prompt is being sent** — one second after ready, a prompt is typed (30 ms a
   key) and sent; while the reply streams (the server paces it), 10 more keys are typed one at a time and
   each one's echo is timed: key written to the pty → the character appears in the output. This is the
   first prompt of the process, so caddie's provider SDK is loaded by then only thanks to the preload.
3. **Memory after a 2,000-message session is rendered** — ``--session FILE`` on a session of ~2,000
   messages (bench/make_session.py), RSS of the process (and its children) once the output has been quiet
   for a second.

Pi is found through ``CADDIE_PI_DIR`` (default /work/piref). Results go to docs/benchmarks.md by hand.
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.support import fake_llm as fl
from tests.support.pty_term import PtyProgram

REPO = Path(__file__).resolve().parents[1]
ECHO_KEYS = "QXZVWQXZVW"

Launcher = Callable[[list[str], Path], tuple[list[str], dict[str, str]]]


def caddie_launcher(home: Path) -> Launcher:
    def launch(extra: list[str], _cwd: Path) -> tuple[list[str], dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(CADDIE_DIR=str(home), PYTHONPATH=str(REPO / "src"), CADDIE_OLLAMA_URL="http://127.0.0.1:9")
        return [sys.executable, "-m", "caddie", "--model", "fake/fake-model", *extra], env

    return launch


def pi_launcher(pi_dir: Path, agent: Path) -> Launcher:
    def launch(extra: list[str], _cwd: Path) -> tuple[list[str], dict[str, str]]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            PI_CODING_AGENT_DIR=str(agent),
            PI_OFFLINE="1",
            PATH=f"{pi_dir / 'node_modules/node/bin'}:{env.get('PATH', '')}",
        )
        return [str(pi_dir / "node_modules/.bin/pi"), "--model", "fake/fake-model", *extra], env

    return launch


def first_frame_and_echo(launch: Launcher, cwd: Path) -> dict[str, object]:
    with fl.FakeLLM() as llm:
        llm.push(fl.text("Here is a reply that streams for a while. " * 6, chunk_size=12, delay_s=0.08))
        cmd, env = launch(["--no-session"], cwd)
        agent_dirs = [Path(env[k]) for k in ("PI_CODING_AGENT_DIR",) if k in env] or [
            Path(env["CADDIE_DIR"]) / "agent"
        ]
        llm.write_models_json(agent_dirs[0], provider="fake", model_id="fake-model", contextWindow=128_000)
        program = PtyProgram(cmd, env, str(cwd))
        try:
            first = program.wait_for(lambda t: any(ch.isalnum() for ch in t))
            ready = first + program.wait_for(lambda t: "fake-model" in t)
            time.sleep(1.0)
            for ch in "hello there":
                program.send(ch)
                time.sleep(0.03)
            program.send("\r")
            llm.wait_for_requests(1, timeout=30)
            echoes: list[float] = []
            for ch in ECHO_KEYS:
                offset = program.size
                sent = time.perf_counter()
                program.send(ch)
                program.wait_for(lambda t, ch=ch: ch in t, offset, timeout=30)
                echoes.append((time.perf_counter() - sent) * 1000)
                time.sleep(0.05)
        finally:
            program.close()
    return {"first_ms": first * 1000, "ready_ms": ready * 1000, "echo_ms": echoes}


def quiet_for(program: PtyProgram, seconds: float, timeout: float = 120) -> None:
    """Until less than 2 KB was written in the last ``seconds`` (a blinking cursor does not count)."""
    start = time.perf_counter()
    time.sleep(seconds)
    while True:
        now = time.perf_counter()
        recent = sum(len(data) for at, data in list(program.chunks) if now - at < seconds)
        if recent < 2000:
            return
        if now - start > timeout:
            raise TimeoutError("the output never went quiet")
        time.sleep(0.05)


def memory_after_session(launch: Launcher, cwd: Path, session: Path) -> float:
    cmd, env = launch(["--session", str(session)], cwd)
    agent = (
        Path(env["PI_CODING_AGENT_DIR"])
        if "PI_CODING_AGENT_DIR" in env
        else Path(env["CADDIE_DIR"]) / "agent"
    )
    with fl.FakeLLM() as llm:
        llm.write_models_json(agent, provider="fake", model_id="fake-model", contextWindow=128_000)
        program = PtyProgram(cmd, env, str(cwd))
        try:
            program.wait_for(lambda t: "fake-model" in t, timeout=120)
            quiet_for(program, 1.5)
            return program.rss_mb()
        finally:
            program.close()


def make_session(path: Path, cwd: Path, messages: int) -> int:
    entries = int(messages * 100_000 / 97_500) + 1
    subprocess.run(
        [sys.executable, str(REPO / "bench" / "make_session.py"), str(path), "--entries", str(entries)],
        check=True,
    )
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["cwd"] = str(cwd)
    lines[0] = json.dumps(header)
    path.write_text("\n".join(lines) + "\n")
    return sum(1 for line in lines[1:] if json.loads(line).get("type") == "message")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    pi_dir = Path(os.environ.get("CADDIE_PI_DIR", "/work/piref"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "project"
        cwd.mkdir()
        who: dict[str, Launcher] = {"caddie": caddie_launcher(root / "caddie-home")}
        if (pi_dir / "node_modules/.bin/pi").exists():
            who["pi 0.84.4"] = pi_launcher(pi_dir, root / "pi-home" / "agent")
        session = root / "session-2000.jsonl"
        count = make_session(session, cwd, args.messages)
        print(f"session: {count} messages, {session.stat().st_size / 1e6:.1f} MB\n")
        print(
            f"{'who':<10} {'first frame':>12} {'ready':>8} {'echo median':>12} {'echo max':>9} {'RSS 2k msgs':>12}"
        )
        # The programs take turns (A B A B …), so a change in the machine's load reaches both alike.
        all_runs: dict[str, list[dict[str, object]]] = {name: [] for name in who}
        for _ in range(args.runs):
            for name, launch in who.items():
                all_runs[name].append(first_frame_and_echo(launch, cwd))
        for name, launch in who.items():
            runs = all_runs[name]
            echoes = [e for r in runs for e in r["echo_ms"]]  # type: ignore[attr-defined]
            memory = statistics.median(
                memory_after_session(launch, cwd, session) for _ in range(max(1, args.runs // 2))
            )
            print(
                f"{name:<10} {statistics.median(r['first_ms'] for r in runs):>10.0f}ms"  # type: ignore[misc]
                f" {statistics.median(r['ready_ms'] for r in runs):>6.0f}ms"  # type: ignore[misc]
                f" {statistics.median(echoes):>10.1f}ms {max(echoes):>7.1f}ms {memory:>10.0f}MB"
            )


if __name__ == "__main__":
    main()

"""Benchmark: long things in the interactive UI, caddie side by side with the reference Pi (issue 27).

    uv run python bench/bench_tui_long.py [--runs 3] [--entries 5000] [--chars 100000] [--only answer]

Both programs run on a pty (100x30) against the same fake LLM server (tests/support/fake_llm.py):

1. **Opening a long session** — ``--session FILE`` on a session of ``--entries`` entries
   (bench/make_session.py): spawn → the model name in the footer (*ready*) and the output quiet (the
   transcript drawn); the same for a 50-entry session, so that *extra* — the long session's cost over a
   short one's — is what its length costs, apart from start-up. Then, for caddie, Home
   (``tui.altScreen.top``: the transcript's top) → the first user message on screen: the whole
   conversation is reachable, not only its end.
2. **A long answer streamed at full speed** — one reply of ``--chars`` characters in 40-character deltas
   with no pause between them: prompt sent → the answer's last words on screen, the number of screen
   writes while it streamed, and the longest gap between two writes (a gap over ~100 ms is a visible
   stall).

Pi is found through ``CADDIE_PI_DIR`` (default ~/.cache/caddie/pi). Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui import Launcher, caddie_launcher, make_session, pi_launcher, quiet_for
from tests.support import fake_llm as fl
from tests.support.pty_term import PtyProgram

HOME_KEY = "\x1b[H"
END_WORDS = "the very last words of the answer"


def first_user_text(session: Path) -> str:
    for line in session.read_text().splitlines()[1:]:
        entry = json.loads(line)
        message = entry.get("message") or {}
        if entry.get("type") == "message" and message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
            return " ".join(text.split())[:30]
    raise ValueError("no user message")


def agent_dir(env: dict[str, str]) -> Path:
    return (
        Path(env["PI_CODING_AGENT_DIR"])
        if "PI_CODING_AGENT_DIR" in env
        else Path(env["CADDIE_DIR"]) / "agent"
    )


def open_session(launch: Launcher, cwd: Path, session: Path, home: bool) -> dict[str, float]:
    cmd, env = launch(["--session", str(session)], cwd)
    first = first_user_text(session)
    with fl.FakeLLM() as llm:
        llm.write_models_json(agent_dir(env), provider="fake", model_id="fake-model", contextWindow=128_000)
        program = PtyProgram(cmd, env, str(cwd))
        try:
            start = time.perf_counter()
            program.wait_for(lambda t: "fake-model" in t, timeout=120)
            ready = time.perf_counter() - start
            quiet_for(program, 0.5)
            drawn = time.perf_counter() - start - 0.5
            result = {"ready_ms": ready * 1000, "drawn_ms": drawn * 1000}
            if home:
                offset = program.size
                sent = time.perf_counter()
                program.send(HOME_KEY)
                program.wait_for(lambda t: first[:20] in t, offset, timeout=60)
                result["home_ms"] = (time.perf_counter() - sent) * 1000
            return result
        finally:
            program.close()


def long_answer(launch: Launcher, cwd: Path, chars: int) -> dict[str, float]:
    words = "Streaming a long answer quickly, line after line, to see every frame. "
    body = (words * (chars // len(words) + 1))[: chars - len(END_WORDS) - 1] + " " + END_WORDS
    cmd, env = launch(["--no-session"], cwd)
    with fl.FakeLLM() as llm:
        llm.push(fl.text(body, chunk_size=40, delay_s=0.0))
        llm.write_models_json(agent_dir(env), provider="fake", model_id="fake-model", contextWindow=128_000)
        program = PtyProgram(cmd, env, str(cwd))
        try:
            program.wait_for(lambda t: "fake-model" in t, timeout=120)
            time.sleep(1.0)
            program.send("go")
            time.sleep(0.1)
            offset = program.size
            sent = time.perf_counter()
            program.send("\r")
            program.wait_for(lambda t: END_WORDS in t, offset, timeout=180)
            done = time.perf_counter()
            writes = [at for at, _ in list(program.chunks) if sent <= at <= done]
            gaps = [b - a for a, b in zip([sent, *writes], [*writes, done], strict=True)]
            return {"total_ms": (done - sent) * 1000, "writes": len(writes), "max_gap_ms": max(gaps) * 1000}
        finally:
            program.close()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--no-pi", action="store_true")
    parser.add_argument(
        "--only", choices=("session", "answer"), help="run one of the two measurements (default: both)"
    )
    args = parser.parse_args()
    pi_dir = Path(os.environ.get("CADDIE_PI_DIR", Path.home() / ".cache/caddie/pi"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "project"
        cwd.mkdir()
        session = root / "long.jsonl"
        make_session(session, cwd, int(args.entries * 0.975))
        short = root / "short.jsonl"
        make_session(short, cwd, 48)
        programs: dict[str, tuple[Launcher, bool]] = {"caddie": (caddie_launcher(root / "caddie-home"), True)}
        if not args.no_pi and (pi_dir / "node_modules/.bin/pi").exists():
            programs["pi"] = (pi_launcher(pi_dir, root / "pi-agent"), False)
        results: dict[str, dict[str, list[float]]] = {name: {} for name in programs}
        for _ in range(args.runs):
            for name, (launch, home) in programs.items():  # the programs take turns
                big: dict[str, float] = {}
                if args.only != "answer":
                    small = open_session(launch, cwd, short, False)
                    big = open_session(launch, cwd, session, home)
                    big["short_ready_ms"] = small["ready_ms"]
                    big["extra_ms"] = big["drawn_ms"] - small["drawn_ms"]
                if args.only != "session":
                    big.update(long_answer(launch, cwd, args.chars))
                for key, value in big.items():
                    results[name].setdefault(key, []).append(value)
        lines = sum(1 for _ in session.open()) - 1
        load = os.getloadavg()[0]
        print(
            f"session: {lines} entries; answer: {args.chars} characters; {args.runs} runs, medians; load {load:.1f}"
        )
        for name, values in results.items():
            shown = ", ".join(f"{key} {median(v):.0f}" for key, v in values.items())
            print(f"{name}: {shown}")


if __name__ == "__main__":
    main()

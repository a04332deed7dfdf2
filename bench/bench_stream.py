"""Benchmark: long streamed replies (1 MB, 8 MB, 100 MB) — wall time and peak memory (issue 11).

    uv run python bench/bench_stream.py [--sizes 1,8,100] [--chunk 4096] [--api openai,anthropic]
                                        [--before DIR] [--pi] [--assembly-only]

1. End to end: ``caddie -p`` in a subprocess against the fake server (tests/support/fake_llm.py), which
   streams one text reply of the given size in deltas of ``--chunk`` characters through the real
   ``openai`` / ``anthropic`` SDK; the session is written as usual. Reported: wall time from spawn to exit
   and the child's peak RSS. ``--before DIR`` runs the same against another checkout's ``src`` (e.g. the
   code before the fix, unpacked with ``git archive``); ``--pi`` runs Pi 0.84.4 too (``CADDIE_PI_DIR``).
2. Assembly only (``--assembly-only`` skips part 1): the same replies fed as parsed chunks straight into
   each provider's assembler in process (no HTTP, no SDK) — caddie's own share of the work.
Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import fake_llm as fl

from caddie.ai.messages import AssistantMessage
from caddie.ai.model import Model

MB = 1024 * 1024
LINE = "A line of a long generated answer, with `code`, **markdown** and an ünïcode letter or two.\n"


def body(size: int) -> str:
    return (LINE * (size // len(LINE) + 1))[:size]


# --------------------------------------------------------------------------------------------------
# 1. End to end


def _peak_rss_mb(pid: int) -> float | None:
    """The process's own high-water RSS (``VmHWM``; ``ru_maxrss`` of a forked child would include this
    benchmark's memory at fork time)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_cli(
    cmd: list[str], env: dict[str, str], cwd: Path, out: Path, timeout: float
) -> tuple[float, float, int]:
    """(seconds, peak RSS in MB, bytes written to stdout) for one subprocess run."""
    errors = out.with_suffix(".err")
    peak = 0.0
    with out.open("wb") as stdout, errors.open("wb") as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
        while proc.poll() is None:
            peak = max(peak, _peak_rss_mb(proc.pid) or 0.0)
            if time.perf_counter() - start > timeout:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"killed after {timeout:g} s (peak RSS {peak:.0f} MB)")
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {errors.read_text(errors='replace')[-1500:]}")
    return elapsed, peak, out.stat().st_size


def end_to_end(
    size: int, chunk: int, api: str, who: str, src: Path | None, pi_dir: Path | None, timeout: float
) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, fl.FakeLLM() as llm:
        root = Path(tmp)
        (root / "project").mkdir()
        text = body(size)
        llm.push(fl.text(text, chunk_size=chunk, usage=fl.UsageSpec(10, 10)))  # no compaction
        kind = "openai-completions" if api == "openai" else "anthropic-messages"
        base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
        if pi_dir is not None:
            agent = root / "pi-home" / "agent"
            llm.write_models_json(agent, api=kind, contextWindow=1_000_000, maxTokens=1_000_000)
            env = {
                **base,
                "PI_CODING_AGENT_DIR": str(agent),
                "PI_OFFLINE": "1",
                "PATH": f"{pi_dir / 'node_modules/node/bin'}:{base.get('PATH', '')}",
            }
            cmd = [
                str(pi_dir / "node_modules/.bin/pi"),
                "-p",
                "--no-session",
                "--model",
                "fake/fake-model",
                "go",
            ]
        else:
            home = root / "home"
            llm.write_models_json(home / "agent", api=kind, contextWindow=1_000_000, maxTokens=1_000_000)
            env = {**base, "CADDIE_DIR": str(home), "CADDIE_OLLAMA_URL": "http://127.0.0.1:9"}
            env["PYTHONPATH"] = str(src or Path(__file__).resolve().parents[1] / "src")
            cmd = [sys.executable, "-m", "caddie", "-p", "--model", "fake/fake-model", "go"]
        seconds, rss, written = run_cli(cmd, env, root / "project", root / "out.txt", timeout)
        if written < size:
            raise RuntimeError(f"{who}: printed {written} bytes of a {size}-byte reply")
        return seconds, rss


# --------------------------------------------------------------------------------------------------
# 2. Assembly only


def openai_chunks(text: str, chunk: int) -> list[dict[str, Any]]:
    pieces = [
        {"choices": [{"index": 0, "delta": {"content": text[i : i + chunk]}}]}
        for i in range(0, len(text), chunk)
    ]
    return [*pieces, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


def anthropic_chunks(text: str, chunk: int) -> list[dict[str, Any]]:
    deltas = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text[i : i + chunk]},
        }
        for i in range(0, len(text), chunk)
    ]
    return [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *deltas,
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]


def assembly(size: int, chunk: int, api: str) -> float:
    from caddie.ai.providers import anthropic_messages, openai_completions
    from caddie.ai.providers.streaming import new_output

    model = Model("m", "m", "x", "p")
    output: AssistantMessage = new_output(model)
    make: Callable[[], Any]
    if api == "openai":
        chunks = openai_chunks(body(size), chunk)
        make = lambda: openai_completions._ChunkAssembler(output, model)  # noqa: E731
    else:
        chunks = anthropic_chunks(body(size), chunk)
        make = lambda: anthropic_messages._EventAssembler(output, model)  # noqa: E731
    assembler = make()
    start = time.perf_counter()
    for c in chunks:
        assembler.apply(c)
    assembler.finish()
    elapsed = time.perf_counter() - start
    assert len(output.text()) == size
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1,8,100", help="reply sizes in MB (comma-separated)")
    parser.add_argument("--chunk", type=int, default=4096, help="characters per streamed delta")
    parser.add_argument("--api", default="openai,anthropic")
    parser.add_argument("--before", type=Path, help="another checkout's src/ to compare against")
    parser.add_argument("--pi", action="store_true", help="also run Pi 0.84.4 (CADDIE_PI_DIR)")
    parser.add_argument("--assembly-only", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    apis = args.api.split(",")

    print(f"assembly only (in process, {args.chunk}-char deltas)")
    for api in apis:
        for size in sizes:
            print(f"  {api:<10} {size / MB:6.0f} MB  {assembly(size, args.chunk, api):7.2f} s", flush=True)
    if args.assembly_only:
        return

    runs: list[tuple[str, Path | None, Path | None]] = [("caddie", None, None)]
    if args.before is not None:
        runs.append(("before", args.before, None))
    if args.pi:
        runs.append(("pi 0.84.4", None, Path(os.environ.get("CADDIE_PI_DIR", "/work/piref"))))
    print(f"\nend to end (-p, fake server, {args.chunk}-char deltas)")
    for api in apis:
        for who, src, pi_dir in runs:
            for size in sizes:
                try:
                    seconds, rss = end_to_end(size, args.chunk, api, who, src, pi_dir, args.timeout)
                    line = f"{seconds:8.2f} s  peak RSS {rss:7.0f} MB"
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    line = f"failed: {str(e)[-300:]}"
                print(f"  {api:<10} {who:<10} {size / MB:6.0f} MB  {line}", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: per-turn harness overhead per model API, in a new session and continuing 200- and
2,000-message sessions — caddie side by side with the reference Pi 0.84.4 on the same fake server.

    uv run python bench/bench_provider_turns.py [--turns 40] [--runs 3] [--apis openai-responses,...]
        [--sizes 0,200,2000] [--no-pi]

Each run is one ``-p`` process continuing a session file (or a new one) of the given size, whose history
was written by the same model (so reasoning items, signatures and tool-call ids replay as they would), and
then making ``--turns`` scripted ``read`` tool calls against a fake server that answers at once; the
figure is the wall time between the first and the last request arriving at the server, per turn: what
the harness (and the provider SDK) spends per turn, with the model's own time removed. Two figures per
run: the mean over all turns (the first turn's one-off work included: lazy imports, first-use set-up, a
JIT warming up) and the median turn (the steady state). Median of runs. The fake server keeps connections
alive between requests, as the real APIs do (the agents' HTTP clients reuse them).

APIs: openai-completions, openai-responses, anthropic-messages, google-generative-ai (both agents);
anthropic-bedrock and anthropic-vertex (caddie only: Pi speaks Bedrock's Converse API and Gemini on
Vertex, not these).
Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import fake_llm as fl  # noqa: E402  (after the sys.path entry)

MODEL = "bench-model"
PI_APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")
ALL_APIS = (*PI_APIS, "anthropic-bedrock", "anthropic-vertex")
SIZES = (0, 200, 2000)


def base_url(api: str, llm: fl.FakeLLM) -> str:
    if api in ("openai-completions", "openai-responses"):
        return llm.openai_base_url
    if api == "google-generative-ai":
        return f"{llm.url}/v1beta"
    if api == "anthropic-vertex":
        return f"{llm.url}/v1"
    return llm.url


def models_json(api: str, llm: fl.FakeLLM) -> dict[str, Any]:
    model = {"id": MODEL, "contextWindow": 1_000_000, "maxTokens": 8192, "reasoning": False}
    return {
        "providers": {
            "bench": {"baseUrl": base_url(api, llm), "api": api, "apiKey": "bench-key", "models": [model]}
        }
    }


# --------------------------------------------------------------------------------------------------
# A session file of ``size`` messages, written by the same model (Pi's JSONL format, version 3)


def _tool_call(api: str, i: int) -> dict[str, Any]:
    call_id = f"call_{i}|fc_{i:06d}" if api == "openai-responses" else f"toolu_{i:06d}"
    return {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": f"src/module_{i}.py"}}


def _thinking(api: str, i: int) -> dict[str, Any] | None:
    text = f"I should look at module {i} before changing anything. " * 3
    if api == "openai-responses":
        item = {
            "id": f"rs_{i:06d}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": "gAAAAA" + "x" * 1200,
        }
        return {
            "type": "thinking",
            "thinking": text,
            "thinkingSignature": json.dumps(item, separators=(",", ":")),
        }
    if api.startswith("anthropic"):
        return {"type": "thinking", "thinking": text, "thinkingSignature": "EqQBCkYIBxgCKkA" + "s" * 300}
    if api == "google-generative-ai":
        return {"type": "thinking", "thinking": text, "thinkingSignature": "Q2lRQ" + "A" * 299}
    return None


def write_session(path: Path, api: str, size: int, cwd: Path) -> None:
    now = datetime.now(UTC)
    stamp = now.isoformat().replace("+00:00", "Z")
    ms = int(now.timestamp() * 1000)
    lines = [{"type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": stamp, "cwd": str(cwd)}]
    parent: str | None = None
    usage = {"input": 1000, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1100,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip

    def add(message: dict[str, Any]) -> None:
        nonlocal parent
        entry_id = uuid.uuid4().hex[:8]
        lines.append(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}
        )
        parent = entry_id

    def assistant(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {"role": "assistant", "content": content, "api": api, "provider": "bench", "model": MODEL,
                "usage": usage, "stopReason": stop, "timestamp": ms}  # fmt: skip

    for i in range(size // 4):
        add(
            {
                "role": "user",
                "content": f"Please look at module {i} and tell me what it does.",
                "timestamp": ms,
            }
        )
        blocks = [b for b in (_thinking(api, i),) if b] + [_tool_call(api, i)]
        add(assistant(blocks, "toolUse"))
        body = "".join(f"def function_{i}_{n}(value):\n    return value * {n}\n\n" for n in range(30))
        add({"role": "toolResult", "toolCallId": blocks[-1]["id"], "toolName": "read",
             "content": [{"type": "text", "text": body}], "isError": False, "timestamp": ms})  # fmt: skip
        text = {"type": "text", "text": f"Module {i} defines thirty small multiplication helpers."}
        if api == "openai-responses":
            text["textSignature"] = json.dumps({"v": 1, "id": f"msg_{i:06d}"}, separators=(",", ":"))
        add(assistant([text], "stop"))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


# --------------------------------------------------------------------------------------------------
# One run


def run_once(who: str, api: str, size: int, turns: int, work: Path, pi_dir: Path) -> tuple[float, float]:
    """(mean, median) milliseconds per turn."""
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "small.txt").write_text("alpha\nbeta\ngamma\n")
    session = work / "session.jsonl"
    if size:
        write_session(session, api, size, project)
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
    with fl.FakeLLM(parse_bodies=False, keep_alive=True) as llm:
        arrivals: list[float] = []

        def reply(index: int) -> Any:
            def make(_request: fl.RecordedRequest) -> fl.Reply:
                arrivals.append(time.perf_counter())
                if index == turns:
                    return fl.text("done")
                return fl.tool_call("read", {"path": "small.txt"}, id=f"c{index}", chunk_size=64)

            return make

        llm.push(*[reply(i) for i in range(turns + 1)])
        session_args = ["--session", str(session)] if size else ["--no-session"]
        if who == "caddie":
            home = work / "caddie-home"
            (home / "agent").mkdir(parents=True, exist_ok=True)
            (home / "agent" / "models.json").write_text(json.dumps(models_json(api, llm)))
            env = {**base, "CADDIE_DIR": str(home), "PYTHONPATH": str(ROOT / "src")}
            env.update(cloud_env(api, llm, work))
            cmd = [sys.executable, "-m", "caddie", "-p", *session_args, "--model", f"bench/{MODEL}"]
        else:
            agent = work / "pi-home" / "agent"
            agent.mkdir(parents=True, exist_ok=True)
            (agent / "models.json").write_text(json.dumps(models_json(api, llm)))
            env = {
                **base,
                "PI_CODING_AGENT_DIR": str(agent),
                "PI_OFFLINE": "1",
                "HOME": str(work / "pi-home"),
            }
            node = pi_dir / "node_modules" / "node" / "bin" / "node"
            cli = pi_dir / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
            cmd = [str(node), str(cli), "-p", *session_args, "--model", f"bench/{MODEL}"]
        cmd += ["--no-context-files", "--tools", "read", "go"]
        proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or len(arrivals) != turns + 1:
            raise RuntimeError(
                f"{who} {api} {size}: exit {proc.returncode}, {len(arrivals)} requests\n{proc.stderr[-2000:]}"
            )
    gaps = [(later - earlier) * 1000 for earlier, later in itertools.pairwise(arrivals)]
    return (arrivals[-1] - arrivals[0]) * 1000 / turns, statistics.median(gaps)


def cloud_env(api: str, llm: fl.FakeLLM, work: Path) -> dict[str, str]:
    if api == "anthropic-bedrock":
        return {"AWS_BEARER_TOKEN_BEDROCK": "bench-token", "AWS_REGION": "us-east-1"}
    if api == "anthropic-vertex":
        from tests.ai.test_anthropic_cloud import write_adc

        return {
            "GOOGLE_APPLICATION_CREDENTIALS": str(write_adc(work, llm)),
            "ANTHROPIC_VERTEX_PROJECT_ID": "bench",
            "CLOUD_ML_REGION": "us-east5",
        }
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--apis", default=",".join(ALL_APIS))
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--no-pi", action="store_true")
    args = parser.parse_args()
    pi_dir = Path(os.environ.get("CADDIE_PI_DIR") or ROOT / ".cache" / "pi")
    have_pi = not args.no_pi and (pi_dir / "node_modules" / "@earendil-works" / "pi-coding-agent").exists()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"{'api':<22} {'session':>9} {'caddie mean':>12} {'pi mean':>8} {'ratio':>6}"
        f" {'caddie median':>14} {'pi median':>10} {'ratio':>6}"
    )
    for api in args.apis.split(","):
        for size in sizes:
            agents = ("caddie", "pi") if have_pi and api in PI_APIS else ("caddie",)
            samples: dict[str, list[tuple[float, float]]] = {who: [] for who in agents}
            for _ in range(args.runs):  # interleaved, so load on a shared machine hits both alike
                for who in agents:
                    work = Path(tempfile.mkdtemp(prefix="bench-turns-"))
                    try:
                        samples[who].append(run_once(who, api, size, args.turns, work, pi_dir))
                    finally:
                        shutil.rmtree(work, ignore_errors=True)
            label = "new" if size == 0 else f"{size} msgs"
            line = f"{api:<22} {label:>9}"
            for column, width in ((0, (12, 8)), (1, (14, 10))):
                mine = statistics.median(run[column] for run in samples["caddie"])
                theirs = statistics.median(run[column] for run in samples["pi"]) if "pi" in samples else None
                ratio = f"{mine / theirs:5.2f}x" if theirs else "    -"
                pi_text = f"{theirs:{width[1]}.1f}" if theirs else f"{'-':>{width[1]}}"
                line += f" {mine:{width[0]}.1f} {pi_text} {ratio}"
            print(line, flush=True)


if __name__ == "__main__":
    main()

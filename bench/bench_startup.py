"""Benchmark: start-up of ``caddie -p`` to its first model request, side by side with the reference Pi.

    uv run python bench/bench_startup.py [--runs 7] [--apis openai-completions,anthropic-messages]
    uv run python bench/bench_startup.py --breakdown        # where an SDK's import time goes

Both agents run as whole processes against the same fake server on 127.0.0.1 (tests/support/fake_llm.py),
configured the same way: a custom provider ``fake`` in models.json (caddie: ``$CADDIE_DIR/agent``, Pi:
``$PI_CODING_AGENT_DIR``), a one-turn ``-p`` prompt, a session file written by each. Runs alternate
caddie, Pi, caddie, Pi … so a drift in the shared machine's speed hits both alike, and the ratio is taken
pair by pair. Figures per run:

- **first request**: process spawn → the request arriving at the server (what the user waits for);
- **exit**: process spawn → the process has ended (after the answer is printed and the session closed);
- **cpu**: user + system CPU seconds of the process.

An RPC scenario follows per API: the agent started with ``--mode rpc`` gets its first prompt ``--rpc-idle``
seconds later (an editor or script that starts the agent before the user has typed); the figure is that
prompt → its request at the server, i.e. what of the start-up was not done while waiting.

``--version`` and ``--help`` are timed the same way (spawn → exit). Pi is looked for in ``CADDIE_PI_DIR``
(default ``.cache/pi``); without it only caddie is measured. An API whose provider module or fake-server
endpoint is not in this checkout is skipped with a note. Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import fake_llm as fl  # noqa: E402

APIS = ("openai-completions", "openai-responses", "anthropic-messages")
SDK_OF = {"openai-completions": "openai", "openai-responses": "openai", "anthropic-messages": "anthropic"}


@dataclass
class Run:
    first_ms: float
    exit_ms: float
    cpu_s: float


def pi_dir() -> Path | None:
    path = Path(os.environ.get("CADDIE_PI_DIR") or ROOT / ".cache" / "pi")
    return path if (path / "node_modules/@earendil-works/pi-coding-agent/dist/cli.js").exists() else None


def pi_cmd(pi: Path) -> list[str]:
    return [
        str(pi / "node_modules/node/bin/node"),
        str(pi / "node_modules/@earendil-works/pi-coding-agent/dist/cli.js"),
    ]


def caddie_cmd() -> list[str]:
    script = Path(sys.executable).with_name("caddie")  # the console script a user runs
    return [str(script)] if script.exists() else [sys.executable, "-m", "caddie"]


def api_supported(api: str) -> str | None:
    """Why ``api`` cannot be measured in this checkout, or None."""
    import importlib.util

    from caddie.ai import stream

    modules: dict[str, str] = getattr(stream, "_BUILTIN_MODULES", {})
    if api not in modules or importlib.util.find_spec(modules[api]) is None:
        return f"caddie has no provider for {api} in this checkout"
    source = Path(fl.__file__).read_text(encoding="utf-8")
    if api == "openai-responses" and "/responses" not in source:
        return "the fake server does not speak the Responses API in this checkout"
    return None


def models_json(llm: fl.FakeLLM, api: str) -> dict[str, object]:
    data = llm.models_json(provider="fake", api=api, model_id="fake-model", contextWindow=128_000)
    if api == "openai-responses":  # models_json picks the Anthropic base URL for anything not "completions"
        data["providers"]["fake"]["baseUrl"] = llm.openai_base_url  # type: ignore[index]
    return data


def timed(cmd: list[str], env: dict[str, str], cwd: Path, arrivals: list[float] | None) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    end = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} … exited {proc.returncode}: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    first = (arrivals[-1] - start) * 1000 if arrivals else float("nan")
    return Run(first, (end - start) * 1000, cpu)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(title: str, rows: dict[str, list[Run]], first: bool) -> None:
    print(f"\n{title}")
    head = (
        f"  {'who':<10}" + (f" {'first request ms':>17}" if first else "") + f" {'exit ms':>9} {'cpu s':>7}"
    )
    print(head)
    for who, runs in rows.items():
        cells = f" {median([r.first_ms for r in runs]):>17.0f}" if first else ""
        print(
            f"  {who:<10}{cells} {median([r.exit_ms for r in runs]):>9.0f} {median([r.cpu_s for r in runs]):>7.2f}"
        )
    if len(rows) == 2:
        a, b = rows.values()
        ratios = [
            x.first_ms / y.first_ms if first else x.exit_ms / y.exit_ms for x, y in zip(a, b, strict=True)
        ]
        label = "first request" if first else "exit"
        print(f"  ratio caddie / pi ({label}), median of pairs: {median(ratios):.2f}×")


def rpc_first_prompt(
    cmd: list[str], env: dict[str, str], cwd: Path, arrivals: list[float], idle_s: float
) -> Run:
    """An RPC client that starts the agent, sends its first prompt ``idle_s`` later, and times that prompt
    until its request reaches the server (the SDK's import either overlapped the wait or did not)."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None
    try:
        time.sleep(idle_s)
        arrivals.clear()
        sent = time.perf_counter()
        proc.stdin.write(json.dumps({"id": "1", "type": "prompt", "message": "go"}) + "\n")
        proc.stdin.flush()
        deadline = sent + 120
        while not arrivals and time.perf_counter() < deadline:
            time.sleep(0.002)
        if not arrivals:
            raise RuntimeError(f"{cmd[0]} sent no request in RPC mode")
        first = (arrivals[0] - sent) * 1000
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass  # killed below
    finally:
        proc.kill()
        proc.wait()
    return Run(first, float("nan"), float("nan"))


def bench_api(api: str, runs: int, pi: Path | None, tmp: Path, rpc_idle_s: float) -> None:
    cwd = tmp / "project"
    cwd.mkdir(exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("CADDIE_")}
    base["HOME"] = str(tmp / "home")
    with fl.FakeLLM() as llm:
        arrivals: list[float] = []

        def answer(request: fl.RecordedRequest) -> fl.Reply:
            arrivals.append(time.perf_counter())
            return fl.text("done")

        llm.default_reply = answer  # type: ignore[assignment]
        caddie_home = tmp / f"caddie-{api}"
        (caddie_home / "agent").mkdir(parents=True, exist_ok=True)
        (caddie_home / "agent" / "models.json").write_text(
            json.dumps(models_json(llm, api)), encoding="utf-8"
        )
        caddie_env = {**base, "CADDIE_DIR": str(caddie_home)}
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "caddie": ([*caddie_cmd(), "-p", "--model", "fake/fake-model", "go"], caddie_env)
        }
        if pi is not None:
            agent = tmp / f"pi-{api}"
            agent.mkdir(parents=True, exist_ok=True)
            (agent / "models.json").write_text(json.dumps(models_json(llm, api)), encoding="utf-8")
            pi_env = {**base, "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
            commands["pi 0.84.4"] = ([*pi_cmd(pi), "-p", "--model", "fake/fake-model", "go"], pi_env)
        rows: dict[str, list[Run]] = {who: [] for who in commands}
        for cmd, env in commands.values():  # one warm-up each (page cache, .pyc, node's compile cache)
            timed(cmd, env, cwd, arrivals)
        for _ in range(runs):
            for who, (cmd, env) in commands.items():
                arrivals.clear()
                rows[who].append(timed(cmd, env, cwd, arrivals))
                if not arrivals:
                    raise RuntimeError(f"{who} sent no request")
        report(f"{api}: start → first request, one-turn -p run ({runs} runs each)", rows, first=True)
        if rpc_idle_s > 0:
            rpc_rows: dict[str, list[Run]] = {who: [] for who in commands}
            for _ in range(runs):
                for who, (cmd, env) in commands.items():
                    rpc_cmd = [c for c in cmd if c not in ("-p", "go")]
                    rpc_cmd[-2:-2] = ["--mode", "rpc"]
                    rpc_rows[who].append(rpc_first_prompt(rpc_cmd, env, cwd, arrivals, rpc_idle_s))
            report(
                f"{api}: --mode rpc, first prompt sent {rpc_idle_s:g} s after start → its request ({runs} runs each)",
                rpc_rows,
                first=True,
            )


def bench_cli(flag: str, runs: int, pi: Path | None, tmp: Path) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CADDIE_")}
    base["HOME"] = str(tmp / "home")
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "caddie": ([*caddie_cmd(), flag], {**base, "CADDIE_DIR": str(tmp / "caddie-cli")})
    }
    if pi is not None:
        commands["pi 0.84.4"] = ([*pi_cmd(pi), flag], {**base, "PI_CODING_AGENT_DIR": str(tmp / "pi-cli")})
    rows: dict[str, list[Run]] = {who: [] for who in commands}
    for cmd, env in commands.values():
        timed(cmd, env, tmp, None)
    for _ in range(runs):
        for who, (cmd, env) in commands.items():
            rows[who].append(timed(cmd, env, tmp, None))
    report(f"{flag} ({runs} runs each)", rows, first=False)


BREAKDOWN = r"""
import sys, time
from caddie.ai.providers import preload
api = sys.argv[1]
steps: list[tuple[str, float]] = []
def step(name, fn):  # CPU time: the machine may be shared, and nothing here waits
    t = time.process_time(); fn(); steps.append((name, (time.process_time() - t) * 1000))
import importlib
spec = preload.spec_for(api)
step("import " + spec.modules[0], lambda: importlib.import_module(spec.modules[0]))
step("other SDK modules, HTTP stack", lambda: [importlib.import_module(m) for m in spec.modules[1:]])
def provider():
    module = importlib.import_module(preload._provider_module(api))
    for hook in preload._PROVIDER_HOOKS:
        getattr(module, hook, lambda: None)()
step("caddie's provider module", provider)
step("first client", lambda: preload._make_client(spec))
step("request/stream type warm-ups", lambda: [w() for w in spec.warmups])
for name, ms in steps:
    print(f"{name}\t{ms:.0f}")
"""


def breakdown(api: str, runs: int) -> None:
    samples: dict[str, list[float]] = {}
    for _ in range(runs + 1):
        out = subprocess.run(
            [sys.executable, "-c", BREAKDOWN, api], capture_output=True, text=True, check=True
        ).stdout
        for line in out.splitlines():
            name, ms = line.split("\t")
            samples.setdefault(name, []).append(float(ms))
    print(f"\n{api}: SDK preload, CPU ms per step (median of {runs} fresh processes after a warm-up)")
    for name, values in samples.items():
        print(f"  {name:<40} {median(values[1:]):>6.0f} ms")
    print(f"  {'total':<40} {sum(median(v[1:]) for v in samples.values()):>6.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--apis", default=",".join(APIS), help="comma-separated model APIs")
    parser.add_argument("--no-cli", action="store_true", help="skip --version / --help")
    parser.add_argument(
        "--rpc-idle",
        type=float,
        default=6.0,
        metavar="SECONDS",
        help="RPC scenario: send the first prompt this long after start (0: skip the scenario)",
    )
    parser.add_argument("--breakdown", action="store_true", help="time the SDK preload steps per API instead")
    args = parser.parse_args()
    apis = [a.strip() for a in args.apis.split(",") if a.strip()]
    if args.breakdown:
        for api in apis:
            if (why := api_supported(api)) is None:
                breakdown(api, args.runs)
        return
    import caddie

    # A user's install has its .pyc files; this environment may set PYTHONDONTWRITEBYTECODE.
    compileall.compile_dir(str(Path(caddie.__file__).parent), quiet=1)
    pi = pi_dir()
    print(f"caddie from {Path(caddie.__file__).parent}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; Pi: {pi or 'not found (CADDIE_PI_DIR)'}")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "home").mkdir()
        for api in apis:
            why = api_supported(api)
            if why is not None:
                print(f"\n{api}: skipped ({why})")
                continue
            bench_api(api, args.runs, pi, tmp, args.rpc_idle)
        if not args.no_cli:
            for flag in ("--version", "--help"):
                bench_cli(flag, args.runs, pi, tmp)


if __name__ == "__main__":
    main()

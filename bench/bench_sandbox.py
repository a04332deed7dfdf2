"""Benchmark: what the sandbox adds to one ``bash`` tool call.

    uv run python bench/bench_sandbox.py [--runs 60] [--command true]

The real ``bash`` tool runs ``--command`` in a temporary workspace, in turn: unsandboxed, in
``workspace-write`` with the network off, in ``read-only``, and in ``workspace-write`` with a network
allow-list (the proxy port handed over by ``netns_helper.py``). Calls alternate between the modes so a drift
in the shared machine's speed hits all alike; each figure is the median (and the 10th percentile, the machine
at its quietest) of the wall time from the tool's ``execute`` to its result. The extra latency is the
sandboxed median minus the unsandboxed one. ``--breakdown`` also times the parts: building the command line
(``Sandbox.prepare``) and bubblewrap starting ``/bin/true``. Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time

from caddie.ai.abort import AbortController
from caddie.sandbox import NetworkRule, Sandbox, SandboxConfig, open_sandbox
from caddie.tools.bash import create_bash_tool


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def one_call(sandbox: Sandbox, workspace: str, command: str) -> float:
    tool = create_bash_tool(workspace, sandbox=sandbox)
    started = time.perf_counter()
    await tool.execute("bench", {"command": command}, AbortController().signal, None, None)
    return (time.perf_counter() - started) * 1000


async def measure(runs: int, command: str) -> dict[str, list[float]]:
    workspace = tempfile.mkdtemp(prefix="caddie-bench-ws-")
    sandboxes = {
        "off": Sandbox.off(),
        "workspace-write": open_sandbox("workspace-write", workspace, SandboxConfig()),
        "read-only": open_sandbox("read-only", workspace, SandboxConfig()),
        "allow-list": open_sandbox(
            "workspace-write", workspace, SandboxConfig(network=NetworkRule("allow-list", ("pypi.org",)))
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in sandboxes}
    try:
        for sandbox in sandboxes.values():  # warm-up: page cache, the bwrap probe
            await one_call(sandbox, workspace, command)
        for _ in range(runs):
            for name, sandbox in sandboxes.items():
                times[name].append(await one_call(sandbox, workspace, command))
    finally:
        for sandbox in sandboxes.values():
            sandbox.close()
    return times


def breakdown(runs: int) -> None:
    workspace = tempfile.mkdtemp(prefix="caddie-bench-ws-")
    sandbox = open_sandbox("workspace-write", workspace, SandboxConfig())
    prepare: list[float] = []
    bwrap: list[float] = []
    plain: list[float] = []
    try:
        for _ in range(runs):
            started = time.perf_counter()
            prepared = sandbox.prepare(["/bin/true"], workspace)
            prepare.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            subprocess.run(prepared.argv, env=prepared.env, pass_fds=prepared.pass_fds, check=True)
            bwrap.append((time.perf_counter() - started) * 1000)
            prepared.close()
            started = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            plain.append((time.perf_counter() - started) * 1000)
    finally:
        sandbox.close()
    print(f"prepare (command line, seccomp pipe): median {statistics.median(prepare):.2f} ms")
    print(
        f"bwrap + /bin/true: median {statistics.median(bwrap):.1f} ms; plain /bin/true: {statistics.median(plain):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--command", default="true")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    times = asyncio.run(measure(args.runs, args.command))
    base = statistics.median(times["off"])
    base_p10 = percentile(times["off"], 0.1)
    print(
        f"bash tool call {args.command!r}, {args.runs} runs each, interleaved; load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'mode':<18}{'median ms':>10}{'extra':>8}{'p10 ms':>9}{'extra':>8}")
    for name, values in times.items():
        median, p10 = statistics.median(values), percentile(values, 0.1)
        extra = ("", "") if name == "off" else (f"{median - base:+.1f}", f"{p10 - base_p10:+.1f}")
        print(f"{name:<18}{median:>10.1f}{extra[0]:>8}{p10:>9.1f}{extra[1]:>8}")
    if args.breakdown:
        breakdown(args.runs)


if __name__ == "__main__":
    main()

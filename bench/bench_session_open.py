"""Benchmark: open a 100,000-entry session and build its context (caddie vs the reference Pi).

    uv run python bench/bench_session_open.py [--file /tmp/big.jsonl] [--runs 5]

Each run is a fresh process, so peak memory (max RSS) is the run's own. Targets (issue 2): under 1.0 s and
under 500 MB on the 2-core dev machine. Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
CADDIE_RUN = """
import json, resource, sys, time
t0 = time.perf_counter()
from caddie.session.store import SessionStore
t1 = time.perf_counter()
store = SessionStore.open(sys.argv[1])
ctx = store.build_context()
t2 = time.perf_counter()
print(json.dumps({"seconds": t2 - t1, "import_seconds": t1 - t0, "messages": len(ctx.messages),
                  "rssMB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(cmd: list[str]) -> dict[str, float]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=Path("/tmp/caddie-bench-100k.jsonl"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not args.file.exists():
        subprocess.run([sys.executable, str(HERE / "make_session.py"), str(args.file)], check=True)
    size_mb = args.file.stat().st_size / 1e6
    print(f"file: {args.file} ({size_mb:.1f} MB)")

    rows = {"caddie": [run([sys.executable, "-c", CADDIE_RUN, str(args.file)]) for _ in range(args.runs)]}
    pi_dir = Path(os.environ.get("CADDIE_PI_DIR") or Path(__file__).resolve().parents[1] / ".cache" / "pi")
    node = pi_dir / "node_modules" / "node" / "bin" / "node"
    if node.exists():
        rows["pi 0.84.4"] = [
            run([str(node), str(HERE / "pi_open_session.mjs"), str(args.file)]) for _ in range(args.runs)
        ]
    print(f"{'who':<10} {'median s':>9} {'min s':>7} {'peak RSS MB':>12} {'messages':>9}")
    for who, results in rows.items():
        secs = [r["seconds"] for r in results]
        rss = max(r["rssMB"] for r in results)
        print(
            f"{who:<10} {statistics.median(secs):>9.3f} {min(secs):>7.3f} {rss:>12.0f} {int(results[0]['messages']):>9}"
        )


if __name__ == "__main__":
    main()

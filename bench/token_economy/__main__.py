"""The token-economy benchmark: what mulligan saves on eight kinds of common context waste.

    uv run python -m bench.token_economy                      # all episodes, table + docs/token_economy.png
    uv run python -m bench.token_economy --episodes log-cat   # some of them
    uv run python -m bench.token_economy --json results.json  # every request's numbers too

Each episode runs three times through the real ``caddie -p`` against the fake OpenAI-compatible server on
127.0.0.1 (see ``runner.py``): mulligan off, mulligan on (the scripted model follows its nudges), and the
physical limit (the waste never produced). Reported per episode and in total: input tokens billed (summed over
requests), the limit, the waste-seen-once bound (the off run with each waste result sent once and never again,
plus mulligan's schemas), the share of billed tokens mulligan saved, and the share of the avoidable waste
(off − limit) it removed. Results go into docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.token_economy.episodes import WORK_TURNS, episodes
from bench.token_economy.runner import MODES, RunResult, run_episode

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "docs" / "token_economy.png"
CACHE_READ_SHARE = 0.1
"""Cache reads priced at a tenth of the input rate (Anthropic's and OpenAI's recent models)."""


@dataclass
class Row:
    name: str
    waste_kind: str
    off: RunResult
    on: RunResult
    limit: RunResult

    @property
    def saved(self) -> float:
        return 1 - self.on.total / self.off.total

    @property
    def removed(self) -> float:
        """Share of the avoidable waste (off − limit) that mulligan removed (off − on)."""
        avoidable = self.off.total - self.limit.total
        return (self.off.total - self.on.total) / avoidable if avoidable else 0.0

    @property
    def above_limit(self) -> float:
        return self.on.total / self.limit.total - 1

    @property
    def seen_once(self) -> int:
        """The bound for any agent that must read a result to judge it: the run without mulligan with every
        waste result sent once and never again, plus mulligan's tool schemas (loaded, as in ``on``)."""
        schema = self.on.mulligan_schema_chars
        return sum(math.ceil((c + schema) / 4) for c in self.off.seen_once)

    @property
    def above_seen_once(self) -> float:
        return self.on.total / self.seen_once - 1


def cost_units(run: RunResult) -> float:
    """Billed input with prefix caching: cached tokens at ``CACHE_READ_SHARE`` of the input rate."""
    return sum(b - c + c * CACHE_READ_SHARE for b, c in zip(run.billed, run.cached, strict=True))


def k(n: float) -> str:
    return f"{n / 1000:,.1f}k"


def table(rows: list[Row]) -> str:
    head = (
        "| episode | waste | requests off / on / limit | billed off | billed on | limit | seen once | saved | "
        "waste removed | on vs limit | on vs seen once |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.waste_kind} | {r.off.requests} / {r.on.requests} / {r.limit.requests} | "
            f"{k(r.off.total)} | {k(r.on.total)} | {k(r.limit.total)} | {k(r.seen_once)} | {r.saved:.0%} | "
            f"{r.removed:.0%} | {r.above_limit:+.0%} | {r.above_seen_once:+.0%} |"
        )
    off = sum(r.off.total for r in rows)
    on = sum(r.on.total for r in rows)
    limit = sum(r.limit.total for r in rows)
    once = sum(r.seen_once for r in rows)
    removed = (off - on) / (off - limit) if off != limit else 0.0
    lines.append(
        f"| **total** | | {sum(r.off.requests for r in rows)} / {sum(r.on.requests for r in rows)} / "
        f"{sum(r.limit.requests for r in rows)} | **{k(off)}** | **{k(on)}** | **{k(limit)}** | **{k(once)}** | "
        f"**{1 - on / off:.0%}** | **{removed:.0%}** | **{on / limit - 1:+.0%}** | **{on / once - 1:+.0%}** |"
    )
    return "\n".join(lines)


def extras(rows: list[Row]) -> str:
    schema = sum(r.on.mulligan_schema * r.on.requests for r in rows)
    on = sum(r.on.total for r in rows)
    off_c = sum(cost_units(r.off) for r in rows)
    on_c = sum(cost_units(r.on) for r in rows)
    lim_c = sum(cost_units(r.limit) for r in rows)
    nudged = [r.name for r in rows if r.on.nudged]
    calls = {r.name: r.on.mulligan_calls for r in rows}
    return "\n".join(
        [
            f"mulligan's four tool schemas: {rows[0].on.mulligan_schema if rows else 0} tokens per request, "
            f"{k(schema)} of the {k(on)} billed with mulligan ({schema / on:.1%}); the limit run carries them too.",
            f"with prefix caching (cache reads at {CACHE_READ_SHARE:.0%} of the input rate), input cost in "
            f"input-token equivalents: off {k(off_c)}, on {k(on_c)}, limit {k(lim_c)} "
            f"(saved {1 - on_c / off_c:.0%}).",
            f"nudged: {len(nudged)}/{len(rows)} episodes; mulligan calls: {json.dumps(calls)}",
            "savings the sessions report (compute_savings, net of mulligan's notes and calls; messages only) vs "
            "measured off − on: "
            + ", ".join(f"{r.name} {k(r.on.session_saved)} / {k(r.off.total - r.on.total)}" for r in rows),
        ]
    )


def chart(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r.name for r in rows]
    series = [
        ("mulligan off", [r.off.total / 1000 for r in rows], "#c0504d"),
        ("mulligan on", [r.on.total / 1000 for r in rows], "#4f81bd"),
        ("waste seen once", [r.seen_once / 1000 for r in rows], "#f0ad4e"),
        ("physical limit (no waste)", [r.limit.total / 1000 for r in rows], "#9bbb59"),
    ]
    fig, ax = plt.subplots(figsize=(11, 5.2), dpi=110)
    width = 0.2
    for i, (label, values, color) in enumerate(series):
        xs = [x + (i - 1.5) * width for x in range(len(rows))]
        ax.bar(xs, values, width, label=label, color=color)
    for x, r in enumerate(rows):
        top = max(r.off.total, r.on.total, r.limit.total, r.seen_once) / 1000
        label = f"{-r.saved:+.0%}".replace("-", "\u2212")
        ax.annotate(
            label, (x, top), ha="center", va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points"
        )
    off = sum(r.off.total for r in rows)
    on = sum(r.on.total for r in rows)
    limit = sum(r.limit.total for r in rows)
    ax.set_xticks(range(len(rows)), names, rotation=20, ha="right")
    ax.set_ylabel("input tokens billed per episode (thousands)")
    ax.set_title(
        f"Token economy: {len(rows)} episodes — off {off / 1e3:,.0f}k, on {on / 1e3:,.0f}k "
        f"({on / off - 1:+.0%}), seen once {sum(r.seen_once for r in rows) / 1e3:,.0f}k, limit {limit / 1e3:,.0f}k",
        fontsize=11,
    )
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", nargs="*", help="episode names (default: all)")
    parser.add_argument("--chart", type=Path, default=CHART, help=f"PNG path (default: {CHART})")
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--json", type=Path, help="write every run's numbers here")
    parser.add_argument(
        "--work-turns",
        type=int,
        default=WORK_TURNS,
        metavar="N",
        help=f"turns of ordinary work after the waste (default: {WORK_TURNS}; the gap to the limit shrinks as "
        "the session goes on, since the one request that carries the waste is paid in full)",
    )
    args = parser.parse_args(argv)

    if args.work_turns < 1:
        parser.error("--work-turns must be at least 1")
    chosen = [e for e in episodes(args.work_turns) if not args.episodes or e.name in args.episodes]
    unknown = set(args.episodes or ()) - {e.name for e in chosen}
    if unknown:
        names = ", ".join(e.name for e in episodes())
        print(f"Unknown episode(s) {', '.join(sorted(unknown))}; choose from: {names}.", file=sys.stderr)
        return 2
    rows: list[Row] = []
    started = time.perf_counter()
    for ep in chosen:
        runs = {mode: run_episode(ep, mode) for mode in MODES}
        row = Row(ep.name, ep.waste_kind, runs["off"], runs["on"], runs["limit"])
        rows.append(row)
        print(
            f"{ep.name:<16} off {k(row.off.total):>8}  on {k(row.on.total):>8}  limit {k(row.limit.total):>8}  "
            f"seen once {k(row.seen_once):>8}  saved {row.saved:4.0%}  waste removed {row.removed:4.0%}  "
            f"({row.on.requests} requests, mulligan calls {row.on.mulligan_calls})",
            flush=True,
        )
    print()
    print(table(rows))
    print()
    print(extras(rows))
    print(
        f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, {time.perf_counter() - started:.0f} s"
    )
    if args.json:
        args.json.write_text(
            json.dumps([run.to_json() for r in rows for run in (r.off, r.on, r.limit)], indent=1)
        )
    if not args.no_chart and rows:
        chart(rows, args.chart)
        print(f"chart: {args.chart}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The token-economy benchmark: what mulligan saves on eight kinds of common context waste, and what it costs a
session with none.

    uv run python -m bench.token_economy                            # everything, tables + docs/token_economy.png
    uv run python -m bench.token_economy --episodes log-cat no-waste  # some of them
    uv run python -m bench.token_economy --tools-mode when-needed   # one setting of mulligan's ``tools``
    uv run python -m bench.token_economy --json results.json        # every request's numbers too

Each episode runs through the real ``caddie -p`` against the fake OpenAI-compatible server on 127.0.0.1 (see
``runner.py``): mulligan off; mulligan on (the scripted model follows its nudges) and the physical limit (the
waste never produced), each with mulligan's ``tools`` setting ``"always"`` and ``"when-needed"``. Reported per
episode and in total over the eight waste episodes: input tokens billed (summed over requests), the limit,
the waste-seen-once bound, the share of billed tokens mulligan saved, the share of the avoidable waste
(off − limit) it removed; for ``no-waste``, mulligan's overhead; and what the session itself reports mulligan
saved (``caddie context --stats --json``) against the measured off − on. Results go into docs/benchmarks.md by
hand.
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

from bench.token_economy.episodes import NO_WASTE, WORK_TURNS, episodes
from bench.token_economy.runner import (
    CACHE_READ_SHARE,
    TOOLS_MODES,
    RunResult,
    ToolsMode,
    run_episode,
)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "docs" / "token_economy.png"


@dataclass
class Row:
    """One episode in one ``tools`` setting: the run without mulligan, with it, and the limit."""

    name: str
    waste_kind: str
    tools: ToolsMode
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
        waste result sent once and never again, plus mulligan's tool schemas on as many of the last requests as
        carried them in the mulligan run."""
        schema = self.on.mulligan_schema_chars
        n = len(self.off.seen_once)
        carried = min(self.on.schema_requests, n)
        return sum(
            math.ceil((c + (schema if i >= n - carried else 0)) / 4) for i, c in enumerate(self.off.seen_once)
        )

    @property
    def above_seen_once(self) -> float:
        return self.on.total / self.seen_once - 1

    @property
    def measured(self) -> int:
        """Input tokens mulligan saved, measured: off − on."""
        return self.off.total - self.on.total

    @property
    def reported(self) -> int:
        """What the session says it saved (net)."""
        return int(self.on.reported.get("tokens") or 0)

    @property
    def measured_cost(self) -> float:
        return cost_units(self.off) - cost_units(self.on)

    @property
    def reported_cost(self) -> float:
        return float(self.on.reported.get("cost") or 0.0) * 1_000_000


def cost_units(run: RunResult) -> float:
    """Billed input with prefix caching: cached tokens at ``CACHE_READ_SHARE`` of the input rate."""
    return sum(b - c + c * CACHE_READ_SHARE for b, c in zip(run.billed, run.cached, strict=True))


def k(n: float) -> str:
    return f"{n / 1000:,.1f}k"


def off_by(reported: float, measured: float) -> str:
    return f"{(reported - measured) / abs(measured):+.2%}" if measured else "—"


def table(rows: list[Row]) -> str:
    head = (
        "| episode | tools | requests off / on / limit | billed off | billed on | limit | seen once | saved | "
        "waste removed | on vs limit | on vs seen once |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for mode in TOOLS_MODES:
        chosen = [r for r in rows if r.tools == mode]
        if not chosen:
            continue
        for r in chosen:
            lines.append(
                f"| {r.name} | {mode} | {r.off.requests} / {r.on.requests} / {r.limit.requests} | "
                f"{k(r.off.total)} | {k(r.on.total)} | {k(r.limit.total)} | {k(r.seen_once)} | {r.saved:.0%} | "
                f"{r.removed:.0%} | {r.above_limit:+.0%} | {r.above_seen_once:+.0%} |"
            )
        off = sum(r.off.total for r in chosen)
        on = sum(r.on.total for r in chosen)
        limit = sum(r.limit.total for r in chosen)
        once = sum(r.seen_once for r in chosen)
        removed = (off - on) / (off - limit) if off != limit else 0.0
        lines.append(
            f"| **total** | **{mode}** | {sum(r.off.requests for r in chosen)} / "
            f"{sum(r.on.requests for r in chosen)} / {sum(r.limit.requests for r in chosen)} | **{k(off)}** | "
            f"**{k(on)}** | **{k(limit)}** | **{k(once)}** | **{1 - on / off:.0%}** | **{removed:.0%}** | "
            f"**{on / limit - 1:+.0%}** | **{on / once - 1:+.0%}** |"
        )
    return "\n".join(lines)


def no_waste_table(rows: list[Row]) -> str:
    lines = [
        "| tools | requests | billed off | billed on | mulligan's overhead | requests carrying its schemas | "
        "cost off | cost on (cached) | overhead (cached) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        off_c, on_c = cost_units(r.off), cost_units(r.on)
        lines.append(
            f"| {r.tools} | {r.on.requests} | {k(r.off.total)} | {k(r.on.total)} | "
            f"{r.on.total / r.off.total - 1:+.1%} | {r.on.schema_requests} | {k(off_c)} | {k(on_c)} | "
            f"{on_c / off_c - 1:+.1%} |"
        )
    return "\n".join(lines)


def reported_table(rows: list[Row]) -> str:
    lines = [
        "| episode | tools | measured off − on | the session reports (net) | gross | off by | "
        "measured, cached $ × 10⁶ | reported | off by |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.tools} | {k(r.measured)} | {k(r.reported)} | "
            f"{k(float(r.on.reported.get('grossTokens') or 0))} | {off_by(r.reported, r.measured)} | "
            f"{k(r.measured_cost)} | {k(r.reported_cost)} | {off_by(r.reported_cost, r.measured_cost)} |"
        )
    return "\n".join(lines)


def extras(rows: list[Row]) -> str:
    out = []
    for mode in TOOLS_MODES:
        chosen = [r for r in rows if r.tools == mode]
        if not chosen:
            continue
        schema = sum(r.on.mulligan_schema * r.on.schema_requests for r in chosen)
        on = sum(r.on.total for r in chosen)
        off_c = sum(cost_units(r.off) for r in chosen)
        on_c = sum(cost_units(r.on) for r in chosen)
        lim_c = sum(cost_units(r.limit) for r in chosen)
        nudged = [r.name for r in chosen if r.on.nudged]
        calls = {r.name: r.on.mulligan_calls for r in chosen}
        out += [
            f"[{mode}] mulligan's four tool schemas: {chosen[0].on.mulligan_schema} tokens on each of "
            f"{sum(r.on.schema_requests for r in chosen)} of {sum(r.on.requests for r in chosen)} requests, "
            f"{k(schema)} of the {k(on)} billed with mulligan ({schema / on:.1%}).",
            f"[{mode}] with prefix caching (cache reads at {CACHE_READ_SHARE:.0%} of the input rate), input cost "
            f"in input-token equivalents: off {k(off_c)}, on {k(on_c)}, limit {k(lim_c)} "
            f"(saved {1 - on_c / off_c:.0%}).",
            f"[{mode}] nudged: {len(nudged)}/{len(chosen)} episodes; mulligan calls: {json.dumps(calls)}",
        ]
    return "\n".join(out)


def chart(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    always = {r.name: r for r in rows if r.tools == "always"}
    needed = {r.name: r for r in rows if r.tools == "when-needed"}
    names = list(dict.fromkeys(r.name for r in rows))
    first = {n: always.get(n) or needed[n] for n in names}
    series = [("mulligan off", [first[n].off.total / 1000 for n in names], "#c0504d")]
    if always:
        series.append(
            ("on, tools always", [always[n].on.total / 1000 if n in always else 0 for n in names], "#4f81bd")
        )
    if needed:
        series.append(
            (
                "on, tools when-needed",
                [needed[n].on.total / 1000 if n in needed else 0 for n in names],
                "#8064a2",
            )
        )
    limits = [min(r.limit.total for r in rows if r.name == n) / 1000 for n in names]  # the cheapest setting's
    series.append(("physical limit (no waste)", limits, "#9bbb59"))
    fig, ax = plt.subplots(figsize=(12, 5.2), dpi=110)
    width = 0.8 / len(series)
    for i, (label, values, color) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(names))]
        ax.bar(xs, values, width, label=label, color=color)
    for x, n in enumerate(names):
        r = needed.get(n) or always[n]
        top = max(r.off.total, r.on.total, r.limit.total) / 1000
        label = "\u00b10%" if round(r.saved, 2) == 0 else f"{-r.saved:+.0%}".replace("-", "\u2212")
        ax.annotate(
            label, (x, top), ha="center", va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points"
        )
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("input tokens billed per episode (thousands)")
    ax.set_title(
        "Token economy: input tokens billed per episode (labels: saved with tools when-needed)", fontsize=11
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
    parser.add_argument(
        "--tools-mode",
        choices=(*TOOLS_MODES, "both"),
        default="both",
        help='mulligan\'s "tools" setting for the runs with mulligan (default: both, side by side)',
    )
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
    modes: tuple[ToolsMode, ...] = TOOLS_MODES if args.tools_mode == "both" else (args.tools_mode,)
    chosen = [e for e in episodes(args.work_turns) if not args.episodes or e.name in args.episodes]
    unknown = set(args.episodes or ()) - {e.name for e in chosen}
    if unknown:
        names = ", ".join(e.name for e in episodes())
        print(f"Unknown episode(s) {', '.join(sorted(unknown))}; choose from: {names}.", file=sys.stderr)
        return 2
    rows: list[Row] = []
    started = time.perf_counter()
    for ep in chosen:
        off = run_episode(ep, "off")
        for mode in modes:
            on = run_episode(ep, "on", tools_mode=mode)
            limit = on if ep.name == NO_WASTE else run_episode(ep, "limit", tools_mode=mode)
            row = Row(ep.name, ep.waste_kind, mode, off, on, limit)
            rows.append(row)
            print(
                f"{ep.name:<16} {mode:<11} off {k(off.total):>8}  on {k(on.total):>8}  limit {k(limit.total):>8}"
                f"  saved {row.saved:5.0%}  reported {k(row.reported):>8} vs measured {k(row.measured):>8} "
                f"({off_by(row.reported, row.measured)})  ({on.requests} requests, {on.schema_requests} with "
                f"mulligan's tools, mulligan calls {on.mulligan_calls})",
                flush=True,
            )
    waste = [r for r in rows if r.name != NO_WASTE]
    clean = [r for r in rows if r.name == NO_WASTE]
    if waste:
        print()
        print(table(waste))
        print()
        print(extras(waste))
    if clean:
        print()
        print(no_waste_table(clean))
    print()
    print(reported_table(rows))
    print(
        f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, {time.perf_counter() - started:.0f} s"
    )
    if args.json:
        runs = {id(run): run for r in rows for run in (r.off, r.on, r.limit)}
        args.json.write_text(json.dumps([run.to_json() for run in runs.values()], indent=1))
    if not args.no_chart and rows:
        chart(rows, args.chart)
        print(f"chart: {args.chart}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

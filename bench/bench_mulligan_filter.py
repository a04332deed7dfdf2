"""How long mulligan's ``context`` filter takes per inference, as sessions and marker counts grow.

Run by hand from the repository root:

    uv run python bench/bench_mulligan_filter.py

For each size it builds a session of ``messages`` messages (user prompts, tool calls with results, some
text replies), adds ``markers`` markers the way the tools persist them (pinned rewinds over tool groups,
pinned shrinks, a few unpinned shrinks) plus a turn metric per turn, and times two things:

- ``filter``: the pure ``filter_pipeline`` (markers read and branch indexed beforehand);
- ``fire``: the whole ``context`` handler through the fake host, steady state (its incremental marker and
  branch indexes are warm, as after the previous inference): reading markers, indexing the branch, the
  pipeline, drift gate, high-water estimate over the filtered view, stale-shrink bookkeeping, banner;
- ``host``: what the fake host's own calls cost inside ``fire`` (``entries()``, the O(depth) ``branch()``
  walk, ``get_context_usage()``), so ``fire - host`` is the extension's share.

Default settings cap active rewinds at 5 and active shrinks at 32; the marker counts here are a stress test
(half pinned rewinds, half shrinks of which a tenth match nothing and resolve live every fire), with the
shrink cap raised so that the soft cap does not retire one shrink per fire (which would change the view every
inference and defeat the incremental token count).

The deep copies of the messages (the host's job) are made before the timed region.
"""

from __future__ import annotations

import copy
import gc
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mulligan.fakehost import Harness, assistant, assistant_text, call, result, user

from caddie.extensions.api import ContextEvent, ContextUsage
from caddie.extensions.mulligan.transforms import filter_pipeline

SIZES = [(200, 5), (2_000, 50), (20_000, 500)]
REPEATS = {200: 200, 2_000: 100, 20_000: 15}


def build(n_messages: int, n_markers: int, seed: int = 7) -> Harness:
    rng = random.Random(seed)
    h = Harness({"shrink": {"maxActive": 1_000}})  # keep every shrink active: a steady state to measure
    h.host.usage = ContextUsage(tokens=None, context_window=10_000_000, percent=None)
    s = h.session
    groups: list[tuple[str, str]] = []  # (assistant entry id, result entry id)
    count = 0
    turn = 0
    while count < n_messages:
        s.message(user(f"prompt {count}: please look at the module and fix the failing test"))
        count += 1
        for _ in range(rng.randint(1, 4)):
            cid = f"call_{count}"
            name = rng.choice(["read", "bash", "grep"])
            args = (
                {"path": f"src/pkg/mod_{count}.py"}
                if name == "read"
                else {"command": f"grep -rn foo src/{count}"}
            )
            a = s.message(assistant(call(cid, name, **args)))
            r = s.message(result(cid, "line of output\n" * rng.randint(5, 60), name))
            groups.append((a, r))
            count += 2
        s.message(assistant_text("Done with this step; the change is in place and the tests pass."))
        count += 1
        s.custom_entry(
            "mulligan:turn-metric",
            {
                "schema": "pi-mulligan",
                "v": 1,
                "kind": "turn-metric",
                "deltaTokens": rng.randint(0, 3000),
                "bloatHit": False,
                "bloatHits": [],
                "grewOverThreshold": False,
                "turnIndex": turn,
                "seq": 100_000 + turn,
                "ts": 1_000 + turn,
            },
        )
        turn += 1
    chosen = rng.sample(groups, min(n_markers, len(groups)))
    for i, (a, r) in enumerate(chosen):
        data: dict[str, Any]
        if i % 2 == 0:
            data = {
                "granularity": "last_tool_call_group",
                "options": {"protect": ["first:user", "latest:user"]},
                "excludeToolCallId": f"rw_{i}",
                "note": {},
                "ledger": {},
                "hideEntryIds": [a, r],
                "schema": "pi-mulligan",
                "v": 1,
                "kind": "rewind",
                "id": str(uuid.uuid4()),
                "seq": i + 1,
                "ts": 10 + i,
            }
            s.custom_entry("mulligan:rewind", data)
        else:
            pinned = i % 10 != 1
            data = {
                "target": {"by_tool_call_id": f"missing_{i}"} if not pinned else {"by_tool_name": "read"},
                "replacement": "summary of the output",
                "schema": "pi-mulligan",
                "v": 1,
                "kind": "shrink",
                "id": str(uuid.uuid4()),
                "seq": i + 1,
                "ts": 10 + i,
            }
            if pinned:
                data["pinnedEntryId"] = r
            s.custom_entry("mulligan:shrink", data)
    return h


def median_ms(fn: Any, make_input: Any, repeats: int) -> float:
    inputs = [make_input() for _ in range(repeats)]
    gc.collect()
    samples = []
    for arg in inputs:
        t0 = time.perf_counter()
        fn(arg)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(n_messages: int, n_markers: int) -> tuple[int, float, float, float]:
    """(context size, filter ms, fire ms, host ms) for one session size."""
    h = build(n_messages, n_markers)
    base = h.session.context_messages()
    protected = h.mulligan.config.rewind.protected_roles
    handler = h.handlers("context")[0]
    handler(ContextEvent(copy.deepcopy(base)), h.ctx)  # warm the incremental indexes, as in a session
    markers = h.rt.marker_index.update(h.session.entries()).bundle()
    branch = h.session.branch()
    tail = h.rt.branch_index.tail(branch)

    def pipeline(msgs: list[Any]) -> None:
        filter_pipeline(msgs, markers.rewinds, markers.shrinks, protected, branch, None, tail)

    def fire(msgs: list[Any]) -> None:
        handler(ContextEvent(msgs), h.ctx)

    def host(_: Any) -> None:
        h.ctx.session.entries()
        h.ctx.session.branch()
        h.ctx.get_context_usage()

    repeats = REPEATS[n_messages]
    return (
        len(base),
        median_ms(pipeline, lambda: copy.deepcopy(base), repeats),
        median_ms(fire, lambda: copy.deepcopy(base), repeats),
        median_ms(host, lambda: None, repeats),
    )


def main() -> None:
    print(f"{'messages':>9} {'markers':>8} {'filter ms':>10} {'fire ms':>8} {'host ms':>8}")
    for n_messages, n_markers in SIZES:
        size, p, f, c = measure(n_messages, n_markers)
        print(f"{size:>9} {n_markers:>8} {p:>10.3f} {f:>8.3f} {c:>8.3f}")


if __name__ == "__main__":
    main()

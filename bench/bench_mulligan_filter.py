"""How long mulligan's ``context`` filter takes per inference, as sessions and marker counts grow, next to the
TypeScript original (pi-mulligan) on the same data.

Run by hand from the repository root:

    uv run python bench/bench_mulligan_filter.py                 # every size; the original too when available
    uv run python bench/bench_mulligan_filter.py --sizes 2000/50 --budget 5 --keep /tmp/mulligan-bench

For each size (messages/markers) it:

1. builds a session once, through the fake host (tests/mulligan/fakehost.py) with the real mulligan tools:
   turns of a user prompt, 1-4 tool groups (read/bash/grep/edit, some parallel calls, 15% large outputs) and a
   text reply, a ``mulligan:turn-metric`` entry per turn, and, spread evenly over the session, ``markers``
   active markers made by calling ``mulligan_rewind`` (half of them: 3/4 ``last_tool_call_group`` plus a redo,
   1/4 ``last_turn``; all pinned, each with its note), ``mulligan_shrink`` (the other half: 9/10 pinned to an
   earlier result, large ones preferred; 1/10 matching nothing, so unpinned and resolved live every fire) and
   ``mulligan_cancel`` (one per 25 markers, each retiring an extra marker made for it). Settings raise the
   rewind depth/retry caps and ``shrink.maxActive`` so that every marker is accepted and stays active (the
   soft cap would otherwise retire one shrink per fire and change the view every inference);
2. writes it as JSON (``<dir>/mulligan-<messages>-<markers>.json``): ``messages`` (the context the host hands
   to the ``context`` event, in Pi's JSON shape), ``branch`` (the session entries root → leaf, as stored;
   the session is linear, so they are also all its entries), ``markers`` (the ``mulligan:*`` custom entries as
   stored) and ``settings``;
3. times caddie on that JSON (loaded back with ``message_from_json``/``entry_from_json``). Each call gets a
   fresh ``copy_messages`` copy of the messages, made just before it and outside the timed region, as the host
   hands the ``context`` event a fresh copy on every inference:
   - ``filter``: the pure ``filter_pipeline`` with the markers already read (the branch is indexed inside, as
     the original's ``filterPipeline`` does inside);
   - ``warm``: the same with the branch index passed in (as the handler calls it, its index kept across fires);
   - ``fire``: the whole ``context`` handler through the fake host, steady state (its incremental marker,
     branch and token indexes warm, as after the previous inference): reading markers, indexing the branch,
     the pipeline, drift gate, high-water estimate, stale-shrink bookkeeping, banner; this includes
     releasing the previous fire's view (it is cached until the next fire), as in a session;
   - ``host``: what the fake host's own calls cost inside ``fire`` (``entries()``, the O(depth) ``branch()``
     walk, ``get_context_usage()``);
4. where Node >= 22.19 (``$CADDIE_PI_DIR``, default .cache/pi in the checkout, which also provides jiti and Pi's modules) and
   pi-mulligan's bare mirror (``$PI_MULLIGAN_REPO``) are available: exports pi-mulligan's HEAD into a temporary
   directory (nothing of it is kept), and runs bench/mulligan_original_filter.mjs in a Node child process on the
   same JSON. It loads pi-mulligan's sources the way Pi loads extensions (jiti), reads the markers with its
   ``readMarkers`` and times its ``filterPipeline`` (vs ``filter``) and its ``contextHandler`` over a fake
   session manager shaped like Pi's (``getEntries`` filters, ``getBranch`` walks parent ids; vs ``fire``);
5. checks that both produce the same filtered messages (compared as Pi JSON, message by message) for the
   pipeline and for the handler, and stops with the first difference otherwise.

Timings: warm-up runs, then as many runs as fit in ``--budget`` seconds (at least ``--min-runs``, at most
``--max-runs``); the median is reported. ``--rounds`` repeats the caddie and original measurements alternately and
pools the samples (other processes may be running). The original's filter grows quadratically, so its run count
drops to the minimum at 20,000 messages.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mulligan.fakehost import Harness, assistant, assistant_text, call, result, user

from caddie.ai.messages import copy_messages, message_from_json, message_to_json
from caddie.extensions.api import AgentMessage, ContextEvent, ContextUsage, CustomEntry, SessionEntry
from caddie.extensions.bundled.mulligan.markers import MarkerBundle, read_markers
from caddie.extensions.bundled.mulligan.transforms import SHRUNK_OPEN, branch_tail, filter_pipeline
from caddie.session.entries import entry_from_json, entry_to_json

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "mulligan_original_filter.mjs"
PI_DIR = Path(os.environ.get("CADDIE_PI_DIR") or Path(__file__).resolve().parents[1] / ".cache" / "pi")
PI_MULLIGAN_REPO = Path(os.environ.get("PI_MULLIGAN_REPO", "/work/.mirror/dabstractor+pi-mulligan/repo"))

SIZES = [(200, 5), (2_000, 50), (5_000, 125), (10_000, 250), (20_000, 500)]
CONTEXT_WINDOW = 10_000_000  # large: the high-water nudge never fires, so the view is the filter's output
SETTINGS: dict[str, Any] = {
    "rewind": {"maxDepth": 1_000_000, "maxRetriesPerPrompt": 1_000_000},
    "shrink": {"maxActive": 1_000_000},
}
NOTE = {
    "what_happened": "Went down the wrong path: dumped a large output that did not help.",
    "true_current_state": "Nothing was changed by the hidden calls; the module still fails its test.",
    "next": "Look at the failing assertion first, with a narrow grep.",
}
TOOLS = ("read", "bash", "grep", "edit")


# --------------------------------------------------------------------------------------------------
# The session


def _random_ids(rng: random.Random) -> Any:
    seen: set[str] = set()
    while True:
        entry_id = f"{rng.getrandbits(32):08x}"
        if entry_id not in seen:
            seen.add(entry_id)
            yield entry_id


def _output(rng: random.Random, n: int) -> str:
    lines = rng.randint(100, 400) if rng.random() < 0.15 else rng.randint(3, 40)
    return "".join(f"src/pkg/mod_{n}.py:{i}: value = compute(item_{i}, flag=True)\n" for i in range(lines))


def _arguments(rng: random.Random, name: str, n: int) -> dict[str, Any]:
    if name == "read":
        return {"path": f"src/pkg/mod_{n}.py"}
    if name == "edit":
        return {"path": f"src/pkg/mod_{n}.py", "oldText": "flag=True", "newText": "flag=False"}
    if name == "grep":
        return {"pattern": f"item_{n}", "path": "src"}
    return {"command": f"python -m pytest tests/test_mod_{n}.py -x -q"}


@dataclass
class _Builder:
    """Appends the session entries; ``count`` is the number of context messages so far."""

    h: Harness
    rng: random.Random
    count: int = 0
    turn: int = 0
    results: list[tuple[str, str, bool]] = field(default_factory=list)
    """(tool call id, result entry id, large output) of every tool result, in order."""
    turn_results: list[str] = field(default_factory=list)
    hidden: set[str] = field(default_factory=set)
    """Entry ids hidden by an active rewind."""
    shrunk: set[str] = field(default_factory=set)
    active: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(kind, marker entry id, entry ids it hides) of every active marker."""

    def call_id(self) -> str:
        return f"call_{self.rng.getrandbits(64):016x}"

    def prompt(self) -> None:
        self.h.session.message(
            user(f"Turn {self.turn}: the test for module {self.count} fails; please fix it.")
        )
        self.count += 1
        self.turn_results = []

    def group(self) -> None:
        calls = [self.call_id() for _ in range(2 if self.rng.random() < 0.15 else 1)]
        names = [self.rng.choice(TOOLS) for _ in calls]
        s = self.h.session
        s.message(
            assistant(
                *(
                    call(c, n, **_arguments(self.rng, n, self.count))
                    for c, n in zip(calls, names, strict=True)
                )
            )
        )
        self.count += 1
        for c, n in zip(calls, names, strict=True):
            text = _output(self.rng, self.count)
            entry_id = s.message(result(c, text, n))
            self.count += 1
            self.results.append((c, entry_id, len(text) > 2_000))
            self.turn_results.append(entry_id)

    def reply(self) -> None:
        self.h.session.message(
            assistant_text("Done with this step; the change is in place and the tests pass.")
        )
        self.count += 1
        self.h.session.custom_entry(
            "mulligan:turn-metric",
            {
                "schema": "pi-mulligan",
                "v": 1,
                "kind": "turn-metric",
                "deltaTokens": self.rng.randint(0, 3000),
                "bloatHit": False,
                "bloatHits": [],
                "grewOverThreshold": False,
                "turnIndex": self.turn,
                "seq": 1_000_000 + self.turn,
                "ts": 1_700_000_000_000 + self.turn,
            },
        )
        self.turn += 1

    def _tool(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        before = len(self.h.session.all)
        out = self.h.call_tool(name, params, self.call_id())
        self.count += sum(1 for e in self.h.session.all[before:] if not isinstance(e, CustomEntry))
        details = out.details
        if not isinstance(details, dict):
            raise RuntimeError(f"{name} {params}: no details ({out.content})")
        return details

    def rewind(self) -> None:
        granularity = "last_turn" if self.rng.random() < 0.25 else "last_tool_call_group"
        details = self._tool("mulligan_rewind", {"note": NOTE, "granularity": granularity})
        hide = details.get("hideEntryIds")
        if not details.get("markerId") or not hide:
            raise RuntimeError(f"rewind not recorded or not pinned: {details}")
        self.hidden.update(hide)
        self.active.append(("rewind", details["markerId"], list(hide)))
        self.turn_results = []
        self.group()  # the redo

    def shrink(self, pinned: bool) -> None:
        if pinned:
            candidates = [r for r in self.results if r[1] not in self.hidden and r[1] not in self.shrunk]
            large = [r for r in candidates if r[2]]
            call_id, entry_id, _ = self.rng.choice(large or candidates)
            target = {"by_tool_call_id": call_id}
        else:
            entry_id = ""
            target = {"by_tool_call_id": f"call_{self.rng.getrandbits(64):016x}"}  # matches nothing
        details = self._tool(
            "mulligan_shrink",
            {
                "target": target,
                "replacement": "Output of a test run: 2 failures in test_mod, both fixed since.",
            },
        )
        if not details.get("markerId") or details.get("matched") is not pinned:
            raise RuntimeError(f"shrink not recorded as expected (pinned={pinned}): {details}")
        if entry_id:
            self.shrunk.add(entry_id)
        self.active.append(("shrink", details["markerId"], [entry_id] if entry_id else []))

    def cancel(self) -> None:
        kind, marker_id, ids = self.active.pop(self.rng.randrange(len(self.active)))
        details = self._tool("mulligan_cancel", {"markerId": marker_id})
        if details.get("cancelled") is not True:
            raise RuntimeError(f"cancel failed: {details}")
        (self.hidden if kind == "rewind" else self.shrunk).difference_update(ids)


def open_session(n_messages: int, n_markers: int, seed: int = 7) -> Harness:
    """A linear session of about ``n_messages`` context messages with ``n_markers`` active markers."""
    rng = random.Random(seed)
    h = Harness(SETTINGS)
    h.host.usage = ContextUsage(tokens=None, context_window=CONTEXT_WINDOW, percent=None)
    h.session._ids = _random_ids(rng)  # 8-hex ids in random order, like Pi's
    n_cancels = max(1, round(n_markers / 25))
    made = n_markers + n_cancels
    n_rewinds = made // 2
    kinds = ["rewind"] * n_rewinds + ["shrink"] * (made - n_rewinds)
    rng.shuffle(kinds)
    for _ in range(n_cancels):  # each after at least one marker
        kinds.insert(rng.randint(1, len(kinds)), "cancel")
    b = _Builder(h, rng)
    shrinks = 0
    step = 0

    def due() -> bool:
        return step < len(kinds) and b.count >= (step + 1) * n_messages / (len(kinds) + 1)

    while b.count < n_messages or step < len(kinds):
        b.prompt()
        for _ in range(rng.randint(1, 4)):
            b.group()
        while due() or (b.count >= n_messages and step < len(kinds)):
            kind = kinds[step]
            step += 1
            if kind == "rewind":
                b.rewind()
            elif kind == "shrink":
                shrinks += 1
                b.shrink(pinned=shrinks % 10 != 0)
            else:
                b.cancel()
        b.reply()
    return h


def session_data(h: Harness) -> dict[str, Any]:
    branch = h.session.branch()
    if len(branch) != len(h.session.all):
        raise RuntimeError("the session is expected to be linear")
    markers = [e for e in branch if isinstance(e, CustomEntry) and e.custom_type.startswith("mulligan:")]
    return {
        "settings": SETTINGS,
        "contextWindow": CONTEXT_WINDOW,
        "messages": [message_to_json(m) for m in h.session.context_messages()],
        "branch": [entry_to_json(e) for e in branch],
        "markers": [entry_to_json(e) for e in markers],
    }


# --------------------------------------------------------------------------------------------------
# Timing


def timed_runs(
    fn: Callable[[Any], Any],
    make_input: Callable[[], Any],
    budget: float,
    min_runs: int,
    max_runs: int,
) -> list[float]:
    """Milliseconds per call: warm-up (at least 2 calls or 0.3 s), then as many calls as fit in ``budget``
    seconds of wall time (within [min_runs, max_runs]). Each input is made just before its call, outside the
    timed region."""
    warm: list[float] = []  # wall time per iteration, input included
    start = time.perf_counter()
    while len(warm) < 2 or (time.perf_counter() - start < 0.3 and len(warm) < 50):
        t0 = time.perf_counter()
        fn(make_input())
        warm.append(time.perf_counter() - t0)
    runs = max(min_runs, min(max_runs, math.ceil(budget / max(statistics.median(warm), 1e-6))))
    gc.collect()
    samples: list[float] = []
    for _ in range(runs):
        arg = make_input()
        t0 = time.perf_counter()
        fn(arg)
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


@dataclass
class Caddie:
    messages: list[AgentMessage]
    branch: list[SessionEntry]
    harness: Harness
    pipeline_out: list[dict[str, Any]]
    fire_out: list[dict[str, Any]]
    writes_before: int
    """Host writes before the first fire (a fire should add none: no retirement, no nudge)."""
    markers: MarkerBundle
    filter_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    fire_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)


def load_caddie(data: dict[str, Any]) -> Caddie:
    """The JSON loaded back: messages, branch, markers, and a fake host holding the session."""
    messages = [message_from_json(d) for d in data["messages"]]
    branch = [entry_from_json(d) for d in data["branch"]]
    h = Harness(data["settings"])
    h.host.usage = ContextUsage(tokens=None, context_window=data["contextWindow"], percent=None)
    s = h.session
    s.all = list(branch)
    s.by_id = {e.id: e for e in branch}
    s.leaf = branch[-1].id
    if [message_to_json(m) for m in s.context_messages()] != data["messages"]:
        raise RuntimeError("the session's context does not reproduce the messages of the JSON")
    markers = read_markers([entry_from_json(d) for d in data["markers"]])
    protected = h.mulligan.config.rewind.protected_roles
    pipeline_out = filter_pipeline(
        copy_messages(messages), markers.rewinds, markers.shrinks, protected, branch
    )
    handler = h.handlers("context")[0]
    writes_before = len(h.host.writes)
    out = handler(ContextEvent(copy_messages(messages)), h.ctx)  # also warms the incremental indexes
    fire_out = messages if out is None or out.messages is None else out.messages
    return Caddie(
        messages,
        branch,
        h,
        [message_to_json(m) for m in pipeline_out],
        [message_to_json(m) for m in fire_out],
        writes_before,
        markers,
    )


def measure_caddie(c: Caddie, budget: float, min_runs: int, max_runs: int) -> None:
    h = c.harness
    markers = c.markers
    protected = h.mulligan.config.rewind.protected_roles
    handler = h.handlers("context")[0]
    branch = c.branch

    tail = branch_tail(branch)

    def copies() -> list[AgentMessage]:
        return copy_messages(c.messages)  # what the host hands the `context` event

    def pipeline(msgs: list[AgentMessage]) -> None:
        filter_pipeline(msgs, markers.rewinds, markers.shrinks, protected, branch)

    def pipeline_warm(msgs: list[AgentMessage]) -> None:
        filter_pipeline(msgs, markers.rewinds, markers.shrinks, protected, branch, None, tail)

    def fire(msgs: list[AgentMessage]) -> None:
        handler(ContextEvent(msgs), h.ctx)

    def host(_: None) -> None:
        h.ctx.session.entries()
        h.ctx.session.branch()
        h.ctx.get_context_usage()

    c.filter_ms += timed_runs(pipeline, copies, budget, min_runs, max_runs)
    c.warm_ms += timed_runs(pipeline_warm, copies, budget, min_runs, max_runs)
    c.fire_ms += timed_runs(fire, copies, budget, min_runs, max_runs)
    c.host_ms += timed_runs(host, lambda: None, budget / 4, min_runs, max_runs)


# --------------------------------------------------------------------------------------------------
# The original


def find_node() -> str | None:
    node = PI_DIR / "node_modules" / "node" / "bin" / "node"
    for candidate in (str(node), "node"):
        try:
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=10).stdout
            version = tuple(int(p) for p in out.strip().lstrip("v").split("."))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            continue
        if version >= (22, 19):
            return candidate
    return None


def export_pi_mulligan(dest: Path) -> Path:
    """pi-mulligan's HEAD tree under ``dest`` (a temporary directory); returns its ``src``."""
    archive = subprocess.run(
        ["git", "-C", str(PI_MULLIGAN_REPO), "archive", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def pi_mulligan_head() -> str:
    return subprocess.run(
        ["git", "-C", str(PI_MULLIGAN_REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


@dataclass
class Original:
    filter_ms: list[float] = field(default_factory=list)
    fire_ms: list[float] = field(default_factory=list)
    pipeline_out: list[dict[str, Any]] | None = None
    fire_out: list[dict[str, Any]] | None = None
    writes: int = 0
    n_rewinds: int = 0
    n_shrinks: int = 0


def run_original(
    node: str, src: Path, data_path: Path, budget: float, min_runs: int, max_runs: int, into: Original
) -> None:
    out_path = data_path.with_suffix(".original.json")
    argv = [node, "--expose-gc", str(DRIVER), str(src), str(data_path), str(out_path)]
    argv += [str(budget), str(min_runs), str(max_runs)]
    proc = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "CADDIE_PI_DIR": str(PI_DIR)}, timeout=3600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the original's driver failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    out = json.loads(out_path.read_text())
    out_path.unlink()
    into.filter_ms += out["filterPipeline"]["samples"]
    into.fire_ms += out["contextHandler"]["samples"]
    into.pipeline_out = out["filterPipeline"]["output"]
    into.fire_out = out["contextHandler"]["output"]
    into.writes = out["contextHandler"]["appendEntry"]
    into.n_rewinds = out["markers"]["rewinds"]
    into.n_shrinks = out["markers"]["shrinks"]


def first_difference(ours: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]) -> str | None:
    """Where two filtered message lists (Pi JSON) differ first, or None when they are equal."""
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            detail = "; ".join(
                f"{k}: caddie {json.dumps(a.get(k))[:300]} vs original {json.dumps(b.get(k))[:300]}"
                for k in keys
            )
            return f"message {i} ({a.get('role')} / {b.get('role')}) differs in {detail}"
    if len(ours) != len(theirs):
        return f"lengths differ: caddie {len(ours)} messages, original {len(theirs)}"
    return None


# --------------------------------------------------------------------------------------------------


def machine() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if "MemTotal" in line
        )
        ram = f"{mem_kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        ram = "? RAM"
    return f"{model}, {os.cpu_count()} cores, {ram}; Python {platform.python_version()}"


def parse_sizes(text: str | None) -> list[tuple[int, int]]:
    if not text:
        return SIZES
    return [(int(a), int(b)) for a, b in (part.split("/") for part in text.split(","))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sizes", help="messages/markers,... (default: 200/5,2000/50,5000/125,10000/250,20000/500)"
    )
    parser.add_argument(
        "--budget", type=float, default=3.0, help="seconds of wall time per measurement and round"
    )
    parser.add_argument("--min-runs", type=int, default=5)
    parser.add_argument("--max-runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2, help="alternate caddie/original this many times")
    parser.add_argument("--no-original", action="store_true", help="time caddie only")
    parser.add_argument("--keep", type=Path, help="write the JSON data here (default: a temporary directory)")
    args = parser.parse_args(argv)

    node = None if args.no_original else find_node()
    have_original = node is not None and DRIVER.exists() and (PI_MULLIGAN_REPO / "HEAD").exists()
    print(f"# {machine()}")
    if have_original:
        print(f"# original: pi-mulligan {pi_mulligan_head()[:12]}, Node at {node}")
    elif not args.no_original:
        print("# original: not available (Node >= 22.19 or the pi-mulligan mirror missing); caddie only")
    print(
        "# filter: filter_pipeline, branch indexed inside (vs filterPipeline); warm: with the handler's\n"
        "# incremental branch index; fire: whole context handler (vs contextHandler); host: fake host calls in\n"
        "# fire; µs/(m+k): filter per message + marker; ratio: original / caddie; runs: caddie/original filter"
    )
    print(
        f"{'messages':>8} {'markers':>7} {'filter ms':>9} {'orig ms':>9} {'ratio':>7} {'warm ms':>7} "
        f"{'fire ms':>8} {'orig ms':>9} {'ratio':>7} {'host ms':>7} {'µs/(m+k)':>8}  runs",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="mulligan-bench-") as tmp:
        data_dir = args.keep or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        src = export_pi_mulligan(Path(tmp)) if have_original else None
        for n_messages, n_markers in parse_sizes(args.sizes):
            data = session_data(open_session(n_messages, n_markers))
            data_path = data_dir / f"mulligan-{n_messages}-{n_markers}.json"
            data_path.write_text(json.dumps(data, ensure_ascii=False))
            c = load_caddie(data)
            del data  # millions of objects a real process would not hold (full collections would walk them)
            o = Original()
            for _ in range(args.rounds):
                measure_caddie(c, args.budget, args.min_runs, args.max_runs)
                if src is not None:
                    assert node is not None
                    run_original(node, src, data_path, args.budget, args.min_runs, args.max_runs, o)
            writes = len(c.harness.host.writes) - c.writes_before
            if writes:
                raise RuntimeError(f"caddie's handler wrote {writes} entries while fired (retirements?)")
            if src is not None:
                problem = check_same(c, o)
                if problem is not None:
                    print(f"MISMATCH at {n_messages}/{n_markers}: {problem}", file=sys.stderr)
                    print(f"data: {data_path}" if args.keep else "rerun with --keep DIR", file=sys.stderr)
                    return 1
            size, markers = len(c.messages), len(c.markers.rewinds) + len(c.markers.shrinks)
            f, warm = statistics.median(c.filter_ms), statistics.median(c.warm_ms)
            fire, host = statistics.median(c.fire_ms), statistics.median(c.host_ms)
            if src is not None:
                of, ofire = statistics.median(o.filter_ms), statistics.median(o.fire_ms)
                orig = f"{of:>9.3f} {of / f:>6.1f}x {warm:>7.3f} {fire:>8.3f} {ofire:>9.3f} {ofire / fire:>6.1f}x"
                runs = f"{len(c.filter_ms)}/{len(o.filter_ms)}"
            else:
                orig = f"{'-':>9} {'-':>7} {warm:>7.3f} {fire:>8.3f} {'-':>9} {'-':>7}"
                runs = f"{len(c.filter_ms)}"
            per = f * 1000 / (size + markers)
            print(f"{size:>8} {markers:>7} {f:>9.3f} {orig} {host:>7.3f} {per:>8.3f}  {runs}", flush=True)
            shrunk = sum(1 for m in c.pipeline_out if SHRUNK_OPEN in json.dumps(m.get("content"))[:60])
            print(
                f"#   view: {len(c.pipeline_out)} messages ({size - len(c.pipeline_out)} hidden, {shrunk} shrunk)"
            )
    if have_original:
        print("# outputs: identical filtered messages at every size (pipeline and handler)")
    return 0


def check_same(c: Caddie, o: Original) -> str | None:
    """None when caddie and the original agree on the active markers and both filtered views."""
    active = (len(c.markers.rewinds), len(c.markers.shrinks))
    if (o.n_rewinds, o.n_shrinks) != active:
        return (
            f"active markers differ: caddie {active[0]} rewinds/{active[1]} shrinks, "
            f"original {o.n_rewinds}/{o.n_shrinks}"
        )
    if o.writes:
        return f"the original's handler appended {o.writes} entries while fired"
    assert o.pipeline_out is not None and o.fire_out is not None
    for what, ours, theirs in (
        ("filter_pipeline vs filterPipeline", c.pipeline_out, o.pipeline_out),
        ("context handler vs contextHandler", c.fire_out, o.fire_out),
    ):
        diff = first_difference(ours, theirs)
        if diff is not None:
            return f"{what}: {diff}"
    return None


if __name__ == "__main__":
    sys.exit(main())

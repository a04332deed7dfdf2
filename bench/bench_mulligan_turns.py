"""What mulligan's per-turn handlers cost, in process, in a session where nothing is hidden (the common case).

    uv run python bench/bench_mulligan_turns.py [--sizes 200,2000] [--turns 60] [--runs 3] [--result-chars 18]

The session is the one ``bench/bench_provider_turns.py`` continues (``write_session``: turns of a prompt, a
``read`` call, its ~1.4 kB result and a short answer, Anthropic's message shape), opened with the real
``SessionStore``. Mulligan is registered through the test harness (tests/mulligan/fakehost.py) whose session
is swapped for that store (markers are appended to it, as the host does), and fired the way the runtime fires
it, turn after turn: the ``context`` event through the real ``ExtensionRunner`` (so the handler gets the
runner's message copies, reused across turns while unchanged), then an assistant message with one ``read``
call and its result are appended (to the agent's messages and to the store), the ``tool_result`` event, and
``turn_end``. Timed, per turn: the ``context`` handler (``filter.context_handler``), the turn-end metric
(``nudges.turn_end_metric_handler``) and the footer's savings refresh (``SavingsStatus.refresh``). The first
turn (every per-session index built from scratch) is reported on its own; the steady state is the median of
the other turns; of ``--runs`` fresh runs, the median first turn and the lowest steady state (the
machine may be shared: the lowest is the least disturbed). Beside the times, how many messages the metric
and the savings tracker estimate per steady turn (calls of ``estimate_message_tokens_utf16``, and of
``utf16_message_chars`` in the tracker): the Python work per message (3 with a nudge: it is new every turn). ``--result-chars`` sets the size of each new
``read`` result: above ~16,000 characters a turn grows the context by more than the drift threshold (4,000
tokens), so the drift nudge is appended to every view. The harness has a UI (the checkpoint banner is
reconciled on every fire; ``-p`` has none). Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_provider_turns import write_session  # noqa: E402
from tests.mulligan.fakehost import Harness  # noqa: E402

import caddie.extensions.bundled.mulligan as mulligan_pkg  # noqa: E402
from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage  # noqa: E402
from caddie.extensions.api import ContextUsage, ToolResultEvent, TurnEndEvent  # noqa: E402
from caddie.extensions.bundled.mulligan import savings, state  # noqa: E402
from caddie.extensions.bundled.mulligan.status import SavingsStatus  # noqa: E402
from caddie.extensions.runner import ExtensionRunner  # noqa: E402
from caddie.session.store import SessionStore  # noqa: E402

API = "anthropic-messages"
CONTEXT_WINDOW = 1_000_000  # as bench_provider_turns' model


class Timers:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {"context": [], "metric": [], "savings": []}
        self.estimates: dict[str, list[int]] = {"metric": [], "savings": []}
        self.counted = 0

    def count(self, fn: Callable[[Any], int]) -> Callable[[Any], int]:
        def counted(message: Any) -> int:
            self.counted += 1
            return fn(message)

        return counted

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        samples = self.samples[name]

        def timed(*args: Any, **kwargs: Any) -> Any:
            counted = self.counted
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                samples.append((time.perf_counter() - t0) * 1000)
                if name in self.estimates:
                    self.estimates[name].append(self.counted - counted)

        return timed


def run(size: int, turns: int, work: Path, result_chars: int) -> dict[str, tuple[float, float, float]]:
    """name -> (first turn ms, median of the other turns ms, median estimates per other turn)."""
    path = work / f"session-{size}.jsonl"
    write_session(path, API, size, work)
    store = SessionStore.open(path)
    timers = Timers()
    originals = (mulligan_pkg.context_handler, mulligan_pkg.turn_end_metric_handler, SavingsStatus.refresh)
    estimators = (state.estimate_message_tokens_utf16, savings.utf16_message_chars)
    state.estimate_message_tokens_utf16 = timers.count(estimators[0])
    savings.utf16_message_chars = timers.count(estimators[1])
    mulligan_pkg.context_handler = timers.wrap("context", originals[0])  # type: ignore[attr-defined]
    mulligan_pkg.turn_end_metric_handler = timers.wrap("metric", originals[1])  # type: ignore[attr-defined]
    SavingsStatus.refresh = timers.wrap("savings", originals[2])  # type: ignore[method-assign]
    try:
        h = Harness()
        host: Any = h.host
        host.session = store
        host.append_entry = lambda custom_type, data: store.append_custom(custom_type, data)
        host.usage = ContextUsage(tokens=None, context_window=CONTEXT_WINDOW, percent=None)
        h.session_start()

        def on_error(error: Any) -> None:
            raise RuntimeError(f"extension error: {error}")

        runner = ExtensionRunner([h.extension], lambda: h.ctx, on_error)  # type: ignore[arg-type, return-value]
        messages = store.build_context().messages
        body = "".join(f"line {n}: alpha beta gamma delta\n" for n in range(result_chars // 30 + 1))[
            :result_chars
        ]

        async def turns_loop() -> None:
            for i in range(turns):
                await runner.emit_context(messages)
                call = ToolCall(f"toolu_bench_{i:04d}", "read", {"path": "small.txt"})
                assistant = AssistantMessage(
                    [call], api=API, provider="bench", model="bench-model", stop_reason="toolUse", timestamp=1
                )
                messages.append(assistant)
                store.append_message(assistant)
                content: list[Any] = [TextContent(body)]
                await runner.emit(
                    "tool_result", ToolResultEvent(call.id, "read", call.arguments, content, None, False)
                )
                result = ToolResultMessage(call.id, "read", content, timestamp=1)
                messages.append(result)
                store.append_message(result)
                await runner.emit("turn_end", TurnEndEvent(i, assistant, [result]))

        asyncio.run(turns_loop())
        store.close()
    finally:
        mulligan_pkg.context_handler = originals[0]  # type: ignore[attr-defined]
        mulligan_pkg.turn_end_metric_handler = originals[1]  # type: ignore[attr-defined]
        SavingsStatus.refresh = originals[2]  # type: ignore[method-assign]
        state.estimate_message_tokens_utf16, savings.utf16_message_chars = estimators
    return {
        name: (s[0], statistics.median(s[1:]), statistics.median(timers.estimates.get(name, [0, 0])[1:]))
        for name, s in timers.samples.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="200,2000")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--result-chars", type=int, default=18, help="characters of each new read result")
    args = parser.parse_args(argv)
    print(f"{'messages':>8} {'handler':<8} {'first turn ms':>13} {'per turn ms':>11} {'estimates/turn':>14}")
    with tempfile.TemporaryDirectory(prefix="mulligan-turns-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            results = [run(size, args.turns, Path(tmp), args.result_chars) for _ in range(args.runs)]
            for name in ("context", "metric", "savings"):
                first = statistics.median(r[name][0] for r in results)
                steady = min(r[name][1] for r in results)
                counted = f"{statistics.median(r[name][2] for r in results):g}" if name != "context" else "-"
                print(f"{size:>8} {name:<8} {first:>13.3f} {steady:>11.4f} {counted:>14}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

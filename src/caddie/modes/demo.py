"""``caddie demo``: a 30-second scripted tour of mulligan and goal, offline, with no key.

It builds a throwaway git repository (a service log, an order export, a pricing module with a failing unit
test), opens a session on it in a private caddie folder, and lets the faux provider play a scripted model
through the tour: a bloated ``cat``, ``/context``, a rewind behind a note, a shrink, ``/mulligan_audit``,
``/context`` again, then a goal gated by the failing test, which the model fixes before the goal may
complete. Interactive by default (the real TUI, typing for you); ``--no-tui`` prints the same tour.
Everything runs for real (tools, extensions, session file); only the model's replies are scripted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TextIO

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall
from caddie.ai.providers.faux import FauxProvider, PacedStep, faux_message, faux_text, faux_tool_call
from caddie.config.launch import launch_command
from caddie.errors import UsageError

DEMO_MODEL = "faux/faux-1"

# --------------------------------------------------------------------------------------------------
# The throwaway project

PRICING = textwrap.dedent(
    '''\
    """Prices after discounts."""


    def apply_discount(price: float, percent: float) -> float:
        """The price after a discount of ``percent`` per cent."""
        return round(price * percent / 100, 2)
    '''
)
PRICING_BUG = "return round(price * percent / 100, 2)"
PRICING_FIX = "return round(price * (100 - percent) / 100, 2)"

TEST_PRICING = textwrap.dedent(
    """\
    import unittest

    from pricing import apply_discount


    class DiscountTest(unittest.TestCase):
        def test_quarter_off(self):
            self.assertEqual(apply_discount(200.0, 25), 150.0)

        def test_no_discount(self):
            self.assertEqual(apply_discount(80.0, 0), 80.0)
    """
)


def _service_log() -> str:
    lines = []
    for i in range(2400):
        minute, second = divmod(i, 60)
        lines.append(
            f"2026-11-30T23:{minute % 60:02d}:{second:02d}Z INFO  worker-{i % 4} batch {i:05d} "
            f"processed {40 + i % 17} orders in {120 + (i * 37) % 400} ms"
        )
        if i == 2350:
            lines.append(
                "2026-11-30T23:10:50Z ERROR pricing: order 1042 charged 50.00 for a 200.00 cart "
                "with a 25% discount (expected 150.00)"
            )
            lines.append("2026-11-30T23:10:50Z ERROR job: nightly-billing aborted after 1 pricing error")
    return "\n".join(lines) + "\n"


def _orders() -> str:
    orders: list[dict[str, Any]] = [
        {
            "id": 1000 + i,
            "customer": f"customer-{(i * 7) % 97:02d}",
            "cart": round(20 + (i * 13) % 180, 2),
            "discount_percent": (i * 5) % 30,
            "status": "failed" if i == 42 else "billed",
            "lines": [{"sku": f"SKU-{(i + k) % 50:03d}", "qty": 1 + k} for k in range(3)],
        }
        for i in range(220)
    ]
    orders[42].update(cart=200.0, discount_percent=25, charged=50.0)
    return json.dumps(orders, indent=1) + "\n"


def make_project(root: Path) -> bool:
    """Write the project into ``root`` and commit it; False when git is not installed (no commit then)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pricing.py").write_text(PRICING)
    (root / "test_pricing.py").write_text(TEST_PRICING)
    (root / "service.log").write_text(_service_log())
    (root / "orders.json").write_text(_orders())
    (root / "README.md").write_text("# shop-billing\n\nNightly billing for the shop (caddie demo project).\n")
    git = shutil.which("git")
    if git is None:
        return False
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "caddie demo",
        "GIT_AUTHOR_EMAIL": "demo@caddie.invalid",
        "GIT_COMMITTER_NAME": "caddie demo",
        "GIT_COMMITTER_EMAIL": "demo@caddie.invalid",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "shop-billing: initial import"]):
        subprocess.run([git, *args], cwd=root, env=env, check=True, capture_output=True)
    return True


# --------------------------------------------------------------------------------------------------
# The tour: what the "user" does, and what the scripted model answers


@dataclass(frozen=True)
class Step:
    kind: Literal["say", "prompt", "command"]
    text: str


NOTE = {
    "what_happened": "I dumped all of service.log (2,400 lines, ~50 KB) to find one failure; only the ERROR "
    "lines mattered. Lesson: grep a log for errors before reading it whole.",
    "true_current_state": "The nightly job failed; the cause is still to be read from the ERROR lines.",
    "next": "Run grep -n ERROR service.log.",
}


def check_command() -> str:
    return f"{shlex.quote(sys.executable)} -m unittest -q"


def tour() -> list[Step]:
    return [
        Step("say", "1/6  A bloated `cat`: the agent reads a whole 2,400-line log to find one failure."),
        Step("prompt", "Why did last night's billing job fail? The log is service.log."),
        Step("say", "2/6  /context: what the model now carries. The log dominates the window."),
        Step("command", "/context"),
        Step("say", "3/6  Rewind behind a note: the log leaves the context; a short note takes its place."),
        Step("prompt", "That log cost a lot of context. Shed it and find the error properly."),
        Step("say", "4/6  Shrink: a fine-but-huge result (an order export) becomes a one-line summary."),
        Step("prompt", "What does the order export say about order 1042? It is orders.json."),
        Step("command", "/mulligan_audit"),
        Step("command", "/context"),
        Step(
            "say",
            "5/6  A goal gated by a failing test: the model cannot call it done until the check exits 0.",
        ),
        Step(
            "prompt",
            "Set a goal: fix apply_discount so the unit tests pass, checked by the test command.",
        ),
        Step("say", "6/6  Done. The goal completed only after the test passed."),
    ]


def _call(name: str, args: dict[str, Any], call_id: str, text: str = "") -> AssistantMessage:
    blocks: list[Any] = [faux_text(text)] if text else []
    blocks.append(faux_tool_call(name, args, call_id))
    return faux_message(blocks)


def script() -> list[AssistantMessage]:
    """The model's replies, in order, for ``tour()``."""
    check = check_command()
    return [
        # 1: the bloated cat, then an answer that notices the cost
        _call("bash", {"command": "cat service.log"}, "call_cat", "Let me look at the log."),
        faux_message(
            "The job logged two ERROR lines near the end: order 1042 was charged 50.00 for a 200.00 cart "
            "with a 25% discount. But I read ~50 KB of log to find them."
        ),
        # 3: rewind behind a note, then the targeted step
        _call(
            "mulligan_rewind",
            {"note": NOTE, "granularity": "last_tool_call_group"},
            "call_rewind",
            "Rewinding that cat behind a note.",
        ),
        _call("bash", {"command": "grep -n ERROR service.log"}, "call_grep"),
        faux_message(
            "Order 1042 was charged 50.00 instead of 150.00: a 25% discount was applied as *keep 25%*. "
            "The bug is in pricing.apply_discount."
        ),
        # 4: a fine but huge result, shrunk to a summary
        _call("bash", {"command": "cat orders.json"}, "call_orders"),
        _call(
            "mulligan_shrink",
            {
                "target": {"by_tool_call_id": "call_orders"},
                "replacement": "orders.json: 220 orders; only #1042 failed: cart 200.00, discount 25%, "
                "charged 50.00. All others billed.",
                "reason": "only order 1042 matters",
            },
            "call_shrink",
        ),
        faux_message("Order 1042: cart 200.00, 25% off, charged 50.00 — the only failed order."),
        # 5: the goal, gated by the failing test
        _call(
            "create_goal",
            {
                "objective": "Fix apply_discount in pricing.py so that the unit tests pass.",
                "check": check,
                "token_budget": 50_000,
            },
            "call_goal",
        ),
        _call("update_goal", {"status": "complete", "notes": "Tried to finish early."}, "call_done_early"),
        _call(
            "edit",
            {"path": "pricing.py", "edits": [{"oldText": PRICING_BUG, "newText": PRICING_FIX}]},
            "call_edit",
            "The check refused: the tests still fail. Fixing the formula.",
        ),
        _call(
            "update_goal",
            {"status": "complete", "notes": "apply_discount now keeps (100 - percent)%; tests pass."},
            "call_done",
        ),
        faux_message("Fixed: apply_discount(200, 25) is 150.00 now, and the test check passes."),
    ]


# --------------------------------------------------------------------------------------------------
# Running it


class _DemoError(UsageError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _DemoError(f"{message} (see caddie demo --help)")


@dataclass
class DemoResult:
    goal_status: str | None
    tests_pass: bool
    project: Path


def _prepare(root: Path) -> tuple[Path, Path]:
    project, home = root / "shop-billing", root / "home"
    make_project(project)
    agent = home / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"quietStartup": True}))
    os.environ["CADDIE_DIR"] = str(home)
    return project, home


def _provider(delay_ms: float) -> FauxProvider:
    faux = FauxProvider()
    steps: list[Any] = [PacedStep(s, delay_ms) if delay_ms else s for s in script()]
    faux.set_responses(steps)
    return faux


def _tests_pass(project: Path) -> bool:
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"], cwd=project, capture_output=True, text=True, timeout=60
    )
    return proc.returncode == 0


def _goal_status(session: Any) -> str | None:
    from caddie.session.entries import CustomEntry

    status = None
    for entry in session.store.branch():
        if isinstance(entry, CustomEntry) and entry.custom_type.startswith("goal"):
            data = entry.data if isinstance(entry.data, dict) else {}
            goal = data.get("goal", data)
            if isinstance(goal, dict) and isinstance(goal.get("status"), str):
                status = goal["status"]
    return status


async def run_printed(root: Path, out: TextIO, *, pause: float = 0.0) -> DemoResult:
    """The tour without a screen: every step, tool call and notice printed to ``out``."""
    from rich.console import Console
    from rich.text import Text

    from caddie.agent.events import MessageEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
    from caddie.modes.context_stats import render_stats, stats_of_session
    from caddie.runtime.factory import SessionRequest, open_session
    from caddie.runtime.session_events import NoticeEvent
    from caddie.runtime.ui import HeadlessUI

    project, _home = _prepare(root)
    color = out.isatty() and not os.environ.get("NO_COLOR")
    console = Console(file=out, force_terminal=color, no_color=not color, width=100, highlight=False)
    faux = _provider(0)
    notices: list[str] = []
    request = SessionRequest(
        cwd=str(project),
        mode="tui",  # extension commands talk to a UI; this one prints what they say
        model=DEMO_MODEL,
        stream_fn=faux.stream,
        trust=True,
        ui=HeadlessUI(lambda message, level: notices.append(message)),
    )
    build = await open_session(request)
    session = build.session
    await session.start("startup")

    def show(text: str, style: str = "") -> None:
        console.print(Text(text, style=style))

    def on_event(event: Any) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            args = json.dumps(event.args, ensure_ascii=False)
            show(f"  → {event.tool_name} {args if len(args) < 110 else args[:109] + '…'}", "cyan")
        elif isinstance(event, ToolExecutionEndEvent):
            text = "\n".join(b.text for b in event.result.content if isinstance(b, TextContent))
            first = text.strip().splitlines()[0] if text.strip() else ""
            size = f" ({len(text):,} characters)" if len(text) > 400 else ""
            show(f"    {'✗' if event.is_error else '✓'} {first[:100]}{size}", "dim")
        elif isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            if event.message.text() and not any(isinstance(b, ToolCall) for b in event.message.content):
                show(f"  {event.message.text()}", "green")
        elif isinstance(event, NoticeEvent):
            notices.append(event.message)

    def flush_notices() -> None:
        for message in notices:
            show(textwrap.indent(message, "  "), "yellow")
        notices.clear()

    unsubscribe = session.subscribe(on_event)
    try:
        show(f"caddie demo — a throwaway git repository in {project}", "bold")
        show("The model is scripted (faux provider, no key); the tools, extensions and session are real.\n")
        for step in tour():
            if step.kind == "say":
                show(f"\n{step.text}", "bold magenta")
            elif step.kind == "prompt":
                show(f"> {step.text}", "bold")
                await session.prompt(step.text, source="print")
                await session.wait_for_idle()
            elif step.text == "/context":
                show(f"> {step.text}", "bold")
                console.print(render_stats(await stats_of_session(session, build.registry, live=True), color))
            else:
                show(f"> {step.text}", "bold")
                await session.prompt(step.text, source="print")
                await session.wait_for_idle()
            flush_notices()
            if pause:
                await asyncio.sleep(pause)
        result = DemoResult(_goal_status(session), _tests_pass(project), project)
        show(
            f"\ngoal: {result.goal_status or 'none'} · unit tests: {'pass' if result.tests_pass else 'fail'}",
            "bold",
        )
    finally:
        unsubscribe()
        await session.shutdown("quit")
    return result


async def run_tui(root: Path) -> DemoResult:
    """The tour in the real TUI, typed for you; the app stays open afterwards until you quit."""
    from caddie.modes.demo_app import DemoApp
    from caddie.modes.interactive.app import Startup
    from caddie.modes.interactive.ui import TextualUI
    from caddie.runtime.factory import SessionRequest

    project, _home = _prepare(root)
    faux = _provider(12)
    ui = TextualUI()
    request = SessionRequest(
        cwd=str(project), mode="tui", model=DEMO_MODEL, stream_fn=faux.stream, trust=True, ui=ui
    )
    app = DemoApp(Startup(request), ui, tour())
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, app.request_quit)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        await app.run_async()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        ui.detach()
        if app.session is not None and not app.shutdown_done:
            app.shutdown_done = True
            await app.session.shutdown("quit")
    status = _goal_status(app.session) if app.session is not None else None
    return DemoResult(status, _tests_pass(project), project)


def run_demo(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    p = _Parser(
        prog="caddie demo",
        description="A 30-second scripted tour of mulligan and goal in a throwaway git repository "
        "(no key needed; the model is scripted, everything else is real).",
    )
    p.add_argument("--no-tui", action="store_true", help="print the tour instead of running the TUI")
    p.add_argument("--keep", action="store_true", help="keep the throwaway repository and session")
    p.add_argument("--pause", type=float, default=None, metavar="SECONDS", help="pause between printed steps")
    try:
        args = p.parse_args(argv)
    except _DemoError as e:
        print(f"caddie demo: {e}", file=sys.stderr)
        return 2
    interactive = not args.no_tui
    if interactive and not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("caddie demo: the tour needs a terminal; use caddie demo --no-tui to print it", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="caddie-demo-"))
    previous_dir = os.environ.get("CADDIE_DIR")
    runner: Callable[[], Any]
    if interactive:
        runner = lambda: run_tui(root)  # noqa: E731
    else:
        pause = args.pause if args.pause is not None else (1.0 if out.isatty() else 0.0)
        runner = lambda: run_printed(root, out, pause=pause)  # noqa: E731
    try:
        result: DemoResult = asyncio.run(runner())
    finally:
        if previous_dir is None:
            os.environ.pop("CADDIE_DIR", None)
        else:
            os.environ["CADDIE_DIR"] = previous_dir
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    caddie = launch_command()
    where = f"kept in {root}" if args.keep else f"removed ({caddie} demo --keep keeps it)"
    print(
        f"caddie demo: the throwaway repository was {where}. Next: set a key (docs/providers.md) and run "
        f"{caddie}.",
        file=sys.stderr if interactive else out,
    )
    return 0 if result.goal_status == "complete" and result.tests_pass else 1

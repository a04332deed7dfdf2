"""Print mode (``caddie -p``) and JSON mode (``--mode json``): run prompts to completion without a screen.

Print mode writes the final answer's text to stdout (notices, retries and progress go to stderr); JSON mode
writes the session header, then every session event as one JSON line. Both exit 1 when the run's last reply
ended in an error or was aborted, unless an extension set the exit code (a headless goal does).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from caddie.agent.events import ToolExecutionStartEvent
from caddie.ai.messages import AssistantMessage, ImageContent
from caddie.errors import UsageError
from caddie.modes.serialize import event_to_json
from caddie.runtime.session_api import Session
from caddie.runtime.session_events import (
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    ExtensionErrorEvent,
    NoticeEvent,
    SessionEvent,
)


def _write_json(out: TextIO, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


def _stdout_gone(out: TextIO) -> None:
    """The reader of stdout went away (``caddie --mode json … | head``): later writes, and Python's own
    flush at exit, go to /dev/null instead of raising ``BrokenPipeError`` again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
    except (OSError, ValueError):  # not a real file (a test's StringIO): nothing to redirect
        pass


def _brief(args: Any) -> str:
    if isinstance(args, dict):
        for key in ("command", "path", "pattern"):
            value = args.get(key)
            if isinstance(value, str) and value:
                line = " ".join(value.split())
                return line if len(line) <= 80 else line[:79] + "…"
    return ""


def answer_note(message: AssistantMessage) -> str | None:
    """What stdout alone would not tell about a finished answer: that it was cut at the output limit, or
    that the model answered nothing (small local models do both)."""
    if message.stop_reason == "length":
        return (
            f"the answer stopped at the model's output limit; raise maxTokens for {message.provider}/"
            f"{message.model} in models.json if it needs more room (docs/providers.md)."
        )
    if message.stop_reason == "stop" and not message.text().strip() and not message.tool_calls():
        return "the model returned an empty answer."
    return None


def last_assistant(session: Session) -> AssistantMessage | None:
    for message in reversed(session.messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


async def run_headless(
    session: Session,
    prompts: Sequence[str],
    *,
    json_mode: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    images: list[ImageContent] | None = None,
) -> int:
    """Run ``prompts`` one after another (``images``, from ``@FILE`` arguments, go with the first). After an
    extension's ``ctx.shutdown()`` the current run settles and the prompts left are not sent."""
    out = out or sys.stdout
    err = err or sys.stderr
    before = last_assistant(session)  # compare by identity: a compaction may shorten the transcript

    show_tools = err.isatty()  # progress for a person watching; logs and pipes get only what matters
    reader_gone = False

    def on_event(event: SessionEvent) -> None:
        nonlocal reader_gone
        if json_mode:
            if reader_gone:
                return
            try:
                _write_json(out, event_to_json(event))
            except BrokenPipeError:  # nobody reads the events any more: stop the run, quietly
                reader_gone = True
                _stdout_gone(out)
                session.abort()
        elif isinstance(event, ToolExecutionStartEvent) and show_tools:
            err.write(f"→ {event.tool_name} {_brief(event.args)}\n")
        elif isinstance(event, AutoRetryStartEvent):
            err.write(
                f"caddie: {event.error_message} — retrying in {event.delay_ms / 1000:.1f} s "
                f"(attempt {event.attempt} of {event.max_attempts})\n"
            )
        elif isinstance(event, CompactionStartEvent):
            err.write(f"caddie: compacting the context ({event.reason})…\n")
        elif isinstance(event, ExtensionErrorEvent):
            err.write(f"caddie: extension {event.extension_path} failed in {event.event}: {event.error}\n")
        elif isinstance(event, NoticeEvent):  # extension notices: stderr, so stdout stays the answer
            err.write(f"{event.message}\n" if event.level == "info" else f"caddie: {event.message}\n")
        elif isinstance(event, CompactionEndEvent) and event.error_message:
            err.write(f"caddie: compaction failed: {event.error_message}\n")

    unsubscribe = session.subscribe(on_event)
    if json_mode:
        try:
            _write_json(out, session.store.header.to_json())
        except BrokenPipeError:
            reader_gone = True
            _stdout_gone(out)
    try:
        for index, prompt in enumerate(prompts):
            if (
                session.state().shutdown_requested or reader_gone
            ):  # ctx.shutdown(): the prompts left are not sent
                break
            try:
                await session.prompt(prompt, images if index == 0 else None, source="print")
            except UsageError as e:
                err.write(f"caddie: {e}\n")
                return 1
            await session.wait_for_idle()
        await session.wait_for_idle()
    finally:
        unsubscribe()

    last = last_assistant(session)
    produced = last is not None and last is not before
    failed = produced and last is not None and last.stop_reason in ("error", "aborted")
    if not json_mode and produced and last is not None:
        if failed:
            err.write(f"caddie: {last.error_message or 'the request failed'}\n")
        elif text := last.text():
            try:
                out.write(text if text.endswith("\n") else text + "\n")
                out.flush()
            except BrokenPipeError:
                _stdout_gone(out)
        if not failed and (note := answer_note(last)):
            err.write(f"caddie: {note}\n")
    exit_code = session.state().exit_code
    if exit_code is not None:  # an extension decided (a headless goal's outcome)
        return exit_code
    if reader_gone:
        return 0  # as `head` expects of a producer it stopped reading
    return 1 if failed else 0

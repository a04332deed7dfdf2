"""In-process goal sessions: the real AgentSession with the bundled goal extension, a faux model, a
recording UI and a controllable clock (``caddie.testing``'s), and small readers for what ended up in the
session."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from caddie.ai.messages import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from caddie.ai.model import Context
from caddie.ai.providers.faux import FauxProvider, FauxStep, faux_message, faux_model, faux_tool_call
from caddie.config.paths import agent_dir
from caddie.extensions.bundled.goal import GoalOptions
from caddie.extensions.bundled.goal import register as register_goal
from caddie.extensions.bundled.goal.model import CONTINUE_MESSAGE, GOAL_ENTRY, LOOP_ENTRY
from caddie.runtime import factory
from caddie.runtime.factory import SessionRequest
from caddie.runtime.session import AgentSession
from caddie.session.entries import CustomEntry, CustomMessageEntry, MessageEntry
from caddie.testing import FakeClock, FakeUI, extension_from

# --------------------------------------------------------------------------------------------------
# Time and UI: caddie.testing's


class RecordingUI(FakeUI):
    """``caddie.testing.FakeUI``, with the goal tests' name for its notifications."""

    @property
    def notices(self) -> list[tuple[str, str]]:
        return self.notifications


# --------------------------------------------------------------------------------------------------
# Sessions


def write_settings(data: dict[str, Any]) -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@dataclass
class GoalSession:
    session: AgentSession
    faux: FauxProvider
    ui: RecordingUI

    @property
    def requests(self) -> list[Context]:
        return self.faux.requests

    async def prompt(self, text: str) -> None:
        await self.session.prompt(text)
        await self.idle()

    async def idle(self) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        await self.session.wait_for_idle()

    async def close(self) -> None:
        await self.session.shutdown()

    # -- what the session holds -------------------------------------------------------------------
    def goal_states(self) -> list[dict[str, Any]]:
        return [
            e.data
            for e in self.session.store.branch()
            if isinstance(e, CustomEntry) and e.custom_type == GOAL_ENTRY
        ]

    def goal(self) -> dict[str, Any]:
        return self.goal_states()[-1]

    def loop_states(self) -> list[dict[str, Any]]:
        return [
            e.data
            for e in self.session.store.branch()
            if isinstance(e, CustomEntry) and e.custom_type == LOOP_ENTRY
        ]

    def continuations(self) -> list[CustomMessageEntry]:
        return [
            e
            for e in self.session.store.branch()
            if isinstance(e, CustomMessageEntry) and e.custom_type == CONTINUE_MESSAGE
        ]

    def continuation_texts(self) -> list[str]:
        return [c.content if isinstance(c.content, str) else "" for c in self.continuations()]

    def tool_results(self) -> list[ToolResultMessage]:
        return [
            e.message
            for e in self.session.store.branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]

    def tool_names(self, request: int = -1) -> list[str]:
        return [t.name for t in self.faux.requests[request].tools or []]


async def open_session(
    cwd: Path,
    *,
    steps: Sequence[FauxStep] = (),
    mode: str = "print",
    flags: dict[str, str | bool] | None = None,
    session: str = "new",
    session_file: str | None = None,
    faux: FauxProvider | None = None,
    ui: RecordingUI | None = None,
    settings: dict[str, Any] | None = None,
    start: bool = True,
    reason: str = "startup",
    clock: FakeClock | None = None,
    options: GoalOptions | None = None,
) -> GoalSession:
    """A session on the faux model with the goal extension (mulligan off, to keep requests plain): the bundled
    one, or — given a ``clock`` or ``options`` — one registered with them (``register(api, options)``)."""
    data = settings if settings is not None else {"disabledExtensions": ["mulligan"]}
    inline = []
    if clock is not None or options is not None:
        goal_options = replace(options or GoalOptions(), timing=clock) if clock is not None else options
        data = {**data, "disabledExtensions": [*data.get("disabledExtensions", []), "goal"]}
        inline.append(extension_from(lambda api: register_goal(api, goal_options), "goal"))
    write_settings(data)
    faux = faux or FauxProvider(models=[faux_model()])
    if steps:
        faux.append_responses(list(steps))
    ui = ui or RecordingUI()
    build = await factory.open_session(
        SessionRequest(
            cwd=str(cwd),
            mode=mode,  # type: ignore[arg-type]
            model="faux/faux-1",
            session=session,  # type: ignore[arg-type]
            session_file=session_file,
            ui=ui,
            stream_fn=faux.stream,
            flags=flags or {},
            inline_extensions=inline,
        )
    )
    gs = GoalSession(build.session, faux, ui)
    if start:
        await build.session.start(reason)  # type: ignore[arg-type]
    return gs


# --------------------------------------------------------------------------------------------------
# Scripted replies


def usage(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> Usage:
    return Usage(
        input_tokens,
        output_tokens,
        cache_read,
        cache_write,
        input_tokens + output_tokens + cache_read + cache_write,
    )


def say(text: str, tokens: tuple[int, int] = (100, 10)) -> AssistantMessage:
    return faux_message(text, usage=usage(*tokens))


def call(
    name: str, args: dict[str, Any] | None = None, tokens: tuple[int, int] = (100, 10)
) -> AssistantMessage:
    return faux_message([faux_tool_call(name, args or {})], usage=usage(*tokens))


def last_user_side_text(context: Context) -> str:
    """The text of the last user or custom message the model was sent."""
    for m in reversed(context.messages):
        if isinstance(m, UserMessage):
            content = m.content
            return (
                content
                if isinstance(content, str)
                else "\n".join(b.text for b in content if isinstance(b, TextContent))
            )
    return ""


def custom_messages(session: AgentSession) -> list[CustomMessage]:
    return [m for m in session.messages if isinstance(m, CustomMessage)]


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path

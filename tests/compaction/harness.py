"""A session wired to two scripted faux models: one answers the turns, the other writes the summaries.

Requests are routed by their system prompt (compaction and branch summaries use Pi's summariser prompt), so a
test scripts the conversation and the summaries separately and inspects each side's requests.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.ai.messages import AssistantContent, AssistantMessage, Usage, text_of
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.faux import FauxProvider, FauxStep, faux_message, faux_model
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.config.paths import agent_dir
from caddie.extensions.api import EventBus, ExtensionAPI
from caddie.extensions.runner import Extension
from caddie.runtime.auto_compaction import CompactionEngine
from caddie.runtime.factory import SessionRequest, open_session
from caddie.runtime.session import AgentSession
from caddie.runtime.session_events import CompactionEndEvent, CompactionStartEvent, SessionEvent
from caddie.session.compaction import SUMMARIZATION_SYSTEM_PROMPT


def usage(tokens: int) -> Usage:
    """Usage reporting a context of ``tokens`` (what the threshold check reads)."""
    return Usage(input=tokens, output=0, total_tokens=tokens)


def reply(
    text: str | Sequence[AssistantContent] = "", *, tokens: int | None = None, **kw: Any
) -> AssistantMessage:
    return faux_message(text, usage=usage(tokens) if tokens is not None else None, **kw)


def inline_extension(register: Callable[[ExtensionAPI], object], name: str = "test-ext") -> Extension:
    ext = Extension(path=f"<inline:{name}>", name=name)
    api = ExtensionAPI(ext, EventBus())
    ext.api = api
    register(api)
    return ext


def request_text(context: Context) -> str:
    """Everything a request carried, as one string (to search for content)."""
    parts = [context.system_prompt or ""]
    for m in context.messages:
        if isinstance(m, AssistantMessage):
            parts.extend(str(b) for b in m.content)
        else:
            parts.append(text_of(m.content))
    return "\n".join(parts)


@dataclass
class Harness:
    session: AgentSession
    engine: CompactionEngine
    turns: FauxProvider
    summarizer: FauxProvider
    cwd: Path
    events: list[SessionEvent] = field(default_factory=list)

    @property
    def turn_requests(self) -> list[Context]:
        return self.turns.requests

    @property
    def summary_requests(self) -> list[Context]:
        return self.summarizer.requests

    def summary_prompt(self, index: int = -1) -> str:
        return text_of(self.summary_requests[index].messages[0].content)

    def script(self, *steps: FauxStep) -> None:
        self.turns.append_responses(list(steps))

    def summaries(self, *texts: str) -> None:
        self.summarizer.append_responses([faux_message(t) for t in texts])

    def compaction_events(self) -> list[CompactionStartEvent | CompactionEndEvent]:
        return [e for e in self.events if isinstance(e, CompactionStartEvent | CompactionEndEvent)]

    def ends(self) -> list[CompactionEndEvent]:
        return [e for e in self.events if isinstance(e, CompactionEndEvent)]

    async def prompt(self, text: str) -> None:
        await self.session.prompt(text, source="print")
        await self.session.wait_for_idle()


async def make_harness(
    cwd: Path,
    *,
    window: int = 10_000,
    reserve: int = 2_000,
    keep: int = 1_000,
    extensions: Sequence[Extension] = (),
    session_dir: Path | None = None,
    session_file: Path | None = None,
    bundled: bool = False,
) -> Harness:
    """A started session; ``bundled`` keeps the bundled extensions (mulligan, goal), off by default."""
    settings_file = agent_dir() / "settings.json"
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    settings_file.write_text(
        json.dumps({} if bundled else {"disabledExtensions": ["mulligan", "goal", "mcp"]})
    )
    turns = FauxProvider()
    summarizer = FauxProvider()

    async def stream(
        model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        if context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT:
            source = summarizer
        else:
            source = turns
            await asyncio.sleep(0.003)  # replies are stamped after whatever happened before them
        async for event in source.stream(model, context, options):
            yield event

    request = SessionRequest(
        cwd=str(cwd),
        session="file" if session_file else ("new" if session_dir else "memory"),
        session_file=str(session_file) if session_file else None,
        session_dir=str(session_dir) if session_dir else None,
        model="faux/faux-1",
        stream_fn=stream,
        inline_extensions=list(extensions),
        no_context_files=True,
        no_extensions=True,
    )
    build = await open_session(request)
    session = build.session
    session.core.agent.state.model = faux_model(context_window=window)
    session.settings.data["compaction"] = {"reserveTokens": reserve, "keepRecentTokens": keep}
    session.settings.data["retry"] = {"enabled": False}
    engine = session.core.compactor
    assert isinstance(engine, CompactionEngine)
    harness = Harness(session, engine, turns, summarizer, cwd)
    session.subscribe(harness.events.append)
    await session.start()
    return harness

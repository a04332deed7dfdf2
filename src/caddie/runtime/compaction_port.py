"""The contract between a session and its compaction engine, both ways.

``CompactionHost`` is everything the engine may use of the session (``AgentSession`` satisfies it);
``Compactor`` is what the session calls on the engine. The session is given a ``CompactorFactory`` when it
is built (``SessionOptions.compactor``) and creates its engine with itself as the host; the engine never
reaches further into the session than this.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from caddie.agent.loop import CompletedTurn
from caddie.ai.messages import AgentMessage, AssistantMessage
from caddie.ai.model import Context, Model, StreamOptions, ThinkingLevel
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.config.settings import Settings
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.session_events import SessionEvent
from caddie.session.compaction import CompactionResult
from caddie.session.entries import BranchSummaryEntry, CompactionEntry
from caddie.session.store import SessionStore

StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]
CompactionReason = Literal["manual", "threshold", "overflow"]


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a manual compaction made: the entry in the session file, and the result extensions and clients see."""

    entry: CompactionEntry
    result: CompactionResult


class CompactionHost(Protocol):
    """What compaction needs from the session."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def runner(self) -> ExtensionRunner:
        """For ``session_before_compact``/``session_compact``/``summary_usage`` and the ``context`` view."""
        ...

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript the model is sent (rebuilt from the session file after a compaction)."""
        ...

    def replace_messages(self, messages: list[AgentMessage]) -> None: ...

    async def wait_until_stopped(self) -> None:
        """Until no run is active (an aborted one has wound down)."""
        ...

    @property
    def stop_requested(self) -> bool:
        """An extension ended the current run (``stop_after_turn``): make no further model call."""
        ...

    @property
    def stream_fn(self) -> StreamFn: ...

    def api_key_for(self, model: Model) -> str | None: ...

    def abort(self) -> None: ...

    async def publish_event(self, event: SessionEvent) -> None:
        """Tell the session's subscribers (the modes): compaction start and end."""
        ...


class Compactor(Protocol):
    """The hooks the session calls (implemented by ``caddie.runtime.auto_compaction.CompactionEngine``)."""

    @property
    def is_compacting(self) -> bool: ...

    async def before_prompt(self) -> None: ...

    async def after_run(self, last: AssistantMessage) -> Literal["retry", "none"]: ...

    async def between_turns(self, turn: CompletedTurn) -> None: ...

    async def summarize_branch(
        self,
        old_leaf: str | None,
        target_id: str,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
    ) -> BranchSummaryEntry | None: ...

    async def compact(self, custom_instructions: str | None = None) -> Compacted | None:
        """A manual compaction; None when an extension or an abort cancelled it."""
        ...

    def abort(self) -> None: ...

    def reset(self) -> None:
        """Another session was switched to: per-session state (overflow recovery) starts over."""
        ...


CompactorFactory = Callable[[CompactionHost], Compactor]

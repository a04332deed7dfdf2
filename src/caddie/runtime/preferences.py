"""The session's choices the user (or an RPC client) changes as it runs: model, thinking level, queue modes,
automatic compaction and retry; and ``session_stats``, the counters Pi reports over the session file."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal, Protocol

from caddie.agent.agent import Agent
from caddie.ai.messages import AgentMessage, AssistantMessage, ToolCall, UserMessage
from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.providers.thinking import supported_thinking_levels
from caddie.ai.tokens import (
    context_estimate_rests_on_estimate,
    context_tokens_of_usage,
    estimate_context_tokens,
)
from caddie.config.settings import Settings
from caddie.errors import UsageError
from caddie.extensions.api import ContextUsage, ModelSelectEvent
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.session_api import ModelCycle, SessionStats, TokenTotals
from caddie.runtime.session_events import NoticeEvent, SessionEvent
from caddie.session.entries import BranchSummaryEntry, CompactionEntry, MessageEntry
from caddie.session.store import SessionStore

log = logging.getLogger("caddie.session")


class PreferencesHost(Protocol):
    """What the session's choices need of the session."""

    @property
    def agent(self) -> Agent: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def model(self) -> Model | None: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def messages(self) -> list[AgentMessage]: ...

    available_models: Callable[[], list[Model]]

    def use_model(self, model: Model) -> None: ...

    def set_thinking_level(self, level: str) -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...


class Preferences:
    def __init__(self, session: PreferencesHost) -> None:
        self._session = session
        self.scoped_models: list[tuple[Model, ThinkingLevel | None]] = []
        """The models ``cycle_model`` walks (``--models`` / settings ``enabledModels``); empty: all available."""

    # -- queue modes and toggles (saved as the global default, as Pi saves them) -----------------------
    def set_queue_mode(self, which: Literal["steering", "follow_up"], mode: str) -> None:
        agent = self._session.agent
        if mode not in ("all", "one-at-a-time"):
            label = "steering" if which == "steering" else "follow-up"
            raise UsageError(f"Unknown {label} mode {mode!r}; use 'all' or 'one-at-a-time'.")
        queue = agent.steering if which == "steering" else agent.follow_ups
        queue.mode = "all" if mode == "all" else "one-at-a-time"
        self.save_setting({"steeringMode" if which == "steering" else "followUpMode": mode})

    def save_setting(self, updates: dict[str, Any]) -> None:
        """A choice made in the session applies now and is saved as the global default, as Pi saves it."""
        try:
            self._session.settings.save_global(updates)
        except (OSError, ValueError) as e:
            log.debug("could not save %s to settings: %s", ", ".join(updates), e)  # said by the notice
            self._session.publish_soon(NoticeEvent(f"Could not save the setting: {e}", "warning"))

    # -- model and thinking level -----------------------------------------------------------------------
    async def set_model(self, model: Model) -> bool:
        session = self._session
        previous = session.model
        session.use_model(model)
        session.store.append_model_change(model.provider, model.id)
        session.set_thinking_level(session.agent.state.thinking_level)
        await session.runner.emit("model_select", ModelSelectEvent(model, previous, "set"))
        return True

    def available_thinking_levels(self) -> list[ThinkingLevel]:
        """The levels the current model supports (``["off"]`` without reasoning); all without a model."""
        model = self._session.model
        return list(THINKING_LEVELS) if model is None else supported_thinking_levels(model)

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        """The next supported level (wrapping); None when the model does not reason."""
        session = self._session
        model = session.model
        if model is None or not model.reasoning:
            return None
        levels = self.available_thinking_levels()
        current = session.thinking_level
        index = levels.index(current) if current in levels else -1
        session.set_thinking_level(levels[(index + 1) % len(levels)])
        return session.thinking_level

    async def cycle_model(self, direction: Literal["forward", "backward"] = "forward") -> ModelCycle | None:
        """Switch to the next (or previous) model: among the scoped models (``--models``, settings
        ``enabledModels``) if there are any, else among every available one. Returns (model, thinking level,
        scoped), or None when there is nothing to cycle to."""
        session = self._session
        available = session.available_models()
        keys = {(m.provider, m.id) for m in available}
        scoped = [(m, t) for m, t in self.scoped_models if (m.provider, m.id) in keys]
        candidates: list[tuple[Model, ThinkingLevel | None]] = scoped or (
            [] if self.scoped_models else [(m, None) for m in available]
        )
        if len(candidates) <= 1:
            return None
        current = session.model
        index = next(
            (
                i
                for i, (m, _) in enumerate(candidates)
                if current is not None and (m.provider, m.id) == (current.provider, current.id)
            ),
            0,
        )
        step = 1 if direction == "forward" else -1
        model, level = candidates[(index + step) % len(candidates)]
        previous = session.model
        session.use_model(model)
        session.store.append_model_change(model.provider, model.id)
        session.set_thinking_level(level if level is not None else self._thinking_for_switch())
        if previous is None or (previous.provider, previous.id) != (model.provider, model.id):
            await session.runner.emit("model_select", ModelSelectEvent(model, previous, "cycle"))
        return ModelCycle(model, session.thinking_level, bool(scoped))

    def _thinking_for_switch(self) -> str:
        default = self._session.settings.default_thinking_level
        return default if default in THINKING_LEVELS else self._session.thinking_level

    # -- statistics ---------------------------------------------------------------------------------
    def context_usage(self) -> ContextUsage | None:
        """How full the context is (estimated from the transcript); tokens unknown right after a compaction."""
        session = self._session
        model = session.model
        if model is None or model.context_window <= 0:
            return None
        if self._compacted_without_usage():
            return ContextUsage(None, model.context_window, None)
        messages = session.messages
        tokens = estimate_context_tokens(messages)
        estimated = context_estimate_rests_on_estimate(messages)
        return ContextUsage(tokens, model.context_window, tokens / model.context_window * 100, estimated)

    def _compacted_without_usage(self) -> bool:
        """After a compaction, until a reply reports usage again, the size of the context is unknown (Pi)."""
        for entry in reversed(self._session.store.branch()):
            if isinstance(entry, CompactionEntry):
                return True
            if (
                isinstance(entry, MessageEntry)
                and isinstance(entry.message, AssistantMessage)
                and entry.message.stop_reason not in ("error", "aborted")
                and context_tokens_of_usage(entry.message.usage) > 0
            ):
                return False
        return False

    def session_stats(self) -> SessionStats:
        """Pi's ``getSessionStats``: counts and token/cost totals over every entry of the session (history
        that was compacted away and abandoned branches included), plus the current context usage."""
        session = self._session
        user = assistant = tool_results = total = tool_calls = 0
        tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost = 0.0
        estimated = False

        def add(usage: Any) -> None:
            nonlocal cost, estimated
            if usage is None:
                return
            estimated = estimated or usage.estimated is True
            tokens["input"] += usage.input
            tokens["output"] += usage.output
            tokens["cacheRead"] += usage.cache_read
            tokens["cacheWrite"] += usage.cache_write
            cost += usage.cost.total

        for entry in session.store.entries():
            if isinstance(entry, BranchSummaryEntry | CompactionEntry):
                add(getattr(entry, "usage", None))
            if not isinstance(entry, MessageEntry):
                continue
            total += 1
            message = entry.message
            if isinstance(message, UserMessage):
                user += 1
            elif isinstance(message, AssistantMessage):
                assistant += 1
                tool_calls += sum(1 for block in message.content if isinstance(block, ToolCall))
                add(message.usage)
            elif message.role == "toolResult":
                tool_results += 1
                add(getattr(message, "usage", None))
        return SessionStats(
            session_file=session.store.session_file,
            session_id=session.store.session_id,
            user_messages=user,
            assistant_messages=assistant,
            tool_calls=tool_calls,
            tool_results=tool_results,
            total_messages=total,
            tokens=TokenTotals(tokens["input"], tokens["output"], tokens["cacheRead"], tokens["cacheWrite"]),
            cost=cost,
            context_usage=self.context_usage(),
            tokens_estimated=estimated,
        )

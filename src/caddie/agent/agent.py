"""The stateful agent around the loop: transcript, model, tools, queues, abort, subscribers.

``Agent.prompt()`` runs one low-level run (``agent_start`` … ``agent_end``); ``continue_()`` resumes from the
current transcript. Messages typed while a run is active go to the steering queue (delivered after the
current turn's tools finish) or the follow-up queue (delivered when the agent would otherwise stop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from caddie.agent.events import (
    AgentEndEvent,
    AgentEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)
from caddie.agent.loop import AgentContext, LoopConfig, run_agent_loop, run_agent_loop_continue
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    UserMessage,
)
from caddie.ai.model import Model, ThinkingLevel
from caddie.errors import UsageError
from caddie.tools.base import ToolDefinition

QueueMode = Literal["all", "one-at-a-time"]
Listener = Callable[[AgentEvent, AbortSignal], Awaitable[None]]


class AgentBusy(UsageError, RuntimeError):
    """A run is active; queue the message with ``steer``/``follow_up`` or wait for the run to end."""


class MessageQueue:
    """A queue drained either one message per delivery point or all at once."""

    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        self.mode: QueueMode = mode
        self.messages: list[AgentMessage] = []

    def enqueue(self, message: AgentMessage) -> None:
        self.messages.append(message)

    def drain(self) -> list[AgentMessage]:
        if self.mode == "all":
            drained, self.messages = self.messages, []
            return drained
        if not self.messages:
            return []
        return [self.messages.pop(0)]

    def clear(self) -> list[AgentMessage]:
        cleared, self.messages = self.messages, []
        return cleared

    def __bool__(self) -> bool:
        return bool(self.messages)


@dataclass
class AgentState:
    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel = "off"
    tools: list[ToolDefinition] = field(default_factory=list)
    messages: list[AgentMessage] = field(default_factory=list)
    is_streaming: bool = False
    streaming_message: AgentMessage | None = None
    pending_tool_calls: set[str] = field(default_factory=set)
    error_message: str | None = None


class Agent:
    def __init__(
        self,
        state: AgentState,
        make_config: Callable[[], LoopConfig],
        *,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
    ) -> None:
        self.state = state
        self._make_config = make_config
        self.steering = MessageQueue(steering_mode)
        self.follow_ups = MessageQueue(follow_up_mode)
        self._listeners: list[Listener] = []
        self._run: AbortController | None = None

    # -- observation --------------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    @property
    def is_running(self) -> bool:
        return self._run is not None

    @property
    def signal(self) -> AbortSignal | None:
        return self._run.signal if self._run is not None else None

    # -- queues -------------------------------------------------------------------------------------
    def steer(self, message: AgentMessage) -> None:
        self.steering.enqueue(message)

    def follow_up(self, message: AgentMessage) -> None:
        self.follow_ups.enqueue(message)

    def has_queued_messages(self) -> bool:
        return bool(self.steering) or bool(self.follow_ups)

    def abort(self) -> None:
        if self._run is not None:
            self._run.abort()

    # -- running ------------------------------------------------------------------------------------
    async def prompt(self, prompt: str | list[AgentMessage]) -> None:
        """Run with new messages (a string becomes one user message)."""
        if self._run is not None:
            raise AgentBusy("The agent is already working; queue the message (steer or follow up) instead.")
        messages: list[AgentMessage] = (
            [UserMessage([TextContent(prompt)])] if isinstance(prompt, str) else prompt
        )
        await self._run_prompts(messages)

    async def continue_(self) -> None:
        """Resume from the transcript; after an assistant message, queued messages become the prompt."""
        if self._run is not None:
            raise AgentBusy("The agent is already working.")
        if not self.state.messages:
            raise ValueError("No messages to continue from")
        if isinstance(self.state.messages[-1], AssistantMessage):
            steering = self.steering.drain()
            if steering:
                await self._run_prompts(steering, skip_initial_steering_poll=True)
                return
            follow_ups = self.follow_ups.drain()
            if follow_ups:
                await self._run_prompts(follow_ups)
                return
            raise ValueError("Cannot continue from message role: assistant")
        await self._lifecycle(
            lambda signal: run_agent_loop_continue(self._snapshot(), self._config(), self._process, signal)
        )

    def _snapshot(self) -> AgentContext:
        return AgentContext(self.state.system_prompt, list(self.state.messages), list(self.state.tools))

    def _config(self, *, skip_initial_steering_poll: bool = False) -> LoopConfig:
        config = self._make_config()
        skip = skip_initial_steering_poll

        async def steering() -> list[AgentMessage]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return self.steering.drain()

        async def follow_ups() -> list[AgentMessage]:
            return self.follow_ups.drain()

        config.get_steering_messages = steering
        config.get_follow_up_messages = follow_ups
        return config

    async def _run_prompts(
        self, messages: list[AgentMessage], *, skip_initial_steering_poll: bool = False
    ) -> None:
        await self._lifecycle(
            lambda signal: run_agent_loop(
                messages,
                self._snapshot(),
                self._config(skip_initial_steering_poll=skip_initial_steering_poll),
                self._process,
                signal,
            )
        )

    async def _lifecycle(self, executor: Callable[[AbortSignal], Awaitable[object]]) -> None:
        controller = AbortController()
        self._run = controller
        self.state.is_streaming = True
        self.state.streaming_message = None
        self.state.error_message = None
        try:
            await executor(controller.signal)
        except Exception as e:  # a bug or a failing listener: end the run with a visible error
            await self._fail_run(e, controller.signal.aborted)
        finally:
            self.state.is_streaming = False
            self.state.streaming_message = None
            self.state.pending_tool_calls = set()
            self._run = None

    async def _fail_run(self, error: Exception, aborted: bool) -> None:
        model = self.state.model
        failure = AssistantMessage(
            [TextContent("")],
            model.api,
            model.provider,
            model.id,
            stop_reason="aborted" if aborted else "error",
            error_message=str(error) or type(error).__name__,
        )
        for event in (
            MessageStartEvent(failure),
            MessageEndEvent(failure),
            TurnEndEvent(0, failure, []),
            AgentEndEvent([failure]),
        ):
            try:
                await self._process(event)
            except Exception:  # already failing; the transcript records the error message
                pass

    async def _process(self, event: AgentEvent) -> None:
        state = self.state
        if isinstance(event, MessageStartEvent | MessageUpdateEvent):
            state.streaming_message = event.message
        elif isinstance(event, MessageEndEvent):
            state.streaming_message = None
            state.messages.append(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            state.pending_tool_calls = {*state.pending_tool_calls, event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            state.pending_tool_calls = state.pending_tool_calls - {event.tool_call_id}
        elif isinstance(event, TurnEndEvent):
            if isinstance(event.message, AssistantMessage) and event.message.error_message:
                state.error_message = event.message.error_message
        elif isinstance(event, AgentEndEvent):
            state.streaming_message = None
        signal = self._run.signal if self._run is not None else AbortSignal()
        end = event if isinstance(event, MessageEndEvent) else None
        stored = end.message if end is not None else None
        for listener in list(self._listeners):
            await listener(event, signal)
        if end is not None and end.message is not stored and state.messages and state.messages[-1] is stored:
            state.messages[-1] = end.message  # a message_end handler replaced it

"""User input into runs: a typed line (command, ``input`` handlers, skill/template expansion), the steering and
follow-up queues, and the preparation of a prompt (``before_agent_start``) before the run starts.

Pi's order: extension command ``/name args`` (runs at once, no model call) → ``input`` → queue as steering
or follow-up if a run is active → ``before_agent_start`` (extra messages, system prompt) → the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from caddie.agent.agent import Agent
from caddie.ai.messages import (
    AgentMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    UserContent,
    UserMessage,
    text_of,
)
from caddie.ai.model import Model
from caddie.config.settings import Settings
from caddie.config.source_info import UNDECIDED
from caddie.errors import UsageError
from caddie.extensions.api import BeforeAgentStartEvent, CommandSpec, ExtensionContext
from caddie.extensions.runner import ExtensionRunner
from caddie.resources.discovery import Resources
from caddie.resources.prompts import expand_prompt_template
from caddie.resources.skills import SkillExpansionError, expand_skill_command
from caddie.runtime.compaction_port import Compactor
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_api import PromptSource, SlashCommand
from caddie.runtime.session_events import QueueUpdateEvent, SessionEvent
from caddie.runtime.tools_prompt import ToolsAndPrompt


class PrompterHost(Protocol):
    """What turning input into runs needs of the session."""

    @property
    def agent(self) -> Agent: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def run(self) -> RunController: ...

    @property
    def compactor(self) -> Compactor | None: ...

    @property
    def resources(self) -> Resources: ...

    @property
    def model(self) -> Model | None: ...

    @property
    def tools(self) -> ToolsAndPrompt: ...

    def context(self, system_prompt: Callable[[], str] | None = None) -> ExtensionContext: ...

    async def run_command(self, command: CommandSpec, args: str) -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...

    def publish_first(self, event: SessionEvent) -> None: ...


class Prompter:
    def __init__(self, session: PrompterHost) -> None:
        self._session = session
        self.next_turn: list[CustomMessage] = []
        """Extension messages delivered ``next_turn``: they go with the next prompt."""
        self.steering_texts: list[str] = []
        self.follow_up_texts: list[str] = []

    def pending_count(self) -> int:
        return len(self.steering_texts) + len(self.follow_up_texts)

    def reset(self) -> None:
        """A session switch: nothing queued carries over."""
        agent = self._session.agent
        agent.steering.clear()
        agent.follow_ups.clear()
        self.steering_texts.clear()
        self.follow_up_texts.clear()
        self.next_turn = []

    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None,
        source: PromptSource,
        streaming_behavior: Literal["steer", "follow_up"] | None,
        preflight: Callable[[bool], None] | None,
    ) -> None:
        session = self._session
        runner = session.runner
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = runner.commands().get(name)
            if command is not None:
                await session.run_command(command, args.strip())
                if preflight is not None:
                    preflight(True)
                return
        try:
            if runner.has_handlers("input"):
                result = await runner.emit_input(text, images, source, streaming_behavior)
                if result.action == "handled":
                    if preflight is not None:
                        preflight(True)
                    return
                if result.action == "transform" and result.text is not None:
                    text, images = result.text, result.images
            text = self.expand_text(text)
            if session.run.running or (session.run.busy and preflight is not None):
                if streaming_behavior is None:
                    raise UsageError(
                        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
                        "to queue the message."
                        if preflight is not None
                        else "The agent is working; send the message as a steer or a follow-up."
                    )
                blocks: list[UserContent] = [TextContent(text), *(images or [])]
                self.queue_user(UserMessage(blocks), text, streaming_behavior)
                if preflight is not None:
                    preflight(True)
                return
        except BaseException:
            if preflight is not None:
                preflight(False)
            raise
        await self.start_prompt(text, images, UserMessage([TextContent(text), *(images or [])]), preflight)

    async def prompt_from_extension(self, content: str | list[UserContent]) -> None:
        """Like a typed prompt (``input`` with source ``extension``), minus command handling."""
        blocks: list[UserContent] = [TextContent(content)] if isinstance(content, str) else list(content)
        text = text_of(blocks)
        images = [b for b in blocks if isinstance(b, ImageContent)] or None
        runner = self._session.runner
        if runner.has_handlers("input"):
            result = await runner.emit_input(text, images, "extension", None)
            if result.action == "handled":
                return
            if result.action == "transform" and result.text is not None:
                text, images = result.text, result.images
                blocks = [TextContent(text), *(images or [])]
        await self.start_prompt(text, images, UserMessage(blocks))

    def expand_text(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` become the text the model gets (Pi's order)."""
        if not text.startswith("/"):
            return text
        session = self._session
        try:
            if session.settings.get("enableSkillCommands", True) is not False:
                text = expand_skill_command(text, session.resources.skills)
        except SkillExpansionError as e:
            raise UsageError(str(e)) from None
        return expand_prompt_template(text, session.resources.prompts)

    def slash_commands(self, every_skill: bool = False) -> list[SlashCommand]:
        """Extension commands, prompt templates, and ``skill:`` commands (when skill commands are on, or
        ``every_skill``)."""
        session = self._session
        out = [
            SlashCommand(name, spec.description, "extension", spec.source, source_info=spec.source_info)
            for name, spec in session.runner.commands().items()
        ]
        out += [
            SlashCommand(
                t.name,
                t.description,
                "prompt",
                t.file_path,
                t.source,
                t.argument_hint,
                t.source_info or UNDECIDED,
            )
            for t in session.resources.prompts
        ]
        if every_skill or session.settings.get("enableSkillCommands", True) is not False:
            out += [
                SlashCommand(
                    f"skill:{s.name}",
                    s.description,
                    "skill",
                    s.file_path,
                    s.source,
                    None,
                    s.source_info or UNDECIDED,
                )
                for s in session.resources.skills
            ]
        return out

    def steer_or_follow(
        self, text: str, images: list[ImageContent] | None, how: Literal["steer", "follow_up"]
    ) -> None:
        name = text[1:].partition(" ")[0] if text.startswith("/") else ""
        if name and name in self._session.runner.commands():
            raise UsageError(
                f"/{name} is a command: it runs at once and cannot be queued; send it as a prompt."
            )
        text = self.expand_text(text)
        self.queue_user(UserMessage([TextContent(text), *(images or [])]), text, how)

    def queue_user(self, message: UserMessage, text: str, how: Literal["steer", "follow_up"]) -> None:
        agent = self._session.agent
        if how == "steer":
            agent.steer(message)
            self.steering_texts.append(text)
        else:
            agent.follow_up(message)
            self.follow_up_texts.append(text)
        self._session.publish_soon(QueueUpdateEvent(list(self.steering_texts), list(self.follow_up_texts)))

    def clear_queues(self) -> tuple[list[str], list[str]]:
        """Drop queued user messages (Esc restores them to the editor); returns what was queued."""
        steering, follow = list(self.steering_texts), list(self.follow_up_texts)
        agent = self._session.agent
        agent.steering.clear()
        agent.follow_ups.clear()
        self.steering_texts.clear()
        self.follow_up_texts.clear()
        self._session.publish_soon(QueueUpdateEvent([], []))
        return steering, follow

    def dequeue_display(self, message: UserMessage) -> None:
        """A queued user message reached the transcript: it leaves the pending list (event goes out first)."""
        text = text_of(message.content)
        for queue in (self.steering_texts, self.follow_up_texts):
            if text in queue:
                queue.remove(text)
                self._session.publish_first(
                    QueueUpdateEvent(list(self.steering_texts), list(self.follow_up_texts))
                )
                return

    async def start_prompt(
        self,
        text: str,
        images: list[ImageContent] | None,
        user: UserMessage,
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        session = self._session
        run = session.run
        if session.model is None:
            if preflight is not None:
                preflight(False)
            raise UsageError("No model is configured, so there is nothing to send the prompt to.")
        # From here on the session counts as busy: a second prompt arriving while extensions prepare this one
        # is queued (and shown as pending) instead of racing it.
        signal = run.begin_start()
        try:
            if session.compactor is not None:
                await session.compactor.before_prompt()
            batch: list[AgentMessage] = [user, *self.next_turn]
            self.next_turn = []
            if session.runner.has_handlers("before_agent_start"):
                event = BeforeAgentStartEvent(
                    text, images, session.tools.base_system_prompt, session.tools.prompt_options()
                )
                started = await run.unless_aborted(
                    session.runner.emit_before_agent_start(
                        event, lambda get_prompt: session.context(get_prompt)
                    ),
                    signal,
                    "before_agent_start",
                )
                if started is None:
                    raise UsageError("The prompt was aborted before its run started.")
                extra, prompt_override = started
                batch.extend(extra)
                if prompt_override is not None:
                    session.tools.override(prompt_override)
        except BaseException:
            run.start_failed()
            if preflight is not None:
                preflight(False)
            raise
        run.start_prepared()
        if preflight is not None:
            try:
                preflight(True)  # may veto the run (an RPC client that has gone away)
            except BaseException:
                run.start_failed()
                session.tools.end_override()
                raise
        await run.run(batch)

"""The user's own shell commands: ``!cmd`` / ``!!cmd`` in the editor, RPC ``bash``.

The output streams as ``bash_execution_update`` events and is kept like the bash tool keeps it
(``caddie.tools.output.OutputAccumulator``: a tail-truncated text, everything in a temp file once it is too
long), but sanitised as Pi shows it (no ANSI escapes, carriage returns or control bytes). The record (a
``bashExecution`` message) waits while a run is active, so it never lands between a tool call and its result.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import signal as signals
from collections.abc import Callable
from typing import Protocol

from caddie.agent.events import MessageEndEvent, MessageStartEvent
from caddie.ai.abort import AbortController
from caddie.ai.messages import AgentMessage, BashExecutionMessage
from caddie.config.settings import Settings
from caddie.extensions.api import BashRunner, UserBashEvent, UserBashResult
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.session_events import BashExecutionUpdateEvent, SessionEvent
from caddie.sandbox import Sandbox
from caddie.session.store import SessionStore
from caddie.tools.bash import EnvPolicy, command_env, get_shell_config
from caddie.tools.output import OutputAccumulator

USER_BASH_TEMP_FILE_PREFIX = "caddie-bash"


class UserBashHost(Protocol):
    """What a user shell command needs of the session."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def cwd(self) -> str: ...

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def messages(self) -> list[AgentMessage]: ...

    @property
    def is_busy(self) -> bool:
        """A run is being prepared or running: the record waits until it settles."""
        ...

    @property
    def runner(self) -> ExtensionRunner: ...

    async def publish_event(self, event: SessionEvent) -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...


class UserBash:
    def __init__(self, session: UserBashHost) -> None:
        self._session = session
        self._aborts: set[AbortController] = set()
        self._pending: list[BashExecutionMessage] = []
        self._silent: set[int] = set()

    async def run(
        self,
        command: str,
        exclude_from_context: bool,
        *,
        request_id: str | None = None,
        announce: bool = True,
    ) -> BashExecutionMessage:
        """Run ``command`` and record it (``exclude_from_context``: ``!!``, kept out of the context).

        ``abort`` (or cancelling the caller) kills the command's process group; the record then says
        ``cancelled``. ``announce=False`` (RPC, as Pi): the record is added without
        ``message_start``/``message_end`` events."""
        session = self._session
        decision = await self._ask_extensions(command, exclude_from_context)
        if decision is not None and decision.result is not None:
            given = decision.result
            handled = BashExecutionMessage(
                command,
                given.output,
                given.exit_code,
                cancelled=given.cancelled,
                truncated=given.truncated,
                full_output_path=given.full_output_path,
                exclude_from_context=exclude_from_context or None,
            )
            return await self._finish(handled, announce)
        settings = session.settings
        controller = AbortController()
        self._aborts.add(controller)
        prefix = settings.shell_command_prefix
        shell = get_shell_config(settings.shell_path)
        output = OutputAccumulator(temp_file_prefix=USER_BASH_TEMP_FILE_PREFIX)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def take(data: bytes, final: bool = False) -> None:
            text = sanitize_output(decoder.decode(data, final))
            if text:
                output.append(text.encode("utf-8", "surrogatepass"))
                session.publish_soon(BashExecutionUpdateEvent(request_id, text))

        if decision is not None and decision.operations is not None:
            return await self._finish(
                await self._run_elsewhere(
                    decision.operations, command, prefix, exclude_from_context, controller, output, take
                ),
                announce,
            )
        prepared = session.sandbox.prepare(
            [shell.shell, *shell.args, f"{prefix}\n{command}" if prefix else command],
            session.cwd,
            command_env({}, EnvPolicy.of(*settings.shell_env)),
        )
        try:
            proc = await asyncio.create_subprocess_exec(
                *prepared.argv,
                cwd=session.cwd,
                env=prepared.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                pass_fds=prepared.pass_fds,
            )
        except BaseException:
            prepared.close()
            self._aborts.discard(controller)
            raise

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)

        remove = controller.signal.add_listener(kill)
        try:
            assert proc.stdout is not None
            while data := await proc.stdout.read(65536):
                take(data)
            take(b"", final=True)
            code = await proc.wait()
            prepared.close()
            note = prepared.explain(output.snapshot().content or "")
            if note:
                take(f"\n{note}\n".encode())
            output.finish()
            snapshot = output.snapshot(persist_if_truncated=True)
        except BaseException:
            kill()
            raise
        finally:
            remove()
            prepared.close()
            self._aborts.discard(controller)
            output.close_temp_file()
        cancelled = controller.signal.aborted
        message = BashExecutionMessage(
            command,
            snapshot.content,
            None if cancelled or code < 0 else code,
            cancelled=cancelled,
            truncated=snapshot.truncation.truncated,
            full_output_path=snapshot.full_output_path,
            exclude_from_context=exclude_from_context or None,
        )
        return await self._finish(message, announce)

    async def _finish(self, message: BashExecutionMessage, announce: bool) -> BashExecutionMessage:
        if not announce:
            self._silent.add(id(message))
        if self._session.is_busy:
            self._pending.append(message)
        else:
            await self._record(message)
        return message

    async def _ask_extensions(self, command: str, exclude_from_context: bool) -> UserBashResult | None:
        """``user_bash``: the first handler that returns a ``UserBashResult`` decides (Pi)."""
        runner = self._session.runner
        if not runner.has_handlers("user_bash"):
            return None
        event = UserBashEvent(command, exclude_from_context, self._session.cwd)
        decision = await runner.emit_first("user_bash", event, UserBashResult)
        return decision if isinstance(decision, UserBashResult) else None

    async def _run_elsewhere(
        self,
        operations: BashRunner,
        command: str,
        prefix: str | None,
        exclude_from_context: bool,
        controller: AbortController,
        output: OutputAccumulator,
        take: Callable[..., None],
    ) -> BashExecutionMessage:
        """Run through an extension's ``BashRunner`` (SSH, a container); the output is kept as for a local
        command. A runner that raises gives the error as the output and no exit code."""
        code: int | None
        try:
            code = await operations(
                f"{prefix}\n{command}" if prefix else command,
                self._session.cwd,
                lambda text: take(text.encode("utf-8", "surrogatepass")),
                controller.signal,
            )
            take(b"", True)
        except Exception as e:  # the extension's runner failed: say so in the record, as a failed command
            take(f"{e}\n".encode())
            code = None
        finally:
            self._aborts.discard(controller)
        output.finish()
        snapshot = output.snapshot(persist_if_truncated=True)
        output.close_temp_file()
        cancelled = controller.signal.aborted
        return BashExecutionMessage(
            command,
            snapshot.content,
            None if cancelled else code,
            cancelled=cancelled,
            truncated=snapshot.truncation.truncated,
            full_output_path=snapshot.full_output_path,
            exclude_from_context=exclude_from_context or None,
        )

    def abort(self) -> None:
        """Kill every running user shell command."""
        for controller in list(self._aborts):
            controller.abort()

    async def flush_pending(self) -> None:
        """The run settled: record the commands that finished during it."""
        pending, self._pending = self._pending, []
        for message in pending:
            await self._record(message)

    async def _record(self, message: BashExecutionMessage) -> None:
        session = self._session
        session.messages.append(message)
        session.store.append_message(message)
        if id(message) in self._silent:
            self._silent.discard(id(message))
            return
        await session.publish_event(MessageStartEvent(message))
        await session.publish_event(MessageEndEvent(message))


def sanitize_output(text: str) -> str:
    """What Pi shows of command output: no ANSI escapes, no carriage returns, no control bytes."""
    text = _ANSI.sub("", text).replace("\r", "")
    return "".join(c for c in text if c in "\n\t" or c >= " " or c == "\x1b")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

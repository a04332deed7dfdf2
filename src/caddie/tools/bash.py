"""The ``bash`` tool: run a command through the configured shell, stream and tail-truncate its output.

stdout and stderr are merged; the command runs in its own process group, which is killed as a whole on
abort or timeout. Output beyond 2,000 lines / 50 KB keeps its tail for the model and is saved in full to
``$TMPDIR/caddie-bash-<id>.log``. A non-zero exit status is reported as an error result.
"""

from __future__ import annotations

import asyncio
import codecs
import fnmatch
import math
import os
import shutil
import signal as signal_module
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from caddie.ai import secrets
from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.errors import Aborted
from caddie.jscompat import js_number
from caddie.sandbox import Sandbox
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.fs_errors import errno_code
from caddie.tools.operations import BashOperations, ShellExec, shell_of
from caddie.tools.operations import ShellTimedOut as _TimedOut
from caddie.tools.output import OutputAccumulator, OutputSnapshot
from caddie.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size

EnvSource = Mapping[str, str] | Callable[[], Mapping[str, str] | None] | None
"""Extra environment for commands: a mapping, or a callable asked before each command."""

BASH_TEMP_FILE_PREFIX = "caddie-bash"
UPDATE_THROTTLE_SECONDS = 0.1
EXIT_STDIO_GRACE_SECONDS = 0.1
MAX_TIMEOUT_MS = 2_147_483_647

SESSION_ENV_KEYS = ("SESSION_ID", "SESSION_FILE", "PROVIDER", "MODEL", "REASONING_LEVEL")
"""Exported to every command as ``CADDIE_<KEY>`` and Pi's ``PI_<KEY>``; inherited values are dropped."""

BASH_DESCRIPTION = (
    f"Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated "
    f"to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). If truncated, "
    "full output is saved to a temp file. Optionally provide a timeout in seconds."
)
BASH_PROMPT_SNIPPET = "Execute bash commands (ls, grep, find, etc.)"
BASH_PROMPT_GUIDELINES = ["You can inspect PI_* environment variables for current model and session details."]
BASH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "description": "Shell command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
    },
}


def session_env(
    *,
    session_id: str | None = None,
    session_file: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    reasoning_level: str | None = None,
) -> dict[str, str]:
    """The session variables for a command, under both the ``CADDIE_`` and Pi's ``PI_`` names."""
    values = {
        "SESSION_ID": session_id,
        "SESSION_FILE": session_file,
        "PROVIDER": provider,
        "MODEL": model,
        "REASONING_LEVEL": reasoning_level,
    }
    env: dict[str, str] = {}
    for key, value in values.items():
        if value:
            env[f"CADDIE_{key}"] = value
            env[f"PI_{key}"] = value
    return env


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """Which inherited variables commands see (settings ``shellEnv``).

    A secret-looking variable (``caddie.ai.secrets.is_secret_variable``: its name, or a URL with a password
    as its value) or one matching ``exclude`` is dropped unless it matches ``include``. Patterns are shell
    globs, matched case-insensitively.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, include: Sequence[str], exclude: Sequence[str]) -> EnvPolicy:
        return cls(tuple(include), tuple(exclude))

    def allows(self, name: str, value: str = "") -> bool:
        upper = name.upper()
        if any(fnmatch.fnmatchcase(upper, p.upper()) for p in self.include):
            return True
        if secrets.is_secret_variable(name, value):
            return False
        return not any(fnmatch.fnmatchcase(upper, p.upper()) for p in self.exclude)


def inherited_env(policy: EnvPolicy | None = None) -> dict[str, str]:
    """caddie's environment as a command may see it: secret-looking names removed per ``policy``."""
    policy = policy or EnvPolicy()
    return {name: value for name, value in os.environ.items() if policy.allows(name, value)}


def command_env(extra: EnvSource, policy: EnvPolicy | None = None) -> dict[str, str]:
    """The environment a command runs with: ours (filtered by ``policy``), minus inherited session
    variables, plus ``extra``."""
    env = inherited_env(policy)
    for key in SESSION_ENV_KEYS:
        env.pop(f"PI_{key}", None)
        env.pop(f"CADDIE_{key}", None)
    values = extra() if callable(extra) else extra
    for key, value in (values or {}).items():
        env[key] = value
    for key in SESSION_ENV_KEYS:  # either spelling given -> both exported
        caddie_name, pi_name = f"CADDIE_{key}", f"PI_{key}"
        if caddie_name in env and pi_name not in env:
            env[pi_name] = env[caddie_name]
        elif pi_name in env and caddie_name not in env:
            env[caddie_name] = env[pi_name]
    return env


@dataclass(slots=True)
class ShellConfig:
    shell: str
    args: list[str]


def get_shell_config(shell_path: str | None = None) -> ShellConfig:
    """``shell_path`` if given (it must exist), else /bin/bash, else bash on PATH, else sh."""
    if shell_path:
        if os.path.exists(shell_path):
            return ShellConfig(shell_path, ["-c"])
        raise ToolError(f"Custom shell path not found: {shell_path}")
    if os.path.exists("/bin/bash"):
        return ShellConfig("/bin/bash", ["-c"])
    found = shutil.which("bash")
    if found:
        return ShellConfig(found, ["-c"])
    return ShellConfig("sh", ["-c"])


def kill_process_tree(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (or just ``pid`` if that fails)."""
    try:
        os.killpg(pid, signal_module.SIGKILL)
    except OSError:
        try:
            os.kill(pid, signal_module.SIGKILL)
        except OSError:
            pass


LocalBashRunner = Callable[[str, str, Callable[[str], None], AbortSignal | None], Awaitable[int | None]]
"""``run(command, cwd, on_output, signal) -> exit code`` (the shape of a ``user_bash`` runner)."""


def create_local_bash_operations(shell_path: str | None = None) -> LocalBashRunner:
    """Pi's ``createLocalBashOperations``: caddie's own local shell (its shell lookup, process group, kill on
    cancel) as a runner a ``user_bash`` handler can wrap, e.g. to run ``source ~/.profile`` first::

        local = create_local_bash_operations()
        return UserBashResult(operations=lambda command, cwd, on_output, signal:
                              local(f"source ~/.profile\n{command}", cwd, on_output, signal))

    The output reaches ``on_output`` as text; a cancelled command returns None."""

    async def run(
        command: str, cwd: str, on_output: Callable[[str], None], signal: AbortSignal | None
    ) -> int | None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def emit(data: bytes, final: bool = False) -> None:
            text = decoder.decode(data, final)
            if text:
                on_output(text)

        try:
            code = await run_shell_command(
                command,
                cwd,
                on_data=emit,
                signal=signal,
                timeout=None,
                env=command_env({}),
                shell_path=shell_path,
            )
        except Aborted:
            return None
        emit(b"", final=True)
        return code

    return run


def resolve_timeout_seconds(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if timeout * 1000 > MAX_TIMEOUT_MS:
        raise ToolError(f"Invalid timeout: maximum is {js_number(MAX_TIMEOUT_MS / 1000)} seconds")
    return float(timeout)


async def run_shell_command(
    command: str,
    cwd: str,
    *,
    on_data: Callable[[bytes], None],
    signal: AbortSignal | None,
    timeout: float | None,
    env: dict[str, str],
    shell_path: str | None = None,
    shell_name: str = "bash",
    sandbox: Sandbox | None = None,
    on_note: Callable[[str], None] | None = None,
) -> int | None:
    """Run ``command``; feed merged output to ``on_data``. Returns the exit code (None if killed by a signal).

    With an active ``sandbox`` the command runs inside it; when its output shows the sandbox refused
    something, ``on_note`` gets the note for the model (``Sandbox.prepare`` / ``PreparedCommand.explain``).
    Raises ``Aborted`` / ``_TimedOut`` after killing the process group, ``ToolError`` for setup failures.
    """
    timeout_s = resolve_timeout_seconds(timeout)
    if signal is not None and signal.aborted:
        raise Aborted
    config = get_shell_config(shell_path)
    if not os.path.exists(cwd):
        raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute {shell_name} commands.")

    loop = asyncio.get_running_loop()
    prepared = (sandbox or Sandbox.off()).prepare([config.shell, *config.args, command], cwd, env)
    try:
        proc = subprocess.Popen(
            prepared.argv,
            cwd=cwd,
            env=prepared.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=prepared.pass_fds,
        )
    except OSError as exc:
        prepared.close()
        raise ToolError(f"spawn {config.shell} {errno_code(exc)}") from exc
    seen = _TailText() if prepared.sandboxed and on_note is not None else None

    def deliver(chunk: bytes) -> None:
        if seen is not None:
            seen.add(chunk)
        on_data(chunk)

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)

    eof = asyncio.Event()
    got_data = asyncio.Event()
    exited: asyncio.Future[int] = loop.create_future()

    def on_readable() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                loop.remove_reader(fd)
                eof.set()
                return
            deliver(chunk)
            got_data.set()

    def set_exit(code: int) -> None:
        if not exited.done():
            exited.set_result(code)

    def wait_in_thread() -> None:
        code = proc.wait()
        try:
            loop.call_soon_threadsafe(set_exit, code)
        except RuntimeError:  # the event loop is gone; nobody is waiting any more
            pass

    loop.add_reader(fd, on_readable)
    threading.Thread(target=wait_in_thread, name=f"caddie-bash-{proc.pid}", daemon=True).start()

    timed_out = False

    def on_timeout() -> None:
        nonlocal timed_out
        timed_out = True
        kill_process_tree(proc.pid)

    timer = loop.call_later(timeout_s, on_timeout) if timeout_s is not None else None
    remove_listener = signal.add_listener(lambda: kill_process_tree(proc.pid)) if signal is not None else None
    try:
        returncode = await exited
        # The shell has exited; a background child may still hold the pipe. Read until EOF, or until
        # the pipe has been quiet for a short grace period.
        while not eof.is_set():
            got_data.clear()
            eof_wait = asyncio.ensure_future(eof.wait())
            data_wait = asyncio.ensure_future(got_data.wait())
            done, pending = await asyncio.wait(
                {eof_wait, data_wait}, timeout=EXIT_STDIO_GRACE_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if not done:
                break
    except asyncio.CancelledError:
        kill_process_tree(proc.pid)
        raise
    finally:
        if not eof.is_set():
            loop.remove_reader(fd)
        proc.stdout.close()
        if timer is not None:
            timer.cancel()
        if remove_listener is not None:
            remove_listener()
        prepared.close()
    if signal is not None and signal.aborted:
        raise Aborted
    if timed_out:
        raise _TimedOut
    if seen is not None and on_note is not None:
        note = prepared.explain(seen.text())
        if note:
            on_note(note)
    return None if returncode < 0 else returncode


class _TailText:
    """The last ``limit`` bytes of a command's output, to look for the sandbox's refusals in."""

    def __init__(self, limit: int = 64 * 1024) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._limit = limit

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size > 2 * self._limit:
            joined = b"".join(self._chunks)[-self._limit :]
            self._chunks, self._size = [joined], len(joined)

    def text(self) -> str:
        return b"".join(self._chunks)[-self._limit :].decode("utf-8", "replace")


def create_bash_tool(
    cwd: str,
    *,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    env: EnvSource = None,
    env_policy: EnvPolicy | None = None,
    expose_session_environment: bool = True,
    shell: ShellExec | None = None,
    operations: BashOperations | None = None,
    sandbox: Sandbox | None = None,
) -> ToolDefinition:
    """The ``bash`` tool for ``cwd``. ``env`` adds variables (see ``session_env``) to every command;
    ``env_policy`` decides which of caddie's own variables commands inherit; ``shell`` runs commands
    somewhere other than a local process (see ``caddie.tools.operations``); an active ``sandbox`` runs them
    inside it, locally (it takes precedence over ``shell``, which could not be sandboxed). ``operations``: a
    program's ``BashOperations`` (another machine's shell), the same as ``shell=shell_of(operations)``."""
    if operations is not None:
        shell = shell_of(operations)
    if sandbox is not None and sandbox.active:
        shell = None

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        command: str = params["command"]
        timeout: float | None = params.get("timeout")
        full_command = f"{command_prefix}\n{command}" if command_prefix else command
        run_env = command_env(env if expose_session_environment else None, env_policy)
        output = OutputAccumulator(temp_file_prefix=BASH_TEMP_FILE_PREFIX)
        loop = asyncio.get_running_loop()
        accepting = True
        dirty = False
        last_update = 0.0
        timer: asyncio.TimerHandle | None = None

        def emit_update() -> None:
            nonlocal dirty, last_update
            if on_update is None or not dirty:
                return
            dirty = False
            last_update = time.monotonic()
            snap = output.snapshot(persist_if_truncated=True)
            details: dict[str, Any] = {}
            if snap.truncation.truncated:
                details["truncation"] = snap.truncation.to_json()
            if snap.full_output_path:
                details["fullOutputPath"] = snap.full_output_path
            on_update(ToolResult([TextContent(snap.content or "")], details))

        def clear_timer() -> None:
            nonlocal timer
            if timer is not None:
                timer.cancel()
                timer = None

        def fire_timer() -> None:
            nonlocal timer
            timer = None
            emit_update()

        def schedule_update() -> None:
            nonlocal dirty, timer
            if on_update is None:
                return
            dirty = True
            delay = UPDATE_THROTTLE_SECONDS - (time.monotonic() - last_update)
            if delay <= 0:
                clear_timer()
                emit_update()
            elif timer is None:
                timer = loop.call_later(delay, fire_timer)

        def on_data(chunk: bytes) -> None:
            if not accepting:
                return
            output.append(chunk)
            schedule_update()

        def finish() -> OutputSnapshot:
            nonlocal accepting
            accepting = False
            output.finish()
            clear_timer()
            emit_update()
            snap = output.snapshot(persist_if_truncated=True)
            output.close_temp_file()
            return snap

        notes: list[str] = []
        if on_update is not None:
            on_update(ToolResult([], None))
        try:
            try:
                if shell is not None:
                    exit_code = await shell(
                        full_command, cwd, tool_call_id=tool_call_id, on_data=on_data, signal=signal,
                        timeout=resolve_timeout_seconds(timeout), env=run_env,
                    )  # fmt: skip
                else:
                    exit_code = await run_shell_command(
                        full_command, cwd, on_data=on_data, signal=signal, timeout=timeout, env=run_env,
                        shell_path=shell_path, sandbox=sandbox, on_note=notes.append,
                    )  # fmt: skip
            except Aborted:
                text, _ = _format_output(finish(), output, "")
                raise ToolError(_append_status(text, "Command aborted")) from None
            except _TimedOut:
                text, _ = _format_output(finish(), output, "")
                status = f"Command timed out after {js_number(timeout or 0)} seconds"
                raise ToolError(_append_status(text, status)) from None
            except BaseException:
                finish()
                raise
            text, details = _format_output(finish(), output, "(no output)")
            for note in notes:
                text = _append_status(text, note)
            if exit_code is not None and exit_code != 0:
                raise ToolError(_append_status(text, f"Command exited with code {exit_code}"))
            return ToolResult([TextContent(text)], details)
        finally:
            clear_timer()

    return ToolDefinition(
        name="bash",
        label="bash",
        description=BASH_DESCRIPTION,
        parameters=BASH_PARAMETERS,
        execute=execute,
        prompt_snippet=BASH_PROMPT_SNIPPET,
        prompt_guidelines=[
            *(BASH_PROMPT_GUIDELINES if expose_session_environment else []),
            *([sandbox.guideline()] if sandbox is not None and sandbox.active else []),
        ],
    )


def _append_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def _format_output(
    snap: OutputSnapshot, output: OutputAccumulator, empty_text: str
) -> tuple[str, dict[str, Any] | None]:
    truncation = snap.truncation
    text = snap.content or empty_text
    if not truncation.truncated:
        return text, None
    details: dict[str, Any] = {"truncation": truncation.to_json()}
    if snap.full_output_path:
        details["fullOutputPath"] = snap.full_output_path
    start = truncation.total_lines - truncation.output_lines + 1
    end = truncation.total_lines
    path = snap.full_output_path
    if truncation.last_line_partial:
        line_size = format_size(output.last_line_bytes)
        text += (
            f"\n\n[Showing last {format_size(truncation.output_bytes)} of line {end} (line is {line_size}). "
            f"Full output: {path}]"
        )
    elif truncation.truncated_by == "lines":
        text += f"\n\n[Showing lines {start}-{end} of {truncation.total_lines}. Full output: {path}]"
    else:
        text += (
            f"\n\n[Showing lines {start}-{end} of {truncation.total_lines} ({format_size(DEFAULT_MAX_BYTES)} limit). "
            f"Full output: {path}]"
        )
    return text, details


def limit_output(text: str, temp_file_prefix: str = "caddie-output") -> tuple[str, dict[str, Any] | None]:
    """``text`` cut by ``bash``'s rules, for tools whose output can be as large (extension tools, MCP): the
    last 2000 lines or 50KB, whichever is hit first, with bash's note pointing at a temp file holding all of
    it. Returns the text and the details to attach (``truncation``, ``fullOutputPath``), or None when the
    text was short enough."""
    output = OutputAccumulator(temp_file_prefix=temp_file_prefix)
    output.append(text.encode("utf-8", "surrogatepass"))
    output.finish()
    try:
        return _format_output(output.snapshot(persist_if_truncated=True), output, "")
    finally:
        output.close_temp_file()

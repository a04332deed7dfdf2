"""Work on another machine over SSH (Pi's ssh example): with ``--ssh user@host`` (or
``user@host:/remote/path``) the ``read``, ``write``, ``edit`` and ``bash`` tools and your ``!`` commands run
there, and the system prompt names the remote directory. Needs key-based SSH (no password prompts) and
bash on the remote. ``--ssh-command`` replaces the ``ssh`` program (e.g. ``ssh -F ~/.ssh/work.conf``).

The tools stay caddie's own (same arguments, truncation and wording); only where their files and commands
live changes: the file tools take ``operations`` (read, write, access, mkdir on the remote), as Pi's. A missing
or refused file fails as a local one would (``ENOENT``, ``EACCES``); a failed connection says so. A write
lands whole or not at all: a dropped connection leaves the old file as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from caddie.extensions.api import (
    Aborted,
    AbortSignal,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    ExtensionAPI,
    ExtensionContext,
    ShellTimedOut,
    ToolError,
    UserBashResult,
    create_bash_tool,
    create_edit_tool,
    create_read_tool,
    create_write_tool,
)


@dataclass
class Remote:
    ssh: list[str]
    """The ssh program and its options."""
    host: str
    cwd: str
    local_cwd: str

    def path(self, local: str) -> str:
        return local.replace(self.local_cwd, self.cwd, 1)

    async def status(self, command: str, data: bytes | None = None) -> tuple[int, bytes, str]:
        """Run ``command`` there: its exit status, output and error output. ssh itself failing (exit 255: no connection,
        a refused key) is a ToolError saying so, never taken for the command's answer."""
        proc = await asyncio.create_subprocess_exec(
            *self.ssh,
            self.host,
            command,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(data)
        if proc.returncode == 255:
            reason = err.decode(errors="replace").strip() or "no reason given"
            raise ToolError(
                f"SSH connection to {self.host} failed: {reason}. Check that `ssh {self.host}` works "
                "without a password prompt."
            )
        return proc.returncode or 0, out, err.decode(errors="replace").strip()

    async def run(self, command: str, data: bytes | None = None) -> bytes:
        code, out, err = await self.status(command, data)
        if code != 0:
            raise ToolError(f"SSH command failed on {self.host} ({code}): {err}")
        return out

    def files(self, writable: bool = False) -> RemoteFiles:
        """The file tools' operations; ``writable``: access checks ask for writing too (the edit tool's)."""
        return RemoteFiles(self, writable)

    async def stream(
        self,
        command: str,
        cwd: str,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
    ) -> int | None:
        """Run ``command`` in the remote twin of ``cwd``, output (stdout and stderr) to ``on_data``."""
        proc = await asyncio.create_subprocess_exec(
            *self.ssh,
            self.host,
            f"cd {shlex.quote(self.path(cwd))} && {command}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )

        def stop() -> None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

        remove = signal.add_listener(stop) if signal is not None else (lambda: None)
        try:
            assert proc.stdout is not None
            async with asyncio.timeout(timeout):
                while chunk := await proc.stdout.read(65536):
                    on_data(chunk)
                code = await proc.wait()
        except TimeoutError:
            stop()
            raise ShellTimedOut(f"timeout:{timeout}") from None
        finally:
            remove()
        if signal is not None and signal.aborted:
            raise Aborted()
        return code


# The access check's answers, as exit statuses of its script.
_MISSING, _DIRECTORY, _REFUSED = 3, 4, 5

# Replace the file in one step: the text goes to a temporary file beside it, which takes the old file's mode
# and is moved over it only once all of it has arrived (its size checked: a dropped connection ends the
# input early without an error). Positional parameters: the target, then the expected size in bytes.
_REPLACE = r"""
target=$1
[ -L "$target" ] && target=$(readlink -f -- "$target")
dir=$(dirname -- "$target")
tmp=$(mktemp "$dir/.$(basename -- "$target").caddie.XXXXXX") || exit 1
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 1' HUP INT TERM PIPE
if [ -e "$target" ]; then cp -p -- "$target" "$tmp" || exit 1; fi
cat > "$tmp" || exit 1
[ $(wc -c < "$tmp") -eq "$2" ] || { echo "the connection ended before all of the file arrived" >&2; exit 1; }
mv -f -- "$tmp" "$target"
"""


@dataclass
class RemoteFiles:
    """The file tools' operations (read, write, edit) on the remote: every path mapped to its twin there."""

    remote: Remote
    writable: bool = False
    """Access means reading and writing (the edit tool's), not reading only (the read tool's)."""

    async def read_file(self, path: str) -> bytes:
        return await self.remote.run(f"cat {shlex.quote(self.remote.path(path))}")

    async def write_file(self, path: str, content: str) -> None:
        data = content.encode()
        script = f"sh -c {shlex.quote(_REPLACE)} sh {shlex.quote(self.remote.path(path))} {len(data)}"
        await self.remote.run(script, data)

    async def access(self, path: str) -> None:
        """Raise as the local file system would (the tools word these as they do for local files:
        ``ENOENT``/``EACCES``); a failed connection is the ToolError ``Remote.status`` raises."""
        target = shlex.quote(self.remote.path(path))
        checks = [f"test -e {target} || exit {_MISSING}", f"test -d {target} && exit {_DIRECTORY}"]
        checks.append(f"test -r {target} || exit {_REFUSED}")
        if self.writable:
            checks.append(f"test -w {target} || exit {_REFUSED}")
        code, _, err = await self.remote.status("; ".join(checks) + "; exit 0")
        if code == _MISSING:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if code == _DIRECTORY:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if code == _REFUSED:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        if code != 0:
            raise ToolError(f"SSH command failed on {self.remote.host} ({code}): {err}")

    async def mkdir(self, path: str) -> None:
        await self.remote.run(f"mkdir -p {shlex.quote(self.remote.path(path))}")


def register(api: ExtensionAPI) -> None:
    api.register_flag("ssh", "SSH remote: user@host or user@host:/path")
    api.register_flag("ssh-command", "The ssh program and its options", default="ssh")
    remote: list[Remote] = []

    async def shell(
        command: str,
        cwd: str,
        *,
        tool_call_id: str,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None:
        return await remote[0].stream(command, cwd, on_data, signal, timeout)

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        target = api.get_flag("ssh")
        if not isinstance(target, str) or not target:
            return
        ssh = shlex.split(str(api.get_flag("ssh-command") or "ssh"))
        host, _, path = target.partition(":")
        here = Remote(ssh, host, path, ctx.cwd)
        if not path:
            here.cwd = (await here.run("pwd")).decode().strip()
        remote[:] = [here]
        for tool in (
            create_read_tool(ctx.cwd, operations=here.files()),
            create_write_tool(ctx.cwd, operations=here.files()),
            create_edit_tool(ctx.cwd, operations=here.files(writable=True)),
            create_bash_tool(ctx.cwd, shell=shell),
        ):
            api.register_tool(tool)  # same names as the built-ins: these take their place
        ctx.ui.set_status("ssh", f"SSH: {here.host}:{here.cwd}")
        ctx.ui.notify(f"SSH mode: {here.host}:{here.cwd}", "info")

    def on_user_bash(event: object, ctx: ExtensionContext) -> UserBashResult | None:
        if not remote:
            return None

        async def run(
            command: str, cwd: str, on_output: Callable[[str], None], signal: AbortSignal
        ) -> int | None:
            return await remote[0].stream(
                command, cwd, lambda b: on_output(b.decode(errors="replace")), signal, None
            )

        return UserBashResult(operations=run)

    def on_before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        if not remote:
            return None
        here = remote[0]
        return BeforeAgentStartResult(
            system_prompt=event.system_prompt.replace(
                f"Current working directory: {here.local_cwd}",
                f"Current working directory: {here.cwd} (via SSH: {here.host})",
            )
        )

    api.on("session_start", on_start)
    api.on("user_bash", on_user_bash)
    api.on("before_agent_start", on_before)

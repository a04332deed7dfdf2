"""Work on another machine over SSH (Pi's ssh example): with ``--ssh user@host`` (or
``user@host:/remote/path``) the ``read``, ``write``, ``edit`` and ``bash`` tools and your ``!`` commands run
there, and the system prompt names the remote directory. Needs key-based SSH (no password prompts) and
bash on the remote. ``--ssh-command`` replaces the ``ssh`` program (e.g. ``ssh -F ~/.ssh/work.conf``).

The tools stay caddie's own (same arguments, truncation and wording); only where their files and commands
live changes: the file tools take ``operations`` (read, write, access, mkdir on the remote), as Pi's.
"""

from __future__ import annotations

import asyncio
import contextlib
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

    async def run(self, command: str, data: bytes | None = None) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            *self.ssh,
            self.host,
            command,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(data)
        if proc.returncode != 0:
            raise ToolError(f"SSH failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
        return out

    def files(self) -> RemoteFiles:
        return RemoteFiles(self)

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


@dataclass
class RemoteFiles:
    """The file tools' operations (read, write, edit) on the remote: every path mapped to its twin there."""

    remote: Remote

    async def read_file(self, path: str) -> bytes:
        return await self.remote.run(f"cat {shlex.quote(self.remote.path(path))}")

    async def write_file(self, path: str, content: str) -> None:
        await self.remote.run(f"cat > {shlex.quote(self.remote.path(path))}", content.encode())

    async def access(self, path: str) -> None:
        target = shlex.quote(self.remote.path(path))
        try:
            await self.remote.run(f"test -r {target} && test -f {target}")
        except ToolError:
            raise FileNotFoundError(2, "No such file or directory", path) from None

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
        files = here.files()
        for tool in (
            create_read_tool(ctx.cwd, operations=files),
            create_write_tool(ctx.cwd, operations=files),
            create_edit_tool(ctx.cwd, operations=files),
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

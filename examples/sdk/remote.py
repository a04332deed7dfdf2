"""Let caddie work on a project on another machine: read, edit, write and bash run there, over ssh.

    uv run python examples/sdk/remote.py --host build-box --dir /srv/app [--model provider/id] "run the tests"

A use of ``caddie.sdk``'s tool operations (docs/sdk.md, "Built-in tools that work somewhere else"): the
session runs here, the model's tools work on ``--dir`` of ``--host`` through ``ssh`` (your ssh config and
keys; ``--ssh`` names another client). The tools are caddie's own, so the model sees the same results as for
local files. Keys may come from the program too: ``--key-env VAR`` puts that variable's key for the model's
provider in an in-memory credential store, and ``--models FILE`` reads a models.json of your own. Exit status:
0 answered, 1 the request failed, 2 no session could be made (the reason is one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import shlex
import sys
from collections.abc import Callable

from caddie.sdk import (
    Aborted,
    AbortSignal,
    AssistantMessage,
    CaddieError,
    InMemoryCredentialStore,
    MessageUpdateEvent,
    SessionEvent,
    ShellTimedOut,
    ToolError,
    ToolExecutionStartEvent,
    UsageError,
    create_coding_tools,
    open_session,
)

# Replace a file in one step: the text goes to a temporary file beside it, which takes the old file's mode and
# is moved over it only once all of it has arrived (its size checked: a dropped connection just ends the input
# early). Positional parameters: the file, then the expected size in bytes.
REPLACE_SCRIPT = r"""
target=$1
[ -L "$target" ] && target=$(readlink -f -- "$target")
tmp=$(mktemp "$(dirname -- "$target")/.$(basename -- "$target").caddie.XXXXXX") || exit 1
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 1' HUP INT TERM PIPE
if [ -e "$target" ]; then cp -p -- "$target" "$tmp" || exit 1; fi
cat > "$tmp" || exit 1
[ $(wc -c < "$tmp") -eq "$2" ] || { echo "the connection ended before all of the file arrived" >&2; exit 1; }
mv -f -- "$tmp" "$target"
"""


class OverSsh:
    """``CodingOperations`` on ``host``: every file access and command is one ``ssh host script``."""

    def __init__(self, host: str, ssh: str = "ssh") -> None:
        self.host = host
        self.ssh = ssh

    async def _run(self, script: str, stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *shlex.split(self.ssh), self.host, script,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate(stdin)
        if proc.returncode == 255:  # ssh's own failure, not the script's answer
            reason = err.decode(errors="replace").strip() or "no reason given"
            raise ToolError(
                f"SSH connection to {self.host} failed: {reason}. Check that `ssh {self.host}` works "
                "without a password prompt."
            )
        return proc.returncode or 0, out, err

    async def access(self, path: str) -> None:
        code, _, err = await self._run(
            f"test -e {shlex.quote(path)} || exit 3; test -r {shlex.quote(path)} || exit 4"
        )
        if code == 3:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        if code == 4:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        if code != 0:
            raise ToolError(f"ssh {self.host} failed: {err.decode(errors='replace').strip()}")

    async def read_file(self, path: str) -> bytes:
        code, out, err = await self._run(f"cat -- {shlex.quote(path)}")
        if code != 0:
            raise ToolError(f"Cannot read {path} on {self.host}: {err.decode(errors='replace').strip()}")
        return out

    async def write_file(self, path: str, content: str) -> None:
        data = content.encode()
        script = f"sh -c {shlex.quote(REPLACE_SCRIPT)} sh {shlex.quote(path)} {len(data)}"
        code, _, err = await self._run(script, data)
        if code != 0:
            raise ToolError(f"Cannot write {path} on {self.host}: {err.decode(errors='replace').strip()}")

    async def mkdir(self, path: str) -> None:
        code, _, err = await self._run(f"mkdir -p -- {shlex.quote(path)}")
        if code != 0:
            raise ToolError(f"Cannot create {path} on {self.host}: {err.decode(errors='replace').strip()}")

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None:
        # the remote shell has its own environment: this machine's variables (env) stay here
        proc = await asyncio.create_subprocess_exec(
            *shlex.split(self.ssh), self.host, f"cd {shlex.quote(cwd)} && {command}",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert proc.stdout is not None

        async def pump() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(65536):
                on_data(chunk)
            await proc.wait()

        pumping = asyncio.ensure_future(pump())
        stopped = asyncio.ensure_future(signal.wait()) if signal is not None else None
        waiting = {pumping, *([stopped] if stopped else [])}
        done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if pumping not in done:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()  # ends the ssh client; the remote command gets SIGHUP with its connection
            pumping.cancel()
            await proc.wait()
            if stopped is not None and stopped in done:
                raise Aborted("the command was aborted")
            raise ShellTimedOut(f"the command ran over {timeout} seconds")
        if stopped is not None:
            stopped.cancel()
        return proc.returncode


def show(event: SessionEvent) -> None:
    if isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta":
        print(event.assistant_message_event.delta, end="", flush=True)
    elif isinstance(event, ToolExecutionStartEvent):
        print(f"[{event.tool_name} on the remote machine]", file=sys.stderr, flush=True)


async def work(args: argparse.Namespace) -> int:
    remote = OverSsh(args.host, args.ssh)
    credentials = None
    if args.key_env:
        provider = (args.model or "").partition("/")[0]
        if not provider or not os.environ.get(args.key_env):
            raise UsageError(f"--key-env needs --model provider/id and {args.key_env} set to the key.")
        credentials = InMemoryCredentialStore(
            {provider: {"type": "api_key", "key": os.environ[args.key_env]}}
        )
    async with open_session(
        ".",
        model=args.model,
        custom_tools=create_coding_tools(args.dir, operations=remote),
        tools=["read", "bash", "edit", "write"],
        credentials=credentials,
        models_path=args.models,
        context_files=False,  # this machine's AGENTS.md says nothing about the remote project
        on_event=show,
    ) as session:
        await session.prompt(args.task)
        print()
        last = session.messages[-1]
        if isinstance(last, AssistantMessage) and last.stop_reason in ("error", "aborted"):
            print(f"remote: {last.error_message}", file=sys.stderr)
            return 1
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Let caddie work on a project on another machine, over ssh.")
    parser.add_argument("task")
    parser.add_argument("--host", required=True, help="the machine, as ssh names it")
    parser.add_argument("--dir", required=True, help="the project's folder on that machine (absolute)")
    parser.add_argument("--ssh", default="ssh", help="the ssh client and its options (default: ssh)")
    parser.add_argument("--model", help="provider/id (default: caddie's default model)")
    parser.add_argument(
        "--key-env", help="a variable holding the key for the model's provider (kept in memory)"
    )
    parser.add_argument("--models", help="a models.json of your own (default: caddie's)")
    args = parser.parse_args()
    if not args.dir.startswith("/"):
        parser.error("--dir must be an absolute path on the remote machine")
    try:
        return asyncio.run(work(args))
    except CaddieError as e:  # no model, no key, an unknown model: one sentence
        print(f"remote: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

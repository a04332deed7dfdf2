"""The tools' pluggable operations (the seam ``caddie acp`` uses): the same tool texts, elsewhere's files and
commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.messages import TextContent
from caddie.errors import Aborted
from caddie.tools import FileOperations, ToolError, ToolOperations, create_builtin_tools
from caddie.tools.operations import ShellTimedOut


class Buffers:
    """An editor's view of files: text that may differ from the disk."""

    def __init__(self, root: Path) -> None:
        self.text: dict[str, str] = {}
        self.writes: list[tuple[str, str]] = []
        self.root = root

    async def read_file(self, path: str) -> bytes:
        if path in self.text:
            return self.text[path].encode()
        return Path(path).read_bytes()

    async def write_file(self, path: str, content: str) -> None:
        self.writes.append((path, content))
        self.text[path] = content


class Shell:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[tuple[str, str, str, float | None]] = []

    async def __call__(
        self,
        command: str,
        cwd: str,
        *,
        tool_call_id: str,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None:
        self.calls.append((command, cwd, tool_call_id, timeout))
        on_data(b"out line\n")
        if isinstance(self.outcome, type) and issubclass(self.outcome, Exception):
            raise self.outcome
        assert isinstance(self.outcome, int)
        return self.outcome


def text(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def run(tool: Any, args: dict[str, Any], call_id: str = "t1") -> Any:
    return await tool.execute(call_id, args, AbortController().signal, None, None)


async def test_file_tools_use_the_given_operations(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("on disk\n")
    buffers = Buffers(tmp_path)
    buffers.text[str(path)] = "in the buffer\n"
    tools = create_builtin_tools(
        str(tmp_path), operations=ToolOperations(files=FileOperations(buffers.read_file, buffers.write_file))
    )
    assert text(await run(tools["read"], {"path": "a.txt"})) == "in the buffer\n"

    result = await run(
        tools["edit"], {"path": "a.txt", "edits": [{"oldText": "buffer", "newText": "editor"}]}
    )
    assert text(result) == "Successfully replaced 1 block(s) in a.txt."
    assert buffers.writes == [(str(path), "in the editor\n")]
    assert path.read_text() == "on disk\n"  # only the operations wrote

    result = await run(tools["write"], {"path": "new/b.txt", "content": "bee"})
    assert text(result) == "Successfully wrote 3 bytes to new/b.txt"
    assert buffers.writes[-1] == (str(tmp_path / "new" / "b.txt"), "bee")
    assert (tmp_path / "new").is_dir()  # directories are still made locally

    async def failing(path: str) -> bytes:
        raise ToolError("The editor could not read it")

    broken = create_builtin_tools(
        str(tmp_path), operations=ToolOperations(files=FileOperations(failing, buffers.write_file))
    )
    with pytest.raises(ToolError, match="The editor could not read it"):
        await run(broken["read"], {"path": "a.txt"})


@pytest.mark.parametrize(
    ("outcome", "expected", "error"),
    [
        (0, "out line\n", False),
        (3, "out line\n\n\nCommand exited with code 3", True),
        (Aborted, "out line\n\n\nCommand aborted", True),
        (ShellTimedOut, "out line\n\n\nCommand timed out after 5 seconds", True),
    ],
)
async def test_bash_uses_the_given_shell(tmp_path: Path, outcome: Any, expected: str, error: bool) -> None:
    shell = Shell(outcome)
    tools = create_builtin_tools(str(tmp_path), operations=ToolOperations(shell=shell))
    args = {"command": "echo hi", "timeout": 5}
    if error:
        with pytest.raises(ToolError) as raised:
            await run(tools["bash"], args, "call-9")
        assert str(raised.value) == expected
    else:
        assert text(await run(tools["bash"], args, "call-9")) == expected
    assert shell.calls == [("echo hi", str(tmp_path), "call-9", 5.0)]

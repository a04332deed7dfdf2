"""File reads through the editor (ACP ``fs/read_text_file``): what the editor declines is not read from disk
behind its back, and a FIFO or a device is refused before the editor is asked."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ReadTextFileResponse

from acp import RequestError
from caddie.ai.abort import AbortController
from caddie.ai.messages import TextContent
from caddie.modes.acp.client_tools import client_files
from caddie.tools import ToolError, ToolOperations, create_builtin_tools


class Editor:
    """Reads what is inside ``project``; declines everything else (as editors do for outside files)."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.asked: list[str] = []

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        self.asked.append(path)
        if not path.startswith(str(self.project)):
            raise RequestError(-32602, "Path is outside the project", {"details": "not in the worktree"})
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        raise AssertionError("no writes here")


async def read(tools: dict[str, Any], path: str) -> str:
    try:
        result = await tools["read"].execute(
            "c1", {"path": path}, AbortController().signal, lambda _: None, None
        )
    except ToolError as e:
        return f"error: {e}"
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_a_declined_read_is_reported_and_special_files_are_refused(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "a.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("outside\n")
    os.mkfifo(project / "pipe")
    editor = Editor(project)
    files = client_files(editor, lambda: "s1", read=True, write=True)  # type: ignore[arg-type]
    tools = create_builtin_tools(str(project), operations=ToolOperations(files=files))

    assert await read(tools, "a.txt") == "inside\n"
    declined = await read(tools, str(outside / "secret.txt"))
    assert declined.startswith(f"error: The editor declined to read {outside / 'secret.txt'}")
    assert "outside\n" not in declined
    for path, kind in (("pipe", "a named pipe (FIFO)"), ("/dev/zero", "a character device")):
        answer = await asyncio.wait_for(read(tools, path), 5)
        assert answer.startswith("error: Cannot read") and f"it is {kind}, not a regular file" in answer
    assert editor.asked == [str(project / "a.txt"), str(outside / "secret.txt")]  # never asked for those

    edit = tools["edit"].execute(
        "c2",
        {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]},
        AbortController().signal,
        lambda _: None,
        None,
    )
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(edit, 5)

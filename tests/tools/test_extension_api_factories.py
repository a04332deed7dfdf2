"""The tool factories ``caddie.extensions.api`` exports: the SDK's (a ``Path``, a relative folder or ``~`` is
fine), with the older ``files=FileOperations`` form still taken by ``read``, ``edit`` and ``write``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.errors import UsageError
from caddie.extensions import api
from caddie.extensions.api import FileOperations, create_edit_tool, create_read_tool, create_write_tool
from caddie.tools import factories
from caddie.tools.operations import HostFiles

Run = Callable[..., Any]


def buffers(held: dict[str, str], log: list[str]) -> FileOperations:
    """An editor's buffers: contents live in ``held``, not on disk."""

    async def read_file(path: str) -> bytes:
        log.append(f"read {path}")
        if path not in held:
            raise FileNotFoundError(2, "No such file or directory", path)
        return held[path].encode()

    async def write_file(path: str, content: str) -> None:
        log.append(f"write {path}")
        assert os.path.isdir(os.path.dirname(path))  # FileOperations.write_file: the parent exists already
        held[path] = content

    return FileOperations(read_file, write_file)


def test_the_extension_api_exports_the_sdks_factories() -> None:
    assert api.FileOperations is FileOperations
    for name in ("create_read_tool", "create_edit_tool", "create_write_tool", "create_bash_tool"):
        assert getattr(api, name) is getattr(factories, name)


def test_files_go_through_file_operations_and_folders_are_made_here(tmp_path: Path, run: Run) -> None:
    held = {str(tmp_path / "open.py"): "x = 1\n"}  # an unsaved buffer: no file on disk
    log: list[str] = []
    files = buffers(held, log)
    read = create_read_tool(tmp_path, files=files)
    assert run(read, {"path": "open.py"}).text == "x = 1\n"
    edit = create_edit_tool(tmp_path, files=files)
    assert run(edit, {"path": "open.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}).error is None
    assert held[str(tmp_path / "open.py")] == "x = 2\n"
    write = create_write_tool(tmp_path, files=files)
    assert run(write, {"path": "new/deep/n.py", "content": "y\n"}).error is None
    assert held[str(tmp_path / "new/deep/n.py")] == "y\n"
    assert (tmp_path / "new/deep").is_dir() and not (tmp_path / "new/deep/n.py").exists()
    assert not (tmp_path / "open.py").exists()
    assert log == [
        f"read {tmp_path}/open.py",
        f"read {tmp_path}/open.py",
        f"write {tmp_path}/open.py",
        f"write {tmp_path}/new/deep/n.py",
    ]
    missing = run(create_read_tool(tmp_path, files=files), {"path": "gone.py"})
    assert missing.error is not None and "ENOENT" in missing.text


def test_a_relative_or_home_folder_is_taken(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run(create_read_tool("~"), {"path": "a.txt"}).text == "hello\n"
    monkeypatch.chdir(tmp_path)
    assert run(create_read_tool("."), {"path": "a.txt"}).text == "hello\n"


def test_operations_and_files_together_are_refused(tmp_path: Path) -> None:
    held: dict[str, str] = {}
    files = buffers(held, [])
    with pytest.raises(UsageError, match="operations= or files="):
        create_write_tool(tmp_path, files=files, operations=HostFiles(files))


def test_bash_keeps_shell_and_a_callable_env(tmp_path: Path, run: Run) -> None:
    seen: list[tuple[str, str, str]] = []

    async def shell(command: str, cwd: str, *, on_data: Any, env: dict[str, str], **_: Any) -> int:
        seen.append((command, cwd, env.get("FROM_HOOK", "")))
        on_data(b"ran elsewhere\n")
        return 0

    bash = api.create_bash_tool(tmp_path, shell=shell, env=lambda: {"FROM_HOOK": "yes"})
    assert run(bash, {"command": "make"}).text == "ran elsewhere\n"
    hidden = api.create_bash_tool(
        tmp_path, shell=shell, env=lambda: {"FROM_HOOK": "yes"}, expose_session_environment=False
    )
    run(hidden, {"command": "make"})
    assert seen == [("make", str(tmp_path), "yes"), ("make", str(tmp_path), "")]

"""The file tools apply the sandbox's path policy in caddie's own process: no way around it through
``write``, ``edit``, ``read``, ``grep``, ``find`` or ``ls`` — symlinks, hard links and /proc/self/root included."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from caddie.sandbox import FileGuard, SandboxConfig, SandboxDenied
from caddie.sandbox.sandbox import build_policy
from caddie.tools import create_builtin_tools
from caddie.tools.find import create_find_tool
from caddie.tools.grep import create_grep_tool
from tests.sandbox.conftest import SECRET
from tests.tools.conftest import Outcome, run_tool


@pytest.fixture
def guard(home: Path, workspace: Path, tmp_path: Path) -> FileGuard:
    temp = tmp_path / "private-tmp"
    temp.mkdir()
    return FileGuard(build_policy("workspace-write", str(workspace), str(temp), SandboxConfig()))


def call(tools: dict[str, Any], name: str, **args: Any) -> Outcome:
    return asyncio.run(run_tool(tools[name], args))


@pytest.fixture
def tools(guard: FileGuard, workspace: Path) -> dict[str, Any]:
    built = create_builtin_tools(str(workspace))
    from caddie.tools.edit import create_edit_tool
    from caddie.tools.ls import create_ls_tool
    from caddie.tools.read import create_read_tool
    from caddie.tools.write import create_write_tool

    built.update(
        read=create_read_tool(str(workspace), guard=guard),
        write=create_write_tool(str(workspace), guard=guard),
        edit=create_edit_tool(str(workspace), guard=guard),
        ls=create_ls_tool(str(workspace), guard=guard),
        grep=create_grep_tool(str(workspace), guard=guard),
        find=create_find_tool(str(workspace), guard=guard),
    )
    return built


def test_write_and_edit_inside_the_workspace_work(tools: dict[str, Any], workspace: Path) -> None:
    assert call(tools, "write", path="src/a.py", content="x = 1\n").error is None
    assert call(tools, "edit", path="src/a.py", edits=[{"oldText": "1", "newText": "2"}]).error is None
    assert (workspace / "src" / "a.py").read_text() == "x = 2\n"


def test_write_and_edit_outside_are_refused(tools: dict[str, Any], workspace: Path, outside: Path) -> None:
    out = call(tools, "write", path=str(outside / "new.txt"), content="x")
    assert out.error == (
        f"Blocked by the sandbox (workspace-write): {outside}/new.txt is outside the writable paths "
        f"({workspace}, $TMPDIR). Write inside the project, or use $TMPDIR "
        f"({workspace.parent / 'private-tmp'}) for scratch files."
    )
    assert not (outside / "new.txt").exists()
    edit = call(
        tools, "edit", path=str(outside / "keep.txt"), edits=[{"oldText": "original", "newText": "x"}]
    )
    assert edit.error is not None and edit.error.startswith("Blocked by the sandbox (workspace-write)")
    assert call(tools, "write", path="../outside/keep.txt", content="x").error is not None
    assert not (outside / "sub").exists()  # no directories made on the way to a refusal
    assert call(tools, "write", path=str(outside / "sub" / "f.txt"), content="x").error is not None
    assert not (outside / "sub").exists()
    assert (outside / "keep.txt").read_text() == "original\n"


def test_symlinks_out_of_the_workspace_do_not_help(
    tools: dict[str, Any], workspace: Path, outside: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside / "keep.txt")
    (workspace / "dir").symlink_to(outside)
    assert call(tools, "write", path="link.txt", content="x").error is not None
    assert (
        call(tools, "edit", path="link.txt", edits=[{"oldText": "original", "newText": "x"}]).error
        is not None
    )
    assert call(tools, "write", path="dir/new.txt", content="x").error is not None
    assert (outside / "keep.txt").read_text() == "original\n" and not (outside / "new.txt").exists()


def test_writing_through_a_hard_link_is_refused(
    tools: dict[str, Any], workspace: Path, outside: Path
) -> None:
    os.link(outside / "keep.txt", workspace / "hard.txt")
    out = call(tools, "write", path="hard.txt", content="pwned")
    assert out.error == (
        "Blocked by the sandbox (workspace-write): "
        f"{workspace}/hard.txt has 2 hard links; writing it could change a file outside the writable paths. "
        "Write a new file instead."
    )
    assert (
        call(tools, "edit", path="hard.txt", edits=[{"oldText": "original", "newText": "x"}]).error
        is not None
    )
    assert (outside / "keep.txt").read_text() == "original\n"


def test_protected_project_files_are_read_only(tools: dict[str, Any], workspace: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    out = call(tools, "write", path=".git/hooks/pre-commit", content="echo pwned")
    assert out.error is not None and "holds configuration that runs outside the sandbox" in out.error
    assert call(tools, "write", path=".caddie/settings.json", content="{}").error is not None
    assert call(tools, "write", path=".pi/sandbox.json", content="{}").error is not None
    assert not (workspace / ".caddie").exists() and not (workspace / ".pi").exists()


def test_secrets_cannot_be_read_by_any_path(tools: dict[str, Any], workspace: Path, home: Path) -> None:
    (workspace / "key").symlink_to(home / ".ssh" / "id_ed25519")
    for path in (
        "~/.ssh/id_ed25519",
        str(home / ".aws" / "credentials"),
        f"/proc/self/root{home}/.ssh/id_ed25519",
        "key",
        f"/proc/{os.getpid()}/environ",
        "/proc/self/environ",
    ):
        out = call(tools, "read", path=path)
        assert out.error is not None and out.error.startswith("Blocked by the sandbox (workspace-write)"), (
            path
        )
    assert call(tools, "read", path=str(home / "notes.txt")).text == "ordinary file\n"
    assert call(tools, "ls", path="~/.ssh").error is not None
    assert "notes.txt" in call(tools, "ls", path="~").text


@pytest.mark.parametrize("fast", [True, False], ids=["rg-fd", "python"])
def test_grep_and_find_leave_out_what_cannot_be_read(
    guard: FileGuard, home: Path, workspace: Path, fast: bool
) -> None:
    (home / "public.txt").write_text(f"{SECRET} is a public example\n")
    grep = create_grep_tool(str(workspace), guard=guard, use_rg=fast)
    found = asyncio.run(run_tool(grep, {"pattern": "SECRET-KEY", "path": str(home)})).text
    assert found == f"public.txt:1: {SECRET} is a public example"
    find = create_find_tool(str(workspace), guard=guard, use_fd=fast)
    names = asyncio.run(run_tool(find, {"pattern": "*", "path": str(home)})).text.splitlines()
    assert "public.txt" in names and not any(".ssh" in n or ".aws" in n for n in names)
    denied = asyncio.run(run_tool(grep, {"pattern": "x", "path": str(home / ".ssh")}))
    assert denied.error is not None and denied.error.startswith("Blocked by the sandbox")


def test_the_opened_file_is_checked_not_just_the_name(guard: FileGuard, home: Path, workspace: Path) -> None:
    """A symlink swapped in between the check and the open: the descriptor's real path decides."""
    harmless = workspace / "harmless.txt"
    harmless.write_text("x")
    fd = os.open(home / ".ssh" / "id_ed25519", os.O_RDONLY)
    try:
        with pytest.raises(SandboxDenied):
            guard.check_opened(fd, str(harmless))
    finally:
        os.close(fd)
    parent_swapped = workspace / "moved"
    parent_swapped.symlink_to(home)
    with pytest.raises(SandboxDenied):
        guard.open_write(str(parent_swapped / "notes.txt"))
    assert (home / "notes.txt").read_text() == "ordinary file\n"

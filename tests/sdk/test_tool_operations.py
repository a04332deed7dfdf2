"""Built-in tools through a program's own operations (Pi's ``create*Tool(cwd, {operations})``): a "remote
machine" served from a dict, driven by a session through the real ``openai`` client against the fake server."""

from __future__ import annotations

import errno
import fnmatch
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from caddie.sdk import (
    AbortSignal,
    ToolResultMessage,
    create_coding_tools,
    create_find_tool,
    create_ls_tool,
    open_session,
)
from tests.support import fake_llm as fl

ROOT_DIR = Path(__file__).resolve().parents[2]
ROOT = "/remote/project"  # exists nowhere on this machine: every byte must come through the operations


class DictMachine:
    """Files in a dict, commands answered by a script; every call recorded."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = {f"{ROOT}/{name}": text.encode() for name, text in files.items()}
        self.calls: list[tuple[str, str]] = []

    def _missing(self, path: str) -> OSError:
        return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)

    def _is_dir(self, path: str) -> bool:
        return any(name.startswith(path.rstrip("/") + "/") for name in self.files)

    async def read_file(self, path: str) -> bytes:
        self.calls.append(("read_file", path))
        if path not in self.files:
            raise self._missing(path)
        return self.files[path]

    async def access(self, path: str) -> None:
        self.calls.append(("access", path))
        if path not in self.files:
            raise self._missing(path)

    async def write_file(self, path: str, content: str) -> None:
        self.calls.append(("write_file", path))
        self.files[path] = content.encode()

    async def mkdir(self, path: str) -> None:
        self.calls.append(("mkdir", path))

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
        self.calls.append(("exec", command))
        on_data(f"ran `{command}` in {cwd}\n".encode())
        return 3 if "fail" in command else 0

    async def exists(self, path: str) -> bool:
        return path in self.files or self._is_dir(path)

    async def is_directory(self, path: str) -> bool:
        if not await self.exists(path):
            raise self._missing(path)
        return self._is_dir(path)

    async def readdir(self, path: str) -> list[str]:
        self.calls.append(("readdir", path))
        prefix = path.rstrip("/") + "/"
        return sorted({name[len(prefix) :].split("/")[0] for name in self.files if name.startswith(prefix)})

    async def glob(self, pattern: str, cwd: str, *, ignore: list[str], limit: int) -> list[str]:
        self.calls.append(("glob", pattern))
        found = [
            n for n in self.files if n.startswith(cwd + "/") and fnmatch.fnmatch(os.path.basename(n), pattern)
        ]
        return sorted(found)[:limit]


def results_of(messages: list[object]) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in messages:
        if isinstance(message, ToolResultMessage):
            out[message.tool_call_id] = "".join(getattr(c, "text", "") for c in message.content)
    return out


async def test_read_edit_write_ls_find_and_bash_run_through_the_programs_operations(tmp_path: Path) -> None:
    machine = DictMachine({"notes.txt": "alpha\nbeta\n", "src/app.py": "print('hi')\n"})
    tools = [*create_coding_tools(ROOT, operations=machine)]
    tools += [create_ls_tool(ROOT, operations=machine), create_find_tool(ROOT, operations=machine)]
    call = fl.ToolCallSpec
    with fl.FakeLLM() as llm:
        llm.write_models_json(tmp_path / "app", provider="fake", model_id="fake-model")
        llm.push(
            fl.tool_calls(
                call("read", {"path": "notes.txt"}, "r1"),
                call("ls", {}, "l1"),
                call("find", {"pattern": "*.py"}, "f1"),
                call("read", {"path": "missing.txt"}, "r2"),
            ),
            fl.tool_calls(
                call("edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}, "e1"),
                call("write", {"path": "docs/new.md", "content": "# New\n"}, "w1"),
                call("bash", {"command": "make test"}, "b1"),
                call("bash", {"command": "fail now"}, "b2"),
            ),
            fl.text("done"),
        )
        async with open_session(
            tmp_path, model="fake/fake-model", models_path=tmp_path / "app" / "models.json",
            custom_tools=tools, tools=["read", "bash", "edit", "write", "ls", "find"], discover_extensions=False,
        ) as session:  # fmt: skip
            await session.prompt("work on the remote project")
            results = results_of(list(session.messages))
        sent_tools = llm.llm_requests[0].tool_names
    assert sorted(sent_tools) == ["bash", "edit", "find", "ls", "read", "write"]
    assert results["r1"] == "alpha\nbeta\n"
    assert results["l1"] == "notes.txt\nsrc/"
    assert results["f1"] == "src/app.py"
    assert results["r2"] == f"ENOENT: no such file or directory, access '{ROOT}/missing.txt'"
    assert results["e1"] == "Successfully replaced 1 block(s) in notes.txt."
    assert results["w1"] == "Successfully wrote 6 bytes to docs/new.md"
    assert results["b1"] == f"ran `make test` in {ROOT}\n"
    assert results["b2"] == f"ran `fail now` in {ROOT}\n\n\nCommand exited with code 3"
    assert machine.files[f"{ROOT}/notes.txt"] == b"alpha\ngamma\n"
    assert machine.files[f"{ROOT}/docs/new.md"] == b"# New\n"
    assert ("mkdir", f"{ROOT}/docs") in machine.calls and ("glob", "*.py") in machine.calls
    assert [c for c in machine.calls if c[0] == "exec"] == [("exec", "make test"), ("exec", "fail now")]
    assert not Path(ROOT).exists()
    assert sorted({c[0] for c in machine.calls}) == [
        "access", "exec", "glob", "mkdir", "read_file", "readdir", "write_file",
    ]  # fmt: skip


FAKE_SSH = """#!/bin/sh
# ssh stand-in: ignores the host and runs the remote script here, as ssh would hand it to the remote shell
shift
exec sh -c "$1"
"""


def test_the_remote_example_works_on_the_other_machine_over_ssh(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "notes.txt").write_text("one\ntwo\n")
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    call = fl.ToolCallSpec
    with fl.FakeLLM() as llm:
        models = llm.write_models_json(tmp_path / "app", provider="fake", model_id="fake-model")
        llm.push(
            fl.tool_calls(
                call("read", {"path": "notes.txt"}, "r1"), call("read", {"path": "gone.txt"}, "r2")
            ),
            fl.tool_calls(
                call("edit", {"path": "notes.txt", "edits": [{"oldText": "two", "newText": "three"}]}, "e1"),
                call("write", {"path": "out/log.txt", "content": "logged\n"}, "w1"),
                call("bash", {"command": "wc -l < notes.txt; pwd"}, "b1"),
                call("bash", {"command": "sleep 4", "timeout": 1}, "b2"),
            ),
            fl.text("All done remotely."),
        )
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(CADDIE_DIR=str(tmp_path / "home"), CADDIE_OLLAMA_URL="http://127.0.0.1:9")
        done = subprocess.run(
            [sys.executable, str(ROOT_DIR / "examples" / "sdk" / "remote.py"), "--host", "build-box",
             "--dir", str(remote), "--ssh", str(ssh), "--model", "fake/fake-model", "--models", str(models),
             "fix the notes"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        results = dict(llm.llm_requests[2].tool_results)
        first = dict(llm.llm_requests[1].tool_results)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "All done remotely."
    assert first["r1"] == "one\ntwo\n"
    assert first["r2"] == f"ENOENT: no such file or directory, access '{remote}/gone.txt'"
    assert results["e1"] == "Successfully replaced 1 block(s) in notes.txt."
    assert results["b1"] == f"2\n{remote}\n"
    assert results["b2"] == "Command timed out after 1 seconds"
    assert (remote / "notes.txt").read_text() == "one\nthree\n"
    assert (remote / "out" / "log.txt").read_text() == "logged\n"
    assert "[bash on the remote machine]" in done.stderr

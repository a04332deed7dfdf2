"""``bash``: real processes, merged output, truncation with a spill file, timeouts, aborts and env."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.abort import AbortController
from caddie.tools import ToolResult, session_env
from caddie.tools.bash import create_bash_tool

from .conftest import run_tool

Run = Callable[..., Any]


def test_success_failure_and_empty(tmp_path: Path, run: Run) -> None:
    bash = create_bash_tool(str(tmp_path))
    assert run(bash, {"command": "echo out; echo err >&2"}).text == "out\nerr\n"
    assert run(bash, {"command": "echo partial; exit 3"}).error == "partial\n\n\nCommand exited with code 3"
    assert run(bash, {"command": "exit 4"}).error == "(no output)\n\nCommand exited with code 4"
    assert run(bash, {"command": "true"}).text == "(no output)"
    assert run(bash, {"command": "pwd"}).text == f"{tmp_path}\n"


def test_truncation_keeps_tail_and_spills_everything(tmp_path: Path, run: Run) -> None:
    out = run(create_bash_tool(str(tmp_path)), {"command": "seq 1 3000"})
    match = re.search(r"\[Showing lines 1001-3000 of 3000\. Full output: (\S+)\]$", out.text)
    assert match, out.text[-200:]
    spill = Path(match.group(1))
    try:
        assert re.fullmatch(r"caddie-bash-[0-9a-f]{16}\.log", spill.name)
        assert spill.read_text() == "".join(f"{i}\n" for i in range(1, 3001))
        assert out.text.startswith("1001\n1002\n")
        assert out.details["fullOutputPath"] == str(spill)
        assert out.details["truncation"]["truncatedBy"] == "lines"
    finally:
        spill.unlink()


def test_long_last_line_is_cut_from_the_end(tmp_path: Path, run: Run) -> None:
    out = run(create_bash_tool(str(tmp_path)), {"command": "head -c 60000 /dev/zero | tr '\\0' a"})
    assert (
        out.text.endswith("]")
        and "[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: " in out.text
    )
    Path(out.details["fullOutputPath"]).unlink()


def test_timeout_kills_process_group(tmp_path: Path, run: Run) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    out = run(
        create_bash_tool(str(tmp_path)),
        {"command": f"sleep 30 & echo $! > {pid_file}; echo waiting; wait", "timeout": 0.5},
    )
    assert time.monotonic() - started < 5
    assert out.error == "waiting\n\n\nCommand timed out after 0.5 seconds"
    _assert_dead(int(pid_file.read_text()))


def test_abort_kills_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"

    async def go() -> str | None:
        ctrl = AbortController()
        asyncio.get_running_loop().call_later(0.3, ctrl.abort)
        tool = create_bash_tool(str(tmp_path))
        cmd = f"sleep 30 & echo $! > {pid_file}; wait"
        return (await run_tool(tool, {"command": cmd}, signal=ctrl.signal)).error

    assert asyncio.run(go()) == "Command aborted"
    _assert_dead(int(pid_file.read_text()))


def _assert_dead(pid: int) -> None:
    """Gone, or a zombie (killed, waiting to be reaped by whoever inherited it)."""
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(100):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} survived")


def test_background_process_does_not_block(tmp_path: Path, run: Run) -> None:
    started = time.monotonic()
    assert run(create_bash_tool(str(tmp_path)), {"command": "sleep 5 & echo done"}).text == "done\n"
    assert time.monotonic() - started < 2


def test_invalid_timeout_and_missing_shell(tmp_path: Path, run: Run) -> None:
    bash = create_bash_tool(str(tmp_path))
    assert (
        run(bash, {"command": "echo", "timeout": 0}).error
        == "Invalid timeout: must be a finite number of seconds"
    )
    missing = create_bash_tool(str(tmp_path), shell_path="/no/such/shell")
    assert run(missing, {"command": "echo"}).error == "Custom shell path not found: /no/such/shell"
    gone = create_bash_tool(str(tmp_path / "gone"))
    assert run(gone, {"command": "echo"}).error == (
        f"Working directory does not exist: {tmp_path / 'gone'}\nCannot execute bash commands."
    )


def test_prefix_and_shell(tmp_path: Path, run: Run) -> None:
    tool = create_bash_tool(str(tmp_path), shell_path="/bin/sh", command_prefix="X=from-prefix")
    assert run(tool, {"command": 'echo "$0 $X"'}).text == "/bin/sh from-prefix\n"


def test_session_env_exported_under_both_names(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_SESSION_ID", "inherited")
    monkeypatch.setenv("CADDIE_MODEL", "inherited")
    calls: list[int] = []

    def env() -> dict[str, str]:
        calls.append(1)
        return session_env(session_id="s1", session_file="/x.jsonl", provider="prov", model="mod")

    cmd = 'echo "$CADDIE_SESSION_ID $PI_SESSION_ID $CADDIE_SESSION_FILE $PI_PROVIDER $CADDIE_MODEL $PI_MODEL"'
    assert (
        run(create_bash_tool(str(tmp_path), env=env), {"command": cmd}).text
        == "s1 s1 /x.jsonl prov mod mod\n"
    )
    assert calls == [1]
    plain = run(create_bash_tool(str(tmp_path)), {"command": 'echo "[$PI_SESSION_ID][$CADDIE_MODEL]"'})
    assert plain.text == "[][]\n"


def test_streams_throttled_updates(tmp_path: Path) -> None:
    updates: list[ToolResult] = []

    async def go() -> None:
        tool = create_bash_tool(str(tmp_path))
        cmd = "for i in 1 2 3 4 5; do echo $i; sleep 0.06; done"
        await run_tool(tool, {"command": cmd}, on_update=updates.append)

    asyncio.run(go())
    assert updates[0].content == []
    texts = [u.content[0].text for u in updates[1:]]  # type: ignore[union-attr]
    assert texts[-1] == "1\n2\n3\n4\n5\n"
    assert 2 <= len(texts) <= 6  # throttled to one update per 100 ms


def test_spill_file_is_private_to_the_user(tmp_path: Path, run: Run) -> None:
    out = run(create_bash_tool(str(tmp_path)), {"command": "seq 1 3000"})
    spill = Path(out.details["fullOutputPath"])
    try:
        assert spill.stat().st_mode & 0o777 == 0o600
    finally:
        spill.unlink()


def test_secret_looking_variables_are_not_inherited(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-leak")
    monkeypatch.setenv("my_client_secret", "shh")
    monkeypatch.setenv("CADDIE_PLAIN", "visible")
    # the one list (caddie.ai.secrets): password, PAT, auth, credentials, and URLs carrying a password
    for name, value in (
        ("PGPASSWORD", "leak-pg"),
        ("MYSQL_PWD", "leak-mysql"),
        ("DATABASE_URL", "postgres://app:leak-db@db.internal/app"),
        ("GITHUB_PAT", "leak-pat"),
        ("NPM_AUTH", "leak-npm"),
        ("DB_PASS", "leak-pass"),
        ("AWS_CREDENTIALS", "leak-aws"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/leak/creds.json"),
    ):
        monkeypatch.setenv(name, value)
    for name, value in (  # look alike, hold no secret: kept
        ("GIT_AUTHOR_NAME", "Ada"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("MY_PATH", "/opt/bin"),
        ("PROXY_URL", "http://proxy.internal:3128"),
    ):
        monkeypatch.setenv(name, value)
    out = run(create_bash_tool(str(tmp_path)), {"command": "env"})
    assert "CADDIE_PLAIN=visible" in out.text
    assert "leak" not in out.text and "shh" not in out.text
    for kept in (
        "GIT_AUTHOR_NAME=Ada",
        "SSH_AUTH_SOCK=/tmp/agent.sock",
        "MY_PATH=/opt/bin",
        "PROXY_URL=http",
    ):
        assert kept in out.text


def test_shell_env_include_and_exclude(tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from caddie.tools import EnvPolicy

    monkeypatch.setenv("NPM_TOKEN", "npm-ok")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("INTERNAL_URL", "http://corp")
    monkeypatch.setenv("PGPASSWORD", "pg-ok")
    policy = EnvPolicy.of(["npm_*", "PGPASSWORD"], ["INTERNAL_*"])
    out = run(create_bash_tool(str(tmp_path), env_policy=policy), {"command": "env"})
    assert "NPM_TOKEN=npm-ok" in out.text and "PGPASSWORD=pg-ok" in out.text  # shellEnv opts back in
    assert "sk-leak" not in out.text and "corp" not in out.text

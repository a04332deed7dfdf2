"""SIGTERM and SIGHUP end a headless caddie like Ctrl+C: tool processes killed, the session file whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import fake_llm as fl

from .conftest import Caddie


def _wait_for(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose (its parent, the shell, was killed too)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["print", "rpc"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_kills_the_tool_process_group_and_keeps_the_session(
    caddie: Caddie, mode: str, sig: signal.Signals
) -> None:
    caddie.llm.push(
        fl.tool_call("bash", {"command": "sleep 300 & echo $! > sleeper.pid; wait"}, id="call_sleep"),
        fl.text("never reached"),
    )
    args = ["--model", "fake/fake-model"]
    args += ["-p", "start a long job"] if mode == "print" else ["--mode", "rpc"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", *args],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE if mode == "rpc" else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if mode == "rpc":
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"type": "prompt", "message": "start a long job"}) + "\n")
            proc.stdin.flush()
        sleeper = int(_wait_for(caddie.project / "sleeper.pid"))
        assert _alive(sleeper)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, stderr
    assert f"caddie: stopped by {sig.name}; everything up to this point is saved" in stderr
    deadline = time.monotonic() + 5
    while _alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(sleeper), "the tool's process outlived caddie"
    [session_file] = caddie.session_files()
    raw = session_file.read_bytes()
    assert raw.endswith(b"\n")
    entries = [json.loads(line) for line in raw.decode().splitlines()]
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert messages[0]["role"] == "user" and messages[1]["content"][0]["name"] == "bash"


BLOCKING_CONTEXT = """
import pathlib, time

def register(api):
    def stuck(event, ctx):
        pathlib.Path("handler-started").write_text("yes")
        time.sleep(3600)  # blocks the event loop itself
    api.on("context", stuck)
"""


@pytest.mark.parametrize("mode", ["print", "rpc"])
def test_one_ctrl_c_ends_the_run_within_two_seconds_whatever_an_extension_does(
    caddie: Caddie, mode: str
) -> None:
    (caddie.project / "stuck.py").write_text(BLOCKING_CONTEXT)
    args = ["--model", "fake/fake-model", "-e", "stuck.py"]
    args += ["-p", "hello"] if mode == "print" else ["--mode", "rpc"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "caddie", *args],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE if mode == "rpc" else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if mode == "rpc":
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"type": "prompt", "message": "hello"}) + "\n")
            proc.stdin.flush()
        _wait_for(caddie.project / "handler-started")
        pressed = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
        took = time.monotonic() - pressed
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert took < 2.0, took
    assert "caddie: interrupted; everything up to this point is saved" in stderr
    for session_file in caddie.session_files():  # whole lines only
        assert session_file.read_bytes().endswith(b"\n")

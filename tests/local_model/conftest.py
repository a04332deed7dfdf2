"""A real model server for the smoke test: llama-cpp-python's OpenAI-compatible server with Gemma 3 270M.

``.ci/local-model`` installs both outside the clone (``~/.cache/caddie/local-model``; ``.ci/run`` starts it in
the background). Here one server is started for the module and every run shares one project directory, so
the system prompt is the same each time and the server reuses its prompt cache. Without the install the
tests skip with the reason (and fail under ``CI=1``); while ``.ci/local-model`` is still building they wait
for it. ``CADDIE_LLAMA_SERVER_PYTHON`` / ``CADDIE_GEMMA_GGUF`` point at another install.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.interop.pi import skip_or_fail

VERSION = "0.3.36"
CACHE = Path(os.environ.get("CADDIE_LOCAL_MODEL_CACHE") or Path.home() / ".cache" / "caddie" / "local-model")
INSTALL_WAIT_S = 40 * 60
START_WAIT_S = 180
MODEL_ID = "gemma-3-270m"
CONTEXT = 8192
MAX_TOKENS = 24
"""Short answers: this model rambles until the cap (a ``length`` stop is one of the states under test)."""


def _server_python() -> Path:
    return Path(os.environ.get("CADDIE_LLAMA_SERVER_PYTHON") or CACHE / f"venv-{VERSION}" / "bin" / "python")


def _gguf() -> Path:
    return Path(os.environ.get("CADDIE_GEMMA_GGUF") or CACHE / "gemma-3-270m-q4_k_m.gguf")


def _installed() -> bool:
    custom = "CADDIE_LLAMA_SERVER_PYTHON" in os.environ
    return (
        _server_python().exists() and _gguf().exists() and (custom or (CACHE / f"ready-{VERSION}").exists())
    )


def _installer_running() -> bool:
    try:
        pid = int((CACHE / "installing.pid").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _wait_for_install() -> None:
    deadline = time.monotonic() + INSTALL_WAIT_S
    while not _installed() and _installer_running() and time.monotonic() < deadline:
        time.sleep(2)
    if not _installed():
        log = CACHE / "install.log"
        skip_or_fail(
            f"the local model server is not installed ({_server_python()} and {_gguf()}): run .ci/local-model"
            + (f" (its log: {log})" if log.exists() else "")
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class GemmaServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GemmaServer]:
    _wait_for_install()
    port = _free_port()
    log = tmp_path_factory.mktemp("gemma-server") / "server.log"
    command = [
        str(_server_python()), "-m", "llama_cpp.server", "--model", str(_gguf()), "--model_alias", MODEL_ID,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT), "--n_threads", "1",
        "--n_threads_batch", "1",
    ]  # fmt: skip
    # One thread: ggml's threads meet at a spinning barrier after every layer, so two threads on two cores
    # shared with caddie's own process (and, in CI, whatever else runs) wait on each other — measured under
    # load: 2.2 s a token with two threads, 0.17 s with one.
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = GemmaServer(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + START_WAIT_S
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited ({process.returncode}):\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.base_url + "/models", timeout=2) as r:
                    if json.loads(r.read())["data"][0]["id"] == MODEL_ID:
                        break
            except (OSError, ValueError, KeyError, IndexError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer in {START_WAIT_S} s:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class Caddie:
    """``caddie`` processes against the real server, all in one project directory."""

    server: GemmaServer
    home: Path
    project: Path
    runs: list[float] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        return {**base, "CADDIE_DIR": str(self.home), "NO_COLOR": "1"}

    def args(self, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "caddie", "--model", f"llamacpp/{MODEL_ID}", "--tools", "read,bash",
            "--no-skills", "--no-context-files", *extra,
        ]  # fmt: skip

    def run(self, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        try:
            return subprocess.run(
                self.args(*extra),
                cwd=self.project,
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            self.runs.append(time.monotonic() - started)

    def popen(self, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.args(*extra), cwd=self.project, env=self.env(), text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def sessions(self) -> list[Path]:
        return sorted((self.home / "agent" / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)

    def last_session(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.sessions()[-1].read_text().splitlines()]


@pytest.fixture(scope="module")
def caddie(gemma: GemmaServer, tmp_path_factory: pytest.TempPathFactory) -> Caddie:
    root = tmp_path_factory.mktemp("gemma-caddie")
    home, project = root / "home", root / "project"
    (home / "agent").mkdir(parents=True)
    project.mkdir()
    (home / "agent" / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "llamacpp": {
                        "baseUrl": gemma.base_url,
                        "models": [{"id": MODEL_ID, "contextWindow": CONTEXT, "maxTokens": MAX_TOKENS}],
                    }
                }
            }
        )
    )
    # mulligan off: its tool schemas would be most of the prompt this small model reads on every run
    (home / "agent" / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan"]}))
    return Caddie(gemma, home, project)

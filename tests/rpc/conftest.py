"""``caddie --mode rpc`` in a subprocess against the fake OpenAI-compatible server, driven line by line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_llm as fl

Json = dict[str, Any]


def models_json(llm: fl.FakeLLM) -> Json:
    return {
        "providers": {
            "fake": {
                "baseUrl": llm.openai_base_url,
                "api": "openai-completions",
                "apiKey": "fake-key",
                "models": [
                    {"id": "fake-model", "name": "Fake Model", "contextWindow": 100_000},
                    {"id": "fake-model-2", "name": "Fake Model 2", "contextWindow": 50_000},
                    {"id": "fake-reasoner", "name": "Fake Reasoner", "reasoning": True},
                ],
            }
        }
    }


class Rpc:
    """One ``caddie --mode rpc`` process: send commands, wait for responses and events."""

    def __init__(self, home: Path, project: Path, args: list[str], env: dict[str, str] | None = None) -> None:
        environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        environ.update(
            CADDIE_DIR=str(home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9", **(env or {})
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "caddie", "--mode", "rpc", *args],
            cwd=project,
            env=environ,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.out: queue.Queue[Json | None] = queue.Queue()
        self.seen: list[Json] = []
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.put(json.loads(line))
        self.out.put(None)

    def send(self, obj: Json | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, pred: Callable[[Json], bool], timeout: float = 20.0) -> Json:
        deadline = time.monotonic() + timeout
        for seen in self.seen:  # already read while waiting for something else
            if pred(seen) and not seen.get("_taken"):
                seen["_taken"] = True
                return seen
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out; last lines: {self.seen[-5:]}")
            try:
                obj = self.out.get(timeout=left)
            except queue.Empty:
                continue
            if obj is None:
                stderr = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise AssertionError(f"caddie exited ({self.proc.wait()}); stderr: {stderr[-2000:]}")
            self.seen.append(obj)
            if pred(obj):
                obj["_taken"] = True
                return obj

    def request(self, obj: Json, timeout: float = 20.0) -> Json:
        self._next += 1
        rid = f"r{self._next}"
        self.send({**obj, "id": rid})
        response = self.wait_for(lambda o: o.get("type") == "response" and o.get("id") == rid, timeout)
        return {k: v for k, v in response.items() if k != "_taken"}

    def ok(self, obj: Json, timeout: float = 20.0) -> Any:
        response = self.request(obj, timeout)
        assert response["success"] is True, json.dumps(response)
        return response.get("data")

    def event(self, kind: str, timeout: float = 20.0) -> Json:
        return self.wait_for(lambda o: o.get("type") == kind, timeout)

    def index(self, obj: Json) -> int:
        return next(i for i, o in enumerate(self.seen) if o is obj)

    def close(self, timeout: float = 30.0) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        while (obj := self.out.get(timeout=5)) is not None:
            self.seen.append(obj)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Host:
    def __init__(self, home: Path, project: Path, llm: fl.FakeLLM) -> None:
        self.home, self.project, self.llm = home, project, llm
        self.running: list[Rpc] = []

    def rpc(self, *args: str, model: str = "fake/fake-model", env: dict[str, str] | None = None) -> Rpc:
        rpc = Rpc(self.home, self.project, ["--model", model, *args], env)
        self.running.append(rpc)
        return rpc

    def extension(self, name: str, source: str) -> str:
        path = self.project / name
        path.write_text(source)
        return str(path)


@contextmanager
def rpc_host(tmp_path: Path) -> Iterator[Host]:
    """A home with the fake server's models (bundled extensions off) and a project folder; the ``caddie --mode
    rpc`` processes started from it are killed at the end. Other test folders drive RPC with it too."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        agent = home / "agent"
        agent.mkdir(parents=True)
        (agent / "models.json").write_text(json.dumps(models_json(llm)))
        (agent / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))
        h = Host(home, project, llm)
        try:
            yield h
        finally:
            for rpc in h.running:
                rpc.kill()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    with rpc_host(tmp_path) as h:
        yield h

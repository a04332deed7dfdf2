"""Running the real ``caddie`` command in a subprocess, against the fake LLM server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import fake_llm as fl


@dataclass
class Caddie:
    home: Path
    project: Path
    llm: fl.FakeLLM

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(CADDIE_DIR=str(self.home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9", **extra)
        return env

    def run(
        self, *args: str, stdin: str | None = None, timeout: float = 60, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "caddie", *args],
            cwd=self.project,
            env=self.env(**env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def session_files(self) -> list[Path]:
        return sorted((self.home / "agent" / "sessions").rglob("*.jsonl"))


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000)
        yield Caddie(home, project, llm)

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import fake_llm as fl


@dataclass
class Setup:
    home: Path
    project: Path
    llm: fl.FakeLLM


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000)
        yield Setup(home, project, llm)

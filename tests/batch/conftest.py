from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch.helpers import SCRIPT


@pytest.fixture
def faux_env(isolated_caddie_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every task plays the faux script committed in its own repo (the path is relative to the workspace)."""
    monkeypatch.setenv("CADDIE_FAUX_SCRIPT", SCRIPT)
    return isolated_caddie_dir

"""Tests that need one of caddie's optional extras (``caddie-agent[ray]``, ``[bedrock]``): marked
``@pytest.mark.extra("ray")``, they run when the extra is installed and otherwise skip with the reason —
the README's ``uv run pytest`` on a fresh clone installs no extras and must pass as it is.

Under ``CI=1`` a missing extra fails the test instead, as a missing Pi does (``tests/interop/pi.py``) —
except in ``.ci/run``'s first pass, the README's command run verbatim before the extras are synced
(``CADDIE_EXTRAS_IN_SECOND_PASS=1``): there they skip, and the second pass (``uv run pytest -m extra``,
extras synced) runs them and fails on any that is still missing.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.interop.pi import in_ci

EXTRA_MODULES = {"ray": "ray", "bedrock": "botocore", "vertex": "google.auth"}
"""The module that shows each extra (pyproject.toml ``[project.optional-dependencies]``) is installed."""
LATER = "CADDIE_EXTRAS_IN_SECOND_PASS"


def installed(extra: str) -> bool:
    module = EXTRA_MODULES[extra]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


def require(extra: str) -> None:
    """Skip (or, in CI, fail) the running test unless ``extra`` is installed."""
    if installed(extra):
        return
    reason = f"needs the {extra} extra: uv sync --extra {extra} (or --all-extras)"
    if in_ci() and not os.environ.get(LATER):
        pytest.fail(f"{reason} — CI must install it (.ci/run)", pytrace=False)
    pytest.skip(reason)

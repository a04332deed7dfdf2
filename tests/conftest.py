"""Test-wide isolation: every test gets its own CADDIE_DIR and no real API keys or model settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs property tests with a fixed seed (reproducible verdicts); local runs explore new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

_KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "CADDIE_FAUX_SCRIPT",
)


@pytest.fixture(autouse=True)
def isolated_caddie_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("caddie-home")
    monkeypatch.setenv("CADDIE_DIR", str(root))
    monkeypatch.setenv("CADDIE_AGENTS_DIR", str(root / "dot-agents"))  # ~/.agents/skills stays out of tests
    monkeypatch.setenv(
        "PI_CODING_AGENT_DIR", str(root / "pi-agent")
    )  # a Pi sandbox.json would turn the sandbox on
    monkeypatch.setenv("CADDIE_OLLAMA_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("CADDIE_LOCAL_DISCOVERY", "0")  # servers running on this machine stay out of tests
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("CADDIE_SANDBOX", raising=False)
    if not os.environ.get("CI") and not _sandbox_available():
        # headless goals and batches run sandboxed by default; where bubblewrap cannot run, the rest of the
        # suite runs them unsandboxed (tests/sandbox skips with the reason; under CI=1 it fails instead)
        monkeypatch.setenv("CADDIE_SANDBOX", "off")
    return root


def _sandbox_available() -> bool:
    global _SANDBOX_AVAILABLE
    if _SANDBOX_AVAILABLE is None:
        from caddie.sandbox import backend_for_platform

        _SANDBOX_AVAILABLE = backend_for_platform().unavailable() is None
    return _SANDBOX_AVAILABLE


_SANDBOX_AVAILABLE: bool | None = None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "extra(name): needs caddie's optional extra `name` (ray, bedrock); see tests/support/extras.py",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    from tests.support import extras

    for marker in item.iter_markers(name="extra"):
        extras.require(marker.args[0])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-model smoke test (tests/local_model) runs last: under .ci/run its server is still being
    installed in the background while the rest of the suite runs."""
    items.sort(key=lambda item: item.nodeid.startswith("tests/local_model/"))

"""Pi's with-deps example as a caddie package: installed with its third-party dependency into its own
environment (caddie's has no pytimeparse), then its tool used through ``caddie -p``."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from tests.e2e.conftest import Caddie, caddie  # noqa: F401 (the fixture)
from tests.examples.harness import EXAMPLES
from tests.interop.pi import skip_or_fail
from tests.support import fake_llm as fl


def test_with_deps_installs_its_dependency_and_its_tool_uses_it(caddie: Caddie, tmp_path: Path) -> None:  # noqa: F811
    assert importlib.util.find_spec("pytimeparse") is None  # not one of caddie's own dependencies
    package = tmp_path / "with_deps"
    shutil.copytree(EXAMPLES / "with_deps", package)
    installed = caddie.run("install", str(package), timeout=300, UV_OFFLINE="1", UV_NO_PROGRESS="1")
    if installed.returncode != 0:  # not in uv's cache yet: from PyPI
        installed = caddie.run("install", str(package), timeout=300, UV_NO_PROGRESS="1")
    if installed.returncode != 0 and "pytimeparse" in installed.stderr:
        skip_or_fail(f"pytimeparse could not be installed from PyPI: {installed.stderr.strip()[-300:]}")
    assert installed.returncode == 0, installed.stderr
    assert "extensions: with-deps" in installed.stdout

    caddie.llm.push(
        fl.tool_calls(
            fl.ToolCallSpec("parse_duration", {"duration": "1h 30m"}, "call_1"),
            fl.ToolCallSpec("parse_duration", {"duration": "soonish"}, "call_2"),
        ),
        fl.text("an hour and a half"),
    )
    result = caddie.run(
        "-p", "--no-session", "--model", "fake/fake-model", "how long is 1h 30m?", UV_NO_PROGRESS="1"
    )
    assert result.returncode == 0, result.stderr
    assert "parse_duration" in caddie.llm.llm_requests[0].tool_names
    results = dict(caddie.llm.llm_requests[1].tool_results)
    assert results["call_1"] == "1h 30m = 5400000 milliseconds"
    assert 'Invalid duration: "soonish"' in results["call_2"]

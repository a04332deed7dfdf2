"""The views learn what an extension saved through the public ``savings`` event, whoever wrote it.

The trim-results example extension (examples/extensions/trim_results.py) is installed as a user extension and
mulligan is disabled: ``caddie context --stats``, ``caddie session show --stats`` and ``caddie export`` all show
its figures, and what it trimmed, with no line of the host knowing about it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extensions" / "trim_results.py"


@pytest.fixture
def caddie(tmp_path: Path) -> Iterator[Caddie]:
    (tmp_path / "project").mkdir()
    with fl.FakeLLM() as llm:
        llm.write_models_json(tmp_path / "home" / "agent", provider="fake", model_id="fake-model")
        yield Caddie(tmp_path / "home", tmp_path / "project", llm)


def test_a_third_party_extension_reports_its_savings_to_every_view(caddie: Caddie) -> None:
    agent = caddie.home / "agent"
    (agent / "extensions").mkdir()
    shutil.copy(EXAMPLE, agent / "extensions" / "trim_results.py")
    (agent / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan"]}))
    for n in range(3):
        (caddie.project / f"log{n}.txt").write_text("".join(f"line {i}: {'z' * 40}\n" for i in range(300)))
    caddie.llm.push(
        *[fl.tool_call("bash", {"command": f"cat log{n}.txt"}, id=f"c{n}") for n in range(3)],
        fl.tool_call("bash", {"command": "echo done"}, id="c3"),
        fl.text("Nothing new in the logs."),
    )
    run = caddie.run("-p", "--model", "fake/fake-model", "read the logs")
    assert run.returncode == 0, run.stderr
    # the oldest result went out trimmed on the last two requests
    assert "left out of this old result" in json.dumps(caddie.llm.llm_requests[-1].messages)

    stats = caddie.run("context", "--stats", "--json")
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    [report] = data["savings"]
    assert report["source"] == "trim-results" and report["requests"] == 2 and report["requestsTotal"] == 5
    assert report["tokens"] == report["grossTokens"] > 5_000
    assert [w["reason"] for w in data["withheld"]] == ["trimmed by trim-results"] * 2

    show = caddie.run("session", "show", "--stats")
    assert show.returncode == 0, show.stderr
    assert f"saved          {report['status']}  ({report['details']})" in show.stdout

    exported = caddie.run("export", "-o", "page.html")
    assert exported.returncode == 0, exported.stderr
    page = (caddie.project / "page.html").read_text()
    assert '<section id="savings-trim-results"' in page and "What trim-results saved" in page
    assert "trimmed by trim-results" in page

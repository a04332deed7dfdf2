"""Pi's truncated-tool and kimi-deferred-tools examples as Python twins, and the guard that every example
under examples/extensions/ loads cleanly and is exercised by a test here."""

from __future__ import annotations

import shutil
from pathlib import Path

from caddie.ai.messages import ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.loader import load_extensions, path_source
from tests.examples.harness import EXAMPLES, with_example
from tests.interop.pi import skip_or_fail


async def test_truncated_tool_cuts_big_output_and_saves_the_rest(tmp_path: Path) -> None:
    if shutil.which("rg") is None:
        skip_or_fail("ripgrep (rg) is not installed; .ci/run installs it")
    (tmp_path / "big.txt").write_text("".join(f"match {n}\n" for n in range(2500)))
    (tmp_path / "small.txt").write_text("needle here\n")
    run = await with_example(tmp_path, "truncated_tool.py")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("rg", {"pattern": "match", "glob": "big.txt"}),
                    faux_tool_call("rg", {"pattern": "needle"}),
                    faux_tool_call("rg", {"pattern": "absent"}),
                ]
            ),
            faux_message("ok"),
        ]
    )
    await run.session.prompt("search")
    big, small, none = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    text = text_of(big.content)
    assert text.count("\n") < 2100 and "[Output truncated: showing 2000 of 2500 lines" in text
    saved = Path(big.details["fullOutputPath"])
    assert saved.read_text().count("\n") == 2500 and big.details["matchCount"] == 2500
    assert text_of(small.content).endswith("small.txt:1:needle here\n")
    assert text_of(none.content) == "No matches found"
    await run.session.shutdown("quit")


async def test_kimi_deferred_tools_activates_the_calculator_when_searched(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "kimi_deferred_tools.py")
    assert [t.name for t in run.session.state().tools] == ["tool_search"]
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("tool_search", {"query": "a calculator"})),
            faux_message(faux_tool_call("Calculator", {"expr": "100 + 500"})),
            faux_message("42, says the calculator"),
        ]
    )
    await run.session.prompt("Use the tools to calculate 100 + 500.")
    assert [t.name for t in run.requests[0].tools or []] == ["tool_search"]
    assert "Calculator" in [t.name for t in run.requests[1].tools or []]
    results = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results] == ["Success. Found 1 matching tool(s)", "42"]
    await run.session.shutdown("quit")


def _examples() -> list[Path]:
    return sorted(
        p
        for p in EXAMPLES.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "tour.py"
    )


async def test_every_example_loads_and_registers_something(tmp_path: Path) -> None:
    loaded = await load_extensions([path_source(p, tmp_path) for p in _examples()])
    assert loaded.errors == []
    assert len(loaded.extensions) == len(_examples()) >= 45
    for ext in loaded.extensions:
        assert ext.handlers or ext.tools or ext.commands or ext.providers, ext.path


def test_every_example_is_exercised_by_a_test() -> None:
    root = Path(__file__).parents[1]
    tests = "".join(p.read_text() for p in [*root.rglob("test_*.py"), *EXAMPLES.glob("test_*.py")])
    untested = [p.name for p in _examples() if f'"{p.name}"' not in tests and f"{p.stem}." not in tests]
    assert untested == []


async def test_question_offers_the_options_and_a_free_answer(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "question.py")
    options = [{"label": "Postgres", "description": "the usual"}, {"label": "SQLite"}]
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("question", {"question": "Which database?", "options": options})),
            faux_message(
                faux_tool_call("question", {"question": "Which port?", "options": [{"label": "5432"}]})
            ),
            faux_message("ok"),
        ]
    )
    run.ui.answers = ["2. SQLite", "Type something.", "", "Type something.", "6543"]
    await run.session.prompt("set up")
    first, second = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert text_of(first.content) == "User selected: 2. SQLite"
    assert text_of(second.content) == "User wrote: 6543" and second.details["wasCustom"] is True
    assert run.ui.asked[0] == ("select", "Which database?")
    await run.session.shutdown("quit")

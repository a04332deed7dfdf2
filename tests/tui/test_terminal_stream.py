"""A long answer streamed in small pieces, watched in a real terminal (tmux) with the real app and the real
``openai`` SDK against the fake server: every line shows once, whole and in order, as the model wrote it.

Regression for issue #27's garbled start: the first 6-character delta stood above the first frozen block
(``AnswerAnswer R0 begins.``) because a streaming block began with the provider's partial text, which
already held deltas whose events were still on their way, and blocks frozen from that text were never
corrected. PageUp and a resize during the stream are part of the scenario, as the report had them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import fake_llm as fl
from tests.tui.tmux import Tmux, caddie_command, tmux_server

PARAGRAPHS = 59
LIST_LINES = 20
PARAGRAPH = re.compile(r"^R0 para (\d{3}): the quick brown fox jumps over the lazy dog, again and again\.$")
LIST_LINE = re.compile(r"^Line (\d{3}): item$")


def long_answer() -> str:
    paragraphs = ["Answer R0 begins.", "# Heading", "Heading para."]
    paragraphs += [
        f"R0 para {i:03d}: the quick brown fox jumps over the lazy dog, again and again."
        for i in range(1, PARAGRAPHS + 1)
    ]
    paragraphs.append("\n".join(f"Line {i:03d}: item" for i in range(1, LIST_LINES + 1)))
    paragraphs.append("The end.")
    return "\n\n".join(paragraphs)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Tmux, fl.FakeLLM]]:
    home = tmp_path / "caddie-home"
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan", "goal"]}))
    project = tmp_path / "project"
    project.mkdir()
    with fl.FakeLLM(default_reply=fl.text(long_answer(), chunk_size=6, delay_s=0.002)) as llm:
        llm.write_models_json(home / "agent", contextWindow=128_000)
        with tmux_server(tmp_path, size=(120, 40)) as tmux:
            tmux.type(caddie_command(project, home, "--model fake/fake-model --no-session"))
            tmux.keys("Enter")
            tmux.wait_for(lambda s: "fake/fake-model" in s and "Type a message" in s, "the interactive UI")
            yield tmux, llm


SCROLLBAR = "▁▂▃▄▅▆▇█▔"


def content_lines(screen: str) -> list[str]:
    """The screen's non-empty lines, without the scrollbar in the last column."""
    lines = (line.rstrip().rstrip(SCROLLBAR).strip() for line in screen.splitlines())
    return [line for line in lines if line]


def test_a_long_streamed_answer_shows_every_line_once_in_order(terminal: tuple[Tmux, fl.FakeLLM]) -> None:
    tmux, _ = terminal
    tmux.type("write a long answer")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "R0 para 00" in s, "the answer to start streaming")
    tmux.keys("PageUp")
    tmux.resize(110, 40)
    tmux.wait_for(lambda s: any(line.rstrip().endswith("fake/fake-model") and len(line.rstrip()) <= 110
                                for line in s.splitlines()), "the screen drawn at 110 columns")  # fmt: skip
    tmux.resize(120, 40)
    tmux.wait_for(
        lambda s: any(len(line.rstrip()) > 110 for line in s.splitlines()), "the screen at 120 columns"
    )
    tmux.keys("End")  # tui.altScreen.bottom
    tmux.wait_for(lambda s: "The end." in s and "esc to interrupt" not in s, "the end of the answer")

    tmux.keys("Home")  # tui.altScreen.top
    screens = [tmux.wait_for(lambda s: "caddie" in s.splitlines()[0], "the start of the conversation")]
    while "The end." not in screens[-1]:
        tmux.keys("PageDown")
        previous = screens[-1]
        screens.append(tmux.wait_for(lambda s, before=previous: s != before, "the next page"))  # type: ignore[misc]
        assert len(screens) < 20, "PageDown never reached the end of the answer"

    first = content_lines(screens[0])
    seen_paragraphs: set[int] = set()
    seen_list: set[int] = set()
    for screen in screens:
        numbers = []
        for line in content_lines(screen):
            if "para" in line and "R0" in line:
                match = PARAGRAPH.match(line)
                assert match, f"a garbled line: {line!r}"
                numbers.append(int(match.group(1)))
            elif line.startswith("Line "):
                match = LIST_LINE.match(line)
                assert match, f"list lines joined or cut: {line!r}"
                seen_list.add(int(match.group(1)))
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) if numbers else True, (
            f"paragraphs out of order or repeated on one screen: {numbers}"
        )
        seen_paragraphs.update(numbers)
    start = first.index("write a long answer")
    assert first[start + 1 : start + 4] == ["Answer R0 begins.", "Heading", "Heading para."]
    assert sum("Answer R0 begins." in line for line in first) == 1
    assert seen_paragraphs == set(range(1, PARAGRAPHS + 1))
    assert seen_list == set(range(1, LIST_LINES + 1)), "single newlines did not stay line breaks"

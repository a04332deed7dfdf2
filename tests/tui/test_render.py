"""Pure formatting rules of the UI: tool summaries, previews, numbers, markdown freezing, tree rows, footer."""

from __future__ import annotations

from pathlib import Path

import pytest

from caddie.ai.messages import TextContent, ToolResultMessage, UserMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.modes.interactive.footer import FooterState, footer_lines, shorten_left
from caddie.modes.interactive.render import (
    bash_exit_code,
    format_cost,
    format_count,
    markdown_split_point,
    preview_lines,
    read_range,
    summarize_tool_call,
)
from caddie.modes.interactive.tree_rows import tree_rows
from caddie.session.store import SessionStore


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"path": "a.py"}, ""),
        ({"path": "a.py", "offset": 10, "limit": 20}, ":10-29"),
        ({"path": "a.py", "offset": 10}, ":10-"),
        ({"path": "a.py", "limit": 5}, ":1-5"),
    ],
)
def test_read_shows_path_and_line_range(args: dict[str, object], expected: str) -> None:
    assert read_range(args) == expected
    assert summarize_tool_call("read", args).subject == f"a.py{expected}"


def test_tool_summaries_name_what_matters() -> None:
    assert summarize_tool_call("bash", {"command": "  pytest -q "}).subject == "pytest -q"
    assert summarize_tool_call("edit", {"path": "/p/src/x.py"}, cwd="/p").subject == "src/x.py"
    assert summarize_tool_call("write", {"path": "n.txt", "content": "a\nb\n"}).subject == "n.txt (2 lines)"
    assert summarize_tool_call("grep", {"pattern": "TODO", "path": "src"}).subject == "TODO in src"
    assert summarize_tool_call("custom", {"x": 1}).subject == '{"x": 1}'


@pytest.mark.parametrize(
    ("text", "is_error", "code"),
    [("ok", False, 0), ("boom\n\nCommand exited with code 2", True, 2), ("Command aborted", True, None)],
)
def test_bash_exit_code(text: str, is_error: bool, code: int | None) -> None:
    assert bash_exit_code(text, is_error) == code


def test_previews_show_the_head_or_the_tail_and_count_the_rest() -> None:
    text = "\n".join(str(i) for i in range(1, 21))
    head = preview_lines(text, expanded=False)
    tail = preview_lines(text, expanded=False, from_end=True)
    assert head.lines == ["1", "2", "3", "4", "5", "6"] and head.hidden == 14
    assert tail.lines[-1] == "20" and tail.hidden == 14
    assert preview_lines(text, expanded=True).hidden == 0
    assert preview_lines("", expanded=False).lines == []


def test_numbers_are_compact() -> None:
    assert [format_count(n) for n in (950, 1234, 34_000, 1_500_000)] == ["950", "1.2k", "34k", "1.5M"]
    assert format_cost(0.1234) == "$0.123"


def test_markdown_is_cut_only_outside_code_fences() -> None:
    text = "para one\n\n```\ncode\n\nmore code\n```\n\ntail"
    cut = markdown_split_point(text)
    assert text[:cut] == "para one\n\n```\ncode\n\nmore code\n```\n\n"
    assert markdown_split_point("no blank line yet") == 0
    assert markdown_split_point("```\nopen fence\n\nstill inside") == 0


def test_footer_cuts_the_directory_before_the_model() -> None:
    state = FooterState("/very/long/path/to/some/project", "my session", "anthropic/claude-sonnet-5", "high")
    left, right, _, statuses = footer_lines(state, width=60)
    assert right.plain == "anthropic/claude-sonnet-5 • high"
    assert left.plain.endswith("project • my session") and left.plain.startswith("…")
    assert statuses is None
    assert shorten_left("abcdef", 4) == "…def"


def test_footer_lists_statuses_sorted_by_key() -> None:
    state = FooterState("~/p", None, None, None, statuses={"b": "second", "a": "\x1b[31mfirst\x1b[0m"})
    *_, statuses = footer_lines(state)
    assert statuses is not None and statuses.plain == "first  second"


def test_tree_rows_indent_branches_and_mark_the_path(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    root = store.append_message(UserMessage("first"))
    store.append_message(faux_message([faux_tool_call("read", {"path": "a"}, id="c1")]))
    store.append_message(ToolResultMessage("c1", "read", [TextContent("contents")]))
    store.move_leaf(root)
    store.append_message(faux_message("other way"))
    path = {e.id for e in store.branch()}
    rows = tree_rows(store.tree(), store.leaf_id, path)
    user_only = tree_rows(store.tree(), store.leaf_id, path, "user")
    no_tools = tree_rows(store.tree(), store.leaf_id, path, "no-tools")
    assert [(r.depth, r.text) for r in rows] == [
        (0, "user: first"),
        (1, "assistant: [read]"),
        (1, "read: contents"),
        (1, "assistant: other way"),
    ]
    assert [r.on_path for r in rows] == [True, False, False, True]
    assert rows[-1].is_leaf
    assert [r.text for r in user_only] == ["user: first"]
    assert "read: contents" not in [r.text for r in no_tools]


def test_file_name_matches_rank_above_matches_that_need_the_directory() -> None:
    from caddie.modes.interactive.files import fuzzy_filter

    ranked = fuzzy_filter("prsr", ["src/parsing/lexer.py", "src/parsing/parser.py", "src/press/runner.py"])
    assert ranked[0] == "src/parsing/parser.py"
    assert ranked.index("src/parsing/parser.py") < ranked.index("src/parsing/lexer.py")


def test_the_window_of_a_long_session_opens_on_a_message_of_the_users() -> None:
    from caddie.ai.messages import AgentMessage, ToolResultMessage, UserMessage
    from caddie.ai.providers.faux import faux_message, faux_tool_call
    from caddie.modes.interactive.transcript import window_start

    turn: list[AgentMessage] = [
        UserMessage("go"),
        faux_message([faux_tool_call("read", {"path": "a"}, id="r")]),
        ToolResultMessage("r", "read", [], is_error=False),
        faux_message("done"),
    ]
    messages = turn * 60  # 240 messages; the last 200 would start on a tool result
    start = window_start(messages, 199)
    assert isinstance(messages[start], UserMessage)
    assert len(messages) - start <= 199


def test_footer_shows_pis_figures_cache_hit_rate_auto_compaction_and_the_branch(tmp_path: Path) -> None:
    from caddie.modes.interactive.footer import git_branch

    state = FooterState(
        "~/p", "s", "m", None, input_tokens=1200, output_tokens=300, cache_read=4000, cache_write=100,
        cost=0.0421, context_percent=75.0, context_window=200_000, cache_hit=80.0, auto_compact=True,
        branch="main",
    )  # fmt: skip
    left, _, usage, _ = footer_lines(state)
    fresh = footer_lines(FooterState("~/p", None, "m", None, context_window=1000))[2]
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/feature/x\n")
    (tmp_path / "sub").mkdir()
    assert left.plain == "~/p (main) • s"
    assert usage.plain == "↑1.2k ↓300 R4.0k W100 CH80.0% $0.042  75.0%/200k (auto)"
    assert any(span.style == "yellow" for span in usage.spans), (
        "over 70% of the context is in the warning colour"
    )
    assert fresh.plain == "?/1.0k", "unknown until the first reply, as Pi shows it"
    assert git_branch(str(tmp_path / "sub")) == "feature/x"

"""Pure parsing: token counts, intervals, /goal and /loop arguments, and which prompts ask for a goal."""

from __future__ import annotations

import pytest

from caddie.extensions.bundled.goal.parsing import (
    DEFAULT_LOOP_PROMPT,
    ClearGoal,
    EditGoal,
    NewGoal,
    PauseGoal,
    ResumeGoal,
    SetBudget,
    SetCheck,
    ShowGoal,
    ShowLoop,
    StartLoop,
    StopLoop,
    UsageError,
    parse_goal_args,
    parse_interval,
    parse_loop_args,
    parse_token_count,
    prompt_requests_goal,
)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("50000", 50_000),
        ("50,000", 50_000),
        ("50_000", 50_000),
        ("50k", 50_000),
        ("50K", 50_000),
        ("1.5M", 1_500_000),
        ("2m", 2_000_000),
        (" 200k ", 200_000),
        ("0.5k", 500),
    ],
)
def test_token_counts_accept_plain_numbers_and_k_m_suffixes(text: str, tokens: int) -> None:
    assert parse_token_count(text) == tokens


@pytest.mark.parametrize("text", ["", "lots", "50x", "k", "-5", "0", "1.5.2k"])
def test_unusable_token_counts_are_refused_with_an_example(text: str) -> None:
    with pytest.raises(UsageError):
        parse_token_count(text)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("250ms", 250),
        ("30s", 30_000),
        ("5m", 300_000),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
        ("1.5h", 5_400_000),
    ],
)
def test_intervals_are_a_number_and_a_unit(text: str, ms: int) -> None:
    assert parse_interval(text) == ms


def test_a_bare_number_interval_is_refused_rather_than_guessed() -> None:
    with pytest.raises(UsageError, match="no unit"):
        parse_interval("5")


@pytest.mark.parametrize("text", ["5 minutes", "m5", "0s", "5w"])
def test_other_bad_intervals_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_interval(text)


@pytest.mark.parametrize(
    "text",
    [
        "create a goal to make the test suite pass",
        "Set an objective: migrate the schema",
        "please start a new goal for the auth refactor",
        "track this as a goal",
        "we are pursuing the objective of zero lint errors",
        "Establishing goals for the sprint",
        "this is a long-running job",
        "a long running migration",
        "Managed objectives",
    ],
)
def test_a_verb_with_a_goal_noun_or_long_running_asks_for_a_goal(text: str) -> None:
    assert prompt_requests_goal(text)


@pytest.mark.parametrize(
    "text",
    [
        "goal",
        "what is the goal of this function?",
        "fix the failing test in calc.py",
        "the objective function is wrong",
        "reset the settings",  # "reset" is not "set"
        "create a test for parsing",  # a verb without a goal noun
        "goalkeeper statistics",
    ],
)
def test_ordinary_prompts_do_not_ask_for_a_goal(text: str) -> None:
    assert not prompt_requests_goal(text)


def test_goal_subcommands_parse() -> None:
    assert parse_goal_args("") == ShowGoal()
    assert parse_goal_args("edit") == EditGoal()
    assert parse_goal_args("pause") == PauseGoal()
    assert parse_goal_args("resume") == ResumeGoal()
    assert parse_goal_args("clear") == ClearGoal()
    assert parse_goal_args("budget 200k") == SetBudget(200_000)
    assert parse_goal_args("budget off") == SetBudget(None)
    assert parse_goal_args('check "pytest -q"') == SetCheck("pytest -q")
    assert parse_goal_args("check make test && make lint") == SetCheck("make test && make lint")
    assert parse_goal_args("check off") == SetCheck(None)


def test_goal_with_an_objective_and_an_optional_budget() -> None:
    assert parse_goal_args("refactor the auth module to use JWT refresh tokens") == NewGoal(
        "refactor the auth module to use JWT refresh tokens"
    )
    assert parse_goal_args("with token budget 50000 migrate the database schema") == NewGoal(
        "migrate the database schema", 50_000
    )
    assert parse_goal_args("with token budget 1.5M port the parser") == NewGoal("port the parser", 1_500_000)
    assert parse_goal_args("pause the world") == NewGoal("pause the world")


def test_goal_argument_mistakes_are_sentences() -> None:
    with pytest.raises(UsageError, match="budget"):
        parse_goal_args("budget")
    with pytest.raises(UsageError, match="not a token count"):
        parse_goal_args("budget plenty")
    with pytest.raises(UsageError, match="4,000"):
        parse_goal_args("x" * 4_001)
    assert parse_goal_args("x" * 4_000) == NewGoal("x" * 4_000)


def test_loop_arguments() -> None:
    assert parse_loop_args("") == ShowLoop()
    for word in ("stop", "cancel", "clear", "off"):
        assert parse_loop_args(word) == StopLoop()
    assert parse_loop_args("5m check for failing CI jobs") == StartLoop("check for failing CI jobs", 300_000)
    assert parse_loop_args("review recent work") == StartLoop("review recent work", None)
    assert parse_loop_args("30s") == StartLoop(DEFAULT_LOOP_PROMPT, 30_000)
    with pytest.raises(UsageError, match="no unit"):
        parse_loop_args("5 check CI")


def test_the_default_loop_prompt_is_the_seed_text() -> None:
    assert DEFAULT_LOOP_PROMPT == (
        "Run a maintenance check: review recent work and address anything stale, broken, or left "
        "half-finished."
    )

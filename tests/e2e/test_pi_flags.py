"""Pi 0.84.4's short options parse as Pi parses them: ``-nc`` is "no context files", never ``-n c``; an option
that takes a value takes the next argument whatever it looks like; an unknown single-dash option is an error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from caddie.cli_args import CliError, base_parser, pi_argv
from tests.e2e.conftest import Caddie


def parse(*argv: str) -> dict[str, Any]:
    parser = base_parser(add_help=False)
    return vars(parser.parse_intermixed_args(pi_argv(list(argv), parser)))


SHORT_AND_LONG = [
    (["-nt"], ["--no-tools"], "no_tools", True),
    (["-nbt"], ["--no-builtin-tools"], "no_builtin_tools", True),
    (["-t", "read,ls"], ["--tools", "read,ls"], "tools", "read,ls"),
    (["-xt", "bash"], ["--exclude-tools", "bash"], "exclude_tools", "bash"),
    (["-ne"], ["--no-extensions"], "no_extensions", True),
    (["-ns"], ["--no-skills"], "no_skills", True),
    (["-np"], ["--no-prompt-templates"], "no_prompt_templates", True),
    (["-nc"], ["--no-context-files"], "no_context_files", True),
    (["-a"], ["--approve"], "trust", True),
    (["-na"], ["--no-approve"], "trust", False),
    (["-n", "t"], ["--name", "t"], "name", "t"),
    (["-e", "x.py"], ["--extension", "x.py"], "extension", ["x.py"]),
    (["-c"], ["--continue"], "continue_", True),
    (["-r"], ["--resume"], "resume", True),
    (["-p"], ["--print"], "print", True),
]


@pytest.mark.parametrize(
    ("short", "long", "dest", "value"), SHORT_AND_LONG, ids=[s[0][0] for s in SHORT_AND_LONG]
)
def test_each_short_option_means_its_long_one(
    short: list[str], long: list[str], dest: str, value: object
) -> None:
    assert parse(*short)[dest] == value
    assert parse(*long)[dest] == value
    if dest != "name":  # and -nX never becomes a session name
        assert parse(*short)["name"] is None


def test_trust_is_unset_without_a_flag_and_the_last_flag_wins() -> None:
    assert parse()["trust"] is None
    assert parse("-a", "-na")["trust"] is False
    assert parse("--trust")["trust"] is True  # caddie's older name


def test_an_option_takes_its_value_even_when_it_looks_like_an_option() -> None:
    args = parse("--append-system-prompt", "-be terse", "--append-system-prompt", "x.md", "-p", "hello")
    assert args["append_system_prompt"] == ["-be terse", "x.md"]
    assert args["messages"] == ["hello"] and args["print"] is True
    assert parse("-n", "-nc")["name"] == "-nc"


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["-nfoo"], "unknown option -nfoo; write -n and its value apart: -n foo"),
        (["-vv"], "unknown option -vv; did you mean -v?"),
        (["-z"], "unknown option -z"),
    ],
)
def test_an_unknown_single_dash_option_is_refused_in_one_line(argv: list[str], hint: str) -> None:
    parser = base_parser(add_help=False)
    with pytest.raises(CliError) as err:
        pi_argv(argv, parser)
    assert str(err.value).startswith(hint) and "\n" not in str(err.value)


def test_version_short_form_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from caddie import __version__
    from caddie.cli import main

    assert main(["-v"]) == 0
    assert capsys.readouterr().out.strip() == f"caddie {__version__}"


def test_update_models_refreshes_run_time_model_lists(caddie: Caddie) -> None:
    ext = caddie.project / "corp.py"
    ext.write_text(
        "async def refresh_models():\n"
        "    return [{'id': 'fresh-1', 'contextWindow': 9000}]\n"
        "def register(api):\n"
        "    api.register_provider('corp', {'baseUrl': 'http://127.0.0.1:9/v1', 'apiKey': 'k',\n"
        "        'api': 'openai-completions', 'refreshModels': refresh_models, 'models': [{'id': 'old-1'}]})\n"
    )
    agent = caddie.home / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"extensions": [str(ext)]}))

    result = caddie.run("update", "--models")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Refreshed the model lists of corp."
    stored = json.loads((agent / "models-store.json").read_text())
    assert [m["id"] for m in stored["corp"]["models"]] == ["fresh-1"]
    listed = caddie.run("--list-models", "corp")
    assert "fresh-1" in listed.stdout


def test_update_models_with_nothing_dynamic_says_so(caddie: Caddie) -> None:
    result = caddie.run("update", "--models")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("No provider here lists its models at run time")


def test_theme_and_verbose_options_become_this_runs_settings(tmp_path: Any) -> None:
    from caddie.cli_run import run_overrides
    from caddie.config.settings import RUN_ONLY

    args = parse("--use-theme", "light", "--theme", "t.json", "--theme", "/abs", "--no-themes", "--verbose")
    assert run_overrides(_namespace(args), str(tmp_path)) == {
        "theme": "light",
        RUN_ONLY: {"themes": [str(tmp_path / "t.json"), "/abs"], "noThemes": True},
        "quietStartup": False,
    }
    assert run_overrides(_namespace(parse()), str(tmp_path)) == {}


def _namespace(values: dict[str, Any]) -> Any:
    import argparse

    return argparse.Namespace(**values)

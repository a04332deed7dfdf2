"""Prompt templates: Pi's placeholders, argument splitting, descriptions and expansion."""

from __future__ import annotations

from pathlib import Path

from caddie.resources.prompts import (
    expand_prompt_template,
    load_template_file,
    parse_command_args,
    substitute_args,
)
from tests.resources.helpers import write_template


def test_arguments_split_like_shell_words() -> None:
    assert parse_command_args('Button "click handler"  \'a b\' x"y z"') == [
        "Button",
        "click handler",
        "a b",
        "xy z",
    ]
    assert parse_command_args("   ") == []


def test_every_placeholder() -> None:
    args = ["a", "b", "c", "d"]
    assert substitute_args("$1|$2|$9|$@|$ARGUMENTS", args) == "a|b||a b c d|a b c d"
    assert (
        substitute_args("${1:-x}|${5:-dflt}|${@:-none}|${ARGUMENTS:-none}", args) == "a|dflt|a b c d|a b c d"
    )
    assert substitute_args("${@:-none}|${2:-}", []) == "none|"
    assert substitute_args("${@:2}|${@:2:2}|${@:0}|${@:9}", args) == "b c d|b c|a b c d|"
    assert substitute_args("$10 $1", [str(i) for i in range(1, 11)]) == "10 1"


def test_values_are_not_expanded_again() -> None:
    assert substitute_args("$1 then $2", ["$2", "$@"]) == "$2 then $@"


def test_description_from_frontmatter_or_first_line(tmp_path: Path) -> None:
    described, _ = load_template_file(write_template(tmp_path, "a", "Body\n", description="Review things"))
    assert described is not None and described.description == "Review things"
    long_line = "x" * 70
    first, _ = load_template_file(write_template(tmp_path, "b", f"\n\n{long_line}\nmore"))
    assert first is not None and first.description == "x" * 60 + "..."
    hinted = tmp_path / "c.md"
    hinted.write_text('---\nargument-hint: "<PR-URL>"\n---\nLook at $1\n')
    template, warning = load_template_file(hinted, "user")
    assert warning is None and template is not None
    assert (template.name, template.argument_hint, template.content, template.source) == (
        "c",
        "<PR-URL>",
        "Look at $1",
        "user",
    )


def test_unreadable_template_warns(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe")
    template, warning = load_template_file(bad)
    assert template is None
    assert warning == f"prompt template {bad} could not be read (it is not UTF-8 text); skipped"


def test_expansion(tmp_path: Path) -> None:
    review, _ = load_template_file(write_template(tmp_path, "review", "Review $1 focusing on ${@:2}"))
    assert review is not None
    templates = [review]
    assert (
        expand_prompt_template("/review src/ errors naming", templates)
        == "Review src/ focusing on errors naming"
    )
    assert expand_prompt_template("/review", templates) == "Review  focusing on "
    assert expand_prompt_template("/review\nsrc/", templates) == "Review src/ focusing on "
    assert expand_prompt_template("/unknown x", templates) == "/unknown x"
    assert expand_prompt_template("please /review x", templates) == "please /review x"

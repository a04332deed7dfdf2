"""What a session starts with, decided as Pi 0.84.4 decides it: the thinking level, the tools, the user's own
system prompt text (``--system-prompt`` / ``--append-system-prompt``, text or file; SYSTEM.md and
APPEND_SYSTEM.md). tests/interop/test_pi_config_probes.py checks the same against the real Pi."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from caddie.ai.model import Model
from caddie.config.settings import Settings
from caddie.runtime.factory import initial_thinking, tool_choice
from caddie.runtime.request import SessionRequest, SetupError
from caddie.runtime.system_prompt import prompt_parts

REASONER = Model(
    id="r1", name="r1", api="openai-completions", provider="fake", base_url="http://x", reasoning=True
)


def test_a_reasoning_model_starts_at_medium_unless_something_says_otherwise() -> None:
    none = Settings()
    assert initial_thinking(None, REASONER, none, (False, None)) == "medium"
    assert initial_thinking(None, replace(REASONER, reasoning=False), none, (False, None)) == "off"
    assert initial_thinking(None, None, none, (False, None)) == "off"
    high = Settings({"defaultThinkingLevel": "high", "modelThinkingLevels": {"fake/r1": "low"}})
    assert initial_thinking(None, REASONER, high, (False, None)) == "low"  # the model's own level first
    assert initial_thinking("minimal", REASONER, high, (False, None)) == "minimal"
    assert (
        initial_thinking(None, REASONER, Settings({"defaultThinkingLevel": "high"}), (False, None)) == "high"
    )
    # a resumed session keeps the level it last recorded, over settings
    assert initial_thinking(None, REASONER, high, (True, "off")) == "off"
    with pytest.raises(SetupError, match="Unknown thinking level 'loud'"):
        initial_thinking("loud", REASONER, none, (False, None))


def test_tool_choice_follows_pi(tmp_path: Path) -> None:
    def choose(settings: dict[str, object] | None = None, **request: object) -> tuple[object, object]:
        return tool_choice(SessionRequest(cwd=str(tmp_path), **request), Settings(dict(settings or {})))  # type: ignore[arg-type]

    assert choose() == (None, ["read", "bash", "edit", "write"])
    assert choose({"defaultTools": ["read", "grep", "ls"]}) == (None, ["read", "grep", "ls"])
    assert choose({"tools": ["ls"]}) == (None, ["ls"])  # caddie's older name
    assert choose({"defaultTools": ["read"]}, tools=["ls"]) == (["ls"], ["ls"])
    assert choose(no_tools="all") == ([], [])
    assert choose({"defaultTools": ["read"]}, no_tools="builtin") == (None, [])


def test_prompt_arguments_are_files_when_they_name_one(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "SYSTEM.md").write_text("global system")
    (agent / "APPEND_SYSTEM.md").write_text("global append")
    project = tmp_path / "project"
    (project / ".caddie").mkdir(parents=True)
    (project / ".caddie" / "SYSTEM.md").write_text("project system")
    (project / "p.md").write_text("\ufefffrom a file")

    found = prompt_parts(None, None, cwd=str(project), agent_dir=agent, project_trusted=False)
    assert (found.custom, found.append) == ("global system", "global append")
    trusted = prompt_parts(None, None, cwd=str(project), agent_dir=agent, project_trusted=True)
    assert (trusted.custom, trusted.append) == ("project system", "global append")

    given = prompt_parts(
        "p.md", ["be brief", "p.md"], cwd=str(project), agent_dir=agent, project_trusted=True
    )
    assert given.custom == "from a file"  # the byte-order mark dropped
    assert given.append == "be brief\n\nfrom a file"
    assert given.files == [str(project / "p.md"), str(project / "p.md")] and given.warnings == []


def test_an_unreadable_prompt_file_is_used_as_text_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\x00broken")
    parts = prompt_parts(
        "bad.md", None, cwd=str(tmp_path), agent_dir=tmp_path / "none", project_trusted=False
    )
    assert parts.custom == "bad.md"
    assert len(parts.warnings) == 1 and parts.warnings[0].startswith("could not read the system prompt file")


def test_blocked_images_become_one_line_each_run_of_them() -> None:
    from caddie.ai.messages import ImageContent, TextContent, ToolResultMessage, UserMessage
    from caddie.runtime.loop_hooks import IMAGES_BLOCKED, without_images

    image = ImageContent("aGk=", "image/png")
    user = UserMessage([TextContent("look"), image, image, TextContent("and"), image])
    result = ToolResultMessage("c1", "read", [image])
    out = without_images([user, result, UserMessage("plain")])
    assert isinstance(out[0], UserMessage) and isinstance(out[0].content, list)
    assert [b.text for b in out[0].content if isinstance(b, TextContent)] == [
        "look",
        IMAGES_BLOCKED,
        "and",
        IMAGES_BLOCKED,
    ]
    assert isinstance(out[1], ToolResultMessage) and out[1].content == [TextContent(IMAGES_BLOCKED)]
    assert (
        out[2] == UserMessage("plain", out[2].timestamp) and user.content[1] is image
    )  # the stored one kept


def test_a_model_pattern_matches_part_of_an_id_preferring_an_alias(tmp_path: Path) -> None:
    import json

    from caddie.models.registry import ModelRegistry
    from caddie.runtime.factory import resolve_model

    models = tmp_path / "models.json"
    ids = ["zz-coder-4-5-20250929", "zz-coder-4-5", "zz-coder-4-20250514", "zz-coder-3", "other"]
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    models.write_text(json.dumps({"providers": {"mine": {**provider, "models": [{"id": i} for i in ids]}}}))
    registry = ModelRegistry(models, env={})

    def pick(ref: str, provider: str | None = None) -> str:
        model = resolve_model(registry, Settings(), ref, True, provider)
        assert model is not None
        return f"{model.provider}/{model.id}"

    assert pick("zz-coder") == "mine/zz-coder-4-5"  # the highest alias, not a dated id
    assert pick("mine/coder-4-2") == "mine/zz-coder-4-20250514"
    assert pick("other", "mine") == "mine/other"
    with pytest.raises(SetupError, match='Unknown provider "nope"'):
        pick("other", "nope")
    with pytest.raises(SetupError, match="needs --model too"):
        resolve_model(registry, Settings(), None, True, "mine")


def test_models_patterns_match_part_of_an_id_as_model_does(tmp_path: Path) -> None:
    import json

    from caddie.models.registry import ModelRegistry
    from caddie.runtime.factory import scoped_models

    models = tmp_path / "models.json"
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    ids = ["zz-coder-4-5", "zz-coder-4-20250514", "other-model"]
    models.write_text(json.dumps({"providers": {"mine": {**provider, "models": [{"id": i} for i in ids]}}}))
    registry = ModelRegistry(models, env={})
    warnings: list[str] = []
    found = scoped_models(
        registry, ["zz-coder:high", "other", "mine/other-model", "nothing"], lambda m: True, warnings
    )
    assert [(f"{m.provider}/{m.id}", level) for m, level in found] == [
        ("mine/zz-coder-4-5", "high"),
        ("mine/other-model", None),
    ]
    assert warnings == ["--models: no model matches 'nothing'"]

"""models.json: a field caddie would ignore (a typo, Pi's ``samplingParams``) gets one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.models.registry import ModelRegistry


def test_unknown_and_unsupported_fields_are_named(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    model = {"id": "m", "contextWindw": 5, "samplingParams": {"top_p": 0.5}, "contextWindow": 9000}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k", "bogus": 1}
    path.write_text(json.dumps({"providers": {"x": {**provider, "models": [model]}}}))
    registry = ModelRegistry(path, env={})
    lines = [w.removeprefix(f"{path}: ") for w in registry.warnings]
    assert lines == [
        "providers.x.bogus: is not a models.json provider field; ignoring it.",
        "providers.x.models[0].contextWindw: is not a models.json model field; ignoring it.",
        "providers.x.models[0].samplingParams: is not supported; ignoring it: caddie does not merge extra "
        "sampling parameters into its requests.",
    ]
    assert registry.resolve("x/m").context_window == 9000  # the model itself still loads

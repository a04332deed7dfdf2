"""A ``context`` handler that changes its messages in place changes that request only: the next request is
built from the stored messages again, the session file never sees the change, and no cached conversion of a
message outlives a change to it (the copies and the providers' conversion caches, through a real provider)."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXTENSION = textwrap.dedent(
    """
    import json, os

    SEEN = os.environ["SEEN_FILE"]


    def register(api):
        fires = []

        def on_context(event, ctx):
            fires.append(1)
            first = event.messages[0]
            text = first.content if isinstance(first.content, str) else first.content[0].text
            with open(SEEN, "a") as f:
                f.write(json.dumps(text) + "\\n")
            if len(fires) >= 2:  # the first request goes out untouched, so its copy is cached
                if isinstance(first.content, str):
                    first.content += f" [edited {len(fires)}]"
                else:
                    first.content[0].text += f" [edited {len(fires)}]"
            return None

        api.on("context", on_context)
    """
)


def first_user_text(request: fl.RecordedRequest) -> str:
    m = next(m for m in request.messages if m["role"] == "user")
    content = m["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_handler_changing_its_messages_in_place_changes_that_request_only(caddie: Caddie, api: str) -> None:
    caddie.llm.write_models_json(caddie.home / "agent", provider="fake", model_id="fake-model", api=api)
    ext = caddie.project.parent / "edit_in_place.py"
    ext.write_text(EXTENSION)
    seen = caddie.project.parent / "seen.jsonl"
    (caddie.project / "a.txt").write_text("alpha\n")
    caddie.llm.push(
        fl.tool_call("read", {"path": "a.txt"}),
        fl.tool_call("read", {"path": "a.txt"}),
        fl.text("done"),
    )

    result = caddie.run("-p", "--model", "fake/fake-model", "-e", str(ext), "go", SEEN_FILE=str(seen))

    assert result.returncode == 0, result.stderr
    sent = [first_user_text(r) for r in caddie.llm.llm_requests]
    assert sent == ["go", "go [edited 2]", "go [edited 3]"]
    assert [json.loads(line) for line in seen.read_text().splitlines()] == ["go", "go", "go"]
    [session] = caddie.session_files()
    users = [
        e["message"]
        for e in map(json.loads, session.read_text().splitlines())
        if e.get("type") == "message" and e["message"]["role"] == "user"
    ]
    assert [u["content"] for u in users] == [[{"type": "text", "text": "go"}]]

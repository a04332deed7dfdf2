"""Messages are frozen values, through a real provider and a real caddie process: a ``context`` handler that
returns a changed message changes that request only (the next one is built from the stored messages again
and no cached conversion outlives the change), one that tries to change a message in place is told so as
an extension error and changes nothing, and the session file never sees either."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXTENSION = textwrap.dedent(
    """
    import json, os

    from caddie.extensions.api import ContextResult, TextContent, replace

    SEEN = os.environ["SEEN_FILE"]
    HOW = os.environ["HOW"]


    def register(api):
        fires = []

        def on_context(event, ctx):
            fires.append(1)
            first = event.messages[0]
            text = first.content if isinstance(first.content, str) else first.content[0].text
            with open(SEEN, "a") as f:
                f.write(json.dumps(text) + "\\n")
            if len(fires) < 2:  # the first request goes out untouched, so its conversion is cached
                return None
            edited = f"{text} [edited {len(fires)}]"
            if HOW == "in place":
                first.content = [TextContent(edited)]  # raises: a stored message does not change
                return None
            changed = replace(first, content=[TextContent(edited)])
            return ContextResult(messages=[changed, *event.messages[1:]])

        api.on("context", on_context)
    """
)


def first_user_text(request: fl.RecordedRequest) -> str:
    m = next(m for m in request.messages if m["role"] == "user")
    content = m["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


@pytest.mark.parametrize(
    ("api", "how"),
    [
        ("openai-completions", "returned"),
        ("anthropic-messages", "returned"),
        ("openai-completions", "in place"),
    ],
)
def test_a_handler_changes_a_request_only_by_returning_new_messages(
    caddie: Caddie, api: str, how: str
) -> None:
    caddie.llm.write_models_json(caddie.home / "agent", provider="fake", model_id="fake-model", api=api)
    ext = caddie.project.parent / "edit.py"
    ext.write_text(EXTENSION)
    seen = caddie.project.parent / "seen.jsonl"
    (caddie.project / "a.txt").write_text("alpha\n")
    caddie.llm.push(
        fl.tool_call("read", {"path": "a.txt"}),
        fl.tool_call("read", {"path": "a.txt"}),
        fl.text("done"),
    )

    result = caddie.run(
        "-p", "--model", "fake/fake-model", "-e", str(ext), "go", SEEN_FILE=str(seen), HOW=how
    )

    assert result.returncode == 0, result.stderr
    sent = [first_user_text(r) for r in caddie.llm.llm_requests]
    if how == "returned":
        assert sent == ["go", "go [edited 2]", "go [edited 3]"]
    else:
        assert sent == ["go", "go", "go"]
        assert "immutable" in result.stderr and "failed in context" in result.stderr
    assert [json.loads(line) for line in seen.read_text().splitlines()] == ["go", "go", "go"]
    [session] = caddie.session_files()
    users = [
        e["message"]
        for e in map(json.loads, session.read_text().splitlines())
        if e.get("type") == "message" and e["message"]["role"] == "user"
    ]
    assert [u["content"] for u in users] == [[{"type": "text", "text": "go"}]]

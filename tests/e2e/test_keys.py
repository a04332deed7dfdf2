"""Keys and the catalogue from the command line: auth.json, --list-models, missing keys, unknown models."""

from __future__ import annotations

import json

from caddie.models import AuthStore
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

KEY = "lab-key-stored-by-login-1234567890"


def keyless_lab(caddie: Caddie) -> None:
    models = {
        "providers": {
            "lab": {
                "baseUrl": caddie.llm.openai_base_url,
                "api": "openai-completions",
                "models": [{"id": "m"}],
            }
        }
    }
    (caddie.home / "agent" / "models.json").write_text(json.dumps(models))


def test_a_stored_key_is_sent_and_a_401_never_shows_it(caddie: Caddie) -> None:
    keyless_lab(caddie)
    AuthStore(caddie.home / "agent" / "auth.json").set_key("lab", KEY)
    caddie.llm.push(fl.error(401, f"Incorrect API key provided: {KEY}", type="invalid_request_error"))
    result = caddie.run("-p", "--model", "lab/m", "hello")
    assert result.returncode == 1
    assert caddie.llm.llm_requests[0].headers.get("authorization") == f"Bearer {KEY}"
    assert "401" in result.stderr + result.stdout and "Traceback" not in result.stderr
    assert KEY not in result.stderr and KEY not in result.stdout
    for path in caddie.session_files():
        assert KEY not in path.read_text()


def test_list_models_shows_catalogue_facts_for_providers_with_a_key(caddie: Caddie) -> None:
    AuthStore(caddie.home / "agent" / "auth.json").set_key("groq", "gsk-listed-key-1234567")
    result = caddie.run("--list-models", "gpt-oss-120b")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["groq", "openai/gpt-oss-120b", "131.1K", "65.5K", "yes", "no"] in rows
    assert "gsk-listed-key" not in result.stdout


def test_a_missing_key_names_the_variable_and_login(caddie: Caddie) -> None:
    result = caddie.run("-p", "--model", "deepseek/deepseek-v4-pro", "hello")
    assert result.returncode == 1
    assert "DEEPSEEK_API_KEY" in result.stderr and "/login deepseek" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_catalogue_model_suggests_the_closest_ids(caddie: Caddie) -> None:
    result = caddie.run("-p", "--model", "anthropic/claude-sonet-4-6", "hello")
    assert result.returncode == 2
    assert "Did you mean anthropic/claude-sonnet-4-6?" in result.stderr and "Traceback" not in result.stderr
    assert caddie.llm.llm_requests == []


def test_a_key_the_model_reads_from_auth_json_is_redacted_everywhere(caddie: Caddie) -> None:
    """A prompt injection asks the model to ``cat auth.json``: the model gets ``[redacted]``, and the
    session file and the export hold no key — nor does the export of a session written before the fix."""
    keyless_lab(caddie)
    auth = caddie.home / "agent" / "auth.json"
    AuthStore(auth).set_key("lab", KEY)
    caddie.llm.push(fl.tool_call("bash", {"command": f"cat {auth}"}), fl.text(f"the key is {KEY}"))
    result = caddie.run("-p", "--model", "lab/m", "print the stored key")
    assert result.returncode == 0, result.stderr
    tool_output = caddie.llm.llm_requests[1].tool_results[0][1]
    assert '"key": "[redacted]"' in tool_output and KEY not in tool_output
    [session] = caddie.session_files()
    assert KEY not in session.read_text() and "the key is [redacted]" in session.read_text()

    old = caddie.project / "old.jsonl"  # as an earlier caddie wrote it: the key verbatim
    old.write_text(session.read_text().replace("[redacted]", KEY))
    page = caddie.project / "page.html"
    exported = caddie.run("export", str(old), "-o", str(page))
    assert exported.returncode == 0, exported.stderr
    html = page.read_text()
    assert KEY not in html and "[redacted]" in html
    assert all(KEY.encode() not in chunk for chunk in _base64_payloads(html))


def _base64_payloads(html: str) -> list[bytes]:
    import base64
    import re

    return [base64.b64decode(m) for m in re.findall(r"base64,([A-Za-z0-9+/=]+)", html)]

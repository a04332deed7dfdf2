"""An extension's provider, end to end: ``caddie -p --model corp/...`` talks to the server it registered."""

from __future__ import annotations

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


def test_print_mode_reaches_the_server_of_a_provider_an_extension_registered(caddie: Caddie) -> None:
    ext = caddie.project / "corp.py"
    ext.write_text(
        "def register(api):\n"
        "    api.register_provider('corp', {\n"
        f"        'baseUrl': {caddie.llm.openai_base_url!r},\n"
        "        'apiKey': '$CORP_KEY',\n"
        "        'api': 'openai-completions',\n"
        "        'headers': {'X-Team': 'platform'},\n"
        "        'models': [{'id': 'corp-large', 'contextWindow': 50000}],\n"
        "    })\n"
    )
    caddie.llm.push(fl.text("hello from corp"))
    result = caddie.run("-p", "-e", str(ext), "--model", "corp/corp-large", "hi", CORP_KEY="s3cret")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello from corp"
    [request] = caddie.llm.llm_requests
    assert request.model == "corp-large"
    assert request.headers.get("authorization") == "Bearer s3cret"
    assert request.headers.get("x-team") == "platform"


def test_list_models_shows_the_models_of_extension_providers(caddie: Caddie) -> None:
    ext = caddie.project / "corp.py"
    ext.write_text(
        "def register(api):\n"
        "    api.register_provider('corp', {'baseUrl': 'http://127.0.0.1:9/v1', 'apiKey': 'k',\n"
        "        'api': 'openai-completions', 'models': [{'id': 'corp-large', 'contextWindow': 50000}]})\n"
    )
    result = caddie.run("-e", str(ext), "--list-models", "corp")

    assert result.returncode == 0, result.stderr
    [row] = [line.split() for line in result.stdout.splitlines() if line.startswith("corp")]
    assert row[:3] == ["corp", "corp-large", "50K"]

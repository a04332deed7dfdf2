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


EXTENSION_API = """
import time
from caddie.extensions.api import AssistantMessage, DoneEvent, StartEvent, TextContent, TextDeltaEvent

def login(callbacks):
    callbacks.on_device_code("CORP-1", "https://sso.corp.example/device")
    return {"access": "corp-access-1", "refresh": "corp-refresh-1", "expires": int(time.time() * 1000) + 3600_000}

async def refresh_token(credential):
    return {**credential, "access": "corp-access-2", "expires": int(time.time() * 1000) + 3600_000}

async def stream_simple(model, context, options):
    message = AssistantMessage([TextContent(f"{options.api_key}:{context.messages[-1].content[0].text}")], model.api, model.provider, model.id)
    yield StartEvent(message)
    yield DoneEvent("stop", message)

async def refresh_models():
    return [{"id": "dynamic-1", "contextWindow": 9000}]

def register(api):
    api.register_provider("corp", {
        "baseUrl": "https://corp.example", "api": "corp-messages", "streamSimple": stream_simple,
        "oauth": {"name": "Corp SSO", "login": login, "refreshToken": refresh_token, "getApiKey": lambda c: c["access"]},
        "refreshModels": refresh_models,
        "models": [{"id": "corp-1"}],
    })
"""


def test_an_extensions_own_api_and_login_answer_in_print_mode(caddie: Caddie) -> None:
    import json
    import time

    ext = caddie.project / "corp_api.py"
    ext.write_text(EXTENSION_API)
    agent = caddie.home / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    # A login stored by /login earlier (an expired one: the extension's refreshToken renews it).
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "corp": {
                    "type": "oauth",
                    "access": "corp-access-1",
                    "refresh": "r",
                    "expires": int(time.time() * 1000) - 1,
                }
            }
        )
    )
    result = caddie.run("-p", "-e", str(ext), "--model", "corp/corp-1", "ping")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "corp-access-2:ping"
    assert json.loads((agent / "auth.json").read_text())["corp"]["access"] == "corp-access-2"

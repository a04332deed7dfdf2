"""The secret registry (``caddie.ai.secrets``) and the choke point in ``caddie.ai.stream`` that applies it."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from caddie.ai import secrets
from caddie.ai.model import Context, Model, ModelCompat, StreamOptions
from caddie.ai.stream import complete, register_api
from caddie.ai.stream_events import AssistantMessageEvent, ErrorEvent, StartEvent
from caddie.models import ModelRegistry
from tests.ai.helpers import context


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    secrets.clear()
    yield
    secrets.clear()


def test_registered_values_and_bearer_tokens_are_redacted() -> None:
    secrets.register("Bearer tok-0123456789")
    secrets.register("plain-secret-value")
    text = "sent Bearer tok-0123456789; body said tok-0123456789 and plain-secret-value"
    assert secrets.redact(text) == "sent [redacted]; body said [redacted] and [redacted]"


def test_short_values_are_not_registered_and_names_stay() -> None:
    secrets.register("abc")
    secrets.register_headers({"User-Agent": "caddie-agent", "X-Token": "abcdefgh"})
    assert not secrets.is_registered("abc")
    assert not secrets.is_registered("caddie-agent")
    assert secrets.redact("abc caddie-agent abcdefgh") == "abc caddie-agent [redacted]"


def test_a_secret_containing_another_is_replaced_whole() -> None:
    secrets.register("secret1")
    secrets.register("secret1-and-more")
    assert secrets.redact("x secret1-and-more y secret1") == "x [redacted] y [redacted]"


def test_url_passwords_are_registered_raw_decoded_and_as_basic_credentials() -> None:
    secrets.register_url("http://me:p%40ss-word@example.com/v1")
    basic = base64.b64encode(b"me:p@ss-word").decode()
    assert secrets.redact(f"p%40ss-word p@ss-word {basic}") == "[redacted] [redacted] [redacted]"


def test_safe_url_masks_only_the_password() -> None:
    assert (
        secrets.safe_url("http://me:pw-123456@127.0.0.1:8080/v1?x=1") == "http://me:***@127.0.0.1:8080/v1?x=1"
    )
    assert secrets.safe_url("https://api.example.com/v1") == "https://api.example.com/v1"
    assert secrets.safe_url("http://user@host/v1") == "http://user@host/v1"
    assert secrets.safe_url("http://u:pw-abcdef@[::1]:9/") == "http://u:***@[::1]:9/"


def test_models_json_header_values_and_command_output_become_secrets(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        '{"providers": {"p": {"baseUrl": "http://u:url-secret-1@h/v1", "api": "openai-completions",'
        ' "apiKey": "!printf key-from-command-1", "headers": {"X-A": "$TOKEN_VAR", "X-B": "!printf cmd-hdr-1"},'
        ' "models": [{"id": "m"}]}}}'
    )
    registry = ModelRegistry(path, env={"TOKEN_VAR": "env-hdr-value-1"})
    model = registry.find("p", "m")
    assert model is not None
    assert registry.api_key_for(model) == "key-from-command-1"
    for value in ("env-hdr-value-1", "cmd-hdr-1", "key-from-command-1", "url-secret-1"):
        assert secrets.is_registered(value), value


class _LeakyProvider:
    """A provider an extension might register, whose error text repeats what it was given."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from caddie.ai.stream import error_message_for

        message = error_message_for(model, f"rejected key {options.api_key} and {model.headers}")
        yield StartEvent(message)
        yield ErrorEvent("error", message)


async def test_the_choke_point_redacts_errors_of_any_provider() -> None:
    register_api("leaky-test-api", _LeakyProvider())
    model = Model("m", "M", "leaky-test-api", "leaky", headers={"X-Secret": "header-secret-42"})  # type: ignore[arg-type]  # an API a plugin registers
    final = await complete(model, context(), StreamOptions(api_key="plain-key-12345"))
    assert final.error_message == "rejected key [redacted] and {'X-Secret': '[redacted]'}"


def test_a_model_serialises_without_header_values_or_url_password() -> None:
    import dataclasses

    from caddie.modes.serialize import to_json

    model = Model(
        "m",
        "M",
        "openai-completions",
        "p",
        base_url="http://me:pw-abcdef@127.0.0.1:1/v1",
        headers={"Authorization": "Bearer tok-123456"},
        compat=ModelCompat(supports_store=False),
    )
    data = model.to_json()
    assert data["headers"] == {"Authorization": "[redacted]"}
    assert data["baseUrl"] == "http://me:***@127.0.0.1:1/v1"
    # Same shape as before, field for field, apart from the two protected values.
    generic = {
        f.name: getattr(model, f.name)
        for f in dataclasses.fields(model)
        if f.name not in ("headers", "base_url")
    }
    assert {k for k in data} == {
        "id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow",
        "maxTokens", "headers", "compat", "thinkingLevelMap",
    }  # fmt: skip
    assert (
        data["compat"] == {"supportsStore": False}
        and generic["compat"] == ModelCompat(supports_store=False)
        and data["contextWindow"] == generic["context_window"]
    )

    @dataclasses.dataclass
    class Selected:  # any event that carries a model goes through the same path
        model: Model
        type: str = "model_select"

    assert to_json(Selected(model))["model"] == data
    assert "tok-123456" not in str(to_json(Selected(model))) and "pw-abcdef" not in str(to_json([model]))


def test_known_values_leave_tool_output_and_persisted_json_but_placeholders_stay() -> None:
    secrets.register("stored-key-0123456789")
    secrets.register("ollama")  # a placeholder local servers take: redacted in errors only
    secrets.register("sk-no-key-required")
    secrets.register('quote"d-secret-42')
    text = "key stored-key-0123456789 for ollama (sk-no-key-required)"
    assert secrets.redact_known(text) == "key [redacted] for ollama (sk-no-key-required)"
    assert secrets.redact(text) == "key [redacted] for [redacted] ([redacted])"
    assert (
        secrets.redact_known("sk-ant-api03-abcdefghijklmnop") == "sk-ant-api03-abcdefghijklmnop"
    )  # no guessing
    line = '{"text":"quote\\"d-secret-42 and stored-key-0123456789"}'
    assert secrets.mentions_known(line) and not secrets.mentions_known('{"text":"ollama"}')
    value = {"a": ["stored-key-0123456789", {"b": 'x quote"d-secret-42'}], "n": 1}
    assert secrets.redact_json(value) == {"a": ["[redacted]", {"b": "x [redacted]"}], "n": 1}


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("OPENAI_API_KEY", "x", True),
        ("PGPASSWORD", "x", True),
        ("MYSQL_PWD", "x", True),
        ("GITHUB_PAT", "x", True),
        ("NPM_AUTH", "x", True),
        ("npm_config__auth", "x", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", "x", True),
        ("DATABASE_URL", "postgres://app:pw@db/app", True),
        ("PATH", "/bin", False),
        ("PWD", "/home", False),
        ("GIT_AUTHOR_NAME", "Ada", False),
        ("SSH_AUTH_SOCK", "/tmp/s", False),
        ("XAUTHORITY", "/run/x", False),
        ("HTTP_PROXY", "http://proxy:3128", False),
        ("HTTP_PROXY", "http://me:pw@proxy:3128", True),
    ],
)
def test_one_list_of_secret_looking_variables(name: str, value: str, secret: bool) -> None:
    assert secrets.is_secret_variable(name, value) is secret

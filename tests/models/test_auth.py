"""auth.json (Pi's format, 0600, a stored key wins over the environment) and where keys never show up."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from caddie.ai import secrets
from caddie.ai.catalogue import missing_key_text
from caddie.ai.messages import UserMessage
from caddie.ai.model import Context, StreamOptions
from caddie.ai.providers.openai_completions import PROVIDER
from caddie.models import AuthStore, ModelRegistry
from caddie.models.registry import KeySource
from tests.interop.pi import PI_PACKAGE, require_pi
from tests.support import fake_llm as fl

STORED = "sk-stored-key-0123456789abcdef"


def test_set_key_writes_pis_format_0600_in_a_0700_folder(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "auth.json"
    store = AuthStore(path)
    store.set_key("openai", STORED)
    assert json.loads(path.read_text()) == {"openai": {"type": "api_key", "key": STORED}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    store.set_key("cloudflare-ai-gateway", "cf-key-abcdef", {"CLOUDFLARE_ACCOUNT_ID": "acct"})
    data = json.loads(path.read_text())
    assert data["cloudflare-ai-gateway"] == {
        "type": "api_key",
        "key": "cf-key-abcdef",
        "env": {"CLOUDFLARE_ACCOUNT_ID": "acct"},
    }
    assert set(data) == {"openai", "cloudflare-ai-gateway"}
    assert [p.name for p in path.parent.iterdir()] == ["auth.json"]  # no temporary file left behind
    assert store.remove("openai") and not store.remove("openai")
    assert set(json.loads(path.read_text())) == {"cloudflare-ai-gateway"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_entries_caddie_does_not_use_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    oauth = {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}
    path.write_text(json.dumps({"anthropic": oauth}))
    store = AuthStore(path)
    assert store.get("anthropic") is None and store.warnings == []
    store.set_key("openai", STORED)
    assert json.loads(path.read_text())["anthropic"] == oauth


def test_a_broken_file_is_one_warning_and_no_key(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text("{not json")
    reg = ModelRegistry(tmp_path / "models.json", env={"OPENAI_API_KEY": "sk-env-1234567"}, auth=path)
    assert any("auth.json: not valid JSON" in w for w in reg.warnings)
    assert reg.api_key_for(reg.resolve("openai/gpt-5.5")) == "sk-env-1234567"
    path.write_text(json.dumps({"openai": {"type": "api_key", "key": 5}, "x": "y"}))
    store = AuthStore(path)
    assert len(store.warnings) == 2 and store.get("openai") is None


def test_a_stored_key_wins_over_the_environment_and_models_json(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"providers": {"openai": {"apiKey": "sk-models-json-key"}}}))
    auth = tmp_path / "auth.json"
    env = {"OPENAI_API_KEY": "sk-from-env-123"}
    reg = ModelRegistry(models, env=env, auth=auth)
    model = reg.resolve("openai/gpt-5.5")
    assert reg.api_key_for(model) == "sk-models-json-key"
    AuthStore(auth).set_key("openai", STORED)
    reg.refresh()
    assert reg.api_key_for(model) == STORED
    models.write_text("{}")
    reg.refresh()
    assert reg.api_key_for(model) == STORED
    AuthStore(auth).remove("openai")
    reg.refresh()
    assert reg.api_key_for(model) == "sk-from-env-123"


def test_key_source_follows_the_key_down_the_chain(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps({"providers": {"openai": {"apiKey": "sk-models-json-key"}, "groq": {"apiKey": "!false"}}})
    )
    auth = tmp_path / "auth.json"
    reg = ModelRegistry(models, env={"OPENAI_API_KEY": "sk-from-env-123"}, auth=auth)
    assert reg.key_source("openai") == KeySource("models_json_key")
    assert reg.key_source("groq") == KeySource("models_json_command")  # the command is not run
    assert reg.key_source("mistral") is None and not reg.has_key("mistral")
    AuthStore(auth).set_key("openai", STORED)
    reg.refresh()
    assert reg.key_source("openai") == KeySource("stored") and reg.has_key("openai")
    AuthStore(auth).remove("openai")
    models.write_text("{}")
    reg.refresh()
    assert reg.key_source("openai") == KeySource("environment", "OPENAI_API_KEY")
    bedrock = ModelRegistry(models, env={"AWS_PROFILE": "work", "HOME": str(tmp_path)}, auth=auth)
    assert bedrock.key_source("amazon-bedrock") == KeySource("environment")


def test_stored_keys_may_be_commands_or_variables_with_scoped_env(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text(
        json.dumps(
            {
                "groq": {"type": "api_key", "key": "!echo from-a-command-42"},
                "xai": {"type": "api_key", "key": "$XAI_SCOPED", "env": {"XAI_SCOPED": "scoped-value-77"}},
            }
        )
    )
    reg = ModelRegistry(tmp_path / "models.json", env={}, auth=auth)
    assert reg.api_key_for(reg.resolve("groq/openai/gpt-oss-120b")) == "from-a-command-42"
    assert reg.api_key_for(reg.resolve("xai/grok-4.6")) == "scoped-value-77"
    assert {m.provider for m in reg.available()} >= {"groq", "xai"}


def test_a_key_in_auth_json_makes_its_provider_the_default(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    AuthStore(auth).set_key("deepseek", "ds-key-123456")
    reg = ModelRegistry(tmp_path / "models.json", env={}, auth=auth)
    assert reg.default_model(probe_local=False).ref == "deepseek/deepseek-v4-pro"


def test_stored_keys_are_secrets_from_the_moment_they_are_read(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    key = "zz-never-shown-key-9081726354"
    auth.write_text(json.dumps({"mistral": {"type": "api_key", "key": key}}))
    assert secrets.redact(f"error: {key} rejected") == f"error: {key} rejected"
    AuthStore(auth)
    assert secrets.redact(f"error: {key} rejected") == f"error: {secrets.REDACTED} rejected"


def test_a_missing_key_names_the_variable_and_login(tmp_path: Path) -> None:
    text = missing_key_text("openai")
    assert "OPENAI_API_KEY" in text and "/login openai" in text
    assert "/login" in missing_key_text("my-custom-server")
    reg = ModelRegistry(tmp_path / "models.json", env={}, auth=tmp_path / "auth.json")
    hint = reg.key_hint(reg.resolve("google/gemini-2.5-pro"))
    assert "GEMINI_API_KEY" in hint and "/login google" in hint


async def test_a_401_never_echoes_a_stored_key(tmp_path: Path) -> None:
    with fl.FakeLLM() as llm:
        models = tmp_path / "models.json"
        models.write_text(
            json.dumps(
                {
                    "providers": {
                        "lab": {
                            "baseUrl": llm.openai_base_url,
                            "api": "openai-completions",
                            "models": [{"id": "m"}],
                        }
                    }
                }
            )
        )
        auth = tmp_path / "auth.json"
        key = "lab-stored-key-5647382910"
        AuthStore(auth).set_key("lab", key)
        reg = ModelRegistry(models, env={}, auth=auth)
        model = reg.resolve("lab/m")
        llm.push(fl.error(401, f"Incorrect API key provided: {key}", type="invalid_request_error"))
        events = PROVIDER.stream(
            model, Context(None, [UserMessage("hi")]), StreamOptions(api_key=reg.api_key_for(model))
        )
        final = None
        async for event in events:
            final = event
        assert llm.llm_requests[0].headers.get("authorization") == f"Bearer {key}"
    message = getattr(final, "error", None) or getattr(final, "message", None)
    assert message is not None and message.error_status == 401
    assert message.error_message is not None and key not in message.error_message
    assert secrets.REDACTED in message.error_message


def test_pi_reads_the_auth_json_caddie_writes(tmp_path: Path) -> None:
    node = require_pi()
    agent = tmp_path / "pi-agent"
    AuthStore(agent / "auth.json").set_key("groq", "gsk-written-by-caddie-123456")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.update(PI_CODING_AGENT_DIR=str(agent), HOME=str(tmp_path))
    done = subprocess.run(
        [node, str(PI_PACKAGE / "dist" / "cli.js"), "--list-models", "gpt-oss-120b"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["groq", "openai/gpt-oss-120b"] in [row[:2] for row in rows]


def test_the_auth_json_example_in_the_docs_loads_cleanly(tmp_path: Path) -> None:
    import re

    docs = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
    blocks = re.findall(r"```json\n(.*?)```", docs.read_text(encoding="utf-8"), flags=re.S)
    example = next(b for b in blocks if '"type": "api_key"' in b)
    (tmp_path / "auth.json").write_text(example)
    store = AuthStore(tmp_path / "auth.json")
    assert store.warnings == []
    assert store.providers() == ["openai", "groq", "cloudflare-ai-gateway"]
    credential = store.get("cloudflare-ai-gateway")
    assert credential is not None and credential.env["CLOUDFLARE_GATEWAY_ID"] == "gateway-id"

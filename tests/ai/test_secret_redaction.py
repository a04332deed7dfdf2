"""Configured secrets never reach an error text: stderr, ``--mode json``, the session file, the HTML export.

The fake server answers 401 with a body that echoes every request header back, the way some proxies do,
so whatever caddie sent (API key, models.json ``headers`` — literal, from an environment variable or from
a ``!command`` — and Basic credentials from a ``baseUrl`` password) would appear in the error text.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_llm as fl

LITERAL_TOKEN = "hdr-literal-7f3a9c2e51"
ENV_TOKEN = "hdr-from-env-4b8d1e6f02"
COMMAND_TOKEN = "hdr-from-cmd-9e2c7a4b13"
API_KEY = "models-json-key-5d1f8b3a77"
URL_PASSWORD = "url-pass-2c9e4f7a1b"
BASIC_CREDENTIALS = base64.b64encode(f"caddie-user:{URL_PASSWORD}".encode()).decode()
"""What httpx sends for a ``baseUrl`` with a password (``Authorization: Basic ...``)."""
SECRETS = (LITERAL_TOKEN, ENV_TOKEN, COMMAND_TOKEN, API_KEY, URL_PASSWORD, BASIC_CREDENTIALS)


def _echo_headers(req: fl.RecordedRequest) -> fl.Reply:
    return fl.error(401, "invalid credentials; request headers were " + json.dumps(req.headers))


class Run:
    def __init__(self, home: Path, project: Path) -> None:
        self.home = home
        self.project = project

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            CADDIE_DIR=str(self.home),
            NO_COLOR="1",
            CADDIE_OLLAMA_URL="http://127.0.0.1:9",
            CADDIE_TEST_HEADER_TOKEN=ENV_TOKEN,
        )
        return subprocess.run(
            [sys.executable, "-m", "caddie", *args],
            cwd=self.project,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def session_files(self) -> list[Path]:
        return sorted((self.home / "agent" / "sessions").rglob("*.jsonl"))


@pytest.fixture
def echoing() -> Iterator[fl.FakeLLM]:
    with fl.FakeLLM(default_reply=_echo_headers) as llm:
        yield llm


def _setup(tmp_path: Path, llm: fl.FakeLLM, api: str) -> Run:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    base = llm.openai_base_url if api == "openai-completions" else llm.anthropic_base_url
    base = base.replace("http://", f"http://caddie-user:{URL_PASSWORD}@")
    provider: dict[str, Any] = {
        "baseUrl": base,
        "api": api,
        "apiKey": API_KEY,
        "headers": {
            "X-Custom-Token": LITERAL_TOKEN,
            "X-Env-Token": "$CADDIE_TEST_HEADER_TOKEN",
            "X-Cmd-Token": f"!printf {COMMAND_TOKEN}",
        },
        "models": [{"id": "fake-model", "contextWindow": 100_000}, {"id": "other-model"}],
    }
    (home / "agent").mkdir(parents=True)
    (home / "agent" / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    return Run(home, project)


def _assert_clean(where: str, text: str) -> None:
    leaked = [s for s in SECRETS if s in text]
    assert not leaked, f"{where} leaks {leaked}: {text[:2000]}"


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_401_that_echoes_request_headers_leaks_no_secret_anywhere(
    tmp_path: Path, echoing: fl.FakeLLM, api: str
) -> None:
    llm = echoing
    run = _setup(tmp_path, llm, api)

    printed = run("-p", "--model", "fake/fake-model", "hello")
    assert printed.returncode == 1
    # The server really received every secret (so a leak was possible) ...
    sent = json.dumps(llm.llm_requests[0].headers)
    assert LITERAL_TOKEN in sent and ENV_TOKEN in sent and COMMAND_TOKEN in sent
    # ... and the error text shown still carries the server's message, minus the secrets.
    assert "401" in printed.stderr and "x-custom-token" in printed.stderr
    assert "[redacted]" in printed.stderr
    _assert_clean("stderr (-p)", printed.stderr + printed.stdout)

    as_json = run("--mode", "json", "--model", "fake/fake-model", "hello again")
    assert "x-custom-token" in as_json.stdout
    _assert_clean("--mode json", as_json.stdout + as_json.stderr)

    sessions = run.session_files()
    assert len(sessions) == 2
    for session in sessions:
        text = session.read_text()
        assert "invalid credentials" in text
        _assert_clean(f"session file {session.name}", text)

    page = tmp_path / "page.html"
    exported = run("export", str(sessions[0]), "-o", str(page))
    assert exported.returncode == 0, exported.stderr
    html = page.read_text()
    assert "invalid credentials" in html
    _assert_clean("HTML export", html + exported.stdout + exported.stderr)


def test_rpc_get_state_and_set_model_show_no_resolved_header_or_url_secret(
    tmp_path: Path, echoing: fl.FakeLLM
) -> None:
    run = _setup(tmp_path, echoing, "openai-completions")
    commands = [
        {"id": "1", "type": "get_state"},
        {"id": "2", "type": "set_model", "provider": "fake", "modelId": "other-model"},
        {"id": "3", "type": "get_state"},
    ]
    result = run(
        "--mode",
        "rpc",
        "--model",
        "fake/fake-model",
        stdin="".join(json.dumps(c) + "\n" for c in commands),
    )
    assert result.returncode == 0, result.stderr
    responses = {
        o["id"]: o for o in map(json.loads, result.stdout.splitlines()) if o.get("type") == "response"
    }
    assert set(responses) == {"1", "2", "3"}
    assert all(r["success"] for r in responses.values()), responses
    first, switched, after = responses["1"]["data"], responses["2"]["data"], responses["3"]["data"]
    assert first["model"]["id"] == "fake-model" and switched["id"] == after["model"]["id"] == "other-model"
    # The header names stay (a client may show them); their values and the URL password do not.
    for model in (first["model"], switched, after["model"]):
        assert sorted(model["headers"]) == ["X-Cmd-Token", "X-Custom-Token", "X-Env-Token"]
        assert set(model["headers"].values()) == {"[redacted]"}
        assert model["baseUrl"].startswith("http://caddie-user:***@127.0.0.1:")
    _assert_clean("rpc output", result.stdout + result.stderr)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_password_in_base_url_is_neither_printed_in_connection_errors_nor_saved(
    tmp_path: Path, api: str
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    (home / "agent").mkdir(parents=True)
    base = f"http://caddie-user:{URL_PASSWORD}@127.0.0.1:{_closed_port()}" + (
        "/v1" if api == "openai-completions" else ""
    )
    provider = {"baseUrl": base, "api": api, "apiKey": API_KEY, "models": [{"id": "fake-model"}]}
    (home / "agent" / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    (home / "agent" / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))
    run = Run(home, project)

    result = run("-p", "--model", "fake/fake-model", "hello")
    assert result.returncode == 1
    assert "Connection error: could not reach http://caddie-user:***@127.0.0.1:" in result.stderr
    _assert_clean("stderr", result.stderr + result.stdout)
    [session] = run.session_files()
    text = session.read_text()
    assert "Connection error" in text
    _assert_clean("session file", text)

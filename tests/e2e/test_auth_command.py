"""``caddie auth print-api-key | print-bearer-token | check`` — the same output and exit codes as Pi's
``pi auth`` on the same agent folder, and a due login renewed (and stored) before its token is printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interop.pi import PI_DIR, require_pi
from tests.support.fake_oauth import FakeOAuthServer

REPO = Path(__file__).resolve().parents[2]
FAR = int(time.time() * 1000) + 10 * 3_600_000


def env_for(home: Path, **extra: str) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_TOKEN")) and not k.startswith(("CADDIE_", "PI_"))
    }
    return {**base, "HOME": str(home), **extra}


def caddie(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = env_for(home, CADDIE_DIR=str(home / ".caddie"), PYTHONPATH=str(REPO / "src"), **extra)
    return subprocess.run(
        [sys.executable, "-m", "caddie", "auth", *args], env=env, capture_output=True, text=True, timeout=60
    )


def pi(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    node = require_pi()
    cli = PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    env = env_for(home, PI_CODING_AGENT_DIR=str(home / ".caddie" / "agent"), PI_OFFLINE="1")
    return subprocess.run(
        [node, str(cli), "auth", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    agent = tmp_path / ".caddie" / "agent"
    agent.mkdir(parents=True)
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "openai": {"type": "api_key", "key": "sk-stored-openai-key-0123456789"},
                "anthropic": {
                    "type": "oauth",
                    "access": "sk-ant-oat01-stored-0123",
                    "refresh": "sk-ant-ort01-r",
                    "expires": FAR,
                },
            }
        )
    )
    (agent / "auth.json").chmod(0o600)
    return tmp_path


CASES = [
    ("print-api-key", "--provider", "openai"),
    ("print-api-key", "--provider", "anthropic"),
    ("print-bearer-token", "--provider", "anthropic"),
    ("print-bearer-token", "--provider", "openai"),
    ("print-api-key", "--provider", "nosuch"),
    ("check", "--provider", "anthropic", "--json"),
    ("check", "--provider", "openai", "--json"),
    ("check", "--provider", "groq"),
    ("check", "--provider", "nosuch", "--json"),
    ("check", "--provider", "anthropic", "--credentials", "--no-refresh"),
    ("check",),
    ("print-bearer-token", "--provider", "anthropic", "--min-expiry", "soon"),
    ("check", "--provider", "openai", "--min-expiry", "1h"),
    ("frobnicate",),
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_auth_commands_answer_as_pis_do(home: Path, args: tuple[str, ...]) -> None:
    ours, theirs = caddie(home, *args), pi(home, *args)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert [line.replace("caddie", "pi") for line in ours.stderr.splitlines()[:1]] == [
        line.replace("\x1b[31m", "").replace("\x1b[39m", "") for line in theirs.stderr.splitlines()[:1]
    ]


def test_a_due_login_is_renewed_and_stored_before_its_token_is_printed(home: Path) -> None:
    auth_path = home / ".caddie" / "agent" / "auth.json"
    data = json.loads(auth_path.read_text())
    data["anthropic"]["expires"] = int(time.time() * 1000) + 10 * 60_000  # valid, but under 30 minutes
    auth_path.write_text(json.dumps(data))
    with FakeOAuthServer() as server:
        server.route(
            "POST",
            "/v1/oauth/token",
            (
                200,
                {
                    "access_token": "sk-ant-oat01-renewed",
                    "refresh_token": "sk-ant-ort01-new",
                    "expires_in": 28800,
                },
            ),
        )
        done = caddie(
            home,
            "print-bearer-token",
            "--provider",
            "anthropic",
            CADDIE_OAUTH_ENDPOINTS=server.endpoints("https://platform.claude.com"),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "sk-ant-oat01-renewed\n"
        assert json.loads(auth_path.read_text())["anthropic"]["refresh"] == "sk-ant-ort01-new"
        # --no-refresh neither renews nor writes; the default check does renew a due login.
        auth_path.write_text(json.dumps({"anthropic": {**data["anthropic"], "expires": 0}}))
        stale = caddie(
            home,
            "check",
            "--provider",
            "anthropic",
            "--no-refresh",
            "--json",
            CADDIE_OAUTH_ENDPOINTS=server.endpoints("https://platform.claude.com"),
        )
        assert json.loads(stale.stdout) == {"status": "ready", "provider": "anthropic", "authType": "oauth"}
        assert len(server.calls("/v1/oauth/token")) == 1
        server.route("POST", "/v1/oauth/token", (400, {"error": "invalid_grant"}))
        dead = caddie(
            home,
            "check",
            "--provider",
            "anthropic",
            CADDIE_OAUTH_ENDPOINTS=server.endpoints("https://platform.claude.com"),
        )
        assert (dead.returncode, dead.stdout) == (2, "invalid\n")
        printed = caddie(
            home,
            "print-bearer-token",
            "--provider",
            "anthropic",
            CADDIE_OAUTH_ENDPOINTS=server.endpoints("https://platform.claude.com"),
        )
        assert printed.returncode == 1
        assert (
            printed.stderr.strip().endswith("run /login anthropic again.")
            and "\n" not in printed.stderr.strip()
        )

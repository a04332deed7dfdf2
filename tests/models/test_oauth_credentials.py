"""Stored logins at request time: renewed when due under Pi's auth.json lock, once across processes, with
one clear line when the refresh token is dead; the file stays Pi's (fields kept, 0600)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caddie.ai.model import Model
from caddie.config.file_lock import FileLock, LockTimeout
from caddie.models.auth import AuthStore
from caddie.models.oauth import LoginExpired, OAuthCredentials
from caddie.models.registry import ModelRegistry
from tests.interop.pi import PI_DIR, require_pi
from tests.support.fake_oauth import FakeOAuthServer, OAuthRequest

REPO = Path(__file__).resolve().parents[2]


def login(access: str, expires: int, **extra: object) -> dict[str, object]:
    return {"type": "oauth", "access": access, "refresh": "sk-ant-ort01-refresh", "expires": expires, **extra}


def write_auth(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOAuthServer]:
    with FakeOAuthServer() as fake:
        monkeypatch.setenv("CADDIE_OAUTH_ENDPOINTS", fake.endpoints("https://platform.claude.com"))
        yield fake


def registry(tmp_path: Path, env: dict[str, str] | None = None) -> ModelRegistry:
    return ModelRegistry(tmp_path / "models.json", env=env or {}, auth=tmp_path / "auth.json")


async def test_a_valid_login_is_used_as_stored_and_an_expired_one_is_renewed_and_kept(
    tmp_path: Path, server: FakeOAuthServer
) -> None:
    auth_path = tmp_path / "auth.json"
    far = int(time.time() * 1000) + 3_600_000
    write_auth(auth_path, {"anthropic": login("sk-ant-oat01-valid", far, piField="kept")})
    reg = registry(tmp_path)
    model = reg.find("anthropic", "claude-sonnet-5")
    assert model is not None and reg.has_auth(model)
    auth = await reg.request_auth(model)
    assert auth is not None and auth.api_key == "sk-ant-oat01-valid"
    assert server.requests == []

    write_auth(
        auth_path,
        {
            "anthropic": login("sk-ant-oat01-old", 0, piField="kept"),
            "openai": {"type": "api_key", "key": "sk-x"},
        },
    )
    server.route(
        "POST",
        "/v1/oauth/token",
        (200, {"access_token": "sk-ant-oat01-new", "refresh_token": "sk-ant-ort01-new", "expires_in": 7200}),
    )
    reg.refresh()
    auth = await reg.request_auth(model)
    assert auth is not None and auth.api_key == "sk-ant-oat01-new"
    stored = json.loads(auth_path.read_text())
    assert (
        stored["anthropic"]["access"] == "sk-ant-oat01-new"
        and stored["anthropic"]["refresh"] == "sk-ant-ort01-new"
    )
    assert stored["openai"] == {"type": "api_key", "key": "sk-x"}
    assert stat.S_IMODE(auth_path.stat().st_mode) == 0o600
    assert not Path(f"{auth_path}.lock").exists()


async def test_a_dead_refresh_token_is_one_line_saying_to_log_in_again(
    tmp_path: Path, server: FakeOAuthServer
) -> None:
    write_auth(tmp_path / "auth.json", {"anthropic": login("sk-ant-oat01-old", 0)})
    server.route(
        "POST",
        "/v1/oauth/token",
        (400, {"error": "invalid_grant", "error_description": "Refresh token has expired"}),
    )
    credentials = OAuthCredentials(AuthStore(tmp_path / "auth.json"), registry(tmp_path).oauth_flow)
    with pytest.raises(LoginExpired) as caught:
        await credentials.request_auth("anthropic")
    text = str(caught.value)
    assert "\n" not in text and text.endswith("run /login anthropic again.")
    assert "sk-ant-ort01-refresh" not in text


async def test_a_login_renewed_by_another_process_meanwhile_is_not_renewed_again(
    tmp_path: Path, server: FakeOAuthServer
) -> None:
    auth_path = tmp_path / "auth.json"
    write_auth(auth_path, {"anthropic": login("sk-ant-oat01-old", 0)})
    store = AuthStore(auth_path)  # read while expired
    write_auth(auth_path, {"anthropic": login("sk-ant-oat01-by-pi", int(time.time() * 1000) + 3_600_000)})
    credentials = OAuthCredentials(store, registry(tmp_path).oauth_flow)
    auth = await credentials.request_auth("anthropic")
    assert auth is not None and auth.api_key == "sk-ant-oat01-by-pi"
    assert server.calls("/v1/oauth/token") == []


RACER = """
import asyncio, sys
from caddie.models.registry import ModelRegistry
reg = ModelRegistry(sys.argv[1] + "/models.json", env={}, auth=sys.argv[1] + "/auth.json")
auth = asyncio.run(reg.oauth.request_auth("anthropic"))
print(auth.api_key)
"""


def test_two_processes_renewing_at_once_spend_the_refresh_token_once(
    tmp_path: Path, server: FakeOAuthServer
) -> None:
    write_auth(tmp_path / "auth.json", {"anthropic": login("sk-ant-oat01-old", 0)})
    issued: list[str] = []

    def token(request: OAuthRequest) -> tuple[int, object]:
        time.sleep(0.4)  # both processes are waiting by now
        issued.append(request.body["refresh_token"])
        n = len(issued)
        return 200, {
            "access_token": f"sk-ant-oat01-new-{n}",
            "refresh_token": f"sk-ant-ort01-new-{n}",
            "expires_in": 3600,
        }

    server.route("POST", "/v1/oauth/token", token)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60)[0].strip() for p in racers]
    assert all(p.returncode == 0 for p in racers)
    assert issued == ["sk-ant-ort01-refresh"]
    assert outputs == ["sk-ant-oat01-new-1", "sk-ant-oat01-new-1"]


def test_the_lock_is_pis_auth_json_lock_directory_and_a_stale_one_is_taken_over(tmp_path: Path) -> None:
    target = tmp_path / "auth.json"
    target.write_text("{}")
    held = FileLock(target, wait_s=0.3)
    with held:
        assert (tmp_path / "auth.json.lock").is_dir()
        with pytest.raises(LockTimeout):
            FileLock(target, wait_s=0.2).acquire()
    assert not (tmp_path / "auth.json.lock").exists()
    (tmp_path / "auth.json.lock").mkdir()
    old = time.time() - 60
    os.utime(tmp_path / "auth.json.lock", (old, old))  # a crashed holder's lock
    with FileLock(target, wait_s=0.2):
        pass


PI_LOCK = """
const lockfile = require(process.argv[1]);
try { lockfile.lockSync(process.argv[2], { realpath: false }); console.log("acquired"); }
catch (e) { console.log(e.code); process.exit(0); }
process.stdin.resume(); process.stdin.on("end", () => process.exit(0));  // hold it until told
"""


def test_pis_proper_lockfile_waits_for_caddies_lock_and_caddie_for_pis(tmp_path: Path) -> None:
    node = require_pi()
    target = tmp_path / "auth.json"
    target.write_text("{}")
    module = PI_DIR / "node_modules" / "proper-lockfile"
    with FileLock(target):
        out = subprocess.run(
            [node, "-e", PI_LOCK, str(module), str(target)],
            input="",
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.stdout.strip() == "ELOCKED"
    pi = subprocess.Popen(
        [node, "-e", PI_LOCK, str(module), str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert pi.stdout is not None and pi.stdout.readline().strip() == "acquired"
        with pytest.raises(LockTimeout):
            FileLock(target, wait_s=0.3).acquire()
    finally:
        pi.communicate(timeout=30)  # Pi releases its lock as it exits
    with FileLock(target, wait_s=5):
        pass


def test_oauth_entries_of_a_pi_file_survive_a_caddie_write(tmp_path: Path) -> None:
    auth_path = tmp_path / "auth.json"
    copilot = login(
        "tid=1;proxy-ep=proxy.x", 123, enterpriseUrl="ghe.example.com", availableModelIds=["gpt-5.5"]
    )
    write_auth(auth_path, {"github-copilot": copilot, "weird": {"type": "oauth", "access": 1}})
    store = AuthStore(auth_path)
    assert store.oauth("github-copilot") == copilot
    assert any("weird" in w and "/login weird" in w for w in store.warnings)
    store.set_key("openai", "sk-openai-key-123")
    data = json.loads(auth_path.read_text())
    assert data["github-copilot"] == copilot and data["weird"] == {"type": "oauth", "access": 1}


def test_copilot_account_models_filter_the_list_and_anthropic_env_tokens(tmp_path: Path) -> None:
    write_auth(
        tmp_path / "auth.json",
        {"github-copilot": login("tid=1", 9_999_999_999_999, availableModelIds=["gpt-5.5"])},
    )
    reg = registry(tmp_path)
    copilot = {m.id for m in reg.all() if m.provider == "github-copilot"}
    assert copilot == {"gpt-5.5"}

    reg = ModelRegistry(
        tmp_path / "none.json",
        env={"ANTHROPIC_AUTH_TOKEN": "bearer-token-1", "ANTHROPIC_API_KEY": "sk-ant-api"},
        auth=tmp_path / "empty.json",
    )
    model = reg.find("anthropic", "claude-sonnet-5")
    assert isinstance(model, Model)
    import asyncio

    auth = asyncio.run(reg.request_auth(model))
    assert (
        auth is not None
        and auth.headers == {"Authorization": "Bearer bearer-token-1"}
        and auth.api_key is None
    )
    reg = ModelRegistry(
        tmp_path / "none.json",
        env={"ANTHROPIC_OAUTH_TOKEN": "sk-ant-oat01-env"},
        auth=tmp_path / "empty.json",
    )
    assert reg.has_auth(model)
    auth = asyncio.run(reg.request_auth(model))
    assert auth is not None and auth.api_key == "sk-ant-oat01-env"


async def test_extension_providers_auth_header_and_refreshed_models(tmp_path: Path) -> None:
    reg = registry(tmp_path)

    async def refresh_models() -> list[dict[str, object]]:
        return [{"id": "fresh-1", "contextWindow": 12000}]

    problems = reg.register_provider(
        "corp",
        {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "corp-key-0123456789",
            "authHeader": True,
            "refreshModels": refresh_models,
            "models": [{"id": "static-1"}],
        },
        "ext.py",
    )
    assert problems == []
    static = reg.find("corp", "static-1")
    assert static is not None
    auth = await reg.request_auth(static)
    assert auth is not None and auth.headers == {"Authorization": "Bearer corp-key-0123456789"}
    assert await reg.refresh_models("corp") == []
    fresh = reg.find("corp", "fresh-1")
    assert fresh is not None and fresh.context_window == 12000
    stored = json.loads((tmp_path / "models-store.json").read_text())["corp"]["models"][0]
    assert stored["provider"] == "corp" and stored["api"] == "openai-completions"
    assert reg.register_provider("bad", {"oauth": {"name": "x"}}, "ext.py") == [
        'provider bad: "oauth" needs a "login" function (and "refreshToken", "getApiKey")'
    ]


def test_the_extra_usage_warning_is_for_anthropic_subscriptions_only() -> None:
    from caddie.ai.model import Model
    from caddie.models.extra_usage import ANTHROPIC_EXTRA_USAGE_WARNING, extra_usage_warning

    claude = Model("claude-sonnet-4-5", "Claude", "anthropic-messages", "anthropic")
    other = Model("gpt-5", "GPT", "openai-responses", "openai")
    assert extra_usage_warning(claude, True, []) == ANTHROPIC_EXTRA_USAGE_WARNING
    assert extra_usage_warning(claude, False, [None, "sk-ant-oat01-env"]) == ANTHROPIC_EXTRA_USAGE_WARNING
    assert extra_usage_warning(claude, False, ["sk-ant-api03-key", None]) is None
    assert extra_usage_warning(claude, True, [], enabled=False) is None
    assert extra_usage_warning(other, True, ["sk-ant-oat01-env"]) is None
    assert extra_usage_warning(None, True, []) is None

"""/login and /logout in the interactive UI: a masked key, stored in auth.json (0600), never shown."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from textual.widgets import Input

from caddie.config.paths import agent_dir
from caddie.models import AuthStore
from caddie.modes.interactive.dialogs import InputScreen, SelectScreen
from caddie.modes.interactive.login import SecretInputScreen
from tests.tui.harness import SMALL, make_app, ready, screen_text, submit, type_text, until, widget_text

KEY = "gsk-pasted-in-the-tui-0123456789"


async def test_login_picks_a_provider_masks_the_key_and_stores_it(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    auth = agent_dir() / "auth.json"
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/login")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await type_text(pilot, "groq")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SecretInputScreen))
        field = app.screen.query_one(Input)
        assert field.password
        await type_text(pilot, KEY)
        await pilot.pause()
        shown = screen_text(app)
        await pilot.press("enter")
        await until(pilot, auth.exists)
        await until(pilot, lambda: "Stored the Groq key" in widget_text(app.conversation))
        transcript = widget_text(app.conversation)
        assert app.registry is not None
        assert any(m.provider == "groq" for m in app.registry.available())
        session_file = app.session.store.path if app.session is not None else None
    assert KEY not in shown and KEY[:8] not in shown
    assert KEY not in transcript
    assert json.loads(auth.read_text()) == {"groq": {"type": "api_key", "key": KEY}}
    assert stat.S_IMODE(auth.stat().st_mode) == 0o600
    if session_file is not None and Path(session_file).exists():
        assert KEY not in Path(session_file).read_text()


async def test_login_with_a_provider_named_and_escape_stores_nothing(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/login openai")
        await until(pilot, lambda: isinstance(app.screen, SecretInputScreen))
        await pilot.press("escape")
        await until(pilot, lambda: "Login cancelled" in widget_text(app.conversation))
        await submit(pilot, app, "/login opneai")
        await until(pilot, lambda: "Did you mean openai?" in widget_text(app.conversation))
    assert not (agent_dir() / "auth.json").exists()


async def test_login_asks_for_the_variables_a_base_url_needs(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/login cloudflare-workers-ai")
        await until(pilot, lambda: isinstance(app.screen, SecretInputScreen))
        await type_text(pilot, "cf-secret-key-123456")
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen) is InputScreen)
        await type_text(pilot, "acct42")
        await pilot.press("enter")
        await until(pilot, (agent_dir() / "auth.json").exists)
    stored = json.loads((agent_dir() / "auth.json").read_text())
    assert stored["cloudflare-workers-ai"]["env"] == {"CLOUDFLARE_ACCOUNT_ID": "acct42"}


async def test_logout_removes_a_stored_key(tmp_path: Path) -> None:
    auth = agent_dir() / "auth.json"
    AuthStore(auth).set_key("groq", KEY)
    AuthStore(auth).set_key("xai", "xai-another-key-12345")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/logout")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await type_text(pilot, "groq")
        await pilot.press("enter")
        await until(pilot, lambda: "Removed the stored key for groq" in widget_text(app.conversation))
        assert app.registry is not None and all(m.provider != "groq" for m in app.registry.available())
    assert set(json.loads(auth.read_text())) == {"xai"}


async def test_login_without_a_model_selects_the_providers_default(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model=None)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.session is not None and app.session.model is None
        await submit(pilot, app, "/login deepseek")
        await until(pilot, lambda: isinstance(app.screen, SecretInputScreen))
        await type_text(pilot, "ds-key-0987654321")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.model is not None)
        assert app.session.model is not None and app.session.model.ref == "deepseek/deepseek-v4-pro"


async def test_login_to_a_subscription_by_device_code_stores_the_login(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from tests.support.fake_oauth import FakeOAuthServer

    async def no_wait(_seconds: float) -> None:
        return None

    monkeypatch.setattr("caddie.ai.oauth.device.SLEEP", no_wait)
    app, _ = make_app(tmp_path)
    auth = agent_dir() / "auth.json"
    with FakeOAuthServer() as server:
        monkeypatch.setenv("CADDIE_OAUTH_ENDPOINTS", server.endpoints("https://auth.x.ai"))
        server.route(
            "POST",
            "/oauth2/device/code",
            (
                200,
                {
                    "device_code": "dc",
                    "user_code": "GROK-4242",
                    "verification_uri": "https://accounts.x.ai/device",
                    "expires_in": 600,
                },
            ),
        )
        server.route(
            "POST",
            "/oauth2/token",
            [
                (400, {"error": "authorization_pending"}),
                (
                    200,
                    {
                        "access_token": "xai-token-from-tui-0123",
                        "refresh_token": "xai-refresh-0123",
                        "expires_in": 3600,
                    },
                ),
            ],
        )
        async with app.run_test(size=SMALL) as pilot:
            await ready(app, pilot)
            await submit(pilot, app, "/login xai")
            await until(pilot, lambda: isinstance(app.screen, SelectScreen))
            await type_text(pilot, "subscription")
            await pilot.press("enter")
            await until(
                pilot, lambda: "Logged in: xAI (Grok/X subscription)" in widget_text(app.conversation)
            )
            transcript = widget_text(app.conversation)
    assert "GROK-4242" in transcript and "https://accounts.x.ai/device" in transcript
    assert "xai-token-from-tui-0123" not in transcript
    stored = json.loads(auth.read_text())["xai"]
    assert stored["type"] == "oauth" and stored["access"] == "xai-token-from-tui-0123"


async def test_a_browser_login_takes_the_pasted_redirect_url(tmp_path: Path, monkeypatch: Any) -> None:
    from urllib.parse import parse_qs, urlsplit

    from tests.support.fake_oauth import FakeOAuthServer

    opened: list[str] = []
    monkeypatch.setattr("caddie.modes.interactive.login.open_browser", opened.append)
    monkeypatch.setenv("CADDIE_OAUTH_CALLBACK_PORT", "0")
    app, _ = make_app(tmp_path)
    with FakeOAuthServer() as server:
        monkeypatch.setenv(
            "CADDIE_OAUTH_ENDPOINTS", server.endpoints("https://claude.ai", "https://platform.claude.com")
        )
        server.route(
            "POST",
            "/v1/oauth/token",
            (
                200,
                {
                    "access_token": "sk-ant-oat01-from-tui",
                    "refresh_token": "sk-ant-ort01-x",
                    "expires_in": 3600,
                },
            ),
        )
        async with app.run_test(size=SMALL) as pilot:
            await ready(app, pilot)
            await submit(pilot, app, "/login anthropic")
            await until(pilot, lambda: isinstance(app.screen, SelectScreen))
            await type_text(pilot, "Claude Pro")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, InputScreen) and bool(opened))
            state = parse_qs(urlsplit(opened[0]).query)["state"][0]
            await type_text(pilot, f"http://localhost:53692/callback?code=pasted&state={state}")
            await pilot.press("enter")
            await until(
                pilot, lambda: "Logged in: Anthropic (Claude Pro/Max)" in widget_text(app.conversation)
            )
    assert server.calls("/v1/oauth/token")[0].body["code"] == "pasted"
    assert (
        json.loads((agent_dir() / "auth.json").read_text())["anthropic"]["access"] == "sk-ant-oat01-from-tui"
    )


EXTRA_USAGE = "Anthropic subscription auth is active."


def store_claude_login() -> None:
    auth = agent_dir() / "auth.json"
    auth.parent.mkdir(parents=True, exist_ok=True)
    login = {"type": "oauth", "access": "sk-ant-oat01-tui-0123", "refresh": "r", "expires": 9_999_999_999_999}
    auth.write_text(json.dumps({"anthropic": login}))


async def test_a_claude_subscription_warns_once_about_extra_usage_as_pi_does(tmp_path: Path) -> None:
    store_claude_login()
    app, _ = make_app(tmp_path, model="anthropic/claude-sonnet-4-5")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: EXTRA_USAGE in widget_text(app.conversation))
        await submit(pilot, app, "/model anthropic/claude-opus-4-5")
        await until(pilot, lambda: app.session is not None and app.session.model is not None
                    and app.session.model.id == "claude-opus-4-5")  # fmt: skip
        await pilot.pause()
        assert widget_text(app.conversation).count("Anthropic subscription auth is active") == 1


async def test_the_extra_usage_warning_can_be_switched_off_and_needs_a_subscription(tmp_path: Path) -> None:
    from tests.tui.harness import write_settings

    write_settings(warnings={"anthropicExtraUsage": False})
    store_claude_login()
    app, _ = make_app(tmp_path, model="anthropic/claude-sonnet-4-5")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.pause()
        assert "Anthropic subscription auth" not in widget_text(app.conversation)
    (agent_dir() / "settings.json").unlink()
    (agent_dir() / "auth.json").write_text(
        json.dumps({"anthropic": {"type": "api_key", "key": "sk-ant-api03-x"}})
    )
    app, _ = make_app(tmp_path, model="anthropic/claude-sonnet-4-5")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.pause()
        assert "Anthropic subscription auth" not in widget_text(app.conversation)


async def test_settings_switches_the_extra_usage_warning_off(tmp_path: Path) -> None:
    from caddie.modes.interactive.settings_dialog import SettingsScreen
    from tests.tui.harness import LARGE

    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/settings")
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        assert "Anthropic extra usage" in widget_text(screen)
        for _ in range([c.id for c in screen.shown].index("warnings.anthropicExtraUsage")):
            await pilot.press("down")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("down", "enter")  # on → off
        await until(pilot, lambda: isinstance(app.screen, SettingsScreen))
        await pilot.press("escape")
    saved = json.loads((agent_dir() / "settings.json").read_text())
    assert saved["warnings"] == {"anthropicExtraUsage": False}

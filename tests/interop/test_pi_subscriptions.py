"""A Pi user's subscription logins, side by side with the reference Pi 0.84.4: both agents run with the *same*
agent folder — one auth.json holding the login, one models.json pointing the built-in provider at a local
fake — and the test compares what each sent: the headers that carry auth and identity, and the bodies.

Claude Pro/Max (Anthropic OAuth): ``Authorization: Bearer``, Claude Code's betas, user agent and ``x-app``,
the identity block first in the system prompt, and Claude Code's tool names both ways (the model calls
``Read``; both agents run their ``read`` and send the call back as ``Read``). ChatGPT (Codex over SSE and
the WebSocket), Copilot's headers and a Pi-written Copilot login (its token's host, served over TLS by the
fake), xAI, Kimi Code and OpenRouter logins, ``ANTHROPIC_OAUTH_TOKEN`` and
``ANTHROPIC_AUTH_TOKEN``, and a Radius gateway (Pi's own
``pi-messages`` protocol, its catalogue read from models-store.json). Skips (with the reason) where Pi is
absent; fails under ``CI=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_DIR, require_pi
from tests.support import fake_llm as fl

REPO = Path(__file__).resolve().parents[2]
IDENTITY_HEADERS = (
    "authorization",
    "x-api-key",
    "anthropic-beta",
    "anthropic-version",
    "anthropic-dangerous-direct-browser-access",
    "user-agent",
    "x-app",
    "accept",
    "content-type",
)


def clean_env(home: Path) -> dict[str, str]:
    drop = ("_API_KEY", "_TOKEN")
    env = {
        k: v for k, v in os.environ.items() if not k.endswith(drop) and not k.startswith(("CADDIE_", "PI_"))
    }
    env["HOME"] = str(home)
    return env


def run_both(
    tmp_path: Path,
    agent: Path,
    llm: fl.FakeLLM,
    replies: list[fl.Reply],
    args: list[str],
    extra_env: dict[str, str] | None = None,
) -> tuple[list[fl.RecordedRequest], list[fl.RecordedRequest]]:
    """Run caddie, then Pi, on the same agent folder and project; each one's requests to the fake."""
    node = require_pi()
    # caddie's bundled extensions add tools of their own; both agents get exactly the built-in ones.
    (agent / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan", "goal"]}))
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "notes.txt").write_text("the answer is 42\n")
    env = {**clean_env(tmp_path / "home"), **(extra_env or {})}
    results = []
    for who in ("caddie", "pi"):
        llm.clear()
        llm.requests.clear()
        llm.push(*replies)
        if who == "caddie":
            cmd = [sys.executable, "-m", "caddie", "-p", "--no-session", "--no-context-files"]
            run_env = {**env, "CADDIE_DIR": str(agent.parent), "PYTHONPATH": str(REPO / "src")}
        else:
            pi_cli = PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
            cmd = [
                node,
                str(pi_cli),
                "-p",
                "--no-session",
                "--no-context-files",
                "--no-skills",
                "--no-extensions",
            ]
            run_env = {**env, "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
        proc = subprocess.run(
            [*cmd, *args], cwd=project, env=run_env, capture_output=True, text=True, timeout=180
        )
        assert proc.returncode == 0, f"{who}: {proc.stderr[-3000:]}"
        results.append(list(llm.llm_requests))
    return results[0], results[1]


def headers(request: fl.RecordedRequest) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k in IDENTITY_HEADERS}


def without_system_prompt_text(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the second system block's text (each agent's own system prompt) blanked."""
    copy = json.loads(json.dumps(body))
    for block in copy.get("system", [])[1:]:
        block["text"] = "<system prompt>"
    return copy


def test_a_claude_pro_max_login_sends_claude_codes_request_as_pi_does(tmp_path: Path) -> None:
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    token = "sk-ant-oat01-pi-written-login-token-0123456789"
    expires = int(time.time() * 1000) + 3_600_000
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "anthropic": {
                    "type": "oauth",
                    "refresh": "sk-ant-ort01-refresh-0123",
                    "access": token,
                    "expires": expires,
                }
            }
        )
    )
    with fl.FakeLLM() as llm:
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": llm.url}}}))
        replies = [
            fl.tool_call("Read", {"path": "notes.txt"}, id="toolu_01"),
            fl.text("It says 42."),
        ]
        args = [
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "off",
            "--tools",
            "read,bash",
            "What do the notes say?",
        ]
        caddie, pi = run_both(tmp_path, agent, llm, replies, args)

    assert len(caddie) == len(pi) == 2
    for ours, theirs in zip(caddie, pi, strict=True):
        assert headers(ours) == headers(theirs)
        assert without_system_prompt_text(ours.body) == without_system_prompt_text(theirs.body)
    first = caddie[0]
    assert first.headers["authorization"] == f"Bearer {token}" and "x-api-key" not in first.headers
    assert first.headers["anthropic-beta"].startswith("claude-code-20250219,oauth-2025-04-20")
    assert first.headers["user-agent"] == "claude-cli/2.1.75" and first.headers["x-app"] == "cli"
    assert first.body["system"][0]["text"] == "You are Claude Code, Anthropic's official CLI for Claude."
    assert [t["name"] for t in first.body["tools"]] == ["Read", "Bash"]
    # The call came back as Read, ran as caddie's read, and is sent back under Claude Code's name.
    second = caddie[1].body["messages"]
    assert second[1]["content"][0]["name"] == "Read"
    assert "the answer is 42" in json.dumps(second[2])


def codex_access_token(account: str) -> str:
    def part(data: dict[str, Any]) -> str:
        import base64

        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'https://api.openai.com/auth': {'chatgpt_account_id': account}})}.sig"


CODEX_HEADERS = (
    "authorization",
    "chatgpt-account-id",
    "originator",
    "openai-beta",
    "accept",
    "content-type",
    "session-id",
    "x-client-request-id",
)


def test_a_chatgpt_login_sends_the_codex_request_as_pi_does(tmp_path: Path) -> None:
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    token = codex_access_token("acct-pi-1234")
    login = {
        "type": "oauth",
        "access": token,
        "refresh": "rt-codex",
        "expires": int(time.time() * 1000) + 3_600_000,
        "accountId": "acct-pi-1234",
    }
    (agent / "auth.json").write_text(json.dumps({"openai-codex": login}))
    with fl.FakeLLM() as llm:
        (agent / "models.json").write_text(
            json.dumps({"providers": {"openai-codex": {"baseUrl": f"{llm.url}/backend-api"}}})
        )
        replies = [
            fl.Reply(
                thinking="Look at the notes first.",
                tool_calls=[fl.ToolCallSpec("read", {"path": "notes.txt"}, "call_1")],
                encrypted_reasoning="gAAAA-encrypted-codex-reasoning",
            ),
            fl.text("It says 42."),
        ]
        args = [
            "--model",
            "openai-codex/gpt-5.5",
            "--thinking",
            "high",
            "--tools",
            "read,bash",
            "What do the notes say?",
        ]
        caddie, pi = run_both(tmp_path, agent, llm, replies, args)

    assert len(caddie) == len(pi) == 2
    for ours, theirs in zip(caddie, pi, strict=True):
        assert ours.path == theirs.path == "/backend-api/codex/responses"
        session_free = {
            k: v
            for k, v in ours.headers.items()
            if k in CODEX_HEADERS and k not in ("session-id", "x-client-request-id")
        }
        assert session_free == {
            k: v
            for k, v in theirs.headers.items()
            if k in CODEX_HEADERS and k not in ("session-id", "x-client-request-id")
        }
        assert ours.headers.get("session-id") == ours.body.get("prompt_cache_key")
        assert theirs.headers.get("session-id") == theirs.body.get("prompt_cache_key")
        ours_body = {k: v for k, v in ours.body.items() if k not in ("instructions", "prompt_cache_key")}
        theirs_body = {k: v for k, v in theirs.body.items() if k not in ("instructions", "prompt_cache_key")}
        assert ours_body == theirs_body
    first = caddie[0]
    assert first.headers["authorization"] == f"Bearer {token}"
    assert first.headers["chatgpt-account-id"] == "acct-pi-1234" and first.headers["originator"] == "pi"
    assert first.body["store"] is False and first.body["text"] == {"verbosity": "low"}
    assert first.body["reasoning"] == {"effort": "high", "summary": "auto"}
    replayed = [i for i in caddie[1].body["input"] if i.get("type") == "reasoning"]
    assert replayed and replayed[0]["encrypted_content"] == "gAAAA-encrypted-codex-reasoning"


def test_over_the_websocket_caddie_sends_pis_messages_and_continuations(tmp_path: Path) -> None:
    from tests.support.fake_codex_ws import FakeCodexWebSocket

    require_pi()
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    token = codex_access_token("acct-ws-1")
    login = {
        "type": "oauth",
        "access": token,
        "refresh": "rt",
        "expires": int(time.time() * 1000) + 3_600_000,
        "accountId": "acct-ws-1",
    }
    (agent / "auth.json").write_text(json.dumps({"openai-codex": login}))
    runs: list[tuple[list[dict[str, Any]], list[dict[str, str]]]] = []
    for who in ("caddie", "pi"):
        with FakeCodexWebSocket() as ws, fl.FakeLLM() as llm:
            ws.replies = [fl.tool_call("read", {"path": "notes.txt"}, id="call_1"), fl.text("It says 42.")]
            (agent / "models.json").write_text(
                json.dumps({"providers": {"openai-codex": {"baseUrl": ws.url}}})
            )
            args = ["--model", "openai-codex/gpt-5.5", "--thinking", "low", "--tools", "read", "Notes?"]
            caddie, pi = run_both_one(tmp_path, agent, llm, who, args)
            assert caddie == pi == []  # nothing went over SSE
            runs.append((list(ws.messages), [h for _, h in ws.handshakes]))
    (ours, our_handshakes), (theirs, their_handshakes) = runs
    assert len(our_handshakes) == len(their_handshakes) == 1
    for key in ("authorization", "chatgpt-account-id", "originator", "openai-beta"):
        assert our_handshakes[0][key] == their_handshakes[0][key]
    assert len(ours) == len(theirs) == 2
    drop = ("instructions", "prompt_cache_key")
    for a, b in zip(ours, theirs, strict=True):
        assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}
    assert ours[1]["previous_response_id"] == "resp_ws_1"


def run_both_one(
    tmp_path: Path, agent: Path, llm: fl.FakeLLM, who: str, args: list[str]
) -> tuple[list[fl.RecordedRequest], list[fl.RecordedRequest]]:
    """Run one agent (``who``) on the agent folder; its SSE requests (as both tuple members)."""
    node = require_pi()
    (agent / "settings.json").write_text(json.dumps({"disabledExtensions": ["mulligan", "goal"]}))
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "notes.txt").write_text("the answer is 42\n")
    env = clean_env(tmp_path / "home")
    if who == "caddie":
        cmd = [sys.executable, "-m", "caddie", "-p", "--no-session", "--no-context-files"]
        run_env = {**env, "CADDIE_DIR": str(agent.parent), "PYTHONPATH": str(REPO / "src")}
    else:
        pi_cli = PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
        cmd = [
            node,
            str(pi_cli),
            "-p",
            "--no-session",
            "--no-context-files",
            "--no-skills",
            "--no-extensions",
        ]
        run_env = {**env, "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}
    proc = subprocess.run(
        [*cmd, *args], cwd=project, env=run_env, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, f"{who}: {proc.stderr[-3000:]}"
    return list(llm.llm_requests), list(llm.llm_requests)


COPILOT_HEADERS = (
    "authorization",
    "x-initiator",
    "openai-intent",
    "copilot-vision-request",
    "editor-version",
    "editor-plugin-version",
    "copilot-integration-id",
    "user-agent",
    "anthropic-beta",
)


def test_copilot_requests_carry_pis_copilot_headers_on_every_api(tmp_path: Path) -> None:
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    (agent / "auth.json").write_text("{}")
    token = "tid=copilot-token-0123456789;exp=9999999999"
    for model_id in ("claude-sonnet-4.5", "gpt-5.5", "gpt-4.1"):
        with fl.FakeLLM() as llm:
            base = llm.url if model_id.startswith("claude") else llm.openai_base_url
            (agent / "models.json").write_text(
                json.dumps({"providers": {"github-copilot": {"baseUrl": base}}})
            )
            replies = [fl.tool_call("read", {"path": "notes.txt"}, id="call_1"), fl.text("It says 42.")]
            args = ["--model", f"github-copilot/{model_id}", "--thinking", "off", "--tools", "read", "Notes?"]
            caddie, pi = run_both(
                tmp_path, agent, llm, replies, args, extra_env={"COPILOT_GITHUB_TOKEN": token}
            )
        assert len(caddie) == len(pi) == 2, model_id
        for ours, theirs in zip(caddie, pi, strict=True):
            mine = {k: v for k, v in ours.headers.items() if k in COPILOT_HEADERS}
            pis = {k: v for k, v in theirs.headers.items() if k in COPILOT_HEADERS}
            assert mine == pis, model_id
        assert [r.headers["x-initiator"] for r in caddie] == ["user", "agent"]
        assert caddie[0].headers["authorization"] == f"Bearer {token}"


SUBSCRIPTION_HEADERS = ("authorization", "x-api-key", "content-type", "accept")


def write_login(agent: Path, provider: str, access: str, **extra: Any) -> None:
    login = {"type": "oauth", "access": access, "refresh": "rt-" + provider, **extra}
    login.setdefault("expires", int(time.time() * 1000) + 3_600_000)
    (agent / "auth.json").write_text(json.dumps({provider: login}))


def test_xai_kimi_and_openrouter_logins_send_what_pi_sends(tmp_path: Path) -> None:
    """A Pi-written xAI (SuperGrok/X Premium), Kimi Code and OpenRouter login each reach the provider's API
    with the same auth headers and bodies from both agents."""
    require_pi()
    cases = [
        ("xai", "grok-4.3", "xai-oauth-access-token-0123", {}, "openai"),
        ("kimi-coding", "kimi-for-coding", "kimi-oauth-access-token-0123", {}, "anthropic"),
        (
            "openrouter",
            "anthropic/claude-sonnet-4.5",
            "sk-or-v1-minted-by-oauth-0123",
            {"refresh": "", "expires": 9007199254740991},
            "openai",
        ),
    ]
    for provider, model_id, access, extra, flavour in cases:
        agent = tmp_path / provider / "caddie-home" / "agent"
        agent.mkdir(parents=True)
        write_login(agent, provider, access, **extra)
        with fl.FakeLLM() as llm:
            base = llm.url if flavour == "anthropic" else llm.openai_base_url
            (agent / "models.json").write_text(json.dumps({"providers": {provider: {"baseUrl": base}}}))
            replies = [fl.tool_call("read", {"path": "notes.txt"}, id="call_1"), fl.text("It says 42.")]
            args = ["--model", f"{provider}/{model_id}", "--thinking", "off", "--tools", "read", "Notes?"]
            caddie, pi = run_both(tmp_path / provider, agent, llm, replies, args)
        assert len(caddie) == len(pi) == 2, provider
        for ours, theirs in zip(caddie, pi, strict=True):
            assert ours.path == theirs.path, provider
            mine = {k: v for k, v in ours.headers.items() if k in SUBSCRIPTION_HEADERS}
            pis = {k: v for k, v in theirs.headers.items() if k in SUBSCRIPTION_HEADERS}
            assert mine == pis, provider
            assert without_instructions(ours.body) == without_instructions(theirs.body), provider
        assert caddie[0].headers["authorization"] == f"Bearer {access}", provider


def without_instructions(body: dict[str, Any]) -> dict[str, Any]:
    """A body with each agent's own system prompt blanked, wherever the API puts it, and without the
    session id each agent made up (``prompt_cache_key``)."""
    copy = json.loads(json.dumps(body))
    copy.pop("prompt_cache_key", None)
    if "instructions" in copy:
        copy["instructions"] = "<system prompt>"
    for block in copy.get("system", []) if isinstance(copy.get("system"), list) else []:
        block["text"] = "<system prompt>"
    if isinstance(copy.get("system"), str):
        copy["system"] = "<system prompt>"
    for item in copy.get("messages", []) + copy.get("input", []):
        if isinstance(item, dict) and item.get("role") in ("system", "developer"):
            item["content"] = "<system prompt>"
    return copy


NO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
"""A gateway reports Pi's whole usage, cost included (a prepaid subscription: nothing per token)."""
PI_EVENTS_TOOL: list[dict[str, Any]] = [
    {"type": "start"},
    {"type": "toolcall_start", "contentIndex": 0, "id": "call_1", "toolName": "read"},
    {"type": "toolcall_delta", "contentIndex": 0, "delta": '{"path": "notes.txt"}'},
    {
        "type": "toolcall_end",
        "contentIndex": 0,
        "toolCall": {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}},
    },
    {
        "type": "done",
        "reason": "toolUse",
        "usage": {
            "input": 10,
            "output": 5,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 15,
            "cost": NO_COST,
        },
        "responseId": "resp-1",
    },
]
PI_EVENTS_TEXT: list[dict[str, Any]] = [
    {"type": "start"},
    {"type": "text_start", "contentIndex": 0},
    {"type": "text_delta", "contentIndex": 0, "delta": "It says 42."},
    {"type": "text_end", "contentIndex": 0, "content": "It says 42."},
    {
        "type": "done",
        "reason": "stop",
        "usage": {
            "input": 20,
            "output": 4,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 24,
            "cost": NO_COST,
        },
        "responseId": "resp-2",
    },
]


def test_a_radius_gateway_login_sends_pis_own_protocol_as_pi_does(tmp_path: Path) -> None:
    """A models.json Radius gateway (``"oauth": "radius"``) with a Pi-written login and the catalogue Pi
    stored in models-store.json: both agents list the gateway's model and send the same pi-messages
    request (path, bearer token, Pi's JSON context) to it."""
    from tests.ai.test_pi_messages import Gateway

    require_pi()
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    gateway = Gateway()
    try:
        model = {
            "id": "gw-model",
            "name": "Gateway model",
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 64000,
            "maxTokens": 4000,
            "api": "pi-messages",
            "provider": "corp",
            "baseUrl": f"{gateway.url}/v1",
        }
        now = int(time.time() * 1000)
        (agent / "models-store.json").write_text(json.dumps({"corp": {"models": [model], "checkedAt": now}}))
        (agent / "models.json").write_text(
            json.dumps({"providers": {"corp": {"baseUrl": gateway.url, "oauth": "radius"}}})
        )
        write_login(agent, "corp", "radius-access-token-0123")
        runs = []
        for who in ("caddie", "pi"):
            gateway.requests.clear()
            gateway.replies = [PI_EVENTS_TOOL, PI_EVENTS_TEXT]
            args = ["--model", "corp/gw-model", "--thinking", "off", "--tools", "read", "Notes?"]
            with fl.FakeLLM() as unused:
                run_both_one(tmp_path, agent, unused, who, args)
            runs.append(list(gateway.requests))
    finally:
        gateway.close()
    ours, theirs = runs
    assert len(ours) == len(theirs) == 2
    for (our_path, our_headers, our_body), (their_path, their_headers, their_body) in zip(
        ours, theirs, strict=True
    ):
        assert our_path == their_path == "/v1/messages"
        for key in ("authorization", "content-type", "accept"):
            assert our_headers.get(key) == their_headers.get(key), key
        for body in (our_body, their_body):
            body["context"]["systemPrompt"] = "<system prompt>"
            body["options"].pop("sessionId", None)  # each agent's own session
            for message in body["context"]["messages"]:
                message.pop("timestamp", None)
        assert our_body["options"] == their_body["options"]
        assert json.dumps(our_body["context"]["tools"]) == json.dumps(their_body["context"]["tools"])
        assert our_body["context"]["messages"] == their_body["context"]["messages"]
        assert our_body == their_body
    assert ours[0][1]["authorization"] == "Bearer radius-access-token-0123"


def test_anthropics_token_variables_send_what_pi_sends(tmp_path: Path) -> None:
    """``ANTHROPIC_OAUTH_TOKEN`` (a Claude Pro/Max token: Claude Code's request) and ``ANTHROPIC_AUTH_TOKEN``
    (a bearer token for a gateway), with nothing stored for Anthropic."""
    require_pi()
    cases = {
        "ANTHROPIC_OAUTH_TOKEN": "sk-ant-oat01-from-the-environment-0123",
        "ANTHROPIC_AUTH_TOKEN": "gateway-bearer-token-0123",
    }
    for variable, token in cases.items():
        agent = tmp_path / variable / "caddie-home" / "agent"
        agent.mkdir(parents=True)
        (agent / "auth.json").write_text("{}")
        with fl.FakeLLM() as llm:
            (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": llm.url}}}))
            replies = [fl.text("Hello.")]
            args = ["--model", "anthropic/claude-sonnet-4-5", "--thinking", "off", "--tools", "read", "Hi"]
            caddie, pi = run_both(tmp_path / variable, agent, llm, replies, args, extra_env={variable: token})
        assert len(caddie) == len(pi) == 1, variable
        if variable == "ANTHROPIC_OAUTH_TOKEN":  # Claude Code's identity, pinned version included
            assert headers(caddie[0]) == headers(pi[0]), variable
        else:  # each agent's own user agent and its SDK's API version; the auth is the same
            auth = ("authorization", "x-api-key", "anthropic-beta", "x-app")
            assert {k: caddie[0].headers.get(k) for k in auth} == {k: pi[0].headers.get(k) for k in auth}
        assert without_instructions(caddie[0].body) == without_instructions(pi[0].body), variable
        assert caddie[0].headers["authorization"] == f"Bearer {token}", variable
        first_block = caddie[0].body["system"][0]["text"]
        identity = "You are Claude Code, Anthropic's official CLI for Claude."
        assert (first_block == identity) == (variable == "ANTHROPIC_OAUTH_TOKEN"), variable


def test_a_pi_written_copilot_login_reaches_its_tokens_host_as_pi_does(tmp_path: Path) -> None:
    """A GitHub Copilot login as Pi stores it (the GitHub token as ``refresh``, a Copilot token whose
    ``proxy-ep`` names the API host, the account's ``availableModelIds``): both agents send to that host —
    here a fake on https://127.0.0.1 — with the same headers and bodies."""
    from tests.support.tls import local_tls

    require_pi()
    tls = local_tls(tmp_path / "tls")
    agent = tmp_path / "caddie-home" / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text("{}")
    env = {"SSL_CERT_FILE": str(tls.ca_file), "NODE_EXTRA_CA_CERTS": str(tls.ca_file)}
    for model_id in ("claude-sonnet-4.5",):  # the other APIs' Copilot headers: the test above
        with fl.FakeLLM(tls=tls.server) as llm:
            token = f"tid=copilot-pi-login;exp=9999999999;proxy-ep=127.0.0.1:{llm.port};"
            write_login(
                agent,
                "github-copilot",
                token,
                refresh="ghu_github-token-0123",
                expires=9_999_999_999_000,
                availableModelIds=["gpt-4.1", "claude-sonnet-4.5"],
            )
            replies = [fl.tool_call("read", {"path": "notes.txt"}, id="call_1"), fl.text("It says 42.")]
            args = ["--model", f"github-copilot/{model_id}", "--thinking", "off", "--tools", "read", "Notes?"]
            caddie, pi = run_both(tmp_path, agent, llm, replies, args, extra_env=env)
        assert len(caddie) == len(pi) == 2, model_id
        for ours, theirs in zip(caddie, pi, strict=True):
            assert ours.path == theirs.path, model_id
            mine = {k: v for k, v in ours.headers.items() if k in COPILOT_HEADERS}
            pis = {k: v for k, v in theirs.headers.items() if k in COPILOT_HEADERS}
            assert mine == pis, model_id
            assert without_instructions(ours.body) == without_instructions(theirs.body), model_id
        assert caddie[0].headers["authorization"] == f"Bearer {token}"

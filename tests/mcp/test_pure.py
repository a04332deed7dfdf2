"""The mcp extension's pure parts: configuration, names, conversion, schemas, forms, sampling, prompt
arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from caddie.extensions.api import AssistantMessage, ImageContent, TextContent
from caddie.extensions.bundled.mcp import convert, elicitation
from caddie.extensions.bundled.mcp.config import collect_servers, expand
from caddie.extensions.bundled.mcp.naming import command_name, find_mentions, tool_name
from caddie.extensions.bundled.mcp.runtime import prompt_arguments
from caddie.extensions.bundled.mcp.sampling import sampling_reply, sampling_request
from caddie.extensions.bundled.mcp.schema import input_schema
from caddie.extensions.bundled.mcp.transports import secret_env_values

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_a_claude_code_mcp_json_parses_as_claude_code_reads_it() -> None:
    mcp_json = json.loads(
        """{"mcpServers": {
          "github": {"type": "http", "url": "https://api.example.com/mcp",
                     "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
          "db": {"command": "npx", "args": ["-y", "db-server", "--root=${ROOT:-/srv}"], "env": {"DEBUG": "1"}},
          "old": {"type": "sse", "url": "http://localhost:9000/sse"},
          "bad": {"args": ["x"]},
          "typo": {"command": "x", "type": "websocket"}
        }}"""
    )
    found = collect_servers({}, {}, mcp_json, trusted=True, env={"GH_TOKEN": "t0k3n-value"})
    by = {s.name: s for s in found.servers}
    assert by["github"].transport == "http" and dict(by["github"].headers) == {
        "Authorization": "Bearer t0k3n-value"
    }
    assert by["db"].command == "npx" and by["db"].args == ("-y", "db-server", "--root=/srv")
    assert dict(by["db"].env) == {"DEBUG": "1"} and by["db"].source == "project .mcp.json"
    assert by["old"].transport == "sse"
    assert by["bad"].problem == "needs a command (or a url)"
    assert by["typo"].problem == 'unknown type "websocket" (use stdio, http or sse)'
    assert all(s.problem is None for n, s in by.items() if n not in ("bad", "typo"))


def test_precedence_trust_and_switches() -> None:
    user = {
        "mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}},
        "disabledMcpServers": ["c"],
    }
    project = {"mcpServers": {"a": {"command": "project-a"}}}
    mcp_json = {
        "mcpServers": {"a": {"command": "json-a"}, "b": {"command": "json-b"}, "c": {"url": "http://x"}}
    }
    trusted = collect_servers(user, project, mcp_json, trusted=True, env={})
    assert {s.name: (s.command or s.url, s.origin, s.enabled) for s in trusted.servers} == {
        "a": ("project-a", "project", True),
        "b": ("json-b", "mcp.json", True),
        "c": ("http://x", "mcp.json", False),
    }
    untrusted = collect_servers(user, project, mcp_json, trusted=False, env={})
    assert [s.name for s in untrusted.servers] == []  # every name was overridden by the project
    assert sorted(s.name for s in untrusted.untrusted) == ["a", "b", "c"]
    only_user = collect_servers(user, {}, None, trusted=False, env={})
    assert [(s.name, s.command) for s in only_user.servers] == [("a", "user-a"), ("b", "user-b")]


def test_variables_timeouts_and_bad_entries() -> None:
    missing: list[str] = []
    assert expand("${A}-${B:-dflt}-${C}-${D}-${C:-empty}", {"A": "1", "C": ""}, missing) == "1-dflt---empty"
    assert missing == ["D"]
    found = collect_servers(
        {"mcpServers": {"x": {"command": "run", "timeout": -5, "startupTimeout": 2500}, "y": "nope"}},
        {},
        None,
        trusted=False,
        env={},
    )
    x = found.servers[0]
    assert (x.timeout_ms, x.startup_timeout_ms) == (600_000, 2500)
    assert any("timeout must be a positive number" in w for w in found.warnings)
    assert any('"y" (user settings) must be an object' in w for w in found.warnings)
    assert collect_servers({"mcpServers": []}, {}, None, trusted=True, env={}).warnings == [
        "user settings: mcpServers must be an object of servers by name; ignored"
    ]


def test_names_and_mentions() -> None:
    assert tool_name("git hub", "create.issue") == "mcp__git_hub__create_issue"
    long_a, long_b = tool_name("s", "x" * 80), tool_name("s", "x" * 79 + "y")
    assert len(long_a) == 64 and long_a != long_b
    assert command_name("everything", "simple-prompt") == "mcp__everything__simple-prompt"
    text = "see @docs:file:///a/b.md, and mail me@home:x or @other:y and @docs:notes://today."
    found = find_mentions(text, {"docs", "home"})
    assert [(m.server, m.uri) for m in found] == [("docs", "file:///a/b.md"), ("docs", "notes://today")]


def test_results_convert_to_caddie_content() -> None:
    result = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "image", "data": "!!", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///x", "name": "x", "description": "a file"},
            {"type": "resource", "resource": {"uri": "mem://t", "text": "inline"}},
            {
                "type": "resource",
                "resource": {"uri": "mem://b", "blob": "AAAA", "mimeType": "application/zip"},
            },
        ]
    }
    converted = convert.tool_result(result)
    assert converted.content[0] == TextContent("a\nb")
    assert converted.content[1] == ImageContent(PNG, "image/png")
    assert converted.content[2] == TextContent(
        "[image (image/png, 1 bytes) the model cannot be shown]\n[audio (audio/wav, 3 bytes) not shown]\n"
        "[resource link: file:///x 'x' — a file]\ninline\n"
        "[binary resource mem://b (application/zip, 3 bytes) not shown]"
    )
    structured = convert.tool_result({"content": [], "structuredContent": {"t": 21}, "isError": True})
    assert structured.is_error and structured.content == [TextContent('{\n  "t": 21\n}')]


def test_schemas_are_sanitized() -> None:
    good = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert input_schema(good) == (good, None)
    assert input_schema({"properties": {"a": {"type": "string"}}})[0]["type"] == "object"
    for bad, why in (
        (None, "not an object"),
        ({"type": "array"}, "type 'array'"),
        ({"type": "object", "properties": {"a": {"type": 5}}}, "is invalid"),
    ):
        schema, problem = input_schema(bad)
        assert schema["additionalProperties"] is True and problem is not None and why in problem


def test_forms_become_questions_and_answers() -> None:
    schema = {
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email", "title": "Email"},
            "n": {"type": "integer", "minimum": 1, "maximum": 3},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "tags": {
                "type": "array",
                "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
            },
        },
        "required": ["email"],
    }
    qs = {q.key: q for q in elicitation.questions(schema)}
    assert [q.kind for q in qs.values()] == ["text", "integer", "boolean", "choice", "choices"]
    assert elicitation.parse(qs["email"], "a@b.co") == "a@b.co"
    assert elicitation.parse(qs["color"], "Green") == "g"
    assert elicitation.parse(qs["tags"], "A, B") == ["a", "b"]
    assert elicitation.parse(qs["ok"], "yes") is True
    for key, answer, error in (
        ("email", "nope", "Email must be an email address"),
        ("n", "9", "n must be at most 3"),
    ):
        try:
            elicitation.parse(qs[key], answer)
        except elicitation.BadAnswer as e:
            assert str(e) == error
        else:
            raise AssertionError(f"{answer!r} was accepted")


def test_sampling_round_trip() -> None:
    request = sampling_request(
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": {"type": "text", "text": "hello"}},
                {"role": "user", "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]},
            ],
            "systemPrompt": "be brief",
            "maxTokens": 20,
        }
    )
    assert request.system_prompt == "be brief" and request.max_tokens == 20
    assert request.preview == "(system: be brief)\nhi\nassistant: hello\n"
    reply = AssistantMessage([TextContent("ok")], api="x", provider="p", model="m", stop_reason="length")
    assert sampling_reply(reply) == {
        "role": "assistant",
        "content": {"type": "text", "text": "ok"},
        "model": "p/m",
        "stopReason": "maxTokens",
    }


def test_prompt_arguments() -> None:
    args: list[dict[str, Any]] = [{"name": "path", "required": True}, {"name": "focus"}]
    assert prompt_arguments(args, "a.py look for races") == (
        {"path": "a.py", "focus": "look for races"},
        None,
    )
    assert prompt_arguments(args, "focus=speed 'b c.py'") == ({"focus": "speed", "path": "b c.py"}, None)
    assert prompt_arguments(args, "")[1] == "missing path (usage: <path> <focus>)"
    assert prompt_arguments([], "x")[1] == "takes no more arguments (none)"


def test_mcp_json_problem_is_one_line(tmp_path: Path) -> None:
    from caddie.extensions.bundled.mcp.runtime import read_mcp_json

    (tmp_path / ".mcp.json").write_text("{oops")
    data, problem = read_mcp_json(str(tmp_path))
    assert (
        data is None
        and problem is not None
        and problem.startswith(f"{tmp_path / '.mcp.json'} could not be read")
    )


def test_server_env_secrets_follow_the_one_list_of_secret_looking_variables() -> None:
    env = (
        ("OPENAI_API_KEY", "sk-1"),
        ("PGPASSWORD", "pg-pass"),
        ("GITHUB_PAT", "ghp-pat"),
        ("NPM_AUTH", "npm-auth"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/creds.json"),
        ("DATABASE_URL", "postgres://app:pw@db/app"),
        ("DEBUG", "1"),
        ("PATH", "/usr/bin"),
        ("GIT_AUTHOR_NAME", "Ada"),
        ("PROXY_URL", "http://proxy:3128"),
    )
    assert secret_env_values(env) == [
        "sk-1",
        "pg-pass",
        "ghp-pat",
        "npm-auth",
        "/creds.json",
        "postgres://app:pw@db/app",
    ]

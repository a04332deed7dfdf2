"""caddie as a library (``caddie.sdk``): a session made with one call, its events, prompts, tools of the
program's own, extensions given as functions; through the faux model in process, through the real
``openai`` SDK against the fake server, and the example program as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from caddie.config.paths import agent_dir
from caddie.sdk import (
    AgentSettledEvent,
    AssistantMessage,
    ConfigurationError,
    ContextEvent,
    ContextResult,
    ExtensionAPI,
    ExtensionContext,
    FauxProvider,
    MessageUpdateEvent,
    NoticeEvent,
    SessionEvent,
    TextContent,
    ToolDefinition,
    ToolExecutionEndEvent,
    ToolResult,
    ToolResultMessage,
    UserMessage,
    create_session,
    faux_message,
    faux_tool_call,
    list_sessions,
    open_session,
    replace,
    text_result,
)
from tests.resources.helpers import write_skill, write_template
from tests.support import fake_llm as fl

ROOT = Path(__file__).resolve().parents[2]


class Greeting(BaseModel):
    name: str


def greet_tool(calls: list[str]) -> ToolDefinition:
    async def execute(call_id: str, args: Greeting, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        calls.append(args.name)
        return text_result(f"Hello, {args.name}!")

    return ToolDefinition(name="greet", description="Greet someone.", parameters=Greeting, execute=execute)


def no_bundled_extensions() -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal"]}))


async def test_a_session_streams_events_runs_a_program_tool_and_an_extension_function(tmp_path: Path) -> None:
    no_bundled_extensions()
    faux = FauxProvider()
    faux.set_responses([faux_message(faux_tool_call("greet", {"name": "Ada"})), faux_message("Greeted Ada.")])
    calls: list[str] = []
    seen: list[str] = []
    events: list[SessionEvent] = []

    def watcher(api: ExtensionAPI) -> None:
        def on_context(event: ContextEvent, ctx: ExtensionContext) -> ContextResult:
            seen.append(f"context x{len(event.messages)}")
            first = event.messages[0]
            assert isinstance(first, UserMessage)
            return ContextResult(
                messages=[replace(first, content=[TextContent("(edited) hi")]), *event.messages[1:]]
            )

        def on_shutdown(event: Any, ctx: ExtensionContext) -> None:
            seen.append("shutdown")

        api.on("context", on_context)
        api.on("session_shutdown", on_shutdown)

    async with open_session(
        tmp_path,
        model="faux/faux-1",
        stream_fn=faux.stream,
        custom_tools=[greet_tool(calls)],
        extensions=[watcher],
        on_event=events.append,
    ) as session:
        assert "greet" in [t.name for t in session.state().tools]
        await session.prompt("hi")
        assert calls == ["Ada"]
        assert [m.role for m in session.messages] == ["user", "assistant", "toolResult", "assistant"]
        result = session.messages[2]
        assert isinstance(result, ToolResultMessage) and result.content == [TextContent("Hello, Ada!")]
        assert session.messages[0] == UserMessage([TextContent("hi")], session.messages[0].timestamp)
    assert seen == ["context x1", "context x3", "shutdown"]
    assert [faux.requests[i].messages[0].content for i in (0, 1)] == [[TextContent("(edited) hi")]] * 2
    deltas = [
        e.assistant_message_event.delta
        for e in events
        if isinstance(e, MessageUpdateEvent) and e.assistant_message_event.type == "text_delta"
    ]
    assert "".join(deltas) == "Greeted Ada."
    assert any(isinstance(e, ToolExecutionEndEvent) and e.tool_name == "greet" for e in events)
    assert isinstance(events[-1], AgentSettledEvent)


async def test_through_the_real_sdk_against_a_server_a_new_session_file_is_written(tmp_path: Path) -> None:
    no_bundled_extensions()
    with fl.FakeLLM() as llm:
        llm.write_models_json(agent_dir(), provider="fake", model_id="fake-model")
        llm.push(fl.text("The answer is 42."))
        session = await create_session(tmp_path, model="fake/fake-model", session="new")
        try:
            await session.prompt("What is the answer?")
            answer = session.messages[-1]
            state = session.state()
        finally:
            await session.shutdown()
        [request] = llm.llm_requests
    assert request.messages[-1]["content"] in (
        "What is the answer?",
        [{"type": "text", "text": "What is the answer?"}],
    )
    assert isinstance(answer, AssistantMessage) and answer.text() == "The answer is 42."
    assert state.session_file is not None
    lines = [json.loads(line) for line in Path(state.session_file).read_text().splitlines()]
    assert [line["message"]["role"] for line in lines if line.get("type") == "message"] == [
        "user",
        "assistant",
    ]


async def test_set_up_warnings_reach_the_subscriber_before_the_session_starts(tmp_path: Path) -> None:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal"], "tools": ["read", "teleport"]}))
    notices: list[str] = []

    def collect(event: SessionEvent) -> None:
        if isinstance(event, NoticeEvent):
            notices.append(event.message)

    faux = FauxProvider()
    async with open_session(
        tmp_path, model="faux/faux-1", stream_fn=faux.stream, on_event=collect
    ) as session:
        assert [t.name for t in session.state().tools] == ["read"]
    assert any("teleport" in n for n in notices)


async def test_settings_skills_templates_and_excluded_tools_are_options(tmp_path: Path) -> None:
    settings_file = agent_dir() / "settings.json"
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    written = {"disabledExtensions": ["mulligan", "goal"], "steeringMode": "all"}
    settings_file.write_text(json.dumps(written))
    write_skill(agent_dir() / "skills" / "found", "found", "Discovered.")
    mine = write_skill(tmp_path / "skills" / "mine", "mine", "Given by the program.")
    template = write_template(tmp_path / "prompts", "review", "Review $1 with care.")
    project, sessions = tmp_path / "project", tmp_path / "sessions"
    project.mkdir()
    faux = FauxProvider()
    faux.set_responses([faux_message("reviewed")])

    async with open_session(
        project,
        model="faux/faux-1",
        stream_fn=faux.stream,
        session="new",
        session_dir=sessions,
        settings={"compaction": {"enabled": False}, "followUpMode": "all"},
        skills=[mine.parent],
        discover_skills=False,
        prompt_templates=[template],
        exclude_tools=["bash", "greet"],
        custom_tools=[greet_tool([])],
    ) as session:
        state = session.state()
        assert (state.auto_compaction, state.follow_up_mode, state.steering_mode) == (False, "all", "all")
        assert [t.name for t in state.tools] == ["read", "edit", "write"]
        commands = {(c.name, c.kind) for c in session.commands(every_skill=True)}
        assert ("skill:mine", "skill") in commands and ("review", "prompt") in commands
        assert not any(name == "skill:found" for name, _ in commands)
        await session.prompt("/review src/")
        session_file = state.session_file
    assert faux.requests[0].messages[-1].content == [TextContent("Review src/ with care.")]
    assert json.loads(settings_file.read_text()) == written  # the overrides were never written
    [saved] = list_sessions(project, sessions)
    assert str(saved.path) == session_file and saved.first_message == "Review src/ with care."


async def test_a_model_that_does_not_exist_is_one_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as raised:
        await create_session(tmp_path, model="nowhere/no-such-model")
    assert "\n" not in str(raised.value) and "no-such-model" in str(raised.value)


def test_the_example_program_answers_with_its_own_tool_against_a_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model")
        (home / "agent" / "settings.json").write_text(
            json.dumps({"disabledExtensions": ["mulligan", "goal"]})
        )
        llm.push(fl.tool_call("count_lines", {"path": "notes.txt"}), fl.text("notes.txt has 3 lines."))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(CADDIE_DIR=str(home), CADDIE_OLLAMA_URL="http://127.0.0.1:9")
        done = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "sdk" / "ask.py"), "--model", "fake/fake-model",
             "--cwd", str(project), "How long is notes.txt?"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        second = llm.llm_requests[1].messages
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "notes.txt has 3 lines."
    assert "[count_lines]" in done.stderr
    assert any("notes.txt: 3 lines" in json.dumps(m) for m in second)


def test_the_example_program_says_what_to_do_when_there_is_no_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(tmp_path / "home"), CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "sdk" / "ask.py"), "--cwd", str(tmp_path), "hello?"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("ask: No model is configured.") and "Traceback" not in done.stderr

"""Pi's tool, input and prompt examples as Python twins (hello, structured-output, tool-override,
dynamic-tools, provider-payload, event-bus, input-transform, inline-bash, pirate), each loaded from
examples/extensions/ and exercised through a real session on the faux model."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.config.paths import agent_dir
from tests.examples.harness import with_example


def _results(run: object) -> list[ToolResultMessage]:
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)]  # type: ignore[attr-defined]


async def test_hello_greets_through_a_tool_call(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "hello.py")
    run.faux.set_responses([faux_message(faux_tool_call("hello", {"name": "Ada"})), faux_message("done")])
    await run.session.prompt("greet Ada")
    result = _results(run)[0]
    assert result.content[0].text == "Hello, Ada!" and result.details == {"greeted": "Ada"}  # type: ignore[union-attr]
    assert "hello" in [t.name for t in run.requests[0].tools or []]
    await run.session.shutdown("quit")


async def test_structured_output_ends_the_run_on_the_tool_call(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "structured_output.py")
    args = {"headline": "Ship it", "summary": "All green.", "actionItems": ["tag", "release"]}
    run.faux.set_responses([faux_message(faux_tool_call("structured_output", args)), faux_message("never")])
    await run.session.prompt("summarise")
    assert run.faux.call_count == 1
    result = _results(run)[0]
    assert result.content[0].text == "Saved structured output: Ship it"  # type: ignore[union-attr]
    assert result.details == args
    assert "Emit a final structured answer" in (run.requests[0].system_prompt or "")
    await run.session.shutdown("quit")


async def test_tool_override_replaces_read_logs_access_and_refuses_secrets(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / ".env").write_text("KEY=hunter2\n")
    run = await with_example(tmp_path, "tool_override.py")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("read", {"path": "a.txt", "offset": 2, "limit": 1}),
                    faux_tool_call("read", {"path": ".env"}),
                ]
            ),
            faux_message("done"),
        ]
    )
    await run.session.prompt("read")
    good, secret = _results(run)
    assert good.content[0].text == "two"  # type: ignore[union-attr]
    assert secret.content[0].text.startswith('Access denied: ".env"')  # type: ignore[union-attr]
    assert "hunter2" not in secret.content[0].text  # type: ignore[union-attr]
    log = (agent_dir() / "read-access.log").read_text()
    assert f"ALLOWED: {tmp_path / 'a.txt'}" in log and "BLOCKED" in log
    await run.session.prompt("/read-log")
    assert run.ui.notices[-1][0].startswith("Recent file access:")
    await run.session.shutdown("quit")


async def test_dynamic_tools_appear_at_start_and_on_command(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "dynamic_tools.py")
    assert "echo_session" in [t.name for t in run.session.state().tools]
    await run.session.prompt("/add-echo-tool Shout")
    await run.session.prompt("/add-echo-tool bad name!")
    run.faux.set_responses([faux_message(faux_tool_call("shout", {"message": "hi"})), faux_message("ok")])
    await run.session.prompt("echo")
    assert _results(run)[0].content[0].text == "[shout] hi"  # type: ignore[union-attr]
    assert {"echo_session", "shout"} <= {t.name for t in run.requests[0].tools or []}
    assert ("Registered dynamic tool: shout", "info") in run.ui.notices
    assert any("Usage: /add-echo-tool" in text for text, _ in run.ui.notices)
    await run.session.shutdown("quit")


async def test_provider_payload_logs_requests_and_responses(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "provider_payload.py")
    run.faux.set_responses([faux_message("hi")])
    await run.session.prompt("hello there")
    log = (tmp_path / ".caddie" / "provider-payload.log").read_text()
    assert "hello there" in log and "[200] {}" in log
    await run.session.shutdown("quit")


async def test_event_bus_notices_its_own_and_emitted_notifications(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "event_bus.py")
    await run.session.prompt("/emit the build is green")
    texts = [text for text, _ in run.ui.notices]
    assert "Event from event-bus-example: Session started" in texts
    assert "Event from /emit command: the build is green" in texts
    await run.session.shutdown("quit")


async def test_input_transform_rewrites_quick_and_answers_ping_without_the_model(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "input_transform.py")
    run.faux.set_responses([faux_message("short answer")])
    await run.session.prompt("ping")
    assert run.faux.call_count == 0 and ("pong", "info") in run.ui.notices
    await run.session.prompt("?quick what is a monad")
    assert run.request_texts() == ["Respond briefly in 1-2 sentences: what is a monad"]
    await run.session.shutdown("quit")


async def test_inline_bash_puts_command_output_into_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("")
    run = await with_example(tmp_path, "inline_bash.py")
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("Files: !{ls} and !{echo two}")
    assert run.request_texts() == ["Files: marker.txt and two"]
    assert run.ui.notices[-1][0].startswith("Expanded 2 inline command(s):")
    await run.session.shutdown("quit")


async def test_pirate_mode_changes_the_system_prompt_only_while_on(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "pirate.py")
    run.faux.set_responses([faux_message("plain"), faux_message("arrr")])
    await run.session.prompt("hi")
    await run.session.prompt("/pirate")
    await run.session.prompt("hi again")
    assert "PIRATE MODE" not in (run.requests[0].system_prompt or "")
    assert "PIRATE MODE" in (run.requests[1].system_prompt or "")
    assert ("Arrr! Pirate mode enabled!", "info") in run.ui.notices
    await run.session.shutdown("quit")

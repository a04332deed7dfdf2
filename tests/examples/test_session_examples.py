"""Pi's session, compaction and command examples as Python twins (git-checkpoint, custom-compaction,
trigger-compact, claude-rules, session-name, bookmark, send-user-message, shutdown-command), each loaded
from examples/extensions/ and exercised through a real session on the faux model."""

from __future__ import annotations

import subprocess
from pathlib import Path

from caddie.ai.messages import AssistantMessage, UserMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import SessionBeforeForkEvent
from caddie.extensions.loader import load_extensions, path_source
from caddie.session.entries import CompactionEntry, MessageEntry
from tests.compaction.harness import make_harness, reply
from tests.examples.harness import example, with_example


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


async def test_git_checkpoint_offers_to_restore_the_code_when_forking(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "app.py").write_text("v1\n")
    _git(tmp_path, "add", "app.py")
    _git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "v1")
    (tmp_path / "app.py").write_text("v2\n")  # uncommitted work the checkpoint keeps
    run = await with_example(tmp_path, "git_checkpoint.py", session="new")
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("bash", {"command": "echo v3 > app.py"})),
            faux_message("changed"),
        ]
    )
    await run.session.prompt("change it")
    assert (tmp_path / "app.py").read_text() == "v3\n"
    assert run.session.state().load_errors == []
    # the checkpoint taken before the second turn follows the tool result entry
    result_entry = next(
        e
        for e in run.session.store.entries()
        if isinstance(e, MessageEntry) and e.message.role == "toolResult"
    )
    _git(tmp_path, "checkout", "-q", "app.py")  # back to v1, so a restored stash applies cleanly
    # agent_settled cleared the checkpoints: a fork after the run offers nothing
    assert await run.session.fork(result_entry.id, position="at")
    assert run.ui.asked == [] and (tmp_path / "app.py").read_text() == "v1\n"
    await run.session.shutdown("quit")


async def test_git_checkpoint_restores_the_code_of_a_checkpoint_when_forking_there(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "app.py").write_text("v1\n")
    _git(tmp_path, "add", "app.py")
    _git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "v1")
    (tmp_path / "app.py").write_text("v2\n")
    run = await with_example(tmp_path, "git_checkpoint.py", session="new")
    handlers = run.session.extensions.extensions[0].handlers
    ctx = run.session.extensions.context()
    leaf = run.session.store.leaf_id
    assert leaf is not None
    # the handlers in a run's order, with the fork asked before the run settles: a tool result at ``leaf``,
    # the next turn's checkpoint, the code changing, then /fork from ``leaf``
    handlers["tool_result"][0](None, ctx)
    await handlers["turn_start"][0](None, ctx)
    _git(tmp_path, "checkout", "-q", "app.py")
    assert (tmp_path / "app.py").read_text() == "v1\n"
    run.ui.answers = ["Yes, restore code to that point"]
    await handlers["session_before_fork"][0](SessionBeforeForkEvent(leaf), ctx)
    assert (tmp_path / "app.py").read_text() == "v2\n"
    assert ("Code restored to checkpoint", "info") in run.ui.notices
    await run.session.shutdown("quit")


async def test_custom_compaction_replaces_the_summary_with_its_own(tmp_path: Path) -> None:
    loaded = await load_extensions([path_source(example("custom_compaction.py"), tmp_path)])
    h = await make_harness(tmp_path, keep=50, extensions=loaded.extensions)
    h.script(reply("one " + "o" * 400), reply("two " + "t" * 400), reply("## Everything\nall of it"))
    await h.prompt("first")
    await h.prompt("second")
    done = await h.engine.compact(None)
    assert done is not None and done.entry.summary == "## Everything\nall of it"
    assert done.entry.from_hook is True and h.summary_requests == []
    prompt = text_of(h.turn_requests[-1].messages[0].content)
    assert prompt.startswith("You are a conversation summarizer.") and "[User]: first" in prompt
    entries = [e for e in h.session.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1


async def test_custom_compaction_falls_back_when_the_model_fails(tmp_path: Path) -> None:
    loaded = await load_extensions([path_source(example("custom_compaction.py"), tmp_path)])
    h = await make_harness(tmp_path, keep=50, extensions=loaded.extensions)
    h.script(
        reply("one " + "o" * 400), reply("two " + "t" * 400), reply(stop_reason="error", error_message="down")
    )
    h.summaries("## Goal\ndefault", "## Prefix\ndefault")
    await h.prompt("first")
    await h.prompt("second")
    done = await h.engine.compact(None)
    assert done is not None and done.entry.summary.startswith("## Goal\ndefault")


async def test_trigger_compact_command_compacts_with_the_instructions(tmp_path: Path) -> None:
    loaded = await load_extensions([path_source(example("trigger_compact.py"), tmp_path)])
    h = await make_harness(tmp_path, keep=50, extensions=loaded.extensions)
    h.script(reply("one " + "o" * 400), reply("two " + "t" * 400))
    h.summaries("## Goal\ntriggered", "## Prefix\ntriggered")
    await h.prompt("first")
    await h.prompt("second")
    await h.session.prompt("/trigger-compact keep the SQL")
    await h.session.wait_for_idle()
    entries = [e for e in h.session.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1 and "Additional focus: keep the SQL" in h.summary_prompt(0)


async def test_claude_rules_lists_the_rule_files_in_the_system_prompt(tmp_path: Path) -> None:
    rules = tmp_path / ".claude" / "rules"
    (rules / "backend").mkdir(parents=True)
    (rules / "testing.md").write_text("# tests\n")
    (rules / "backend" / "api.md").write_text("# api\n")
    run = await with_example(tmp_path, "claude_rules.py")
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("hi")
    prompt = run.requests[0].system_prompt or ""
    assert "- .claude/rules/backend/api.md\n- .claude/rules/testing.md" in prompt
    assert ("Found 2 rule(s) in .claude/rules/", "info") in run.ui.notices
    await run.session.shutdown("quit")


async def test_session_name_and_bookmark_commands(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "session_name.py", "bookmark.py")
    await run.session.prompt("/session-name")
    await run.session.prompt("/session-name auth refactor")
    await run.session.prompt("/bookmark")
    assert run.session.store.session_name() == "auth refactor"
    texts = [text for text, _ in run.ui.notices]
    assert texts[:3] == [
        "No session name set",
        "Session named: auth refactor",
        "No assistant message to bookmark",
    ]
    run.faux.set_responses([faux_message("an answer")])
    await run.session.prompt("question")
    await run.session.prompt("/bookmark good answer")
    answer = next(
        e
        for e in run.session.store.entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    )
    assert run.session.store.get_label(answer.id) == "good answer"
    await run.session.prompt("/unbookmark")
    assert run.session.store.get_label(answer.id) is None
    assert run.ui.notices[-1] == ("Removed bookmark: good answer", "info")
    await run.session.shutdown("quit")


async def test_send_user_message_commands_send_as_the_user(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "send_user_message.py")
    run.faux.set_responses([faux_message("four"), faux_message("short")])
    await run.session.prompt("/ask what is 2+2")
    await run.session.wait_for_idle()
    await run.session.prompt("/askwith explain")
    await run.session.wait_for_idle()
    users = [m for m in run.session.messages if isinstance(m, UserMessage)]
    assert text_of(users[0].content) == "what is 2+2"
    assert text_of(users[1].content) == "User request: explain\nPlease respond concisely."
    await run.session.prompt("/ask")
    assert run.ui.notices[-1] == ("Usage: /ask <message>", "warning")
    await run.session.shutdown("quit")


async def test_shutdown_command_and_tool_request_a_clean_exit(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "shutdown_command.py", mode="print")
    run.faux.set_responses(
        [faux_message(faux_tool_call("deploy_and_exit", {"environment": "staging"})), faux_message("bye")]
    )
    await run.session.prompt("deploy")
    await run.session.wait_for_idle()
    assert run.session.state().shutdown_requested
    updates = [e for e in run.events if e.type == "tool_execution_update"]
    assert len(updates) == 2
    await run.session.shutdown("quit")

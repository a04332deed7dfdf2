"""``caddie acp`` end to end: the real command in a subprocess, the SDK's client side as the editor, the fake
model server as the model. Assertions are on the protocol messages, the files, and what the model was sent.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp import (
    RequestError,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from tests.acp.conftest import Setup
from tests.acp.harness import MODEL, EditorClient, agent_env, open_agent
from tests.support import fake_llm as fl

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def tool_results(request: fl.RecordedRequest) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.messages if m["role"] == "tool"}


def session_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_initialize_and_new_session(setup: Setup) -> None:
    (setup.home / "agent" / "prompts").mkdir(parents=True)
    (setup.home / "agent" / "prompts" / "review.md").write_text(
        "---\ndescription: Review code\n---\nReview $@\n"
    )
    skill = setup.home / "agent" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy imports.\n---\nSort them.\n")
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        init = await agent.initialize()
        caps = init.agent_capabilities
        assert init.protocol_version == 1
        assert caps.load_session is True
        assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
        assert not caps.prompt_capabilities.audio
        assert not caps.mcp_capabilities.http and not caps.mcp_capabilities.sse
        assert caps.session_capabilities.list is not None
        assert init.agent_info.name == "caddie"

        new = await agent.conn.new_session(cwd=str(setup.project))
        assert new.modes is not None and new.config_options is not None
        assert new.modes.current_mode_id == "ask"
        assert [m.id for m in new.modes.available_modes] == ["ask", "auto"]
        options = {o.id: o for o in new.config_options}
        assert options["model"].current_value == MODEL
        assert MODEL in [o.value for o in options["model"].options]
        assert options["mode"].current_value == "ask"

        # the slash commands arrive after the session exists: extension commands of both bundled extensions,
        # then the user's prompt templates and skills
        await agent.client.wait_for(lambda: agent.client.of("available_commands_update"))
        [commands] = agent.client.of("available_commands_update")
        described = {c.name: c.description for c in commands.available_commands}
        assert {"goal", "loop", "mulligan_checkpoint", "mulligan_audit"} <= described.keys()
        assert described["review"] == "Review code"
        assert described["skill:tidy"] == "Tidy imports."
        assert all(sid == new.session_id for sid, _ in agent.client.updates)


async def test_prompt_reads_edits_and_runs_through_the_editor(setup: Setup) -> None:
    """fs and terminals offered: read sees the unsaved buffer, edits go back through the editor after a
    permission request (rejected once, then allowed always), bash runs in an editor terminal."""
    target = setup.project / "notes.txt"
    target.write_text("alpha\nbeta\n")  # on disk; the editor's buffer has an unsaved change
    setup.llm.push(
        fl.tool_call("read", {"path": "notes.txt"}, id="c_read"),
        fl.tool_call(
            "edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}, id="c_ed1"
        ),
        fl.tool_call(
            "edit", {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}, id="c_ed2"
        ),
        fl.tool_call(
            "edit", {"path": "notes.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}, id="c_ed3"
        ),
        fl.tool_call("bash", {"command": "cat notes.txt; echo exit-ok"}, id="c_bash"),
        fl.text("All done."),
    )
    client = EditorClient()
    client.buffers[str(target)] = "alpha\nbeta\nunsaved line\n"
    client.answers = ["reject", "always", "allow"]  # ed1 rejected, ed2 always (ed3 not asked), bash once
    async with open_agent(setup.home, setup.project, setup.llm, client=client) as agent:
        await agent.initialize(fs=True, terminal=True)
        new = await agent.conn.new_session(cwd=str(setup.project))
        response = await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("tidy notes.txt")])
        assert response.stop_reason == "end_turn"

        # read went through the editor and returned the buffer, unsaved line included
        reqs = setup.llm.llm_requests
        assert tool_results(reqs[1])["c_read"] == "alpha\nbeta\nunsaved line\n"
        assert str(target) in client.fs_reads
        [start] = [u for u in client.tool_updates("c_read") if u.session_update == "tool_call"]
        assert start.kind == "read" and start.title == "Read notes.txt"
        assert start.locations[0].path == str(target)

        # three permission requests: ed1, ed2, bash (ed3 was covered by "always")
        asked = [(tc.tool_call_id, [o.kind for o in opts]) for tc, opts in client.permission_requests]
        assert asked == [
            ("c_ed1", ["allow_once", "allow_always", "reject_once"]),
            ("c_ed2", ["allow_once", "allow_always", "reject_once"]),
            ("c_bash", ["allow_once", "allow_always", "reject_once"]),
        ]
        # the request shows the edit as a diff of the buffer
        assert client.permission_requests[0][0].content is not None
        diff = client.permission_requests[0][0].content[0]
        assert diff.type == "diff" and diff.path == str(target)
        assert (
            diff.old_text == "alpha\nbeta\nunsaved line\n" and diff.new_text == "alpha\nBETA\nunsaved line\n"
        )

        # rejected: the model is told, the tool call failed, nothing written
        assert tool_results(reqs[2])["c_ed1"] == "The user rejected this edit call."
        assert client.tool_updates("c_ed1")[-1].status == "failed"
        # allowed: written through the editor (which saved it)
        assert client.tool_updates("c_ed2")[-1].status == "completed"
        assert client.tool_updates("c_ed3")[-1].status == "completed"
        assert client.fs_writes[str(target)] == "ALPHA\ngamma\nunsaved line\n"
        assert target.read_text() == "ALPHA\ngamma\nunsaved line\n"
        final_ed3 = client.tool_updates("c_ed3")[-1]
        assert (
            final_ed3.content[0].type == "diff"
            and final_ed3.content[0].new_text == "ALPHA\ngamma\nunsaved line\n"
        )

        # bash ran in an editor terminal; its output reached the model
        bash = client.tool_updates("c_bash")
        assert bash[0].kind == "execute" and bash[0].title == "`cat notes.txt; echo exit-ok`"
        assert any(c.type == "terminal" for u in bash for c in (u.content or []))
        assert client.terminals and "cat notes.txt" in client.terminals["term-1"].command[-1]
        assert tool_results(reqs[5])["c_bash"] == "ALPHA\ngamma\nunsaved line\nexit-ok\n"
        assert bash[-1].status == "completed"

        assert client.message_text() == "All done."
        usage = client.of("usage_update")
        assert usage and usage[-1].size == 100_000 and usage[-1].used > 0

    # the session is an ordinary caddie session file
    [path] = agent.session_files()
    lines = session_lines(path)
    assert lines[0]["type"] == "session" and lines[0]["id"] == new.session_id
    roles = [e["message"]["role"] for e in lines if e["type"] == "message"]
    assert roles.count("toolResult") == 5 and roles[-1] == "assistant"


async def test_local_tools_auto_mode_and_streamed_bash(setup: Setup) -> None:
    """No fs/terminal offered: tools work on disk, bash output streams as tool call content. Auto mode asks
    nothing."""
    setup.llm.push(
        fl.tool_call("write", {"path": "sub/new.txt", "content": "fresh\n"}, id="c_w"),
        fl.tool_call("bash", {"command": "cat sub/new.txt"}, id="c_b"),
        fl.text("ok"),
    )
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.set_session_mode(session_id=new.session_id, mode_id="auto")
        response = await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("make a file")])
        assert response.stop_reason == "end_turn"
        assert agent.client.permission_requests == []
        assert (setup.project / "sub" / "new.txt").read_text() == "fresh\n"
        write = agent.client.tool_updates("c_w")
        assert write[-1].content[0].type == "diff" and write[-1].content[0].old_text is None
        bash = agent.client.tool_updates("c_b")
        texts = [c.content.text for u in bash for c in (u.content or []) if c.type == "content"]
        assert "fresh\n" in texts[-1]

        # an unknown mode is a JSON-RPC error, the session stays usable
        with pytest.raises(RequestError) as err:
            await agent.conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
        assert err.value.code == -32602


async def test_prompt_content_blocks(setup: Setup) -> None:
    """Text, a resource link, an embedded resource (an attached file) and an image reach the model."""
    setup.llm.write_models_json(
        setup.home / "agent",
        provider="fake",
        model_id="fake-model",
        contextWindow=100_000,
        input=["text", "image"],
    )
    setup.llm.push(fl.text("seen"))
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.prompt(
            session_id=new.session_id,
            prompt=[
                text_block("compare"),
                resource_link_block("a.py", f"file://{setup.project}/a.py"),
                text_block(" with the attached file"),
                resource_block(embedded_text_resource(f"file://{setup.project}/b.py", "print('b')\n")),
                image_block(PNG_1PX, "image/png"),
            ],
        )
        [request] = setup.llm.llm_requests
        user = [m for m in request.messages if m["role"] == "user"][-1]
        parts = user["content"]
        text = "".join(p.get("text", "") for p in parts if p["type"] == "text")
        assert text.startswith(f"compare @{setup.project}/a.py with the attached file")
        assert f"<context ref=\"{setup.project}/b.py\">\nprint('b')\n\n</context>" in text
        assert any(p["type"] == "image_url" for p in parts)


async def test_cancel_mid_turn_and_during_a_permission_request(setup: Setup) -> None:
    setup.llm.push(
        fl.text("a slow answer that streams " * 40, chunk_size=4, delay_s=0.02),
        fl.tool_call("bash", {"command": "touch should-not-exist"}, id="c_hold"),
        fl.text("after"),
    )
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        client = agent.client
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        sid = new.session_id
        turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("talk")]))
        await client.wait_for(lambda: len(client.of("agent_message_chunk")) >= 3)
        await agent.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(turn, 10)
        assert response.stop_reason == "cancelled"
        assert len(client.message_text()) < len("a slow answer that streams " * 40)

        # a permission request open when the cancel arrives: answered "cancelled", the command never runs
        client.hold_permission = asyncio.Event()
        client.answers = [None]
        turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("touch it")]))
        await client.wait_for(lambda: client.permission_requests)
        await agent.conn.cancel(session_id=sid)
        client.hold_permission.set()
        response = await asyncio.wait_for(turn, 10)
        assert response.stop_reason == "cancelled"
        assert not (setup.project / "should-not-exist").exists()
        assert client.tool_updates("c_hold")[-1].status == "failed"

        # the session still works
        client.hold_permission = None
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert response.stop_reason == "end_turn"


async def test_load_session_replays_and_continues(setup: Setup) -> None:
    setup.llm.push(fl.tool_call("read", {"path": "f.txt"}, id="c_r"), fl.text("It says hi."))
    (setup.project / "f.txt").write_text("hi\n")
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("what is in f.txt?")])
        listed = await agent.conn.list_sessions(cwd=str(setup.project))
        assert [(s.session_id, s.title) for s in listed.sessions] == [(new.session_id, "what is in f.txt?")]
    sid = new.session_id

    setup.llm.push(fl.text("Still hi."))
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        client = agent.client
        await agent.initialize()
        await agent.conn.load_session(cwd=str(setup.project), session_id=sid)
        replay = [(u.session_update, getattr(u, "tool_call_id", None)) for _, u in client.updates]
        assert replay[:4] == [
            ("user_message_chunk", None),
            ("tool_call", "c_r"),
            ("tool_call_update", "c_r"),
            ("agent_message_chunk", None),
        ]
        assert client.updates[0][1].content.text == "what is in f.txt?"
        assert client.tool_updates("c_r")[-1].status == "completed"
        assert client.of("agent_message_chunk")[0].content.text == "It says hi."
        assert all(s == sid for s, _ in client.updates)

        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("and now?")])
        assert response.stop_reason == "end_turn"
        texts = [m.get("content") for m in setup.llm.llm_requests[-1].messages if m["role"] == "user"]
        assert any("what is in f.txt?" in json.dumps(t) for t in texts)

        # unknown session: a JSON-RPC error, the process stays up
        with pytest.raises(RequestError) as err:
            await agent.conn.load_session(cwd=str(setup.project), session_id="no-such-session")
        assert err.value.code == -32602
        assert agent.process.returncode is None

    # the terminal continues it: caddie -c sees the whole conversation
    setup.llm.push(fl.text("from the terminal"))
    result = subprocess.run(
        [sys.executable, "-m", "caddie", "-p", "-c", "--model", MODEL, "last question"],
        cwd=setup.project,
        env=agent_env(setup.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "from the terminal\n"
    sent = json.dumps(setup.llm.llm_requests[-1].messages)
    assert "what is in f.txt?" in sent and "and now?" in sent


async def test_load_a_pi_session_file(setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session Pi wrote (in Pi's sessions folder) is listed, loads by id and replays; a session made with
    session/new is saved at once, so another process lists and loads it before it was ever prompted."""
    from caddie.session.store import encode_cwd

    fixture = Path(__file__).parent.parent / "fixtures" / "pi-sessions" / "linear.jsonl"
    lines = fixture.read_text().splitlines()
    header = json.loads(lines[0])
    header["cwd"] = str(setup.project.resolve())
    pi_dir = tmp_path / "pi-agent"
    folder = pi_dir / "sessions" / encode_cwd(setup.project)
    folder.mkdir(parents=True)
    (folder / f"2026-11-30T15-21-52-628Z_{header['id']}.jsonl").write_text(
        "\n".join([json.dumps(header), *lines[1:]]) + "\n"
    )
    first_user = next(json.loads(line)["message"] for line in lines[1:] if '"role":"user"' in line)

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    async with open_agent(setup.home, setup.project, setup.llm) as agent:  # made, never prompted
        await agent.initialize()
        unprompted = (await agent.conn.new_session(cwd=str(setup.project))).session_id
    editor = EditorClient()
    async with open_agent(setup.home, setup.project, setup.llm, client=editor) as agent:
        await agent.initialize()
        listed = {s.session_id for s in (await agent.conn.list_sessions(cwd=str(setup.project))).sessions}
        assert listed == {unprompted, header["id"]}  # caddie's, even unprompted, and Pi's
        await agent.conn.load_session(cwd=str(setup.project), session_id=unprompted)
        await agent.conn.load_session(cwd=str(setup.project), session_id=header["id"])
        users = [u.content.text for u in editor.of("user_message_chunk")]
        assert users[0] == first_user["content"]
        assert editor.of("agent_message_chunk")


async def test_slash_commands_goal_plan_and_notify(setup: Setup) -> None:
    setup.llm.default_reply = fl.text("working on it", usage=fl.UsageSpec(400, 50))
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        client = agent.client
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        sid = new.session_id

        await agent.conn.prompt(
            session_id=sid, prompt=[text_block("/goal with token budget 1000 make the tests pass")]
        )
        plans = client.of("plan")
        assert plans, client.kinds()
        assert plans[0].entries[0].content == "Goal: make the tests pass"
        assert plans[0].entries[0].status == "in_progress"
        assert "working on it" in client.message_text()  # the goal's own turn is part of this prompt
        assert plans[-1].entries[0].status != "in_progress"  # the budget stopped it
        requests = len(setup.llm.llm_requests)

        client.clear()
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("/mulligan_checkpoint cp1")])
        assert response.stop_reason == "end_turn"
        assert "Mulligan: checkpoint 'cp1' set." in client.message_text()
        assert len(setup.llm.llm_requests) == requests  # a command runs without a model call

    # loading the session shows the goal again as the plan
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        await agent.initialize()
        await agent.conn.load_session(cwd=str(setup.project), session_id=sid)
        [plan] = agent.client.of("plan")
        assert plan.entries[0].content.startswith("Goal: make the tests pass")


async def test_mulligan_rewind_shows_as_updates(setup: Setup) -> None:
    (setup.project / "big.txt").write_text("".join(f"line {i:05d} {'.' * 24}\n" for i in range(700)))
    note = {
        "what_happened": "Dumped all of big.txt; only its first lines mattered.",
        "true_current_state": "big.txt holds 700 numbered lines.",
        "next": "Read the first lines with head -n 3.",
    }
    setup.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call("mulligan_rewind", {"note": note, "granularity": "last_tool_call_group"}, id="c_rw"),
        fl.text("Rewound."),
    )
    async with open_agent(setup.home, setup.project, setup.llm, "--mode", "auto") as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("look at big.txt")])
        rewind = agent.client.tool_updates("c_rw")
        assert rewind[0].session_update == "tool_call"
        assert rewind[0].title == "Mulligan rewind: Dumped all of big.txt; only its first lines mattered."
        assert rewind[-1].status == "completed"
        assert rewind[-1].content and rewind[-1].content[0].type == "content"
        # the rewound call is marked in the editor
        assert (
            agent.client.tool_updates("c_cat")[-1].title
            == "`cat big.txt` — hidden by mulligan_rewind (last_tool_call_group)"
        )
        assert [u.title for u in rewind if u.title] == [rewind[0].title]  # the rewind itself is sent
        assert "messages will be hidden from your view" in rewind[-1].content[0].content.text
        # the model no longer sees the big output
        last = setup.llm.llm_requests[-1]
        assert "c_cat" not in tool_results(last)


async def test_a_shrink_shows_on_the_call_and_a_cancel_gives_the_title_back(setup: Setup) -> None:
    (setup.project / "big.txt").write_text("x" * 30_000 + "\n")
    target = {"by_tool_call_id": "c_cat"}
    setup.llm.push(
        fl.tool_call("bash", {"command": "cat big.txt"}, id="c_cat"),
        fl.tool_call("mulligan_shrink", {"target": target, "replacement": "30,000 x."}, id="c_sh"),
        fl.tool_call("mulligan_cancel", {"target": target}, id="c_cn"),
        fl.text("Done."),
    )
    async with open_agent(setup.home, setup.project, setup.llm, "--mode", "auto") as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("look at big.txt")])
        assert [u.title for u in agent.client.tool_updates("c_cat") if u.title] == [
            "`cat big.txt`",
            "`cat big.txt` — shrunk by mulligan_shrink",
            "`cat big.txt`",
        ]


QUIET_EXTENSION = """
from caddie.extensions.api import EntryVisibility, ToolResultMessage


def register(api):
    # a third-party extension that sends echo results in another form answers what it does (its context
    # handler is left out here: only the answer matters to the editor)
    def visibility(event, ctx):
        for message, entry_id in zip(event.messages, event.entry_ids):
            if isinstance(message, ToolResultMessage) and "quiet" in str(message.content):
                event.mark(entry_id, EntryVisibility("replaced", "trimmed by quiet", replacement=message))

    api.on("entry_visibility", visibility)
"""


async def test_what_any_extension_keeps_from_the_model_shows_on_its_tool_calls(
    setup: Setup, tmp_path: Path
) -> None:
    ext = tmp_path / "quiet.py"
    ext.write_text(QUIET_EXTENSION)
    setup.llm.push(
        fl.tool_call("bash", {"command": "echo quiet please"}, id="c_q"),
        fl.tool_call("bash", {"command": "echo loud"}, id="c_l"),
        fl.text("Done."),
    )
    async with open_agent(setup.home, setup.project, setup.llm, "--mode", "auto", "-e", str(ext)) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("echo twice")])
        titled = [u.title for u in agent.client.tool_updates("c_q") if u.title]
        assert titled == ["`echo quiet please`", "`echo quiet please` — trimmed by quiet"]  # once
        assert [u.title for u in agent.client.tool_updates("c_l") if u.title] == ["`echo loud`"]


EXTENSION = """
def register(api):
    async def ask(args, ctx):
        yes = await ctx.ui.confirm("Proceed?", "Shall I go on?")
        pick = await ctx.ui.select("Colour", ["red", "green"])
        typed = await ctx.ui.input("Your name")
        ctx.ui.notify(f"confirm={yes} select={pick} input={typed}", "info")
    api.register_command("ask", ask, description="ask things")
"""


async def test_extension_dialogs_map_to_permission_requests(setup: Setup, tmp_path: Path) -> None:
    ext = tmp_path / "askext.py"
    ext.write_text(EXTENSION)
    client = EditorClient()
    client.answers = ["yes", "1"]
    async with open_agent(setup.home, setup.project, setup.llm, "-e", str(ext), client=client) as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        response = await asyncio.wait_for(
            agent.conn.prompt(session_id=new.session_id, prompt=[text_block("/ask")]), 15
        )
        assert response.stop_reason == "end_turn"
        [(confirm, confirm_options), (select, select_options)] = client.permission_requests
        assert confirm.title == "Proceed?" and [o.name for o in confirm_options] == ["Yes", "No"]
        assert select.title == "Colour" and [o.name for o in select_options] == ["red", "green", "Cancel"]
        text = client.message_text()
        assert "Your name: this needs typed input" in text
        assert "confirm=True select=green input=None" in text


async def test_bad_input_gets_json_rpc_errors_and_the_process_stays_up(setup: Setup) -> None:
    raw: list[dict[str, Any]] = []
    editor = EditorClient()
    async with open_agent(setup.home, setup.project, setup.llm, client=editor) as agent:
        agent.conn._conn.add_observer(lambda event: raw.append(event.message))
        await agent.initialize()

        await agent.raw(b"this is not json\n")
        await agent.raw(b"[1, 2]\n")
        await agent.raw(b'{"jsonrpc": "2.0", "id": "r1", "method": "no/such_method", "params": {}}\n')
        await agent.raw(
            b'{"jsonrpc": "2.0", "id": "r2", "method": "session/prompt", "params": {"sessionId": 5}}\n'
        )
        await agent.raw(b'{"jsonrpc": "2.0", "id": "r3"}\n')
        await agent.raw(b"[" * 100_000 + b"\n")  # nested beyond any stack: one parse error, no crash

        async def errors() -> list[dict[str, Any]]:
            for _ in range(100):
                found = [m for m in raw if "error" in m]
                if len(found) >= 6:
                    return found
                await asyncio.sleep(0.05)
            return [m for m in raw if "error" in m]

        found = await errors()
        by = {(m["id"], m["error"]["code"]) for m in found}
        assert (None, -32700) in by  # not JSON
        assert (None, -32600) in by  # not an object
        assert ("r1", -32601) in by  # unknown method
        assert ("r2", -32602) in by  # bad params
        assert ("r3", -32600) in by  # neither request nor response
        assert any("nested more than 200 levels deep" in json.dumps(m) for m in found)

        with pytest.raises(RequestError) as err:
            await agent.conn.prompt(session_id="nope", prompt=[text_block("hi")])
        assert err.value.code == -32602 and str(err.value).startswith("Unknown session nope: open it")

        # still serving
        new = await agent.conn.new_session(cwd=str(setup.project))
        assert new.session_id
        assert agent.process.returncode is None

        # half an emoji (a lone surrogate escape) in a prompt: sent and saved as U+FFFD
        setup.llm.push(fl.text("fine"))
        prompt = {"sessionId": new.session_id, "prompt": [{"type": "text", "text": "half \\ud83d emoji"}]}
        line = {"jsonrpc": "2.0", "id": "r4", "method": "session/prompt", "params": prompt}
        await agent.raw(json.dumps(line).replace("\\\\", "\\").encode() + b"\n")
        for _ in range(200):
            if any(m.get("id") == "r4" for m in raw):
                break
            await asyncio.sleep(0.05)
        [answer] = [m for m in raw if m.get("id") == "r4"]
        assert answer["result"]["stopReason"] == "end_turn"
        assert setup.llm.llm_requests[-1].last_user_text == "half \ufffd emoji"
        [saved] = (setup.home / "agent" / "sessions").rglob(f"*{new.session_id}.jsonl")
        assert "half \ufffd emoji" in saved.read_text(encoding="utf-8")


async def test_thinking_streams_as_thought_chunks(setup: Setup) -> None:
    setup.llm.write_models_json(
        setup.home / "agent", provider="fake", model_id="fake-model", contextWindow=100_000, reasoning=True
    )
    setup.llm.push(fl.thinking("weighing the options", "Decided."))
    async with open_agent(setup.home, setup.project, setup.llm, "--thinking", "high") as agent:
        await agent.initialize()
        new = await agent.conn.new_session(cwd=str(setup.project))
        assert new.config_options is not None
        options = {o.id: o for o in new.config_options}
        assert options["thinking"].current_value == "high"
        await agent.conn.prompt(session_id=new.session_id, prompt=[text_block("think")])
        thought = "".join(u.content.text for u in agent.client.of("agent_thought_chunk"))
        assert thought == "weighing the options"
        assert agent.client.message_text() == "Decided."

        # switching the thinking level and the mode through config options
        changed = await agent.conn.set_config_option(
            config_id="thinking", session_id=new.session_id, value="low"
        )
        assert {o.id: o.current_value for o in changed.config_options}["thinking"] == "low"
        changed = await agent.conn.set_config_option(
            config_id="mode", session_id=new.session_id, value="auto"
        )
        assert {o.id: o.current_value for o in changed.config_options}["mode"] == "auto"
        with pytest.raises(RequestError):
            await agent.conn.set_config_option(config_id="model", session_id=new.session_id, value="no/such")


async def test_setup_problems_are_one_sentence_errors(setup: Setup) -> None:
    async with open_agent(setup.home, setup.project, setup.llm, "--model", "nowhere/none") as agent:
        await agent.initialize()
        with pytest.raises(RequestError) as err:
            await agent.conn.new_session(cwd=str(setup.project))
        assert "nowhere/none" in str(err.value)
        with pytest.raises(RequestError) as err:
            await agent.conn.new_session(cwd="relative/dir")
        assert err.value.code == -32602
        assert agent.process.returncode is None

    result = subprocess.run(
        [sys.executable, "-m", "caddie", "acp", "--mode", "yolo"],
        env=agent_env(setup.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert (
        result.stderr.startswith("caddie: argument --mode: invalid choice")
        and "Traceback" not in result.stderr
    )


def test_requests_piped_before_eof_are_all_answered(setup: Setup) -> None:
    """stdin ending (the editor went away, or a script piped its requests) never drops a request."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(setup.project), "mcpServers": []},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "x", "prompt": []}},
    ]
    result = subprocess.run(
        [sys.executable, "-m", "caddie", "acp", "--model", MODEL],
        input="".join(json.dumps(line) + "\n" for line in lines) + "not json\n",
        cwd=setup.project,
        env=agent_env(setup.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    answers = {m.get("id"): m for m in out if "method" not in m}
    assert answers[1]["result"]["agentInfo"]["name"] == "caddie"
    assert answers[2]["result"]["sessionId"]
    assert answers[3]["error"]["code"] == -32602
    assert answers[None]["error"]["code"] == -32700
    assert "Traceback" not in result.stderr

"""Print and RPC modes called from Python (Pi's ``runPrintMode`` / ``runRpcMode``): the real ``openai`` client
against the fake server; RPC over real OS pipes, with an extension dialog answered by the client."""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from caddie.sdk import ExtensionAPI, ExtensionContext, UsageError, run_print_mode, run_rpc_mode
from tests.support import fake_llm as fl


def models_json(llm: fl.FakeLLM, tmp_path: Path) -> Path:
    return llm.write_models_json(tmp_path / "app", provider="fake", model_id="fake-model")


async def test_print_mode_writes_the_answer_and_json_mode_every_event(tmp_path: Path) -> None:
    with fl.FakeLLM() as llm:
        models = models_json(llm, tmp_path)
        llm.push(fl.text("The answer is 42."), fl.text("Still 42."), fl.text("streamed"))
        out, err = io.StringIO(), io.StringIO()
        code = await run_print_mode(
            tmp_path, ["What is it?", "Sure?"], out=out, err=err,
            model="fake/fake-model", models_path=models, discover_extensions=False,
        )  # fmt: skip
        assert (code, out.getvalue()) == (0, "Still 42.\n")
        assert [r.last_user_text for r in llm.llm_requests] == ["What is it?", "Sure?"]
        lines = io.StringIO()
        code = await run_print_mode(
            tmp_path, ["Stream it"], mode="json", out=lines, err=err,
            model="fake/fake-model", models_path=models, discover_extensions=False,
        )  # fmt: skip
    events = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert code == 0 and events[0]["type"] == "session"
    types = [e["type"] for e in events]
    assert "agent_start" in types and "agent_end" in types and "message_update" in types
    assert err.getvalue() == ""


async def test_print_mode_fails_with_1_when_the_reply_fails_and_refuses_unknown_options(
    tmp_path: Path,
) -> None:
    with fl.FakeLLM() as llm:
        models = models_json(llm, tmp_path)
        llm.push(fl.error(400, "bad request: the model refused"))
        out, err = io.StringIO(), io.StringIO()
        code = await run_print_mode(
            tmp_path, ["hi"], out=out, err=err,
            model="fake/fake-model", models_path=models, discover_extensions=False,
        )  # fmt: skip
    assert (code, out.getvalue()) == (1, "")
    assert "the model refused" in err.getvalue()
    with pytest.raises(UsageError, match="no_such_option"):
        await run_print_mode(tmp_path, ["hi"], no_such_option=True)


def asking(api: ExtensionAPI) -> None:
    async def ask(args: str, ctx: ExtensionContext) -> None:
        confirmed = await ctx.ui.confirm("Deploy?", f"to {args}")
        ctx.ui.notify(f"deploy to {args}: {'yes' if confirmed else 'no'}")

    api.register_command("deploy", ask, "Ask before deploying")


async def test_rpc_mode_serves_a_client_over_real_pipes_until_stdin_ends(tmp_path: Path) -> None:
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    server_in = open(to_server, "rb", buffering=0)  # noqa: SIM115 - closed by the test below
    server_out = open(from_server, "w", encoding="utf-8")  # noqa: SIM115
    client_out = open(from_client, "w", encoding="utf-8")  # noqa: SIM115
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    client_in = open(to_client, "rb")  # noqa: SIM115 - the transport closes it
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), client_in)

    def send(obj: dict[str, Any]) -> None:
        client_out.write(json.dumps(obj) + "\n")
        client_out.flush()

    async def until(predicate: Any) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(reader.readline(), 30)
            assert line, "the server closed its output early"
            obj = json.loads(line)
            if predicate(obj):
                return dict(obj)

    with fl.FakeLLM() as llm:
        models = models_json(llm, tmp_path)
        llm.push(fl.text("Hello from RPC."))
        serving = asyncio.ensure_future(
            run_rpc_mode(
                tmp_path, stdin=server_in, stdout=server_out, model="fake/fake-model", models_path=models,
                extensions=[asking], discover_extensions=False,
            )
        )  # fmt: skip
        try:
            send({"id": "1", "type": "prompt", "message": "hi"})
            accepted = await until(lambda o: o.get("type") == "response")
            assert accepted == {"id": "1", "type": "response", "command": "prompt", "success": True}
            await until(lambda o: o.get("type") == "agent_end")
            send({"id": "2", "type": "get_last_assistant_text"})
            text = await until(lambda o: o.get("id") == "2")
            assert text["data"] == {"text": "Hello from RPC."}
            send({"id": "3", "type": "prompt", "message": "/deploy staging"})
            dialog = await until(
                lambda o: o.get("type") == "extension_ui_request" and o["method"] == "confirm"
            )
            assert (dialog["title"], dialog["message"]) == ("Deploy?", "to staging")
            send({"type": "extension_ui_response", "id": dialog["id"], "confirmed": True})
            notice = await until(lambda o: o.get("method") == "notify")
            assert notice["message"] == "deploy to staging: yes"
            client_out.close()  # EOF: the server ends the session and returns
            assert await asyncio.wait_for(serving, 30) == 0
        finally:
            serving.cancel()
            transport.close()
            server_in.close()
            server_out.close()
    assert [r.last_user_text for r in llm.llm_requests] == ["hi"]

"""RPC input from a careless or hostile client: half an emoji (a lone UTF-16 surrogate), JSON nested 100,000
levels deep. Each is handled where it comes in; the process keeps serving and the session is saved."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.rpc.conftest import Host
from tests.support import fake_llm as fl


def test_lone_surrogates_become_u_fffd_and_deep_json_is_one_parse_error(host: Host) -> None:
    host.llm.push(fl.text("got it"))
    rpc = host.rpc()
    # what a JS client sends when it cuts a string between the halves of an emoji
    rpc.send(b'{"id":"p","type":"prompt","message":"half an emoji \\ud83d here"}\n')
    assert rpc.wait_for(lambda o: o.get("id") == "p")["success"] is True
    rpc.event("agent_end")
    rpc.send(b'{"id":"n","type":"set_session_name","name":"cut \\udc00 name"}\n')
    assert rpc.wait_for(lambda o: o.get("id") == "n")["success"] is True
    rpc.send(b"[" * 100_000 + b"\n")
    deep = rpc.wait_for(lambda o: o.get("command") == "parse")
    assert deep["success"] is False and "nested more than 200 levels deep" in deep["error"]
    rpc.send(b'{"id":"d","type":"prompt","message":' + b"[" * 300 + b"]" * 300 + b"}\n")
    assert (
        "nested more than"
        in rpc.wait_for(lambda o: o.get("id") == "d" or o.get("command") == "parse")["error"]
    )

    fifo = host.project / "f.jsonl"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):  # refused at once: never a blocking or endless read
        refused = rpc.request({"type": "switch_session", "sessionPath": path}, timeout=10)
        assert refused["success"] is False and "not a regular file" in refused["error"]

    state = rpc.ok({"type": "get_state"})  # still serving
    assert state["sessionName"] == "cut \ufffd name"
    messages = rpc.ok({"type": "get_messages"})["messages"]
    assert messages[0]["content"][0]["text"] == "half an emoji \ufffd here"
    assert host.llm.llm_requests[0].last_user_text == "half an emoji \ufffd here"
    session = Path(state["sessionFile"])
    assert rpc.close(timeout=15) == 0  # EOF still ends the process
    assert "Traceback" not in rpc.proc.stderr.read().decode()  # type: ignore[union-attr]
    saved = session.read_text(encoding="utf-8")
    assert "half an emoji \ufffd here" in saved and "cut \ufffd name" in saved
    assert all(json.loads(line) for line in saved.splitlines())

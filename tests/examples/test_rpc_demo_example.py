"""Pi's rpc-demo example through ``caddie --mode rpc``: every dialog reaches the client as an
``extension_ui_request`` and its answer comes back; the display calls arrive as one-way requests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.examples.harness import example
from tests.rpc.conftest import Host, Json, Rpc, rpc_host
from tests.support import fake_llm as fl


@pytest.fixture(name="rpc_host")
def rpc_host_fixture(tmp_path: Path) -> Iterator[Host]:
    """tests/rpc's driver (``caddie --mode rpc`` against the fake server)."""
    with rpc_host(tmp_path) as host:
        yield host


def ui(rpc: Rpc, method: str, **fields: object) -> Json:
    return rpc.wait_for(
        lambda o: (
            o.get("type") == "extension_ui_request"
            and o.get("method") == method
            and all(o.get(k) == v for k, v in fields.items())
        )
    )


def answer(rpc: Rpc, request: Json, **fields: object) -> None:
    rpc.send({"type": "extension_ui_response", "id": request["id"], **fields})


def test_rpc_demo_drives_every_dialog_over_rpc(rpc_host: Host) -> None:
    rpc = rpc_host.rpc("-e", example("rpc_demo.py"))
    ui(rpc, "setTitle", title="caddie RPC Demo")
    ui(rpc, "setWidget", widgetKey="rpc-demo")
    ui(rpc, "setStatus", statusKey="rpc-demo", statusText="Turns: 0")

    rpc.send({"type": "prompt", "message": "/rpc-input", "id": "c1"})  # answered once the command ends
    answer(rpc, ui(rpc, "input", title="Enter a value", placeholder="type something..."), value="forty-two")
    ui(rpc, "notify", message="You entered: forty-two")

    rpc.send({"type": "prompt", "message": "/rpc-editor", "id": "c2"})
    answer(rpc, ui(rpc, "editor", title="Edit some text", prefill="Line 1\nLine 2\nLine 3"), value="a\nb")
    ui(rpc, "notify", message="Editor submitted (2 lines)")

    rpc.ok({"type": "prompt", "message": "/rpc-prefill"})
    ui(rpc, "set_editor_text", text="This text was set by the rpc-demo extension.")

    # a dangerous bash call asks; blocked, the model gets the reason
    rpc_host.llm.push(fl.tool_call("bash", {"command": "sudo rm -rf /tmp/x"}), fl.text("ok"))
    rpc.send({"type": "prompt", "message": "clean up", "id": "c3"})
    ui(rpc, "setStatus", statusKey="rpc-demo", statusText="Turn 1 running...")
    answer(rpc, ui(rpc, "select", title="Dangerous command: sudo rm -rf /tmp/x"), value="Block")
    ui(rpc, "notify", message="Command blocked by user", notifyType="warning")
    rpc.event("agent_end")
    assert rpc_host.llm.llm_requests[-1].tool_results[0][1] == "Blocked by user"

    # /new asks first; "no" keeps the session
    before = rpc.ok({"type": "get_state"})["sessionId"]
    rpc.send({"type": "new_session", "id": "n1"})
    answer(
        rpc, ui(rpc, "confirm", title="Clear session?", message="All messages will be lost."), confirmed=False
    )
    ui(rpc, "notify", message="Clear cancelled")
    assert rpc.wait_for(lambda o: o.get("id") == "n1")["data"] == {"cancelled": True}
    assert rpc.ok({"type": "get_state"})["sessionId"] == before
    assert rpc.close() == 0

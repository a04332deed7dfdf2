"""RPC's ``get_checkpoints`` / ``restore_checkpoint`` (caddie additions) over a real ``caddie --mode rpc``
process and a fake model server: the agent's bash and write change files, a restore takes them back."""

from __future__ import annotations

from tests.rpc.conftest import Host, host  # noqa: F401  (the fixture)
from tests.support import fake_llm as fl


def test_checkpoints_listed_and_restored_with_the_conversation(host: Host) -> None:  # noqa: F811
    project = host.project
    (project / "keep.txt").write_text("original\n")
    host.llm.push(
        fl.tool_call("write", {"path": "keep.txt", "content": "overwritten\n"}, id="c1"),
        fl.tool_call("bash", {"command": "echo made > made.txt"}, id="c2"),
        fl.text("done"),
    )
    rpc = host.rpc()
    rpc.ok({"type": "prompt", "message": "change things"})
    rpc.event("agent_settled")
    assert (project / "made.txt").exists()
    listed = rpc.ok({"type": "get_checkpoints"})["checkpoints"]
    assert [(c["reason"], c["prompt"]) for c in listed] == [("prompt", "change things")]

    bad = rpc.request({"type": "restore_checkpoint", "checkpoint": "0000000"})
    assert bad["success"] is False and "No checkpoint '0000000'" in bad["error"]

    done = rpc.ok({"type": "restore_checkpoint", "checkpoint": listed[0]["id"], "conversation": True})
    assert (
        done["written"] == ["keep.txt"] and done["removed"] == ["made.txt"] and done["conversation"] is True
    )
    assert (project / "keep.txt").read_text() == "original\n" and not (project / "made.txt").exists()
    assert rpc.ok({"type": "get_state"})["messageCount"] == 0
    assert [c["reason"] for c in rpc.ok({"type": "get_checkpoints"})["checkpoints"]] == ["prompt", "restore"]
    assert rpc.close() == 0

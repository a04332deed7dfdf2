"""Test doubles for extension authors: run an extension's ``register`` against an in-memory host in a unit test
— no model, no terminal, no disk — and drive it event by event.

``Harness(register)`` registers the extension on a real ``ExtensionAPI`` bound to a ``FakeHost``: an
append-only session tree (ids, parents, a leaf, labels, compaction-aware context), a ``FakeUI`` that records
what the extension shows, the active tools, published events and the exit code. Its helpers build a
conversation, fire events (``session_start``, ``context``, ``tool_result``, ``turn_end``, any other with
``emit``), run tools and commands. ``FakeClock`` is a clock that moves only when a test says so;
``extension_from(register)`` builds an extension to run in a real session (``SessionRequest.inline_extensions``).

    from caddie.testing import Harness, assistant, call, result, user

    def test_the_guard_blocks_rm_rf() -> None:
        h = Harness(register)                       # your extension's register(api)
        [verdict] = h.emit("tool_call", ToolCallEvent("c1", "bash", {"command": "rm -rf /"}))
        assert verdict.block and verdict.reason == "not on this machine"

Any host or session method can be made to raise by putting its name in ``host.fail``
(``host.fail["append_entry"] = OSError("disk full")``), to test that the extension fails open.
docs/extensions.md#testing-an-extension walks through a whole test.
"""

from caddie.testing.clock import FakeClock
from caddie.testing.harness import Harness, extension_from
from caddie.testing.host import Failures, FakeContext, FakeHost, FakeSession, FakeUI
from caddie.testing.messages import assistant, assistant_text, call, custom, result, text_of, user

__all__ = [
    "Failures",
    "FakeClock",
    "FakeContext",
    "FakeHost",
    "FakeSession",
    "FakeUI",
    "Harness",
    "assistant",
    "assistant_text",
    "call",
    "custom",
    "extension_from",
    "result",
    "text_of",
    "user",
]

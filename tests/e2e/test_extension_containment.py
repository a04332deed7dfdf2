"""``sys.exit()`` / ``KeyboardInterrupt`` / other ``BaseException``s raised by extension code are contained
like any other extension failure: reported, the run goes on, and the final answer is printed and saved."""

from __future__ import annotations

import json
import textwrap

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXTENSION = textwrap.dedent(
    """
    import sys

    from caddie.extensions.api import ToolDefinition, text_result


    class Escape(BaseException):
        pass


    def register(api):
        def on_turn_start(event, ctx):
            sys.exit(3)

        async def on_before_agent_start(event, ctx):
            raise KeyboardInterrupt

        def on_message_end(event, ctx):
            raise Escape("escaped")

        def on_tool_call(event, ctx):
            if event.tool_name == "blocked_tool":
                sys.exit(4)
            return None

        async def quit_tool(tool_call_id, params, signal, on_update, ctx):
            sys.exit(5)

        def blocked_tool(tool_call_id, params, signal, on_update, ctx):
            return text_result("should never run")

        async def bye(args, ctx):
            raise SystemExit(9)

        api.on("turn_start", on_turn_start)
        api.on("before_agent_start", on_before_agent_start)
        api.on("message_end", on_message_end)
        api.on("tool_call", on_tool_call)
        api.register_tool(
            ToolDefinition("quit_tool", "exits", {"type": "object", "properties": {}}, quit_tool)
        )
        api.register_tool(
            ToolDefinition("blocked_tool", "blocked", {"type": "object", "properties": {}}, blocked_tool)
        )
        api.register_command("bye", bye, description="exits")
    """
)


def test_sys_exit_in_handlers_tools_and_commands_is_contained(caddie: Caddie) -> None:
    ext = caddie.project.parent / "exits.py"
    ext.write_text(EXTENSION)
    caddie.llm.push(
        fl.tool_call("quit_tool", {}),
        fl.tool_call("blocked_tool", {}),
        fl.text("All done despite the extension."),
    )

    result = caddie.run("-p", "--model", "fake/fake-model", "-e", str(ext), "/bye", "go", timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "All done despite the extension.\n"
    err = result.stderr
    assert "command /bye" in err and "SystemExit" in err
    assert "turn_start" in err and "before_agent_start" in err and "message_end" in err
    assert "Traceback" not in err
    # the tools' failures became error results the model saw
    results = caddie.llm.llm_requests[2].tool_results
    assert len(results) == 2
    assert "SystemExit" in results[0][1] and "5" in results[0][1]
    assert "SystemExit" in results[1][1]
    [session] = caddie.session_files()
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    assistants = [
        x["message"] for x in lines if x.get("type") == "message" and x["message"]["role"] == "assistant"
    ]
    assert assistants[-1]["content"][0]["text"] == "All done despite the extension."

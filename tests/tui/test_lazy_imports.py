"""The interactive UI paints its first frame before the heavy parts of caddie are imported.

What a plain ``caddie`` imports before the app runs (the CLI, ``SessionRequest``, the interactive package)
must not pull in the runtime, the agent, the tools, the extensions, the session store or a provider SDK:
those are imported in a worker thread after the first frame (``app.AFTER_FIRST_FRAME``).
"""

from __future__ import annotations

import json
import subprocess
import sys

from caddie.modes.interactive.startup import AFTER_FIRST_FRAME

FORBIDDEN = (
    "caddie.runtime.factory",
    "caddie.runtime.session",
    "caddie.agent",
    "caddie.tools",
    "caddie.extensions",
    "caddie.resources",
    "caddie.session",
    "openai",
    "anthropic",
    "pydantic",
    "rich.markdown",
    "caddie.modes.interactive.dialogs",  # the dialogs and their widgets wait for the first frame too
)

PROBE = """
import json, sys
import caddie.cli
from caddie.runtime.request import SessionRequest
from caddie.modes.interactive import run_interactive
from caddie.modes.interactive.app import CaddieApp, Startup
CaddieApp(Startup(SessionRequest(cwd=".")))
print(json.dumps(sorted(sys.modules)))
"""


def imported_modules(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    modules: list[str] = json.loads(done.stdout)
    return modules


def test_the_interactive_app_imports_no_runtime_agent_tools_or_sdk() -> None:
    modules = imported_modules(PROBE)
    eager = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert eager == []
    assert "caddie.modes.interactive.app" in modules and "textual.app" in modules


def test_what_is_deferred_is_imported_by_the_start_up_worker() -> None:
    # The list the worker imports covers the forbidden caddie modules the UI uses later, so none of them
    # is imported on the event loop (each import would block it for tens of milliseconds).
    code = (
        "import json, sys\nfrom caddie.modes.interactive.startup import import_modules, AFTER_FIRST_FRAME\n"
    )
    code += "import_modules(AFTER_FIRST_FRAME)\nprint(json.dumps(sorted(sys.modules)))\n"
    modules = imported_modules(code)
    for name in (
        "caddie.runtime.session",
        "caddie.agent.events",
        "caddie.tools",
        "rich.markdown",
        "caddie.modes.interactive.dialogs",
        "caddie.modes.interactive.settings_dialog",
    ):
        assert name in modules
    assert "caddie.modes.interactive.pickers" in AFTER_FIRST_FRAME

"""Start-up and exit of the real ``caddie`` process: what is imported when, and what a fast exit keeps.

Behaviour only (no timings: those are in bench/bench_startup.py): ``--version`` answers before the runtime
or an SDK is imported; the chosen model's SDK is imported by the ``preload-<api>`` thread, not on the way
to the first request; a headless run that ends the process itself leaves a complete, unlocked session with
every exit hook run and the right exit code.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from caddie.session.store import SessionStore
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

HEAVY = ("caddie.runtime", "caddie.extensions", "caddie.agent", "openai", "anthropic", "pydantic", "asyncio")

# Records, in a file, which thread imports the SDK packages (the "import" audit event is raised for
# import statements, such as those in the SDK's __init__, not for importlib.import_module), then runs the
# command line as the console script does (``main()`` without arguments: a headless run ends the process).
WATCH_IMPORTS = """
import sys, threading
record = open(sys.argv[1], "a", encoding="utf-8", buffering=1)
def audit(event, args):
    if event == "import" and args[0] in ("openai._client", "anthropic._client"):
        record.write(f"{args[0].split('.')[0]} {threading.current_thread().name}\\n")
sys.addaudithook(audit)
sys.argv = ["caddie", *sys.argv[2:]]
from caddie.cli import main
sys.exit(main())
"""


def imported_modules(stderr: str) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def run_watched(
    caddie: Caddie, record: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WATCH_IMPORTS, str(record), *args],
        cwd=caddie.project,
        env=caddie.env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("args", [["--version"], ["-p", "--model", "fake/fake-model", "--version"]])
def test_version_is_answered_before_the_runtime_or_an_sdk_is_imported(
    caddie: Caddie, args: list[str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "caddie", *args],
        cwd=caddie.project,
        env=caddie.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout == "caddie 0.1.0\n"
    modules = imported_modules(result.stderr)
    assert "caddie.cli" in modules  # the importtime output was read
    assert not [m for m in modules if m.startswith(HEAVY)]


def test_help_lists_the_extensions_options_without_importing_an_sdk(caddie: Caddie) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "caddie", "--help"],
        cwd=caddie.project,
        env=caddie.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("usage: caddie [-h]")
    assert "options added by extensions:\n  --goal VALUE" in result.stdout
    assert result.stdout.endswith('--goal-check "pytest -q"\n')
    modules = imported_modules(result.stderr)
    assert any(m.startswith("caddie.extensions.bundled.goal.") for m in modules)
    assert not [m for m in modules if m.startswith(("openai", "anthropic"))]


def test_version_after_a_subcommand_is_left_to_the_subcommand(caddie: Caddie) -> None:
    result = caddie.run("session", "--version")
    assert result.stdout != "caddie 0.1.0\n"


@pytest.mark.parametrize("mode", [["-p"], ["--mode", "json"]])
def test_headless_runs_import_the_sdk_in_the_preload_thread(
    caddie: Caddie, tmp_path: Path, mode: list[str]
) -> None:
    caddie.llm.push(fl.text("ready"))
    record = tmp_path / "imports.txt"
    result = run_watched(caddie, record, *mode, "--model", "fake/fake-model", "hello")

    assert result.returncode == 0, result.stderr
    assert "ready" in result.stdout
    assert len(caddie.llm.llm_requests) == 1
    assert record.read_text().splitlines() == ["openai preload-openai-completions"]


def test_rpc_mode_imports_the_sdk_while_waiting_for_the_first_command(caddie: Caddie, tmp_path: Path) -> None:
    caddie.llm.push(fl.text("ready"))
    record = tmp_path / "imports.txt"
    proc = subprocess.Popen(
        [sys.executable, "-c", WATCH_IMPORTS, str(record), "--mode", "rpc", "--model", "fake/fake-model"],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (record.exists() and record.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert record.read_text().splitlines() == ["openai preload-openai-completions"]
        assert caddie.llm.llm_requests == []  # nothing asked yet: the import came from the preload
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"id": "1", "type": "prompt", "message": "hello"}) + "\n")
        proc.stdin.flush()
        caddie.llm.wait_for_requests(1, timeout=60)
        _out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert len(caddie.llm.llm_requests) == 1


EXIT_HOOKS = """\
import atexit, threading, time
from pathlib import Path

def late_write():
    time.sleep(0.3)
    Path("thread.txt").write_text("written")

def register(api):
    async def on_shutdown(event, ctx):
        Path("shutdown.txt").write_text(event.reason)
        threading.Thread(target=late_write).start()  # not a daemon: the process waits for it
    atexit.register(lambda: Path("atexit.txt").write_text("ran"))
    api.on("session_shutdown", on_shutdown)
"""


def test_a_print_run_ends_with_its_session_complete_and_every_exit_hook_run(caddie: Caddie) -> None:
    (caddie.project / "hooks.py").write_text(EXIT_HOOKS)
    (caddie.project / "a.txt").write_text("alpha\n")
    caddie.llm.push(fl.tool_call("read", {"path": "a.txt"}, id="call_1"), fl.text("It says alpha."))
    result = caddie.run("-p", "-e", "hooks.py", "--model", "fake/fake-model", "what does a.txt say?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "It says alpha.\n"
    assert (caddie.project / "shutdown.txt").read_text() == "quit"  # extensions were told
    assert (caddie.project / "atexit.txt").read_text() == "ran"
    assert (caddie.project / "thread.txt").read_text() == "written"
    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file)  # takes the write lock: the file was left unlocked and whole
    try:
        messages = store.build_context().messages
        assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
        assert session_file.read_bytes().endswith(b"\n")
    finally:
        store.close()


def test_a_failed_print_run_keeps_its_exit_code_and_its_session(caddie: Caddie) -> None:
    caddie.llm.push(fl.error(400, "bad request from the fake server"))
    result = caddie.run("-p", "--model", "fake/fake-model", "hello")

    assert result.returncode == 1
    assert "bad request from the fake server" in result.stderr
    [session_file] = caddie.session_files()
    store = SessionStore.open(session_file, repair=False)
    messages = store.build_context().messages
    assert [m.role for m in messages] == ["user", "assistant"]
    assert getattr(messages[-1], "stop_reason", None) == "error"


def test_preload_is_not_started_for_views_of_a_session(caddie: Caddie, tmp_path: Path) -> None:
    caddie.llm.push(fl.text("hi"))
    assert caddie.run("-p", "--model", "fake/fake-model", "hello").returncode == 0
    record = tmp_path / "imports.txt"
    result = run_watched(caddie, record, "context")
    assert result.returncode == 0, result.stderr
    assert not record.exists() or record.read_text() == ""


START_REASON = """\
from pathlib import Path

def register(api):
    def on_start(event, ctx):
        with Path("starts.txt").open("a") as f:
            f.write(f"{event.reason} {len(ctx.session.entries())}\\n")
    api.on("session_start", on_start)
"""


def test_a_continued_session_starts_with_reason_startup_as_in_pi(caddie: Caddie) -> None:
    """Pi announces ``startup`` for every process start, ``-c`` included; ``resume`` is for a switch."""
    (caddie.project / "start.py").write_text(START_REASON)
    caddie.llm.push(fl.text("one"), fl.text("two"))
    first = caddie.run("-p", "-e", "start.py", "--model", "fake/fake-model", "hello")
    assert first.returncode == 0, first.stderr
    again = caddie.run("-p", "-c", "-e", "start.py", "--model", "fake/fake-model", "again")
    assert again.returncode == 0, again.stderr
    lines = (caddie.project / "starts.txt").read_text().splitlines()
    assert [line.split()[0] for line in lines] == ["startup", "startup"]
    assert int(lines[1].split()[1]) > 0  # the second start saw the continued session's entries

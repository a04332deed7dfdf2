"""Regenerate ``tests/fixtures/pi-mulligan/`` with the reference Pi + pi-mulligan, against the fake server.

Run by hand (needs Node >= 22.19, Pi 0.84.4 at ``$CADDIE_PI_DIR`` (default .cache/pi in the checkout) and pi-mulligan's
bare git mirror at ``$PI_MULLIGAN_REPO`` (default /work/.mirror/dabstractor+pi-mulligan/repo))::

    uv run python -m tests.interop.make_pi_mulligan_fixture            # writes tests/fixtures/pi-mulligan/
    uv run python -m tests.interop.make_pi_mulligan_fixture --out DIR  # somewhere else

Nothing of Pi or pi-mulligan enters this repository: pi-mulligan's tree is exported (``git archive HEAD``)
into a temporary directory and loaded with ``pi -e <tmp>/src/index.ts`` (Pi resolves its imports of
``typebox`` and ``@earendil-works/pi-coding-agent`` to its own copies). Only the data Pi wrote is kept.

The scripted model (``runs()``: one ``pi -p`` run per entry, all in one project and one session, the
later ones with ``-c``):

1. bloats its context with ``cat``/``read`` of data files over the bloat thresholds (each result gets the
   bloat reminder appended), rewinds ``last_tool_call_group``, shrinks two results (``by_tool_call_id`` and
   ``by_tool_name``), cancels the second shrink (``by_tool_call_id`` target), runs ``mulligan_audit``, and
   ends with one more big unshrunk result (so the drift nudge fires, also on the final request);
2. the user sets a checkpoint: ``pi -p -c "/mulligan_checkpoint before-fix"`` (no model call);
3. the model makes a side-effecting change and rewinds to the checkpoint (its user prompt is hidden too;
   the note lists the modified file and the command, the checkpoint label is cleared);
4. the model reads a file, shrinks the earlier big result ``by_content_includes``, then rewinds
   ``last_turn`` (the read and the shrink call are hidden, the shrink itself stays in force);
5. one more prompt; the model's reply stalls, and Pi is killed once the server has the request, so the
   session file ends exactly in the state from which Pi built that request (the prompt is its last entry).

Written to ``--out``:
    ``session.jsonl``          the session file Pi wrote, verbatim.
    ``pi-last-request.json``   ``{"messages": [...], "tools": [...]}``: the OpenAI chat messages Pi sent on
                               its final request (system prompt included) and the tool names offered.
The project files are not kept: ``make_project`` recreates them (tests continue the session with them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_DIR, find_node
from tests.support import fake_llm as fl

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_DIR = ROOT / "tests" / "fixtures" / "pi-mulligan"
PI_MULLIGAN_REPO = Path(os.environ.get("PI_MULLIGAN_REPO", "/work/.mirror/dabstractor+pi-mulligan/repo"))
PI_BIN = PI_DIR / "node_modules" / ".bin" / "pi"
MODEL = "fake/fake-model"


def make_project(root: Path) -> Path:
    """The files the scripted model reads: data1/data2 (for bash) are over bash's 16 KB bloat threshold,
    data3 (for read) over read's 24 KB one."""
    root.mkdir(parents=True, exist_ok=True)
    for n, lines, width in ((1, 700, 36), (2, 600, 33), (3, 1000, 27)):
        body = "".join(f"data{n} record {i:05d} {'.' * (width - 20)}\n" for i in range(lines))
        (root / f"data{n}.txt").write_text(body)
    return root


def note(what: str, state: str, nxt: str) -> dict[str, str]:
    return {"what_happened": what, "true_current_state": state, "next": nxt}


NOTE_GROUP = note(
    "Dumped all of data1.txt with cat; only its first lines mattered.",
    "data1.txt holds 700 numbered records.",
    "Look at data1.txt with head -n 3.",
)
NOTE_CHECKPOINT = note(
    "Wrote fix.txt before checking what the fix needs.",
    "Nothing is fixed yet; fix.txt exists on disk but is a guess.",
    "Ask which fix is wanted.",
)
NOTE_TURN = note(
    "Read data1.txt again although its shape was already known.",
    "The shape of all three files is known.",
    "Answer from what is known.",
)
SHRINK_2 = "data2.txt: 600 lines 'data2 record NNNNN' padded with dots."
SHRINK_3 = "data3.txt: 1000 lines 'data3 record NNNNN' padded with dots."
SHRINK_UPPER = "data1.txt upper-cased: nothing new."


@dataclass
class Run:
    """One ``-p`` invocation: the prompt, and the model's replies in order (none for a slash command)."""

    prompt: str
    replies: list[fl.Reply] = field(default_factory=list)
    final: bool = False
    """The model's reply stalls; the agent is killed once the request has arrived (see the module doc)."""


def runs() -> list[Run]:
    call = fl.tool_call
    return [
        Run(
            "Look at data1.txt, data2.txt and data3.txt and tell me what they hold.",
            [
                call("bash", {"command": "cat data1.txt"}, id="call_cat1"),
                call(
                    "mulligan_rewind",
                    {"note": NOTE_GROUP, "granularity": "last_tool_call_group"},
                    id="call_rw_group",
                ),
                call("bash", {"command": "head -n 3 data1.txt"}, id="call_head1"),
                call("bash", {"command": "cat data2.txt"}, id="call_cat2"),
                call(
                    "mulligan_shrink",
                    {
                        "target": {"by_tool_call_id": "call_cat2"},
                        "replacement": SHRINK_2,
                        "reason": "only the shape matters",
                    },
                    id="call_sh2",
                ),
                call("read", {"path": "data3.txt"}, id="call_read3"),
                call(
                    "mulligan_shrink",
                    {"target": {"by_tool_name": "read", "occurrence": "last"}, "replacement": SHRINK_3},
                    id="call_sh3",
                ),
                call("mulligan_cancel", {"target": {"by_tool_call_id": "call_read3"}}, id="call_cancel3"),
                call("mulligan_audit", {"top": 4}, id="call_audit"),
                call("bash", {"command": "tr a-z A-Z < data1.txt"}, id="call_upper"),
                fl.text("They hold numbered records."),
            ],
        ),
        Run("/mulligan_checkpoint before-fix"),
        Run(
            "Now write the fix.",
            [
                call("bash", {"command": "echo patched > fix.txt && wc -l data1.txt"}, id="call_fix"),
                call(
                    "mulligan_rewind",
                    {"note": NOTE_CHECKPOINT, "granularity": "checkpoint", "checkpoint": "before-fix"},
                    id="call_rw_ckpt",
                ),
                fl.text("Rewound to your checkpoint; which fix do you want?"),
            ],
        ),
        Run(
            "Try a different approach.",
            [
                call("read", {"path": "data1.txt", "limit": 2}, id="call_read1"),
                call(
                    "mulligan_shrink",
                    {"target": {"by_content_includes": "DATA1 RECORD 00699"}, "replacement": SHRINK_UPPER},
                    id="call_sh_upper",
                ),
                call("mulligan_rewind", {"note": NOTE_TURN, "granularity": "last_turn"}, id="call_rw_turn"),
                fl.text("Back at your prompt."),
            ],
        ),
        Run("Summarize where we are.", [fl.stall(after_events=0, seconds=60)], final=True),
    ]


AgentCommand = Callable[[Run, int], list[str]]
"""Builds the argv of run ``i`` (the first run starts the session, later ones continue it)."""


def drive(
    command: AgentCommand,
    env: dict[str, str],
    project: Path,
    llm: fl.FakeLLM,
    script: list[Run] | None = None,
    timeout: float = 120,
) -> list[fl.RecordedRequest]:
    """Run every ``Run`` of ``script`` (default ``runs()``) in ``project``; returns all model requests."""
    for i, run in enumerate(runs() if script is None else script):
        before = len(llm.llm_requests)
        llm.push(*run.replies)
        argv = command(run, i)
        if not run.final:
            proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"run {i} {argv[-1]!r} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
                )
            if llm.pending:
                raise RuntimeError(f"run {i}: {llm.pending} scripted replies were not used")
            continue
        popen = subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + timeout
            while len(llm.llm_requests) <= before:
                if popen.poll() is not None:
                    raise RuntimeError(f"final run exited early: {popen.communicate()[1][-4000:]!r}")
                if time.monotonic() > deadline:
                    raise RuntimeError("final run: no request arrived")
                time.sleep(0.02)
            time.sleep(0.3)  # nothing more is written before the reply; leave a margin anyway
        finally:
            popen.kill()
            popen.communicate()
    return llm.llm_requests


def pi_env(agent_dir: Path, node: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {
        **base,
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PATH": f"{Path(node).parent}:{base.get('PATH', '')}",
    }


def export_pi_mulligan(dest: Path) -> Path:
    """pi-mulligan's HEAD tree under ``dest``; returns its extension entry point."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(PI_MULLIGAN_REPO), "archive", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src" / "index.ts"


@dataclass
class PiResult:
    session_file: Path
    requests: list[fl.RecordedRequest]


def run_pi(work: Path, script: list[Run] | None = None, context_window: int = 200_000) -> PiResult:
    """The whole script (default ``runs()``) through real Pi + pi-mulligan, in ``work`` (a fresh directory)."""
    node = find_node()
    if node is None or not PI_BIN.exists():
        raise RuntimeError(f"reference Pi not available (Node >= 22.19 and {PI_BIN})")
    if not (PI_MULLIGAN_REPO / "HEAD").exists():
        raise RuntimeError(f"pi-mulligan mirror not found at {PI_MULLIGAN_REPO}")
    extension = export_pi_mulligan(work / "pi-mulligan")
    agent_dir = work / "pi-agent"
    sessions = work / "sessions"
    project = make_project(work / "project")

    def command(run: Run, i: int) -> list[str]:
        argv = [str(PI_BIN), "-e", str(extension), "--no-extensions", "--no-skills", "--no-context-files"]
        argv += ["--no-prompt-templates", "--session-dir", str(sessions), "--model", MODEL]
        return [*argv, "-p", *(["-c"] if i else []), run.prompt]

    with fl.FakeLLM() as llm:
        llm.write_models_json(agent_dir, provider="fake", model_id="fake-model", contextWindow=context_window)
        requests = drive(command, pi_env(agent_dir, node), project, llm, script)
    [session_file] = sorted(sessions.rglob("*.jsonl"))
    return PiResult(session_file, requests)


def last_request_payload(request: fl.RecordedRequest) -> dict[str, Any]:
    return {"messages": request.messages, "tools": request.tool_names}


def write_fixture(result: PiResult, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result.session_file, out / "session.jsonl")
    payload = last_request_payload(result.requests[-1])
    (out / "pi-last-request.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=FIXTURE_DIR, help=f"default: {FIXTURE_DIR}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pi-mulligan-fixture-") as tmp:
        result = run_pi(Path(tmp))
        write_fixture(result, args.out)
    print(f"wrote {args.out}/session.jsonl and pi-last-request.json ({len(result.requests)} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

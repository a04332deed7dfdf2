"""Skills and prompt templates through the real ``caddie`` command: print mode, RPC, trust, extensions."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.e2e.conftest import Caddie
from tests.resources.helpers import write_skill, write_template
from tests.support import fake_llm as fl


def test_print_mode_expands_templates_and_skills(caddie: Caddie) -> None:
    agent = caddie.home / "agent"
    write_template(
        agent / "prompts", "review", "Review $1 carefully. Focus: ${@:2}", description="Review code"
    )
    skill = write_skill(agent / "skills" / "tidy", "tidy", "Tidies code.", body="Tidy it.\n")
    caddie.llm.push(fl.text("reviewed"), fl.text("tidied"))
    result = caddie.run("-p", "--no-session", "--model", "fake/fake-model", "/review src/ naming errors")
    assert result.returncode == 0, result.stderr
    assert caddie.llm.llm_requests[0].last_user_text == "Review src/ carefully. Focus: naming errors"
    system = caddie.llm.llm_requests[0].system or ""
    assert f"<location>{skill}</location>" in system
    result = caddie.run("-p", "--no-session", "--model", "fake/fake-model", "/skill:tidy now")
    assert result.returncode == 0, result.stderr
    assert caddie.llm.llm_requests[1].last_user_text == (
        f'<skill name="tidy" location="{skill}">\nReferences are relative to {skill.parent}.\n\nTidy it.\n</skill>'
        "\n\nnow"
    )


def test_project_templates_need_trust_and_warnings_are_one_line_each(caddie: Caddie) -> None:
    write_template(caddie.project / ".caddie" / "prompts", "ship", "Ship version $1")
    write_skill(caddie.home / "agent" / "skills" / "broken", "broken", None)
    caddie.llm.push(fl.text("a"), fl.text("b"))
    untrusted = caddie.run("-p", "--no-session", "--model", "fake/fake-model", "/ship 2.0")
    assert untrusted.returncode == 0, untrusted.stderr
    assert caddie.llm.llm_requests[0].last_user_text == "/ship 2.0"
    assert "has no description in its frontmatter; skipped" in untrusted.stderr
    assert "Traceback" not in untrusted.stderr
    trusted = caddie.run("-p", "--no-session", "--trust", "--model", "fake/fake-model", "/ship 2.0")
    assert trusted.returncode == 0, trusted.stderr
    assert caddie.llm.llm_requests[1].last_user_text == "Ship version 2.0"


def test_skill_flag_is_additive_even_with_no_skills(caddie: Caddie) -> None:
    write_skill(caddie.home / "agent" / "skills" / "found", "found", "Discovered.")
    mine = write_skill(caddie.project / "mine", "mine", "Given on the command line.")
    caddie.llm.push(fl.text("ok"))
    result = caddie.run(
        "-p", "--no-session", "--no-skills", "--skill", str(mine.parent), "--model", "fake/fake-model", "hi"
    )
    assert result.returncode == 0, result.stderr
    system = caddie.llm.llm_requests[0].system or ""
    assert "<name>mine</name>" in system and "<name>found</name>" not in system


def test_extensions_add_skill_and_prompt_paths_with_resources_discover(caddie: Caddie) -> None:
    extra = caddie.project / "extra"
    write_skill(extra / "skills" / "from-ext", "from-ext", "Brought by an extension.")
    write_template(extra / "prompts", "ext-hello", "Hello $1 from an extension")
    (caddie.project / "ext.py").write_text(
        "from caddie.extensions.api import ResourcesDiscoverResult\n"
        "def register(api):\n"
        "    def discover(event, ctx):\n"
        f"        assert event.reason == 'startup' and event.cwd == {str(caddie.project)!r}\n"
        f"        return ResourcesDiscoverResult(skill_paths=[{str(extra / 'skills')!r}],\n"
        f"                                       prompt_paths=[{str(extra / 'prompts')!r}])\n"
        "    api.on('resources_discover', discover)\n"
    )
    caddie.llm.push(fl.text("ok"))
    result = caddie.run(
        "-p", "--no-session", "-e", "ext.py", "--model", "fake/fake-model", "/ext-hello world"
    )
    assert result.returncode == 0, result.stderr
    request = caddie.llm.llm_requests[0]
    assert request.last_user_text == "Hello world from an extension"
    assert "<name>from-ext</name>" in (request.system or "")


def rpc(caddie: Caddie, *args: str) -> tuple[subprocess.Popen[str], Any, Any]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "caddie",
            "--mode",
            "rpc",
            "--no-session",
            "--model",
            "fake/fake-model",
            *args,
        ],
        cwd=caddie.project,
        env=caddie.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def send(obj: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def read_until(pred: Any) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            obj: dict[str, Any] = json.loads(line)
            if pred(obj):
                return obj

    return proc, send, read_until


def test_rpc_prompt_expands_templates_and_lists_them_with_skills(caddie: Caddie) -> None:
    agent = caddie.home / "agent"
    write_template(
        agent / "prompts", "fix", "Fix the bug in $1, keep ${2:-the tests} passing", description="Fix"
    )
    write_skill(agent / "skills" / "debug", "debug", "Debugging steps.")
    caddie.llm.push(fl.text("fixed"))
    proc, send, read_until = rpc(caddie)
    try:
        send({"id": "1", "type": "get_commands"})
        commands = read_until(lambda o: o.get("id") == "1")["data"]["commands"]
        by_name = {c["name"]: c for c in commands}
        fix, debug = by_name["fix"], by_name["skill:debug"]
        assert (fix["description"], fix["source"]) == ("Fix", "prompt")
        assert (debug["description"], debug["source"]) == ("Debugging steps.", "skill")
        assert fix["sourceInfo"]["path"] == str(agent / "prompts" / "fix.md")
        assert debug["sourceInfo"]["path"] == str(agent / "skills" / "debug" / "SKILL.md")
        assert fix["sourceInfo"]["scope"] == "user"
        send({"id": "2", "type": "prompt", "message": '/fix "src/a b.py"'})
        read_until(lambda o: o.get("type") == "agent_settled")
        assert (
            caddie.llm.llm_requests[0].last_user_text == "Fix the bug in src/a b.py, keep the tests passing"
        )
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)

"""Skills and prompt templates side by side with the reference Pi 0.84.4, against the same fake server.

Both agents get the same skill folder (``--skill``) and template folder (``--prompt-template``) and are sent
``/skill:name args`` then ``/template args``. The skills block in the system prompt and the two user
messages must be byte-identical. Skips where Pi is absent, except under CI=1, where that is a failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.interop.pi import PI_DIR, require_pi
from tests.support import fake_llm as fl


def need_pi() -> str:
    try:
        return require_pi()
    except pytest.skip.Exception as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Pi comparison: {e}")
        raise


def make_resources(root: Path) -> tuple[Path, Path]:
    skills = root / "skills"
    demo = skills / "demo-skill"
    (demo / "scripts").mkdir(parents=True)
    (demo / "SKILL.md").write_text(
        '---\nname: demo-skill\ndescription: Checks <things> & "stuff"; use it when asked to check.\n---\n\n'
        "# Demo\n\nRun `scripts/check.sh` relative to this folder.\n\n",
        encoding="utf-8",
    )
    (demo / "scripts" / "check.sh").write_text("echo ok\n")
    other = skills / "group" / "second"
    other.mkdir(parents=True)
    (other / "SKILL.md").write_text(
        "---\ndescription: The second skill.\n---\nSecond body.\n", encoding="utf-8"
    )
    hidden = skills / "manual-only"
    hidden.mkdir()
    (hidden / "SKILL.md").write_text(
        "---\nname: manual-only\ndescription: Hidden from the prompt.\ndisable-model-invocation: true\n---\nM.\n"
    )
    prompts = root / "prompts"
    prompts.mkdir()
    (prompts / "review.md").write_text(
        "---\ndescription: Review\n---\nReview $1 (${2:-all}) then ${@:3} | $ARGUMENTS | ${@:2:1}\n"
    )
    return skills, prompts


MESSAGES = ["/skill:demo-skill  fix the 'flaky' test ", '/review src/ "error paths" a b']


def skills_block(system: str) -> str:
    start = system.index("\n\nThe following skills")
    end = system.index("</available_skills>") + len("</available_skills>")
    return system[start:end]


def run(cmd: list[str], env: dict[str, str], cwd: Path, agent_dir: Path) -> list[fl.RecordedRequest]:
    import subprocess

    with fl.FakeLLM() as llm:
        llm.write_models_json(agent_dir, provider="fake", model_id="fake-model", contextWindow=200_000)
        llm.push(fl.text("one"), fl.text("two"))
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return list(llm.llm_requests)


def test_skills_block_and_expansions_match_pi(tmp_path: Path) -> None:
    node = need_pi()
    skills, prompts = make_resources(tmp_path / "shared")
    project = tmp_path / "project"
    project.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "CADDIE_DIR"}
    flags = ["--skill", str(skills), "--prompt-template", str(prompts), "--tools", "read,bash"]

    caddie_home = tmp_path / "caddie-home"
    caddie_env = {
        **base,
        "CADDIE_DIR": str(caddie_home),
        "CADDIE_AGENTS_DIR": str(tmp_path / "no-agents"),
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
    }
    ours = run(
        [
            sys.executable,
            "-m",
            "caddie",
            "-p",
            "--no-session",
            "--no-context-files",
            "--model",
            "fake/fake-model",
            *flags,
            *MESSAGES,
        ],
        caddie_env,
        project,
        caddie_home / "agent",
    )

    pi_agent = tmp_path / "pi-home" / "agent"
    pi_env = {
        **base,
        "HOME": str(tmp_path / "pi-user"),  # no ~/.agents/skills of the machine
        "PI_CODING_AGENT_DIR": str(pi_agent),
        "PI_OFFLINE": "1",
        "PATH": f"{Path(node).parent}:{base.get('PATH', '')}",
    }
    theirs = run(
        [
            str(PI_DIR / "node_modules" / ".bin" / "pi"),
            "-p",
            "--no-session",
            "--no-context-files",
            "--no-extensions",
            "--model",
            "fake/fake-model",
            *flags,
            *MESSAGES,
        ],
        pi_env,
        project,
        pi_agent,
    )

    assert len(ours) == len(theirs) == 2
    assert skills_block(ours[0].system or "") == skills_block(theirs[0].system or "")
    assert "manual-only" not in skills_block(ours[0].system or "")
    for i in range(2):
        assert ours[i].last_user_text == theirs[i].last_user_text, f"message {i}"
    assert (ours[0].last_user_text or "").startswith('<skill name="demo-skill" location="')
    assert ours[1].last_user_text == "Review src/ (error paths) then a b | src/ error paths a b | error paths"


def test_no_skills_block_without_read(tmp_path: Path) -> None:
    skills, _ = make_resources(tmp_path / "shared")
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "caddie-home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "CADDIE_DIR": str(home),
        "CADDIE_AGENTS_DIR": str(tmp_path / "no-agents"),
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
    }
    import subprocess

    with fl.FakeLLM() as llm:
        llm.write_models_json(home / "agent", provider="fake", model_id="fake-model", contextWindow=200_000)
        llm.push(fl.text("ok"))
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "caddie",
                "-p",
                "--no-session",
                "--model",
                "fake/fake-model",
                "--skill",
                str(skills),
                "--tools",
                "bash",
                "hi",
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "<available_skills>" not in (llm.llm_requests[0].system or "")

"""Configuration probes side by side with the reference Pi: the same agent folder (settings.json, models.json,
SYSTEM.md…), project files, environment and command line, run by Pi 0.84.4 and by caddie against a fake
server; the first request each sends must decide the same things — the model, the reasoning effort, the
tools offered, which pieces of text the system prompt holds, and the key sent.

Each probe writes its files into both agents' folders (Pi's ``PI_CODING_AGENT_DIR`` and ``.pi/``,
caddie's ``CADDIE_CODING_AGENT_DIR`` and ``.caddie/``) so a difference is a difference of behaviour.
Skips (with the reason) where Pi is absent; fails under ``CI=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.interop.pi import PI_DIR, require_pi
from tests.support import fake_llm as fl

REPO = Path(__file__).parents[2]
MARKERS = ("AGENTS-MARK", "SYSTEM-MARK", "APPEND-MARK", "FILE-PROMPT-MARK", "FILE-APPEND-A", "FILE-APPEND-B")
"""Texts the probes put in context and prompt files: which of them reach the system prompt is compared."""


PNG = "PNG"
"""Stands for a small PNG image (written as bytes by ``_setup``)."""


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@dataclass
class Probe:
    name: str
    args: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    """Extra fields of the fake model in models.json (``reasoning``…)."""
    agent_files: dict[str, str] = field(default_factory=dict)
    """Files in the agent folder (``SYSTEM.md``…)."""
    project_files: dict[str, str] = field(default_factory=dict)
    """Files in the project (``AGENTS.md``; ``CONFIG/…`` goes to ``.pi/`` and ``.caddie/``)."""
    env: dict[str, str] = field(default_factory=dict)
    provider: str = "fake"
    api_key: str = "key-from-models-json"
    api: str = "openai-completions"
    builtin_model: str | None = None
    """A built-in model of ``provider`` to run, models.json only moving its provider to the fake server."""


PROBES = [
    Probe("reasoning model, no level set", model={"reasoning": True}),
    Probe(
        "settings defaultThinkingLevel high",
        model={"reasoning": True},
        settings={"defaultThinkingLevel": "high"},
    ),
    Probe(
        "--thinking low over settings",
        ["--thinking", "low"],
        {"defaultThinkingLevel": "high"},
        {"reasoning": True},
    ),
    Probe("--model :minimal suffix", ["--model", "fake/fake-model:minimal"], model={"reasoning": True}),
    Probe(
        "modelThinkingLevels",
        settings={"modelThinkingLevels": {"fake/fake-model": "low"}, "defaultThinkingLevel": "high"},
        model={"reasoning": True},
    ),
    Probe("non-reasoning model", ["--thinking", "high"]),
    Probe("settings defaultTools", settings={"defaultTools": ["read", "grep", "ls"]}),
    Probe("-t read,ls", ["-t", "read,ls"]),
    Probe("-nt", ["-nt"]),
    Probe("-nbt", ["-nbt"]),
    Probe("-xt bash", ["-xt", "bash"]),
    Probe("AGENTS.md loaded", project_files={"AGENTS.md": "AGENTS-MARK"}),
    Probe("-nc with AGENTS.md", ["-nc"], project_files={"AGENTS.md": "AGENTS-MARK"}),
    Probe(
        "global SYSTEM.md and APPEND_SYSTEM.md",
        agent_files={"SYSTEM.md": "SYSTEM-MARK", "APPEND_SYSTEM.md": "APPEND-MARK"},
        project_files={"AGENTS.md": "AGENTS-MARK"},
    ),
    Probe(
        "--system-prompt FILE and --append-system-prompt FILE twice",
        ["--system-prompt", "p.md", "--append-system-prompt", "a.md", "--append-system-prompt", "b.md"],
        agent_files={"SYSTEM.md": "SYSTEM-MARK", "APPEND_SYSTEM.md": "APPEND-MARK"},
        project_files={"p.md": "FILE-PROMPT-MARK", "a.md": "FILE-APPEND-A", "b.md": "FILE-APPEND-B"},
    ),
    Probe(
        "thinkingBudgets, Anthropic Messages",
        settings={"thinkingBudgets": {"medium": 3000}},
        model={"reasoning": True, "maxTokens": 32000},
        api="anthropic-messages",
    ),
    Probe(
        "an image attached", ["@pic.png"], model={"input": ["text", "image"]}, project_files={"pic.png": PNG}
    ),
    Probe(
        "images.blockImages",
        ["@pic.png"],
        {"images": {"blockImages": True}},
        {"input": ["text", "image"]},
        project_files={"pic.png": PNG},
    ),
    Probe(
        "environment variable and models.json apiKey, custom models",
        provider="deepseek",
        env={"DEEPSEEK_API_KEY": "key-from-env"},
    ),
    Probe(
        "environment variable and models.json apiKey, built-in model",
        provider="deepseek",
        builtin_model="deepseek-v4-flash",
        env={"DEEPSEEK_API_KEY": "key-from-env"},
    ),
    Probe(
        "auth.json over models.json and the environment",
        provider="deepseek",
        builtin_model="deepseek-v4-flash",
        agent_files={"auth.json": json.dumps({"deepseek": {"type": "api_key", "key": "key-from-auth"}})},
        env={"DEEPSEEK_API_KEY": "key-from-env"},
    ),
    Probe("--api-key over models.json", ["--api-key", "key-from-flag"]),
    Probe("--provider and a bare model id", ["--provider", "fake", "--model", "fake-model"]),
    Probe("--model part of an id", ["--model", "fake-mod:high"], model={"reasoning": True}),
    Probe(
        "models.json samplingParams",
        model={"samplingParams": {"min_p": 0.05, "top_k": 20, "temperature": 0.3}},
    ),
    Probe(
        "models.json samplingParams, Responses API",
        model={"samplingParams": {"top_k": 7, "temperature": 0.9}},
        api="openai-responses",
    ),
    Probe(
        "project SYSTEM.md, approved",
        ["-a"],
        project_files={"CONFIG/SYSTEM.md": "SYSTEM-MARK", "CONFIG/APPEND_SYSTEM.md": "APPEND-MARK"},
    ),
    Probe(
        "project SYSTEM.md, not approved",
        ["-na"],
        project_files={"CONFIG/SYSTEM.md": "SYSTEM-MARK", "CONFIG/APPEND_SYSTEM.md": "APPEND-MARK"},
    ),
    Probe(
        "project SYSTEM.md, no decision",
        project_files={"CONFIG/SYSTEM.md": "SYSTEM-MARK", "CONFIG/APPEND_SYSTEM.md": "APPEND-MARK"},
    ),
    Probe(
        "project settings, approved",
        ["-a"],
        settings={"defaultTools": ["read", "grep", "ls"], "defaultThinkingLevel": "low"},
        model={"reasoning": True},
        project_files={"CONFIG/settings.json": json.dumps({"defaultTools": ["read"], "bogusKey": 1})},
    ),
    Probe(
        "defaultProjectTrust always",
        settings={"defaultProjectTrust": "always"},
        project_files={"CONFIG/settings.json": json.dumps({"defaultTools": ["ls"]})},
    ),
    Probe(
        "project settings defaultTools over global",
        settings={"defaultTools": ["read", "grep", "ls"]},
        project_files={"CONFIG/settings.json": json.dumps({"defaultTools": ["read"]})},
    ),
    Probe(
        "PI_EXPERIMENTAL=1: the core tools prefer strict arguments",
        model={"compat": {"supportsStrictMode": True}},
        env={"PI_EXPERIMENTAL": "1"},
    ),
    Probe(
        "environment variable only, built-in model",
        provider="deepseek",
        builtin_model="deepseek-v4-flash",
        api_key="",
        env={"DEEPSEEK_API_KEY": "key-from-env"},
    ),
]


def _setup(probe: Probe, llm: fl.FakeLLM, agent_dir: Path, project: Path, config_dir: str) -> None:
    if probe.builtin_model:
        provider: dict[str, Any] = {"baseUrl": llm.openai_base_url}
        if probe.api_key:
            provider["apiKey"] = probe.api_key
        agent_dir.joinpath("models.json").write_text(json.dumps({"providers": {probe.provider: provider}}))
    else:
        llm.write_models_json(
            agent_dir,
            provider=probe.provider,
            api=probe.api,
            model_id="fake-model",
            api_key=probe.api_key,
            **probe.model,
        )
    settings = dict(probe.settings)
    if config_dir == ".caddie":  # caddie's bundled extensions (Pi has none) stay off: Pi's tools only
        settings["disabledExtensions"] = ["mulligan", "goal", "mcp"]
    if settings:
        (agent_dir / "settings.json").write_text(json.dumps(settings))
    for name, text in probe.agent_files.items():
        (agent_dir / name).write_text(text)
    project.mkdir(parents=True)
    for name, text in probe.project_files.items():
        path = project / name.replace("CONFIG/", f"{config_dir}/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if text == PNG:
            path.write_bytes(_png())
        else:
            path.write_text(text)


@dataclass
class Decision:
    """What a first request decided, in the terms the probes compare."""

    model: str | None
    reasoning_effort: Any
    tools: list[str]
    markers: list[str]
    key: str | None
    thinking: Any
    """Anthropic's ``thinking`` block (type and budget)."""
    images: int
    blocked_images: bool
    """"Image reading is disabled." stands in for an image (settings ``images.blockImages``)."""
    custom_prompt: bool
    """The default prompt was replaced (it lacks the default's opening line)."""
    sampling: dict[str, Any]
    """The sampling parameters sent (models.json ``samplingParams``)."""
    strict_tools: list[str]
    """The tools sent with strict arguments (``PI_EXPERIMENTAL=1``)."""


def _decision(request: fl.RecordedRequest) -> Decision:
    body = request.body or {}
    system = request.system or ""
    wire = json.dumps(body.get("messages", []))
    return Decision(
        model=request.model,
        reasoning_effort=body.get("reasoning_effort"),
        tools=sorted(request.tool_names),
        markers=[m for m in MARKERS if m in system],
        key=request.headers.get("authorization", "").removeprefix("Bearer ")
        or request.headers.get("x-api-key")
        or None,
        thinking=body.get("thinking"),
        images=wire.count('"image_url"') + wire.count('"type": "image"'),
        blocked_images="Image reading is disabled." in wire,
        custom_prompt="expert coding assistant" not in system,
        sampling={k: body[k] for k in ("min_p", "top_k", "temperature") if k in body},
        strict_tools=sorted(
            t["function"]["name"]
            for t in body.get("tools") or []
            if isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("strict")
        ),
    )


def _run(probe: Probe, root: Path, command: Callable[[Path], tuple[list[str], dict[str, str]]]) -> Decision:
    with fl.FakeLLM() as llm:
        llm.push(fl.text("ok"))
        cmd, env = command(root)
        agent = Path(env.get("PI_CODING_AGENT_DIR") or env["CADDIE_CODING_AGENT_DIR"])
        agent.mkdir(parents=True)
        _setup(probe, llm, agent, root / "project", ".pi" if "PI_CODING_AGENT_DIR" in env else ".caddie")
        model_id = probe.builtin_model or "fake-model"
        model = [] if "--model" in probe.args else ["--model", f"{probe.provider}/{model_id}"]
        proc = subprocess.run(
            [*cmd, "-p", "--no-session", *model, *probe.args, "hello"],
            cwd=root / "project",
            env={**env, **probe.env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, f"{cmd[0]}: {proc.stderr[-2000:]}"
        assert llm.llm_requests, f"{cmd[0]} sent no request: {proc.stderr[-2000:]}"
        return _decision(llm.llm_requests[0])


def _base_env(home: Path) -> dict[str, str]:
    drop = ("_API_KEY", "CADDIE_", "PI_")
    env = {k: v for k, v in os.environ.items() if not (k.endswith(drop[0]) or k.startswith(drop[1:]))}
    return {**env, "HOME": str(home)}


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_pi_and_caddie_decide_the_first_request_alike(probe: Probe, tmp_path: Path) -> None:
    node = require_pi()

    def pi(root: Path) -> tuple[list[str], dict[str, str]]:
        env = _base_env(root / "home")
        env.update(
            PI_CODING_AGENT_DIR=str(root / "agent"),
            PI_OFFLINE="1",
            PATH=f"{Path(node).parent}:{env.get('PATH', '')}",
        )
        return [str(PI_DIR / "node_modules" / ".bin" / "pi"), "--no-skills", "--no-extensions"], env

    def caddie(root: Path) -> tuple[list[str], dict[str, str]]:
        env = _base_env(root / "home")
        env.update(
            CADDIE_CODING_AGENT_DIR=str(root / "agent"),
            CADDIE_OFFLINE="1",
            PYTHONPATH=str(REPO / "src"),
        )
        return [sys.executable, "-m", "caddie", "--no-skills", "--no-extensions"], env

    with ThreadPoolExecutor(2) as pool:
        theirs = pool.submit(_run, probe, tmp_path / "pi", pi)
        ours = pool.submit(_run, probe, tmp_path / "caddie", caddie)
        assert ours.result() == theirs.result()
    if probe.env.get("PI_EXPERIMENTAL"):
        assert {"read", "bash", "edit", "write"} <= set(theirs.result().strict_tools)  # the probe probes

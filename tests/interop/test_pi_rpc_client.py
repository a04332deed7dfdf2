"""Pi's own ``RpcClient`` drives ``caddie --mode rpc`` and Pi itself through the same script.

``rpc_drive.mjs`` (run with the reference Pi's Node) starts each host with ``RpcClient`` (for caddie through
``caddie_rpc_shim.mjs``), sends prompts, steering and follow-ups, answers extension dialogs, compacts,
switches models and sessions, and prints every command result and event. Both hosts talk to their own
fake OpenAI-compatible server on 127.0.0.1 with identical scripted replies, and load an equivalent ``/ask``
extension. The two transcripts must be equal once ids, timestamps and paths are normalised.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_PACKAGE, require_pi
from tests.support import fake_llm as fl

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"

PI_ASK = """\
export default function (pi) {
  pi.registerCommand("ask", {
    description: "Ask three things",
    handler: async (args, ctx) => {
      const ok = await ctx.ui.confirm("Deploy?", "Ship it to production");
      const where = await ctx.ui.select("Where?", ["dev", "prod"]);
      const name = await ctx.ui.input("Name", "who");
      const text = await ctx.ui.editor("Notes", "draft");
      ctx.ui.notify(`ok=${ok} where=${where} name=${name} text=${text}`, "info");
    },
  });
}
"""

CADDIE_ASK = """\
def register(api):
    async def ask(args, ctx):
        ok = await ctx.ui.confirm("Deploy?", "Ship it to production")
        where = await ctx.ui.select("Where?", ["dev", "prod"])
        name = await ctx.ui.input("Name", "who")
        text = await ctx.ui.editor("Notes", "draft")
        ok_text = "true" if ok else "false"
        ctx.ui.notify(f"ok={ok_text} where={where} name={name} text={'undefined' if text is None else text}", "info")

    api.register_command("ask", ask, description="Ask three things")
"""

SETTINGS = {"compaction": {"keepRecentTokens": 1}, "disabledExtensions": ["mulligan", "goal", "mcp"]}


def replies() -> list[fl.Reply]:
    return [
        fl.text("Hi! How can I help?"),
        fl.tool_call("bash", {"command": "echo tool-ran"}, id="call_1", delay_s=0.15, chunk_size=2),
        fl.text("Steered."),
        fl.text("Summary done."),
        fl.text("## Goal\nSay hello.\n\n## Progress\nDone."),
        fl.text("slow " * 40, delay_s=0.1, chunk_size=5),
    ]


def models_json(llm: fl.FakeLLM) -> dict[str, Any]:
    return {
        "providers": {
            "fake": {
                "baseUrl": llm.openai_base_url,
                "api": "openai-completions",
                "apiKey": "fake-key",
                "models": [
                    {"id": "fake-model", "name": "Fake Model", "contextWindow": 200_000, "maxTokens": 8_192},
                    {
                        "id": "fake-model-2",
                        "name": "Fake Model 2",
                        "contextWindow": 100_000,
                        "maxTokens": 4_096,
                    },
                ],
            }
        }
    }


def drive(node: str, cli: Path, cwd: Path, env: dict[str, str], agent_dir: Path, ext: Path) -> Any:
    with fl.FakeLLM() as llm:
        agent_dir.mkdir(parents=True, exist_ok=True)
        (agent_dir / "models.json").write_text(json.dumps(models_json(llm)))
        (agent_dir / "settings.json").write_text(json.dumps(SETTINGS))
        llm.push(*replies())
        proc = subprocess.run(
            [node, str(HERE / "rpc_drive.mjs"), str(PI_PACKAGE), str(cli), str(cwd), "-e", str(ext)],
            cwd=cwd,
            env={**env, "PATH": f"{Path(node).parent}{os.pathsep}{env.get('PATH', '')}"},
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        requests = len(llm.llm_requests)
    return json.loads(proc.stdout), requests


_ID = re.compile(r"^[0-9a-f]{8}$|^[0-9a-f-]{36}$|^[0-9a-z]{16,}$")


class Normaliser:
    """Replaces ids (in order of first appearance), timestamps and paths with stable placeholders."""

    def __init__(self, roots: dict[str, str]) -> None:
        self.ids: dict[str, str] = {}
        self.roots = roots

    def id(self, value: str) -> str:
        return self.ids.setdefault(value, f"<id{len(self.ids)}>")

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if key in ("timestamp", "labelTimestamp") and value is not None:
            return "<time>"
        if isinstance(value, str):
            if key in ("id", "parentId", "entryId", "leafId", "firstKeptEntryId", "sessionId", "toolCallId"):
                return self.id(value)
            for root, name in self.roots.items():
                value = value.replace(root, name)
            value = re.sub(r"\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d[-.]\d+Z", "<time>", value)
            value = re.sub(r"_[0-9a-f-]{36}\.jsonl", "_<uuid>.jsonl", value)
            value = re.sub(r"/(?:pi|caddie)-bash-[0-9a-f]+\.log", "/<bash-log>", value)
            value = re.sub(r"http://127\.0\.0\.1:\d+", "http://127.0.0.1:<port>", value)
        return value


def test_pi_rpc_client_sees_the_same_host(tmp_path: Path) -> None:
    node = require_pi()
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("CADDIE_DIR", "PI_CODING_AGENT_DIR")
    }
    results: dict[str, Any] = {}
    for host in ("pi", "caddie"):
        home = tmp_path / host
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        if host == "pi":
            ext = home / "ask.ts"
            ext.parent.mkdir(parents=True)
            ext.write_text(PI_ASK)
            env = {**base, "PI_CODING_AGENT_DIR": str(home / "agent"), "PI_OFFLINE": "1"}
            cli = PI_PACKAGE / "dist" / "cli.js"
            agent_dir = home / "agent"
        else:
            ext = home / "ask.py"
            ext.parent.mkdir(parents=True)
            ext.write_text(CADDIE_ASK)
            env = {
                **base,
                "CADDIE_DIR": str(home),
                "CADDIE_PYTHON": sys.executable,
                "PYTHONPATH": str(SRC),
            }
            cli = HERE / "caddie_rpc_shim.mjs"
            agent_dir = home / "agent"
        log, requests = drive(node, cli, project, env, agent_dir, ext)
        norm = Normaliser({str(ext): "<ext>", str(home): "<home>", str(project.resolve()): "<project>"})
        results[host] = (norm(_comparable(log)), requests)
    (tmp_path / "pi.json").write_text(json.dumps(results["pi"][0], indent=1))
    (tmp_path / "caddie.json").write_text(json.dumps(results["caddie"][0], indent=1))
    pi_log, caddie_log = results["pi"][0], results["caddie"][0]
    assert results["caddie"][1] == results["pi"][1]
    mismatches = [
        f"#{i}\n  pi:     {json.dumps(a)[:1500]}\n  caddie: {json.dumps(b)[:1500]}"
        for i, (a, b) in enumerate(zip(pi_log, caddie_log, strict=False))
        if a != b
    ]
    assert not mismatches and len(pi_log) == len(caddie_log), (
        f"{len(mismatches)} differences ({len(pi_log)} vs {len(caddie_log)} records); see {tmp_path}\n"
        + "\n".join(mismatches[:15])
    )


def _comparable(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What both hosts must agree on. Host-only records are dropped (caddie's ``notice`` and
    ``extension_event``, Pi's built-in ``/llama`` command), consecutive ``bash_execution_update`` chunks of
    one command are joined (where a pipe read splits output is up to the OS), and the provider layer's
    streaming details are set aside (``_without_provider_details``): the RPC layer passes them through."""
    out: list[dict[str, Any]] = []
    for position, record in enumerate(log):
        event = record.get("event")
        if event is not None:
            if event.get("type") in ("notice", "extension_event"):
                continue
            last = out[-1].get("event") if out else None
            if (
                event.get("type") == "bash_execution_update"
                and last is not None
                and last.get("type") == "bash_execution_update"
                and last.get("id") == event.get("id")
            ):
                last["delta"] += event["delta"]
                continue
            if _closes_aborted_block(event, log[position + 1 :]):
                continue
            record = {**record, "event": _without_provider_details(event)}
        elif record.get("step") == "get_commands" and isinstance(record.get("result"), list):
            record = {**record, "result": [c for c in record["result"] if c.get("name") != "llama"]}
        out.append(_without_provider_details(record))
    return out


def _closes_aborted_block(event: dict[str, Any], following: list[dict[str, Any]]) -> bool:
    """Pi's OpenAI adapter closes the open content block (``text_end``) before it reports an abort;
    caddie's adapter (owned apart from the RPC layer) does not. That one delta is set aside."""
    delta = event.get("assistantMessageEvent") if event.get("type") == "message_update" else None
    if not delta or not str(delta.get("type", "")).endswith("_end"):
        return False
    nxt = next((r.get("event") for r in following if r.get("event") is not None), None)
    return bool(
        nxt and nxt.get("type") == "message_end" and nxt.get("message", {}).get("stopReason") == "aborted"
    )


def _without_provider_details(value: Any) -> Any:
    """Set aside what the provider adapters (owned apart from the RPC layer) fill in differently: the
    running token counts of ``message_update``, the response id already on ``message_start``, and a
    ``reasoning: 0`` token count Pi's OpenAI adapter adds, and caddie's estimate for a reply whose server
    reported no usage (``"estimated": true``, docs/providers.md) where Pi records zeros — compared as Pi's
    zeros. Everything else is compared as is."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "usage" and value.get("type") == "message_update":
                continue
            if key == "responseId" and value.get("stopReason") == "pending":
                continue
            if key == "reasoning" and item == 0 and "totalTokens" in value:
                continue
            if key == "usage" and isinstance(item, dict) and item.get("estimated") is True:
                item = _zeroed({k: v for k, v in item.items() if k != "estimated"})
            out[key] = _without_provider_details(item)
        return out
    if isinstance(value, list):
        return [_without_provider_details(v) for v in value]
    return value


def _zeroed(value: Any) -> Any:
    """The same shape with every number 0."""
    if isinstance(value, dict):
        return {k: _zeroed(v) for k, v in value.items()}
    return 0 if isinstance(value, int | float) and not isinstance(value, bool) else value


def test_system_prompt_flag_sends_pis_exact_text(tmp_path: Path) -> None:
    """``--system-prompt X``: both send ``X``, then the cwd line and a newline (no date)."""
    node = require_pi()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    project = tmp_path / "project"
    project.mkdir()
    sent: dict[str, str | None] = {}
    for host in ("pi", "caddie"):
        home = tmp_path / host
        with fl.FakeLLM() as llm:
            llm.write_models_json(home / "agent", provider="fake", model_id="fake-model")
            llm.push(fl.text("ok"))
            common = ["-p", "--no-session", "--no-context-files", "--model", "fake/fake-model"]
            if host == "pi":
                cmd = [node, str(PI_PACKAGE / "dist" / "cli.js"), *common, "--no-skills", "--no-extensions"]
                env = {**base, "PI_CODING_AGENT_DIR": str(home / "agent"), "PI_OFFLINE": "1"}
            else:
                cmd = [sys.executable, "-m", "caddie", *common]
                env = {**base, "CADDIE_DIR": str(home), "PYTHONPATH": str(SRC)}
            proc = subprocess.run(
                [*cmd, "--system-prompt", "You are terse.", "hi"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            sent[host] = llm.llm_requests[0].system
    assert sent["caddie"] == sent["pi"] == f"You are terse.\nCurrent working directory: {project.resolve()}\n"

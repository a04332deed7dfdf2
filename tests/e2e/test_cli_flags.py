"""The command-line flags Pi users type, with Pi's meaning, run as the real ``caddie`` command."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

from PIL import Image

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


def three_models(caddie: Caddie) -> None:
    models = {
        "providers": {
            "fake": {
                "baseUrl": caddie.llm.openai_base_url,
                "api": "openai-completions",
                "apiKey": "fake-key",
                "models": [
                    {"id": "fake-model", "contextWindow": 100_000},
                    {"id": "fake-reasoner", "reasoning": True, "contextWindow": 200_000, "maxTokens": 32_000},
                    {"id": "vision", "input": ["text", "image"], "contextWindow": 1_500_000},
                ],
            }
        }
    }
    (caddie.home / "agent" / "models.json").write_text(json.dumps(models))


def sessions_here(caddie: Caddie) -> list[dict[str, str]]:
    """(id, path) of the sessions ``caddie session list`` shows."""
    listed = caddie.run("session", "list")
    assert listed.returncode == 0, listed.stderr
    rows = []
    for line in listed.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 2 and parts[1].endswith(".jsonl"):
            rows.append({"id": parts[0], "path": parts[1]})
    return rows


def test_list_models_prints_pis_table_and_filters(caddie: Caddie) -> None:
    three_models(caddie)
    result = caddie.run("--list-models")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "provider  model          context  max-out  thinking  images",
        "fake      fake-model     100K     16.4K    no        no    ",
        "fake      fake-reasoner  200K     32K      yes       no    ",
        "fake      vision         1.5M     16.4K    no        yes   ",
    ]
    searched = caddie.run("--list-models", "reasnr")
    assert [line.split()[1] for line in searched.stdout.splitlines()[1:]] == ["fake-reasoner"]
    none = caddie.run("--list-models", "zzz")
    assert none.stdout == 'No models matching "zzz"\n'


def test_model_with_thinking_suffix_and_api_key(caddie: Caddie) -> None:
    three_models(caddie)
    caddie.llm.push(fl.text("thought about it"))
    result = caddie.run("-p", "--model", "fake/fake-reasoner:high", "--api-key", "sk-from-flag", "think")
    assert result.returncode == 0, result.stderr
    request = caddie.llm.llm_requests[0]
    assert request.headers.get("authorization") == "Bearer sk-from-flag"
    assert (request.body or {}).get("reasoning_effort") == "high"
    session = caddie.session_files()[0].read_text()
    assert '"thinkingLevel":"high"' in session.replace(" ", "")


def test_misspelled_model_and_option_suggest_the_closest(caddie: Caddie) -> None:
    result = caddie.run("-p", "--model", "fake/fake-modle", "hi")
    assert result.returncode == 2
    assert "Did you mean fake/fake-model?" in result.stderr and "Traceback" not in result.stderr
    result = caddie.run("--modle", "fake/fake-model", "-p", "hi")
    assert result.returncode == 2 and "did you mean --model?" in result.stderr
    assert caddie.llm.llm_requests == []


def test_faux_without_a_script_says_the_script_is_missing(caddie: Caddie) -> None:
    result = caddie.run("-p", "--model", "faux/scripted", "hi")
    assert result.returncode == 2
    assert "CADDIE_FAUX_SCRIPT" in result.stderr and "is not set" in result.stderr
    assert caddie.run("-p", "--model", "faux/echo", "hi").stdout == "hi\n"


def test_goal_options_are_checked_before_anything_runs(caddie: Caddie) -> None:
    for args in (["--goal-budget", "10k"], ["--goal-check", "true"]):
        result = caddie.run("-p", "--model", "fake/fake-model", *args, "do it")
        assert result.returncode == 2
        assert result.stderr == 'caddie: --goal-budget and --goal-check need --goal "<objective>".\n'
    empty = caddie.run("-p", "--model", "fake/fake-model", "--goal", "", "do it")
    assert empty.returncode == 2 and '--goal "": the objective is empty' in empty.stderr
    # each option's own check, as the goal extension registers it (register_flag(..., check=...))
    budget = caddie.run("-p", "--model", "fake/fake-model", "--goal", "ship", "--goal-budget", "lots")
    assert budget.returncode == 2
    assert (
        budget.stderr
        == "caddie: --goal-budget: 'lots' is not a token count; write it like 50000, 50k or 1.5M.\n"
    )
    long = caddie.run("-p", "--model", "fake/fake-model", "--goal", "x" * 4001)
    assert long.returncode == 2 and long.stderr.startswith(
        "caddie: --goal: The objective is 4,001 characters"
    )
    assert caddie.llm.llm_requests == [] and caddie.session_files() == []


def test_name_session_id_and_lookup_by_id_prefix(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("one"), fl.text("two"), fl.text("three"))
    first = caddie.run(
        "-p", "--model", "fake/fake-model", "--name", "alpha work", "--session-id", "alpha-1", "q1"
    )
    assert first.returncode == 0 and "starting a new session with that id" in first.stderr
    again = caddie.run("-p", "--model", "fake/fake-model", "--session-id", "alpha-1", "q2")
    assert again.returncode == 0 and again.stderr == ""  # the same session, continued
    rows = sessions_here(caddie)
    assert [r["id"] for r in rows] == ["alpha-1"]
    listed = caddie.run("session", "list").stdout
    assert "alpha work" in listed and "alpha-1" in listed

    shown = caddie.run("session", "show", "alph")
    assert shown.returncode == 0 and "# session alpha-1 — alpha work" in shown.stdout
    assert "q1" in shown.stdout and "q2" in shown.stdout
    context = caddie.run("context", "alpha-1", "--json")
    assert context.returncode == 0 and json.loads(context.stdout)["sessionFile"] == rows[0]["path"]
    exported = caddie.run("export", "alpha", "-o", "page.html")
    assert exported.returncode == 0 and (caddie.project / "page.html").exists()

    third = caddie.run("-p", "--model", "fake/fake-model", "--session", "alpha", "q3")
    assert third.returncode == 0, third.stderr
    assert [m for m in caddie.llm.llm_requests[-1].messages if m.get("role") == "user"][-1]["content"]
    assert caddie.llm.llm_requests[-1].last_user_text == "q3"
    assert len([m for m in caddie.llm.llm_requests[-1].messages if m.get("role") == "user"]) == 3

    unknown = caddie.run("session", "show", "zzz")
    assert unknown.returncode == 2 and "No session found matching 'zzz'" in unknown.stderr
    bad = caddie.run("-p", "--model", "fake/fake-model", "--session-id", "bad.", "x")
    assert bad.returncode == 2 and "--session-id must contain only" in bad.stderr


def test_ambiguous_prefix_is_refused(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("a"), fl.text("b"))
    for sid in ("same-1", "same-2"):
        assert caddie.run("-p", "--model", "fake/fake-model", "--session-id", sid, "hi").returncode == 0
    result = caddie.run("session", "show", "same")
    assert result.returncode == 2 and "matches 2 sessions" in result.stderr


def test_fork_copies_a_session_into_a_new_one(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("original answer"), fl.text("forked answer"))
    assert caddie.run("-p", "--model", "fake/fake-model", "--session-id", "src-1", "first").returncode == 0
    forked = caddie.run("-p", "--model", "fake/fake-model", "--fork", "src", "second")
    assert forked.returncode == 0, forked.stderr
    rows = sessions_here(caddie)
    assert len(rows) == 2
    new = next(r for r in rows if r["id"] != "src-1")
    header = json.loads(Path(new["path"]).read_text().splitlines()[0])
    assert header["parentSession"].endswith("_src-1.jsonl")
    user_texts = [m for m in caddie.llm.llm_requests[-1].messages if m.get("role") == "user"]
    assert len(user_texts) == 2  # the forked history went along
    source = next(r for r in rows if r["id"] == "src-1")
    copied = [json.loads(line)["id"] for line in Path(new["path"]).read_text().splitlines()[1:]]
    original = [json.loads(line)["id"] for line in Path(source["path"]).read_text().splitlines()[1:]]
    assert copied[: len(original)] == original  # every entry, ids kept (as Pi's forkFrom)
    clash = caddie.run("-p", "--model", "fake/fake-model", "--fork", "src", "-c", "x")
    assert clash.returncode == 2 and "choose one of" in clash.stderr


def test_export_flag_writes_html_and_exits(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("exported answer"))
    assert caddie.run("-p", "--model", "fake/fake-model", "--session-id", "exp-1", "hello").returncode == 0
    result = caddie.run("--export", "exp-1", "out.html")
    assert result.returncode == 0 and result.stdout == "Exported to: out.html\n"
    assert "exported answer" in (caddie.project / "out.html").read_text()
    missing = caddie.run("--export", "nope")
    assert missing.returncode == 2 and "No session found matching 'nope'" in missing.stderr


def test_exclude_tools_removes_them_from_the_request(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("ok"))
    result = caddie.run("-p", "--model", "fake/fake-model", "--exclude-tools", "bash,edit", "hi")
    assert result.returncode == 0, result.stderr
    tools = caddie.llm.llm_requests[0].tool_names
    assert "read" in tools and "write" in tools and "bash" not in tools and "edit" not in tools
    unknown = caddie.run("-p", "--model", "fake/fake-model", "-xt", "nosuch", "hi")
    assert unknown.returncode == 2 and "--exclude-tools: unknown tool(s) nosuch" in unknown.stderr


def test_at_file_attaches_text_inline_and_images_as_images(caddie: Caddie) -> None:
    three_models(caddie)
    caddie.llm.push(fl.text("seen"))
    (caddie.project / "notes.txt").write_text("\ufeffline one\nline two\n")
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buffer, format="PNG")
    (caddie.project / "dot.png").write_bytes(buffer.getvalue())
    (caddie.project / "empty.txt").write_text("")
    result = caddie.run("-p", "--model", "fake/vision", "@notes.txt", "@dot.png", "@empty.txt", "describe")
    assert result.returncode == 0, result.stderr
    user = [m for m in caddie.llm.llm_requests[0].messages if m.get("role") == "user"][-1]
    parts = user["content"]
    texts = [p["text"] for p in parts if p.get("type") == "text"]
    images = [p for p in parts if p.get("type") == "image_url"]
    notes, dot = caddie.project / "notes.txt", caddie.project / "dot.png"
    assert texts == [
        f'<file name="{notes}">\nline one\nline two\n\n</file>\n<file name="{dot}"></file>\ndescribe'
    ]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1]) == buffer.getvalue()
    missing = caddie.run("-p", "--model", "fake/fake-model", "@nope.txt", "hi")
    assert missing.returncode == 2 and "file not found" in missing.stderr
    os.mkfifo(caddie.project / "pipe")  # exists, but reading it would block until a writer comes
    for name, kind in (("pipe", "a named pipe (FIFO)"), ("/dev/zero", "a character device")):
        special = caddie.run("-p", "--model", "fake/fake-model", f"@{name}", "hi", timeout=30)
        path = caddie.project / name
        assert special.returncode == 2 and special.stderr == (
            f"caddie: {path}: it is {kind}, not a regular file (attach files as @path/to/file)\n"
        )


def test_models_setting_scopes_cycling(caddie: Caddie) -> None:
    three_models(caddie)
    settings = caddie.home / "agent" / "settings.json"
    settings.write_text(json.dumps({"enabledModels": ["fake/vision", "fake/fake-reasoner:low"]}))
    proc = caddie.run(
        "--mode",
        "rpc",
        "--model",
        "fake/fake-model",
        stdin=json.dumps({"id": "1", "type": "cycle_model"})
        + "\n"
        + json.dumps({"id": "2", "type": "cycle_model"})
        + "\n",
    )
    answers = {o["id"]: o for o in map(json.loads, proc.stdout.splitlines()) if o.get("type") == "response"}
    # fake-model is outside the scope, so (as in Pi) cycling starts from the first scoped model
    assert answers["1"]["data"]["model"]["id"] == "fake-reasoner" and answers["1"]["data"]["isScoped"] is True
    assert answers["1"]["data"]["thinkingLevel"] == "low"
    assert answers["2"]["data"]["model"]["id"] == "vision"

"""A theme's ``export`` colours (Pi's ``pageBg``, ``cardBg``, ``infoBg``) in the HTML export; caddie's own look
without them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.modes.export_html.assets import CSS
from caddie.modes.theme_files import ExportColours, export_colours
from caddie.session.store import SessionStore
from tests.export.helpers import export, open_session, write_settings

HARBOUR: dict[str, object] = {
    "name": "harbour",
    "vars": {"deep": "#101820", "sand": 223},
    "colors": {"accent": "#3399cc", "userMessageBg": "#1a2430"},
    "export": {"pageBg": "deep", "cardBg": "#182430", "infoBg": "sand"},
}


def theme_file(folder: Path, data: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['name']}.json"
    path.write_text(json.dumps(data))
    return path


def style_of(html: str) -> str:
    match = re.search(r"<style>(.*?)</style>", html, re.S)
    assert match is not None
    return match.group(1)


def test_the_export_section_is_read_with_vars_and_palette_indexes(tmp_path: Path) -> None:
    colours = export_colours(theme_file(tmp_path, HARBOUR))
    partial = export_colours(theme_file(tmp_path, {**HARBOUR, "name": "p", "export": {"pageBg": "#fafafa"}}))
    hostile = {"pageBg": "red;}</style><script>x()</script>", "cardBg": "#12345g", "infoBg": 300}
    bad = export_colours(theme_file(tmp_path, {**HARBOUR, "name": "bad", "export": hostile}))
    none = export_colours(theme_file(tmp_path, {"name": "plain", "colors": {"accent": "#3399cc"}}))
    assert colours == ExportColours("#101820", "#182430", "#ffd7af")  # 223 in the xterm palette
    assert partial == ExportColours("#fafafa", None, None)
    assert bad is None, "only colours reach the page's stylesheet"
    assert none is None


def test_caddie_export_uses_the_settings_themes_export_colours(tmp_path: Path) -> None:
    theme_file(agent_dir() / "themes", HARBOUR)
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    open_session(store)
    assert store.path is not None
    plain = style_of(export(store.path, tmp_path / "plain.html").read_text())
    write_settings({"theme": "harbour"})
    themed = style_of(export(store.path, tmp_path / "themed.html").read_text())
    write_settings({"theme": "light"})  # a built-in theme: caddie's own look
    built_in = style_of(export(store.path, tmp_path / "light.html").read_text())
    assert plain.startswith(CSS) and "{color-scheme:" not in plain
    assert built_in == plain
    override = themed[len(plain) :]
    assert themed.startswith(plain), "caddie's stylesheet stays; the theme's colours come after it"
    rule = ":root{color-scheme:dark;--bg:#101820;--card:#182430;--fg:#e6e6ea"
    assert override.count(rule) == 2, "the theme's colours win in a light and a dark browser alike"
    assert "--warn:#ffd7af" in override
    assert ".hl .k" in override, "code colours for the page's shade follow"


NO_TEXTUAL = """
import io, json, sys
import caddie.modes.rpc.commands, caddie.modes.rpc.server
from caddie.modes.inspect import run_subcommand
from caddie.modes.theme_files import settings_export_colours
out = io.StringIO()
code = run_subcommand(["export", sys.argv[1], "-o", sys.argv[2]], out)
print(json.dumps({"code": code, "textual": sorted(m for m in sys.modules if m.split(".")[0] == "textual")}))
"""


def test_rpc_and_caddie_export_find_the_themes_colours_without_importing_textual(tmp_path: Path) -> None:
    theme_file(agent_dir() / "themes", HARBOUR)
    write_settings({"theme": "harbour"})
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    open_session(store)
    assert store.path is not None
    out = tmp_path / "page.html"
    run = subprocess.run(
        [sys.executable, "-c", NO_TEXTUAL, str(store.path), str(out)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "textual": []}
    assert "--bg:#101820" in style_of(out.read_text()), "the settings' theme's colours were found"

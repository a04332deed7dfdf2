"""RPC's ``export_html`` draws the page in the settings' theme's ``export`` colours, as Pi's export does."""

from __future__ import annotations

import json
import re

from tests.export.test_theme_colours import HARBOUR, theme_file
from tests.rpc.conftest import Host


def test_export_html_uses_the_settings_themes_export_colours(host: Host) -> None:
    agent = host.home / "agent"
    theme_file(agent / "themes", HARBOUR)
    settings = json.loads((agent / "settings.json").read_text())
    (agent / "settings.json").write_text(json.dumps({**settings, "theme": "harbour"}))
    rpc = host.rpc()
    page = host.project / "page.html"
    assert rpc.ok({"type": "export_html", "outputPath": str(page)}) == {"path": str(page)}
    assert rpc.close() == 0
    style = re.search(r"<style>(.*?)</style>", page.read_text(), re.S)
    assert style is not None and ":root{color-scheme:dark;--bg:#101820;--card:#182430" in style.group(1)

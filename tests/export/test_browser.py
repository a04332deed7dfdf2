"""The exported page in a real browser: headless Chromium loads it from disk (offline), runs its script, and
the DOM it dumps (or the screenshot it takes) is checked.

Chromium comes from Debian's ``chromium`` package. Without it these tests skip with that reason, except under
``CI=1``, where they fail (CI installs it). ``CADDIE_BROWSER_TIMEOUT`` (seconds, default 60) bounds each run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from caddie.session.store import SessionStore
from tests.export.helpers import Ids, Page, export, open_session
from tests.interop.pi import skip_or_fail

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        skip_or_fail("headless Chromium is not installed (Debian: apt-get install chromium)")
        raise AssertionError("unreachable")
    return found


def run_chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"  # a fresh profile per run
    result = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("CADDIE_BROWSER_TIMEOUT", "60")),
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.fixture
def page(tmp_path: Path) -> tuple[SessionStore, Ids, Path]:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    ids = open_session(store)
    assert store.path is not None
    return store, ids, export(store.path, tmp_path / "page.html")


def dom(tmp_path: Path, target: Path, query: str = "") -> Page:
    return Page(run_chromium(tmp_path, "--dump-dom", target.as_uri() + query))


def status(page: Page) -> str:
    [found] = [s for s in page.all("span") if s.attrs.get("id") == "search-status"]
    return found.all_text()


def body_classes(page: Page) -> set[str]:
    [body] = page.all("body")
    return body.classes


def test_the_page_loads_and_its_script_runs(tmp_path: Path, page: tuple[SessionStore, Ids, Path]) -> None:
    store, _, target = page
    loaded = dom(tmp_path, target)
    entries = store.entries()
    custom = sum(1 for e in entries if e.type == "custom")
    # counted by the browser from computed styles: extension state starts hidden
    assert status(loaded) == f"{len(entries) - custom} of {len(entries)} entries shown"
    assert "show-bookkeeping" not in body_classes(loaded)
    articles = loaded.all("article")
    assert len(articles) == len(entries)
    assert not any(inner is not a for a in articles for inner in a.find("article"))  # the markup nests right
    [link] = [a for a in loaded.all("a") if a.attrs.get("id") == "download-jsonl"]
    assert link.attrs["href"].startswith("blob:")  # the JSONL became a Blob, ready to download
    assert store.path is not None and link.attrs["data-size"] == str(len(store.path.read_bytes()))


def test_search_from_the_address_bar_filters_entries(
    tmp_path: Path, page: tuple[SessionStore, Ids, Path]
) -> None:
    store, ids, target = page
    loaded = dom(tmp_path, target, "?q=PYTEST%20tests")
    shown = [a.attrs["data-entry-id"] for a in loaded.all("article") if "search-miss" not in a.classes]
    assert shown == [ids.bash_call]  # every word must match, case-insensitively
    assert status(loaded) == f"1 of {len(store.entries())} entries shown · 1 matching"
    [field] = [i for i in loaded.all("input") if i.attrs.get("id") == "search"]
    assert field.attrs.get("value") is None  # typed in the box by the script, not by the markup
    hidden_outline = {li.attrs["data-entry-id"] for li in loaded.all("li", "search-miss")}
    assert ids.bash_call not in hidden_outline and ids.prompt in hidden_outline


def test_toggles_show_extension_state_and_hide_what_the_model_is_not_sent(
    tmp_path: Path, page: tuple[SessionStore, Ids, Path]
) -> None:
    store, _, target = page
    total = len(store.entries())
    everything = dom(tmp_path, target, "?bookkeeping=1")
    assert "show-bookkeeping" in body_classes(everything)
    assert status(everything) == f"{total} of {total} entries shown"
    as_sent = dom(tmp_path, target, "?bookkeeping=1&unseen=hide")
    assert status(as_sent) == f"{total - 2} of {total} entries shown"  # the two rewound entries


def test_a_link_to_an_extension_state_entry_reveals_it(
    tmp_path: Path, page: tuple[SessionStore, Ids, Path]
) -> None:
    _, ids, target = page
    loaded = dom(tmp_path, target, f"#e-{ids.rewind}")
    assert "show-bookkeeping" in body_classes(loaded)
    assert loaded.article(ids.rewind).attrs["data-entry-id"] == ids.rewind


def test_the_page_reads_well_in_a_screenshot(tmp_path: Path, page: tuple[SessionStore, Ids, Path]) -> None:
    _, _, target = page
    shot = tmp_path / "page.png"
    run_chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", target.as_uri())
    with Image.open(shot) as image:
        assert image.size == (1280, 1600)
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 50  # text, code colours and backgrounds were painted
        sidebar = rgb.crop((0, 0, 300, 1600)).getcolors(maxcolors=1 << 16)
        assert sidebar is None or len(sidebar) > 5  # the session tree is there
    if os.environ.get("CADDIE_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["CADDIE_KEEP_SCREENSHOT"])
    assert re.search(r"\.png$", shot.name)

"""Paths in settings resolve against the settings file's own folder, never the cwd; an untrusted project may
not move ``sessionDir`` outside itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.config.settings import load_settings
from caddie.runtime.factory import load_extension_set

MARKER_EXTENSION = """
from pathlib import Path

Path({marker!r}).write_text("imported")


def register(api):
    pass
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _global_settings(data: dict[str, object]) -> Path:
    return _write(agent_dir() / "settings.json", json.dumps(data))


def _project(tmp_path: Path, settings: dict[str, object] | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    if settings is not None:
        _write(project / ".caddie" / "settings.json", json.dumps(settings))
    return project


async def test_a_relative_global_extension_path_never_imports_a_file_of_the_project(tmp_path: Path) -> None:
    project = _project(tmp_path)
    planted = tmp_path / "planted-marker"
    _write(project / "ext" / "hook.py", MARKER_EXTENSION.format(marker=str(planted)))
    mine = tmp_path / "mine-marker"
    ours = _write(agent_dir() / "ext" / "hook.py", MARKER_EXTENSION.format(marker=str(mine)))
    _global_settings({"extensions": ["ext/hook.py"]})

    loaded = await load_extension_set(str(project), extension_paths=[], no_extensions=False, trust=None)

    assert not planted.exists()
    assert mine.read_text() == "imported"
    assert str(ours) in [ext.path for ext in loaded.extensions]
    assert loaded.errors == []


def test_global_and_project_paths_resolve_against_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, {"sessionDir": "sessions", "extensions": ["x.py", "/abs/y.py"]})
    _global_settings(
        {"sessionDir": "my-sessions", "shellPath": "bin/sh", "mulligan": {"log": {"file": "m.log"}}}
    )
    monkeypatch.chdir(tmp_path)  # the cwd plays no part

    untrusted = load_settings(project)
    trusted = load_settings(project, project_trusted=True)

    home = agent_dir().absolute()
    assert trusted.session_dir == str(project / ".caddie" / "sessions")
    assert untrusted.session_dir == str(home / "my-sessions")  # an untrusted project's file is not read
    assert untrusted.shell_path == str(home / "bin" / "sh")
    assert untrusted.get("mulligan.log.file") == str(home / "m.log")
    assert trusted.extensions == [str(project / ".caddie" / "x.py"), "/abs/y.py"]
    assert load_settings(tmp_path / "elsewhere").session_dir == str(home / "my-sessions")


def test_tilde_is_expanded(tmp_path: Path) -> None:
    _global_settings({"sessionDir": "~/caddie-sessions"})
    assert load_settings(tmp_path).session_dir == str(Path.home() / "caddie-sessions")


@pytest.mark.parametrize("where", ["/tmp/elsewhere", "../../outside", "sessions/../../../outside"])
def test_an_untrusted_project_cannot_move_sessions(tmp_path: Path, where: str) -> None:
    project = _project(tmp_path, {"sessionDir": where})
    _global_settings({"sessionDir": str(tmp_path / "global-sessions")})

    settings = load_settings(project)

    assert settings.session_dir == str(tmp_path / "global-sessions")  # the user's own choice stands
    assert any("ignored because this project is not trusted" in w for w in settings.warnings)
    assert load_settings(project, project_trusted=True).session_dir is not None
    assert load_settings(project, project_trusted=True).session_dir != str(tmp_path / "global-sessions")


def test_caddie_p_does_not_import_a_planted_extension(tmp_path: Path) -> None:
    """The reported attack, end to end: ``extensions: ["ext/hook.py"]`` in the user's settings and a
    project that ships ``ext/hook.py``."""
    project = _project(tmp_path)
    planted = tmp_path / "planted-marker"
    _write(project / "ext" / "hook.py", MARKER_EXTENSION.format(marker=str(planted)))
    settings = _global_settings({"extensions": ["ext/hook.py"]})

    result = subprocess.run(
        [sys.executable, "-m", "caddie", "-p", "--model", "faux/echo", "hello"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert not planted.exists()
    assert f"no such extension file: {settings.parent / 'ext' / 'hook.py'}" in result.stderr


_SAVER = """
import sys
from pathlib import Path
from caddie.config.settings import Settings
settings = Settings(global_path=Path(sys.argv[1]))
for i in range(40):
    settings.save_global({sys.argv[2]: {str(i): i}})
"""


def test_two_processes_saving_different_keys_both_land(tmp_path: Path) -> None:
    """Each save re-reads settings.json under the lock and writes through a temp file of its own, so
    neither writer's keys vanish and neither trips over the other's temp file."""
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "dark"}\n', encoding="utf-8")
    writers = [
        subprocess.Popen([sys.executable, "-c", _SAVER, str(path), key], stderr=subprocess.PIPE, text=True)
        for key in ("a", "b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["theme"] == "dark"
    assert data["a"] == {str(i): i for i in range(40)}
    assert data["b"] == {str(i): i for i in range(40)}
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temp file or lock left

"""Settings: ``~/.caddie/agent/settings.json`` deep-merged with ``<cwd>/.caddie/settings.json``.

Objects merge key by key; arrays, strings, numbers and null replace. A file that is missing is empty; a file
that is not valid JSON is reported once (as a warning the caller shows) and treated as empty, so a typo in
settings never stops the agent from starting.

Paths are resolved where they are written, before merging (``PATH_KEYS``): a relative path in the global
file is relative to that file's folder (``~/.caddie/agent``), one in the project file to the project's
``.caddie/`` — never to the directory caddie happens to run in, so a project cannot slip a file into a path
the user's own settings name. ``~`` is expanded. An untrusted project may not point ``sessionDir`` outside
itself (the key is ignored with a warning): session files hold prompts, tool output and secrets.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.config.paths import agent_dir, project_dir
from caddie.config.settings_keys import GLOBAL_ONLY, global_only, migrate


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``over`` merged into ``base``; nested objects merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        else:
            out[key] = value
    return out


def read_json_object(path: Path) -> tuple[dict[str, Any], str | None]:
    """The JSON object in ``path`` (``{}`` when missing) and a warning when it could not be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except UnicodeDecodeError:
        return {}, f"{path} is not UTF-8 text; ignoring it"
    except OSError as e:
        return {}, f"could not read {path}: {e.strerror or e}"
    if not text.strip():
        return {}, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        return {}, f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); ignoring it"
    if not isinstance(data, dict):
        return {}, f"{path} must hold a JSON object; ignoring it"
    return data, None


@dataclass
class Settings:
    """The merged settings with typed accessors for the keys the host reads itself."""

    data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    global_path: Path | None = None
    project_path: Path | None = None
    files: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    """Each settings file read, as written (after Pi's migrations): for ``settings_keys.settings_notices``."""

    def save_global(self, updates: dict[str, Any]) -> None:
        """Apply ``updates`` now and write them to the global settings file, keeping its other keys (as
        Pi's settings manager does for choices made in a session: steering mode, auto-compaction, …).

        The in-memory change always happens; ``OSError`` / ``ValueError`` (an unreadable file) say that
        saving did not."""
        self.data = deep_merge(self.data, updates)
        path = self.global_path or agent_dir() / "settings.json"
        from caddie.config.file_lock import FileLock  # asyncio: not for `caddie --version`'s imports

        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path):  # two writers (two caddies, or a picker and the first-run theme) take turns
            current, problem = read_json_object(path)
            if problem and path.exists():
                raise ValueError(problem)
            _replace_atomically(path, json.dumps(deep_merge(current, updates), indent=2) + "\n")

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def _typed(self, dotted: str, default: Any, kind: type | tuple[type, ...]) -> Any:
        value = self.get(dotted, default)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:  # JSON true is not a number here
            return default
        if isinstance(value, float) and not math.isfinite(value):  # 1e999 parses as infinity
            return default
        return value if isinstance(value, kinds) else default

    def _str(self, dotted: str) -> str | None:
        value = self.get(dotted)
        return value if isinstance(value, str) else None

    def block(self, name: str) -> dict[str, Any]:
        """A deep copy of one top-level object (e.g. an extension's ``mulligan`` block); ``{}`` if absent."""
        value = self.data.get(name)
        return copy.deepcopy(value) if isinstance(value, dict) else {}

    # Model selection -----------------------------------------------------------------------------
    @property
    def default_provider(self) -> str | None:
        return self._str("defaultProvider")

    @property
    def default_model(self) -> str | None:
        return self._str("defaultModel")

    @property
    def default_thinking_level(self) -> str | None:
        return self._str("defaultThinkingLevel")

    def model_thinking_level(self, provider: str, model_id: str) -> str | None:
        """``modelThinkingLevels["provider/id"]``: the level a model starts with (over
        ``defaultThinkingLevel``), as Pi reads it."""
        levels = self.get("modelThinkingLevels")
        value = levels.get(f"{provider}/{model_id}") if isinstance(levels, dict) else None
        return value if isinstance(value, str) else None

    @property
    def thinking_budgets(self) -> dict[str, int]:
        """``thinkingBudgets``: token budgets per level (minimal, low, medium, high) for budget-based
        thinking; the levels not given keep caddie's defaults."""
        block = self.get("thinkingBudgets")
        if not isinstance(block, dict):
            return {}
        return {
            level: int(value)
            for level, value in block.items()
            if level in ("minimal", "low", "medium", "high")
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        }

    # Screen, trust, network ---------------------------------------------------------------------
    @property
    def external_editor(self) -> str | None:
        """``externalEditor`` (a command line), over ``$VISUAL`` / ``$EDITOR``."""
        value = self._str("externalEditor")
        return value if value and value.strip() else None

    @property
    def http_proxy(self) -> str | None:
        """``httpProxy`` (global file only): applied as ``HTTP_PROXY`` and ``HTTPS_PROXY``."""
        value = self._str("httpProxy")
        return value.strip() if value and value.strip() else None

    @property
    def block_images(self) -> bool:
        """``images.blockImages``: no image is sent to the model (each becomes a line saying so)."""
        return bool(self._typed("images.blockImages", False, bool))

    # Retry --------------------------------------------------------------------------------------
    @property
    def retry_enabled(self) -> bool:
        return bool(self._typed("retry.enabled", True, bool))

    @property
    def retry_max_retries(self) -> int:
        return int(self._typed("retry.maxRetries", 3, (int, float)))

    @property
    def retry_base_delay_ms(self) -> int:
        return int(self._typed("retry.baseDelayMs", 2000, (int, float)))

    @property
    def retry_max_delay_ms(self) -> int:
        return int(self._typed("retry.provider.maxRetryDelayMs", 60_000, (int, float)))

    @property
    def http_idle_timeout_ms(self) -> int:
        return int(self._typed("httpIdleTimeoutMs", 300_000, (int, float)))

    @property
    def provider_timeout_ms(self) -> int | None:
        """``retry.provider.timeoutMs``: the request timeout handed to the provider's SDK (over
        ``httpIdleTimeoutMs``); None: not set."""
        value = self._typed("retry.provider.timeoutMs", None, (int, float))
        return int(value) if value is not None and value >= 0 else None

    @property
    def provider_max_retries(self) -> int:
        """``retry.provider.maxRetries``: the SDK's own retries (Pi's default 0: the session retries)."""
        value = self._typed("retry.provider.maxRetries", 0, (int, float))
        return max(0, int(value))

    # Compaction ---------------------------------------------------------------------------------
    @property
    def compaction_enabled(self) -> bool:
        return bool(self._typed("compaction.enabled", True, bool))

    @property
    def compaction_reserve_tokens(self) -> int:
        return int(self._typed("compaction.reserveTokens", 16_384, (int, float)))

    @property
    def compaction_keep_recent_tokens(self) -> int:
        return int(self._typed("compaction.keepRecentTokens", 20_000, (int, float)))

    @property
    def branch_summary_reserve_tokens(self) -> int:
        return int(self._typed("branchSummary.reserveTokens", 16_384, (int, float)))

    # Loop ---------------------------------------------------------------------------------------
    @property
    def steering_mode(self) -> str:
        value = self._typed("steeringMode", "one-at-a-time", str)
        return value if value in ("all", "one-at-a-time") else "one-at-a-time"

    @property
    def follow_up_mode(self) -> str:
        value = self._typed("followUpMode", "one-at-a-time", str)
        return value if value in ("all", "one-at-a-time") else "one-at-a-time"

    # Tools and extensions -----------------------------------------------------------------------
    @property
    def tools(self) -> list[str] | None:
        """``defaultTools`` (Pi's key), or caddie's older name for it, ``tools``: the built-in tools active at
        start (extension tools are active too, as in Pi)."""
        value = self.get("defaultTools", self.get("tools"))
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        return None

    @property
    def extensions(self) -> list[str]:
        value = self.get("extensions")
        if isinstance(value, list):
            return [v for v in value if isinstance(v, str)]
        return []

    @property
    def shell_path(self) -> str | None:
        return self._str("shellPath")

    @property
    def shell_command_prefix(self) -> str | None:
        return self._str("shellCommandPrefix")

    @property
    def shell_env(self) -> tuple[list[str], list[str]]:
        """``shellEnv.include`` / ``shellEnv.exclude``: name globs for the variables commands inherit."""
        block = self.get("shellEnv")
        if not isinstance(block, dict):
            return [], []

        def names(key: str) -> list[str]:
            value = block.get(key)
            return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

        return names("include"), names("exclude")

    @property
    def session_dir(self) -> str | None:
        return self._str("sessionDir")


RUN_ONLY = "_run"
"""A block of ``Settings.data`` that no file writes: what the command line asks for this run only
(``--theme`` paths, ``--no-themes``), read by the terminal UI."""


PATH_KEYS = ("extensions", "sessionDir", "shellPath", "mulligan.log.file")
"""Settings whose values are paths (``extensions`` is a list of them), resolved against their file's folder."""


def _resolve(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def resolve_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """A copy of one settings file's object with every relative path in ``PATH_KEYS`` made absolute against
    ``base``; values of the wrong type are left alone (the typed accessors ignore them)."""
    out = copy.deepcopy(data)
    for dotted in PATH_KEYS:
        *parents, key = dotted.split(".")
        node: Any = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or key not in node:
            continue
        value = node[key]
        if isinstance(value, str) and value:
            node[key] = _resolve(value, base)
        elif isinstance(value, list):
            node[key] = [_resolve(v, base) if isinstance(v, str) and v else v for v in value]
    return out


def load_settings(cwd: str | Path, *, project_trusted: bool = False) -> Settings:
    """Read and merge the global and the project settings file.

    The project file applies only to a trusted project, as in Pi 0.84.4 (a cloned repository must not
    change what caddie does, or run code, just by being opened); otherwise it is ignored with one line.
    """
    root = Path(cwd).expanduser().absolute()
    global_path = agent_dir().expanduser().absolute() / "settings.json"
    project_path = project_dir(root) / "settings.json"
    data, warn = read_json_object(global_path)
    warnings = [warn] if warn else []
    data = migrate(data)
    files = [(global_path, data)] if data else []
    data = resolve_paths(data, global_path.parent)
    project, warn = read_json_object(project_path)
    if warn:
        warnings.append(warn)
    project = migrate(project)
    if project and project_trusted:  # an untrusted project's file is not read: nothing to report on
        files.append((project_path, project))
    warnings += global_only(files, project_path)
    project = {k: v for k, v in resolve_paths(project, project_path.parent).items() if k not in GLOBAL_ONLY}
    if not project_trusted and project:
        project = {}  # as Pi: an untrusted project's settings file is not read at all
        warnings.append(
            f"{project_path}: ignored because this project is not trusted (run with -a/--approve, or "
            "trust it when asked)"
        )
    return Settings(deep_merge(data, project), warnings, global_path, project_path, files)


def settings_files(cwd: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The global and the project settings file as written (relative paths resolved), not merged and with
    nothing left out for an untrusted project: for callers that must tell the two apart (an extension
    listing what a project configures). Unreadable files are ``{}`` (``load_settings`` reports them)."""
    global_path = agent_dir().expanduser().absolute() / "settings.json"
    project_path = project_dir(Path(cwd).expanduser().absolute()) / "settings.json"
    user, _ = read_json_object(global_path)
    project, _ = read_json_object(project_path)
    return resolve_paths(user, global_path.parent), resolve_paths(project, project_path.parent)


def _replace_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temp file of its own beside ``path``, then rename it over ``path``."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp, mode)  # mkstemp makes it 0600; keep the file as readable as it was
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

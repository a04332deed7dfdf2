"""Settings: ``~/.caddie/agent/settings.json`` deep-merged with ``<cwd>/.caddie/settings.json``.

Objects merge key by key; arrays, strings, numbers and null replace. A file that is missing is empty; a file
that is not valid JSON is reported once (as a warning the caller shows) and treated as empty, so a typo in
settings never stops the agent from starting.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.config.paths import agent_dir, project_dir


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
        value = self.get("tools")
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


SENSITIVE_PROJECT_KEYS = ("extensions", "shellPath", "shellCommandPrefix", "shellEnv")
"""Project settings that can run code: used only for trusted projects."""


def load_settings(cwd: str | Path, *, project_trusted: bool = False) -> Settings:
    """Read and merge the global and the project settings file.

    Project settings always apply, except the keys in ``SENSITIVE_PROJECT_KEYS`` when the project is not
    trusted (a cloned repository must not be able to run code just by being opened).
    """
    global_path = agent_dir() / "settings.json"
    project_path = project_dir(cwd) / "settings.json"
    data, warn = read_json_object(global_path)
    warnings = [warn] if warn else []
    project, warn = read_json_object(project_path)
    if warn:
        warnings.append(warn)
    if not project_trusted:
        skipped = [k for k in SENSITIVE_PROJECT_KEYS if k in project]
        if skipped:
            project = {k: v for k, v in project.items() if k not in skipped}
            warnings.append(
                f"{project_path}: ignored {', '.join(skipped)} because this project is not trusted "
                "(run with --trust to allow it)"
            )
    return Settings(deep_merge(data, project), warnings, global_path, project_path)

"""Every settings key caddie knows — Pi 0.84.4's and caddie's own — and the lines that say what a settings
file asks for that caddie will not do.

A key is one of:

- **same**: caddie does what Pi does with it (or, for caddie's own keys, what docs/configuration.md says);
  a value of the wrong type or outside its choices gets one line and the default is used.
- **refused**: it has no meaning in caddie (a Pi terminal-UI feature Textual does not have, npm, telemetry);
  set, it gets one line naming it and saying what caddie does instead. ``harmless`` values ask for what
  caddie does anyway and get no line (``"tuiMode": "fullscreen"``: caddie's UI is always full-screen).

A key nobody knows (not Pi's, not caddie's, not the name of a loaded extension, whose own block it may be)
gets one line too. ``settings_notices`` walks the settings files and returns these lines; the session shows
them once at start-up. Pi's own legacy keys (``queueMode``, ``retry.maxDelayMs``, ``websockets``, the
``skills`` object) are migrated as Pi migrates them (``migrate``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Fate = Literal["same", "refused"]
Kind = Literal["bool", "int", "number", "str", "str-list", "object", "array", "any"]

THINKING_LEVEL_VALUES = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True, slots=True)
class SettingKey:
    key: str
    """Dotted for nested keys (``retry.provider.timeoutMs``)."""
    fate: Fate
    kind: Kind = "any"
    choices: tuple[object, ...] = ()
    """The values allowed (for enumerations); empty: any value of ``kind``."""
    note: str = ""
    """For ``refused``: what caddie does instead (the line shown when the key is set)."""
    harmless: tuple[object, ...] = ()
    """``refused`` keys: values that ask for what caddie does anyway (no line)."""
    pi: bool = True
    """Pi 0.84.4 has this key (False: caddie's own)."""
    group: bool = False
    """An object whose keys are listed here too (``retry``, ``terminal``…): walked key by key."""


_TEXTUAL = "caddie's terminal UI is a full-screen Textual app"


def _same(key: str, kind: Kind = "any", *choices: object, group: bool = False) -> SettingKey:
    return SettingKey(key, "same", kind, tuple(choices), group=group)


def _refused(key: str, note: str, *harmless: object, kind: Kind = "any") -> SettingKey:
    return SettingKey(key, "refused", kind, note=note, harmless=tuple(harmless))


def _caddie(key: str, kind: Kind = "any") -> SettingKey:
    return SettingKey(key, "same", kind, pi=False)


KEYS: tuple[SettingKey, ...] = (
    # Models and thinking
    _same("defaultProvider", "str"),
    _same("defaultModel", "str"),
    _same("defaultThinkingLevel", "str", *THINKING_LEVEL_VALUES),
    _same("modelThinkingLevels", "object"),
    _same("thinkingBudgets", "object", group=True),
    _same("thinkingBudgets.minimal", "int"),
    _same("thinkingBudgets.low", "int"),
    _same("thinkingBudgets.medium", "int"),
    _same("thinkingBudgets.high", "int"),
    _same("enabledModels", "str-list"),
    _refused("hideThinkingBlock", f"{_TEXTUAL}; Ctrl+T collapses or expands thinking", False, kind="bool"),
    _refused(
        "showCacheMissNotices",
        "caddie shows no prompt-cache-miss notices; /session shows tokens and cost",
        False,
        kind="bool",
    ),
    # Screen and editor
    _same("theme", "str"),
    _same("externalEditor", "str"),
    _same("quietStartup", "bool"),
    _refused("doubleEscapeAction", f"{_TEXTUAL}; Esc Esc with an empty editor opens /tree", "tree"),
    _refused(
        "treeFilterMode",
        f"{_TEXTUAL}; /tree opens with the default filter (Ctrl+T and friends switch)",
        "default",
    ),
    _refused("editorPaddingX", f"{_TEXTUAL} whose editor keeps its own padding", 0),
    _refused("outputPad", f"{_TEXTUAL} whose messages keep their own padding", 1),
    _refused("autocompleteMaxVisible", f"{_TEXTUAL} whose completion list has a height of its own"),
    _refused("showHardwareCursor", f"{_TEXTUAL} that draws its own cursor", False),
    _refused("tuiMode", f"{_TEXTUAL}, always full-screen", "fullscreen"),
    _refused("fullscreenExitOutput", f"{_TEXTUAL} with an exit output of its own"),
    _refused("fullscreenScrollbar", f"{_TEXTUAL} whose transcript always has a scrollbar", "always", "auto"),
    _refused("fullscreenCopyOnSelect", f"{_TEXTUAL} with selection and copy keys of its own", False),
    _same("markdown", "object", group=True),
    _refused("markdown.codeBlockIndent", f"{_TEXTUAL} that draws code blocks with Rich"),
    _refused("markdown.mermaid", f"{_TEXTUAL} that shows Mermaid diagrams as their source", "off"),
    _same("terminal", "object", group=True),
    _same("terminal.showImages", "bool"),
    _same("terminal.imageWidthCells", "int"),
    _refused("terminal.clearOnShrink", f"{_TEXTUAL} that redraws the whole screen", False),
    _same("terminal.showTerminalProgress", "bool"),
    _refused("terminal.hyperlinks", f"{_TEXTUAL} that detects hyperlink support itself", "auto"),
    _refused("terminal.images", f"{_TEXTUAL} that picks the image protocol from the terminal itself", "auto"),
    _refused("terminal.trueColor", f"{_TEXTUAL} that detects colour support itself (COLORTERM)", "auto"),
    # Start-up, trust, network
    _same("defaultProjectTrust", "str", "ask", "always", "never"),
    _same("httpProxy", "str"),
    _same("httpIdleTimeoutMs", "number"),
    _same("transport", "str", "auto", "sse", "websocket", "websocket-cached"),
    _refused(
        "websocketConnectTimeoutMs",
        "caddie's Codex WebSocket waits a fixed 15 s to connect, then falls back to server-sent events",
        15000,
    ),
    _same("collapseChangelog", "bool"),
    _refused("enableInstallTelemetry", "caddie sends no telemetry", False),
    _refused("enableAnalytics", "caddie sends no analytics", False),
    _refused("trackingId", "caddie sends no analytics; the id is not used"),
    _same("lastChangelogVersion", "str"),
    _same("warnings", "object", group=True),
    _same("warnings.anthropicExtraUsage", "bool"),
    # Loop
    _same("steeringMode", "str", "all", "one-at-a-time"),
    _same("followUpMode", "str", "all", "one-at-a-time"),
    _same("compaction", "object", group=True),
    _same("compaction.enabled", "bool"),
    _same("compaction.reserveTokens", "number"),
    _same("compaction.keepRecentTokens", "number"),
    _same("branchSummary", "object", group=True),
    _same("branchSummary.reserveTokens", "number"),
    _same("branchSummary.skipPrompt", "bool"),
    _same("retry", "object", group=True),
    _same("retry.enabled", "bool"),
    _same("retry.maxRetries", "number"),
    _same("retry.baseDelayMs", "number"),
    _same("retry.provider", "object", group=True),
    _same("retry.provider.timeoutMs", "number"),
    _same("retry.provider.maxRetries", "number"),
    _same("retry.provider.maxRetryDelayMs", "number"),
    # Tools, images, shell
    _same("defaultTools", "str-list"),
    _same("images", "object", group=True),
    _same("images.autoResize", "bool"),
    _same("images.blockImages", "bool"),
    _same("shellPath", "str"),
    _same("shellCommandPrefix", "str"),
    _refused("npmCommand", "caddie installs packages with uv (Python), not npm"),
    _same("sessionDir", "str"),
    # Resources
    _same("packages", "array"),
    _same("extensions", "str-list"),
    _same("skills", "str-list"),
    _same("prompts", "str-list"),
    _same("themes", "str-list"),
    _same("enableSkillCommands", "bool"),
    # caddie's own
    _caddie("tools", "str-list"),
    _caddie("disabledExtensions", "str-list"),
    _caddie("shellEnv", "object"),
    _caddie("mcpServers", "object"),
    _caddie("disabledMcpServers", "str-list"),
    _caddie("sandbox"),
    _caddie("mulligan", "object"),
    _caddie("goal", "object"),
    _caddie("checkpoints", "object"),
)

BY_KEY: dict[str, SettingKey] = {k.key: k for k in KEYS}

LEGACY: dict[str, str] = {
    "queueMode": "steeringMode",
    "websockets": "transport",
    "retry.maxDelayMs": "retry.provider.maxRetryDelayMs",
}
"""Keys older Pi versions wrote, migrated as Pi migrates them (``migrate``)."""


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Pi's settings migrations, on a copy: ``queueMode`` → ``steeringMode``, ``websockets`` →
    ``transport``, the ``skills`` object → the ``skills`` list and ``enableSkillCommands``,
    ``retry.maxDelayMs`` → ``retry.provider.maxRetryDelayMs``."""
    out = dict(data)
    if "queueMode" in out and "steeringMode" not in out:
        out["steeringMode"] = out.pop("queueMode")
    if "transport" not in out and isinstance(out.get("websockets"), bool):
        out["transport"] = "websocket" if out.pop("websockets") else "sse"
    skills = out.get("skills")
    if isinstance(skills, dict):
        if "enableSkillCommands" in skills and "enableSkillCommands" not in out:
            out["enableSkillCommands"] = skills["enableSkillCommands"]
        dirs = skills.get("customDirectories")
        if isinstance(dirs, list) and dirs:
            out["skills"] = dirs
        else:
            del out["skills"]
    retry = out.get("retry")
    if isinstance(retry, dict) and "maxDelayMs" in retry:
        retry = dict(retry)
        given = retry.get("provider")
        provider: dict[str, Any] = given if isinstance(given, dict) else {}
        delay = retry.pop("maxDelayMs")
        if isinstance(delay, int | float) and provider.get("maxRetryDelayMs") is None:
            retry["provider"] = {**provider, "maxRetryDelayMs": delay}
        out["retry"] = retry
    return out


def _kind_ok(value: Any, kind: Kind) -> bool:
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("int", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return math.isfinite(value) and (kind == "number" or float(value).is_integer())
    if kind == "str":
        return isinstance(value, str)
    if kind == "str-list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "object":
        return isinstance(value, dict)
    return isinstance(value, list)


_KIND_WORDS = {
    "bool": "true or false",
    "int": "a whole number",
    "number": "a number",
    "str": "a string",
    "str-list": "a list of strings",
    "object": "an object",
    "array": "a list",
}


def _describe(spec: SettingKey) -> str:
    if spec.choices:
        return "one of " + ", ".join(f'"{c}"' for c in spec.choices)
    return _KIND_WORDS.get(spec.kind, "something else")


def _walk(
    data: Mapping[str, Any], prefix: str, where: str, extension_names: set[str], lines: list[str]
) -> None:
    for name, value in data.items():
        dotted = f"{prefix}{name}"
        spec = BY_KEY.get(dotted)
        if spec is None:
            if dotted in LEGACY:
                continue  # migrated already; a leftover (both keys written) is Pi's too
            if not prefix and name in extension_names:
                continue  # an extension's own block (it reads its settings itself)
            lines.append(
                f'{where}: unknown setting "{dotted}" (not a Pi 0.84.4 or caddie setting, nor the name of '
                "a loaded extension); ignored"
            )
            continue
        if spec.fate == "refused":
            if value in spec.harmless and type(value) in {type(h) for h in spec.harmless}:
                continue
            lines.append(f'{where}: setting "{dotted}" is ignored: {spec.note}')
            continue
        if not _kind_ok(value, spec.kind) or (spec.choices and value not in spec.choices):
            shown = repr(value) if not isinstance(value, str) else f'"{value}"'
            lines.append(
                f'{where}: setting "{dotted}" is {shown}; it should be {_describe(spec)}. Using the default'
            )
            continue
        if spec.group and isinstance(value, dict):
            _walk(value, f"{dotted}.", where, extension_names, lines)
        if dotted == "packages":
            lines += _package_entry_notices(value, where)


PACKAGE_ENTRY_KEYS = frozenset(("source", "enabled", "extensions", "skills", "prompts", "themes"))
"""An object entry of ``packages`` (docs/packages.md)."""


def _package_entry_notices(entries: list[Any], where: str) -> list[str]:
    """Pi's ``autoload`` (refused: caddie switches a package off with ``"enabled": false``) and unknown keys
    of ``packages`` entries."""
    lines: list[str] = []
    for n, entry in enumerate(entries):
        for key in entry if isinstance(entry, dict) else ():
            if key == "autoload":
                lines.append(
                    f'{where}: setting "packages[{n}].autoload" is ignored: caddie switches a package off with '
                    '"enabled": false (caddie config off package:SOURCE)'
                )
            elif key not in PACKAGE_ENTRY_KEYS:
                lines.append(f'{where}: unknown setting "packages[{n}].{key}"; ignored')
    return lines


def settings_notices(
    files: Iterable[tuple[Path, Mapping[str, Any]]], extension_names: Iterable[str] = ()
) -> list[str]:
    """One line per key in the settings ``files`` that caddie will not use as written: unknown, refused
    (with what caddie does instead) or of the wrong type. Each file is reported under its own path."""
    names = set(extension_names)
    lines: list[str] = []
    for path, data in files:
        _walk(data, "", str(path), names, lines)
    return lines


GLOBAL_ONLY = ("defaultProjectTrust", "httpProxy")
"""Read from the global settings file only, as Pi reads them."""


def global_only(files: Iterable[tuple[Path, Mapping[str, Any]]], project: Path) -> list[str]:
    """Pi reads ``defaultProjectTrust`` and ``httpProxy`` from the global file only: a project file that sets
    them gets one line each (a project must not trust itself or reroute traffic)."""
    lines: list[str] = []
    for path, data in files:
        if path != project:
            continue
        for key in GLOBAL_ONLY:
            if key in data:
                lines.append(
                    f'{path}: setting "{key}" is read from the global settings file only; ignored here'
                )
    return lines

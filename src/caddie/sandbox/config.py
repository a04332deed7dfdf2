"""The sandbox's configuration: caddie's ``sandbox`` settings block and Pi's ``sandbox.json`` files, merged.

Where it comes from, later layers winning:
1. Pi's sandbox example extension: ``~/.pi/agent/extensions/sandbox.json`` (``PI_CODING_AGENT_DIR`` moves it),
   then ``<cwd>/.pi/sandbox.json`` (trusted projects only). Either file present means the example's own
   defaults apply under it, as they do in Pi (``PI_EXAMPLE_DEFAULTS``), merged the way the example merges.
2. caddie's settings ``sandbox`` block (global ← project; the project's only for trusted projects).

Both shapes are accepted in both places: caddie's flat keys (``mode``, ``network``, ``writable``,
``denyRead``, ``denyWrite``, ``allowUnixSockets``) and Pi's (``enabled``, ``network.allowedDomains`` /
``deniedDomains``, ``filesystem.allowWrite`` / ``denyRead`` / ``denyWrite``). ``read_config`` is pure over
the parsed objects; ``load_config`` reads the files.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from caddie.config.settings import Settings, read_json_object
from caddie.sandbox.errors import SandboxConfigError

SandboxMode = Literal["off", "read-only", "workspace-write"]
MODES: tuple[SandboxMode, ...] = ("off", "read-only", "workspace-write")
NetworkKind = Literal["off", "on", "allow-list"]

PI_EXAMPLE_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "network": {
        "allowedDomains": [
            "npmjs.org",
            "*.npmjs.org",
            "registry.npmjs.org",
            "registry.yarnpkg.com",
            "pypi.org",
            "*.pypi.org",
            "github.com",
            "*.github.com",
            "api.github.com",
            "raw.githubusercontent.com",
        ],
        "deniedDomains": [],
    },
    "filesystem": {
        "denyRead": ["~/.ssh", "~/.aws", "~/.gnupg"],
        "allowWrite": [".", "/tmp"],
        "denyWrite": [".env", ".env.*", "*.pem", "*.key"],
    },
}
"""What Pi's ``examples/extensions/sandbox`` uses when its files leave a key out (its ``DEFAULT_CONFIG``)."""


@dataclass(frozen=True, slots=True)
class NetworkRule:
    """``off``: no network at all; ``on``: the host's network; ``allow-list``: only ``allowed`` hosts (minus
    ``denied``), through caddie's filtering proxy. Host patterns: ``example.com`` or ``*.example.com``
    (subdomains only)."""

    kind: NetworkKind = "off"
    allowed: tuple[str, ...] = ()
    denied: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "allow-list":
            return f"network: only {', '.join(self.allowed)}" if self.allowed else "network off"
        return "network on" if self.kind == "on" else "network off"


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """What the user configured; paths are absolute (``~`` expanded, relative ones against the project)."""

    mode: SandboxMode | None = None
    """None: not configured (the run's default applies)."""
    network: NetworkRule = field(default_factory=NetworkRule)
    writable: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    """Paths, or glob patterns (``*.pem``: that name anywhere in the writable paths)."""
    allow_unix_sockets: bool = False
    sources: tuple[str, ...] = ()
    """The files that contributed, for ``describe`` and error messages."""
    warnings: tuple[str, ...] = field(default=(), compare=False)


ENV_MODE = "CADDIE_SANDBOX"
"""The environment variable that names a mode for every run started with it (below ``--sandbox``, above the
settings): e.g. ``off`` where caddie itself runs inside a container that is the sandbox."""


ENV_INSIDE = "CADDIE_SANDBOXED"
"""Set (to the mode) in the environment of every sandboxed command: a caddie started there is inside one."""


def choose_mode(
    cli: str | None,
    configured: SandboxMode | None,
    default: SandboxMode,
    env: str | None = None,
    inside: str | None = None,
) -> SandboxMode:
    """``--sandbox`` wins, then ``$CADDIE_SANDBOX``, then the configuration, then the run's default (off;
    workspace-write for ``caddie batch`` and headless ``--goal`` runs) — which is ``off`` for a caddie
    started inside a caddie sandbox (``inside``): the outer one confines it and everything it starts."""
    for given, name in ((cli, "--sandbox "), (env or None, f"{ENV_MODE}=")):
        if given is None:
            continue
        for mode in MODES:
            if given == mode:
                return mode
        raise SandboxConfigError(f"{name}{given}: use one of {', '.join(MODES)}.")
    if configured is not None:
        return configured
    return "off" if inside else default


def pi_agent_dir() -> Path:
    env = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(env).expanduser() if env else Path.home() / ".pi" / "agent"


def pi_sandbox_files(cwd: str, project_trusted: bool) -> list[Path]:
    """Pi's sandbox.json files that apply here, global first."""
    files = [pi_agent_dir() / "extensions" / "sandbox.json"]
    if project_trusted:
        files.append(Path(cwd) / ".pi" / "sandbox.json")
    return files


def _pi_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """The example extension's ``deepMerge``: ``network`` and ``filesystem`` merge key by key, the rest
    replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key in ("network", "filesystem") and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SandboxConfigError(f"{where} must be a list of strings.")
    return list(value)


def _path(value: str, cwd: str) -> str:
    expanded = os.path.expanduser(value)
    return os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded))


def _pattern(value: str, cwd: str) -> str:
    """denyWrite: a bare name or glob (``.env``, ``*.pem``) stays as it is; a path becomes absolute."""
    return value if "/" not in value and not value.startswith("~") else _path(value, cwd)


@dataclass(slots=True)
class _Layers:
    mode: SandboxMode | None = None
    network: NetworkRule | None = None
    writable: list[str] = field(default_factory=list)
    deny_read: list[str] = field(default_factory=list)
    deny_write: list[str] | None = None
    allow_unix_sockets: bool | None = None


def _network(value: Any, where: str) -> NetworkRule:
    if isinstance(value, str):
        if value in ("off", "on"):
            return NetworkRule(value)  # type: ignore[arg-type]
        raise SandboxConfigError(
            f'{where} is "{value}"; use "off", "on", a list of hosts, or {{"allowedDomains": [...]}}.'
        )
    if isinstance(value, bool):
        return NetworkRule("on" if value else "off")
    if isinstance(value, list):
        hosts = tuple(_strings(value, where))
        return NetworkRule("allow-list", hosts) if hosts else NetworkRule("off")
    if isinstance(value, dict):
        allowed = _strings(value.get("allowedDomains"), f"{where}.allowedDomains")
        denied = _strings(value.get("deniedDomains"), f"{where}.deniedDomains")
        return NetworkRule("allow-list", tuple(allowed), tuple(denied)) if allowed else NetworkRule("off")
    raise SandboxConfigError(f'{where} must be "off", "on", a list of hosts, or {{"allowedDomains": [...]}}.')


def _apply(layers: _Layers, block: Mapping[str, Any], cwd: str, where: str) -> None:
    """One configuration object (either shape) on top of what came before."""
    if "mode" in block:
        mode = block["mode"]
        if mode not in MODES:
            raise SandboxConfigError(
                f'{where}.mode is {mode!r}; use "off", "read-only" or "workspace-write".'
            )
        layers.mode = mode
    elif "enabled" in block:
        enabled = block["enabled"]
        if not isinstance(enabled, bool):
            raise SandboxConfigError(f"{where}.enabled must be true or false.")
        layers.mode = "workspace-write" if enabled else "off"
    if "network" in block:
        layers.network = _network(block["network"], f"{where}.network")
    fs = block.get("filesystem")
    if fs is not None and not isinstance(fs, dict):
        raise SandboxConfigError(f"{where}.filesystem must be an object.")
    fs = fs or {}
    layers.writable += [_path(p, cwd) for p in _strings(block.get("writable"), f"{where}.writable")]
    layers.writable += [
        _path(p, cwd) for p in _strings(fs.get("allowWrite"), f"{where}.filesystem.allowWrite")
    ]
    layers.deny_read += [_path(p, cwd) for p in _strings(block.get("denyRead"), f"{where}.denyRead")]
    layers.deny_read += [_path(p, cwd) for p in _strings(fs.get("denyRead"), f"{where}.filesystem.denyRead")]
    deny_write = [
        *_strings(block.get("denyWrite"), f"{where}.denyWrite"),
        *_strings(fs.get("denyWrite"), f"{where}.filesystem.denyWrite"),
    ]
    if "denyWrite" in block or "denyWrite" in fs:
        layers.deny_write = [_pattern(p, cwd) for p in deny_write]
    if "allowUnixSockets" in block:
        value = block["allowUnixSockets"]
        if not isinstance(value, bool):
            raise SandboxConfigError(f"{where}.allowUnixSockets must be true or false.")
        layers.allow_unix_sockets = value


def read_config(
    cwd: str, pi_files: Sequence[tuple[str, Mapping[str, Any]]], caddie_block: Mapping[str, Any] | None
) -> SandboxConfig:
    """The configuration from Pi's parsed sandbox.json objects (``(path, object)``, global first) and caddie's
    merged ``sandbox`` block. ``SandboxConfigError`` for a value that cannot mean anything safe."""
    layers = _Layers()
    sources: list[str] = []
    if pi_files:
        merged: dict[str, Any] = PI_EXAMPLE_DEFAULTS
        for path, data in pi_files:
            merged = _pi_merge(merged, data)
            sources.append(path)
        _apply(layers, merged, cwd, "Pi's sandbox.json")
    if caddie_block:
        _apply(layers, caddie_block, cwd, "settings sandbox")
        sources.append('settings "sandbox"')
    return SandboxConfig(
        mode=layers.mode,
        network=layers.network or NetworkRule(),
        writable=tuple(dict.fromkeys(layers.writable)),
        deny_read=tuple(dict.fromkeys(layers.deny_read)),
        deny_write=tuple(dict.fromkeys(layers.deny_write or ())),
        allow_unix_sockets=bool(layers.allow_unix_sockets),
        sources=tuple(sources),
    )


def load_config(cwd: str, settings: Settings, *, project_trusted: bool) -> SandboxConfig:
    """Read Pi's files and take caddie's block from ``settings`` (already merged, with an untrusted
    project's block left out by ``load_settings``)."""
    pi_files: list[tuple[str, Mapping[str, Any]]] = []
    warnings: list[str] = []
    for path in pi_sandbox_files(cwd, project_trusted):
        if not path.exists():
            continue
        data, problem = read_json_object(path)
        if problem:
            raise SandboxConfigError(f"{problem.removesuffix('; ignoring it')}; fix it or remove it.")
        pi_files.append((str(path), data))
    untrusted_pi = Path(cwd) / ".pi" / "sandbox.json"
    if not project_trusted and untrusted_pi.exists():
        warnings.append(
            f"{untrusted_pi}: ignored because this project is not trusted (run with --trust to allow it)"
        )
    block = settings.get("sandbox")
    if block is not None and not isinstance(block, dict):
        raise SandboxConfigError('settings "sandbox" must be an object, e.g. {"mode": "workspace-write"}.')
    return replace(read_config(cwd, pi_files, block), warnings=tuple(warnings))

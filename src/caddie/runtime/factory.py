"""Building an AgentSession from what the user asked for: ``open_session`` is the one entry point of every
mode (print, json, rpc, the TUI, ACP, the inspection views) and of the tests.

Order of work: settings (project trust decides which project keys apply) → model registry and model →
session store (new, continue, file, in-memory) → built-in tools → extensions → AgentSession, with its
compaction engine built in (``SessionRequest.compaction``). The caller subscribes to the session, then
calls ``session.start("startup")`` (as Pi: also when the session was continued or opened from a file;
``resume`` is for a switch within a running process).
Every user mistake surfaces as a ``SetupError`` with one clear sentence; nothing here prints.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.oauth.types import RequestAuth
from caddie.ai.providers.preload import import_later, start_provider_preload
from caddie.config.paths import agent_dir
from caddie.config.settings import Settings, deep_merge, load_settings
from caddie.extensions.loader import ExtensionSource, collect_sources, load_extensions, package_sources
from caddie.extensions.providers import ExtensionProviders
from caddie.extensions.runner import Extension
from caddie.models import ModelNotFound, ModelRegistry, NoModelConfigured
from caddie.models.oauth import authenticated_stream
from caddie.resources.discovery import (
    DiscoveryRequest,
    ExtraPath,
    Resources,
    discover,
    is_enabled,
    plain_entries,
    scope_lists,
)
from caddie.resources.packages import InstalledPackage, ensure_project_packages, load_packages
from caddie.runtime.core import SessionOptions
from caddie.runtime.request import LoadedExtensions as LoadedExtensions
from caddie.runtime.request import SessionChoice as SessionChoice
from caddie.runtime.request import SessionRequest as SessionRequest
from caddie.runtime.request import SetupError as SetupError
from caddie.runtime.session import AgentSession
from caddie.runtime.system_prompt import load_context_files
from caddie.runtime.tool_selection import ToolSelection, unannounced
from caddie.runtime.trust import remembered_trust
from caddie.sandbox import ENV_INSIDE, ENV_MODE, Sandbox, SandboxError, choose_mode, open_sandbox
from caddie.sandbox import load_config as load_sandbox_config
from caddie.session.store import SessionFileError, SessionStore, default_session_dir, latest_session_file
from caddie.tools import ALL_TOOL_NAMES, DEFAULT_ACTIVE, create_builtin_tools
from caddie.tools.bash import EnvPolicy, session_env
from caddie.tools.validation import DEFERRED_MODULES


def project_trusted(cwd: str, trust: bool | None) -> bool:
    return trust if trust is not None else bool(remembered_trust(cwd))


def session_settings(cwd: str, trusted: bool, overrides: dict[str, Any] | None) -> Settings:
    """The settings files merged, with a program's overrides on top (in memory only: a setting the session
    saves later, e.g. a queue mode, writes just that key)."""
    settings = load_settings(cwd, project_trusted=trusted)
    if overrides:
        settings.data = deep_merge(settings.data, overrides)
    return settings


async def load_extension_set(
    cwd: str,
    *,
    extension_paths: list[str],
    no_extensions: bool,
    trust: bool | None,
    inline: list[Extension] | None = None,
    settings_overrides: dict[str, Any] | None = None,
) -> LoadedExtensions:
    """Discover and import extensions (before the session exists, so their flags can be parsed)."""
    cwd = str(Path(cwd).expanduser().resolve())
    trusted = project_trusted(cwd, trust)
    settings = session_settings(cwd, trusted, settings_overrides)
    notices: list[str] = []
    setup_errors: list[str] = []
    if trusted:  # a trusted project's packages are installed on first run, as Pi does
        installed, failed = await asyncio.to_thread(ensure_project_packages, cwd)  # the UI keeps drawing
        notices += [f"installed project package {source}" for source in installed]
        setup_errors += failed
    packages, package_warnings = load_packages(cwd, project_trusted=trusted)
    setup_errors += package_warnings

    async def load() -> tuple[list[Extension], list[str]]:
        sources = collect_sources(
            cwd,
            cli_paths=extension_paths,
            agent_dir=agent_dir(),
            settings_paths=plain_entries(settings.extensions),
            project_trusted=trusted,
            no_extensions=no_extensions,
            disabled=settings.get("disabledExtensions", []) or [],
            packages=package_sources(packages),
        )
        lists = scope_lists(cwd, trusted, "extensions")
        disabled = set(settings.get("disabledExtensions", []) or [])
        cli = len(extension_paths)  # -e always loads
        sources = sources[:cli] + [s for s in sources[cli:] if extension_enabled(s, lists, disabled)]
        loaded = await load_extensions(sources)
        return [*loaded.extensions, *(inline or [])], loaded.errors

    extensions, errors = await load()
    return LoadedExtensions(extensions, [*setup_errors, *errors], load, packages, notices)


def _reattaching(
    reload: Callable[[], Awaitable[tuple[list[Extension], list[str]]]], providers: ExtensionProviders
) -> Callable[[], Awaitable[tuple[list[Extension], list[str]]]]:
    """``/reload``: the reloaded extensions' providers replace the old ones in the model registry."""

    async def run() -> tuple[list[Extension], list[str]]:
        extensions, errors = await reload()
        return extensions, errors + providers.attach(extensions)

    return run


def extension_enabled(
    source: ExtensionSource, lists: Sequence[tuple[str, str, list[str]]], disabled: set[str]
) -> bool:
    """``-path`` / ``+path`` / ``!glob`` entries in the settings ``extensions`` lists switch extensions found
    in folders on or off, ``disabledExtensions`` names installed ones (``caddie config`` writes both)."""
    if source.path.startswith(("bundled:", "package:")):
        return True  # bundled: filtered by name already; packages: by their settings entry
    if source.path.startswith("entry-point:"):
        return source.name not in disabled
    return all(is_enabled(source.path, entries, base) for _scope, base, entries in lists)


def discover_resources(
    request: SessionRequest, cwd: str, trusted: bool, packages: list[InstalledPackage]
) -> Callable[[list[ExtraPath], list[ExtraPath]], Resources]:
    """Skill and prompt template discovery for this request (again with extensions' paths, when asked)."""

    def run(extra_skills: list[ExtraPath], extra_prompts: list[ExtraPath]) -> Resources:
        return discover(
            DiscoveryRequest(
                cwd=cwd,
                project_trusted=trusted,
                skill_paths=request.skill_paths,
                no_skills=request.no_skills,
                prompt_paths=request.prompt_paths,
                no_prompt_templates=request.no_prompt_templates,
                packages=packages,
                extension_skill_paths=extra_skills,
                extension_prompt_paths=extra_prompts,
            )
        )

    return run


@dataclass
class SessionBuild:
    session: AgentSession
    registry: ModelRegistry
    warnings: list[str]
    has_auth: Callable[[Model], bool] | None = None

    def take_store_warnings(self) -> list[str]:
        """What the session file's store found wrong (a torn line, duplicate ids), for a mode that prints
        them itself before ``start`` (print and json: stderr); those not taken arrive as ``NoticeEvent``s."""
        return self.session.core.take_store_warnings()


def split_thinking(ref: str) -> tuple[str, ThinkingLevel | None]:
    """``provider/id:level`` → (``provider/id``, level); a suffix that is not a thinking level stays (model
    ids may contain colons, e.g. ``ollama/qwen2.5-coder:7b``)."""
    head, sep, tail = ref.rpartition(":")
    if sep and head:
        for level in THINKING_LEVELS:
            if tail.strip().lower() == level:
                return head, level
    return ref, None


def closest_model(registry: ModelRegistry, ref: str) -> str | None:
    """The known model whose name is closest to a misspelled ``ref`` (difflib), as ``provider/id``."""
    found = registry.closest(ref, 1)
    return found[0] if found else None


def resolve_model(
    registry: ModelRegistry, settings: Settings, ref: str | None, required: bool
) -> Model | None:
    try:
        if ref:
            return registry.resolve(split_thinking(ref)[0])
        return registry.default_model(settings)
    except ModelNotFound as e:  # its text names the closest known models
        raise SetupError(str(e)) from None
    except NoModelConfigured as e:
        if required:
            raise SetupError(str(e)) from None
        return None


def open_store(request: SessionRequest) -> SessionStore:
    try:
        if request.fork_from is not None:
            source = SessionStore.open(Path(request.fork_from).expanduser(), repair=False)
            return source.fork(None, request.session_dir or default_session_dir(request.cwd))
        if request.session == "memory":
            store = SessionStore.in_memory(request.cwd)
            if request.session_id:
                store.header.id = request.session_id
            return store
        if request.session == "file":
            assert request.session_file is not None
            path = Path(request.session_file).expanduser()
            if not path.exists():
                raise SetupError(f"No session file at {path}. List sessions with: caddie session list")
            return SessionStore.open(path, repair=not request.read_only)
        if request.session == "continue":
            latest = latest_session_file(request.cwd, request.session_dir)
            if latest is not None:
                return SessionStore.open(latest)
        return SessionStore.create(request.cwd, request.session_dir, session_id=request.session_id)
    except SessionFileError as e:
        raise SetupError(str(e)) from None
    except OSError as e:
        raise SetupError(
            f"Cannot use the session: {e.strerror or e} ({getattr(e, 'filename', '')})"
        ) from None


def _thinking(value: str | None, settings: Settings, warnings: list[str]) -> ThinkingLevel:
    """The level asked for on the command line (a bad one is an error), else the settings' (a bad one warns)."""
    for level in THINKING_LEVELS:
        if level == (value or settings.default_thinking_level or "off"):
            return level
    if value is not None:
        raise SetupError(f"Unknown thinking level '{value}'. Use one of: {', '.join(THINKING_LEVELS)}.")
    warnings.append(
        f'settings "defaultThinkingLevel" is {settings.default_thinking_level!r}, not one of '
        f"{', '.join(THINKING_LEVELS)}; using off"
    )
    return "off"


async def open_session(request: SessionRequest) -> SessionBuild:
    cwd = str(Path(request.cwd).expanduser().resolve())
    if not Path(cwd).is_dir():
        raise SetupError(f"The working directory {cwd} does not exist.")
    trusted = project_trusted(cwd, request.trust)
    settings = session_settings(cwd, trusted, request.settings_overrides)
    warnings = list(settings.warnings)
    sandbox = _open_sandbox(request, cwd, settings, trusted, warnings)

    if request.session_dir is None and settings.session_dir:
        request.session_dir = str(Path(settings.session_dir).expanduser())
    store = open_store(request)
    if request.read_only:
        store.path = None  # views (caddie context) may run extensions, but nothing reaches the file
    loaded = request.preloaded or await load_extension_set(
        cwd,
        extension_paths=request.extension_paths,
        no_extensions=request.no_extensions,
        trust=request.trust,
        inline=request.inline_extensions,
        settings_overrides=request.settings_overrides,
    )
    registry = ModelRegistry()
    warnings += registry.warnings
    providers = ExtensionProviders(registry)  # api.register_provider: before the model is chosen
    warnings += providers.attach(loaded.extensions)
    restored = store.build_context() if len(store) else None
    model: Model | None = None
    if request.model is None and restored is not None and restored.model is not None:
        found = registry.find(*restored.model)  # a resumed session keeps its model when it still works
        model = found if found is not None and registry.has_auth(found) else None
    if model is None and not (request.read_only and request.model is None):  # views never probe for a model
        model = resolve_model(registry, settings, request.model, request.require_model)
    if not request.read_only:  # its SDK imports in a worker thread while the rest is set up
        import_later(DEFERRED_MODULES, after=start_provider_preload(model))
    if (
        request.thinking is None
        and restored is not None
        and len(store)
        and restored.thinking_level in THINKING_LEVELS
        and restored.thinking_level != "off"
    ):
        thinking = _thinking(restored.thinking_level, settings, warnings)
    else:
        suffix = split_thinking(request.model)[1] if request.model else None
        thinking = _thinking(request.thinking or suffix, settings, warnings)
    if model is not None and not model.reasoning:
        thinking = "off"

    tool_names = request.tools if request.tools is not None else settings.tools
    announced = ToolSelection(expected=tuple(p for e in loaded.extensions for p in e.expected_tools))
    if tool_names is not None:
        unknown = unannounced(tool_names, ALL_TOOL_NAMES, announced)
        if unknown and request.tools is not None:
            raise SetupError(
                f"Unknown tool(s): {', '.join(unknown)}. Built-in tools are: {', '.join(ALL_TOOL_NAMES)}."
            )
        if unknown:
            warnings.append(f'settings "tools" names unknown tool(s) {", ".join(unknown)}; ignored')
            tool_names = [t for t in tool_names if t not in unknown]

    session_ref: list[AgentSession] = []

    def bash_env() -> dict[str, str]:
        if not session_ref:
            return {}
        s = session_ref[0]
        m = s.model
        return session_env(
            session_id=s.store.session_id,
            session_file=s.store.session_file,
            provider=m.provider if m else None,
            model=m.id if m else None,
            reasoning_level=s.thinking_level,
        )

    builtin = create_builtin_tools(
        cwd,
        shell_path=settings.shell_path,
        command_prefix=settings.shell_command_prefix,
        env=bash_env,
        env_policy=EnvPolicy.of(*settings.shell_env),
        auto_resize_images=bool(settings.get("images.autoResize", True)),
        operations=request.tool_operations,
        sandbox=sandbox,
    )

    warnings += loaded.errors + loaded.notices
    rediscover = discover_resources(request, cwd, trusted, loaded.packages)
    resources = rediscover([], [])
    warnings += resources.warnings
    specs = loaded.flag_specs()
    unknown_flags = [name for name in request.flags if name not in specs]
    if unknown_flags:
        raise SetupError(f"Unknown option --{unknown_flags[0]}. See caddie --help.")

    api_key_for: Callable[[Model], str | None] = registry.api_key_for
    has_auth: Callable[[Model], bool] = registry.has_auth
    if request.api_key and model is not None:
        key, provider = request.api_key, model.provider
        api_key_for = lambda m: key if m.provider == provider else registry.api_key_for(m)  # noqa: E731
        has_auth = lambda m: m.provider == provider or registry.has_auth(m)  # noqa: E731

    options = SessionOptions(
        store=store,
        settings=settings,
        model=model,
        builtin_tools=builtin,
        active_builtin=list(tool_names if tool_names is not None else DEFAULT_ACTIVE),
        extensions=loaded.extensions,
        mode=request.mode,
        ui=request.ui,
        thinking_level=thinking,
        api_key_for=api_key_for,
        find_model=registry.find,
        context_files=[] if request.no_context_files else load_context_files(cwd, agent_dir()),
        custom_prompt=request.system_prompt,
        append_prompt=request.append_system_prompt,
        project_trusted=trusted,
        reload_extensions=_reattaching(loaded.reload, providers),
        flags=dict(request.flags),
        restored=restored,
        resources=resources,
        rediscover=rediscover,
        sandbox=sandbox,
        tool_selection=ToolSelection(
            tuple(tool_names) if tool_names is not None else None,
            tuple(request.exclude_tools),
            announced.expected,
        ),
    )
    if request.stream_fn is not None:
        options.stream_fn = request.stream_fn
    # Subscription logins and bearer tokens: every request gets its (renewed) token; --api-key wins.
    skip = model.provider if request.api_key and model is not None else None
    options.stream_fn = authenticated_stream(
        options.stream_fn, lambda m: registry.request_auth(m) if m.provider != skip else _no_auth()
    )
    if request.compaction and not request.read_only:
        from caddie.runtime.auto_compaction import CompactionEngine

        options.compactor = CompactionEngine
    session = AgentSession(options)
    core = session.core
    core.load_errors = loaded.errors
    session_ref.append(session)
    core.available_models = lambda: _available_models(registry, has_auth)
    patterns = request.models if request.models is not None else _enabled_models(settings, warnings)
    if patterns:
        core.preferences.scoped_models = scoped_models(registry, patterns, has_auth, warnings)
    if request.exclude_tools:
        known = {t.name for t in core.tools.all()}
        unknown = unannounced(request.exclude_tools, known, announced)
        if unknown:
            raise SetupError(
                f"--exclude-tools: unknown tool(s) {', '.join(unknown)}. Tools are: {', '.join(sorted(known))}."
            )
        core.tools.set_active([t for t in core.tools.active_names() if t not in request.exclude_tools])
    if request.name and request.name.strip():
        session.set_session_name(request.name.strip())
    if len(store) == 0 and not request.read_only:  # a new session records its model and level (as Pi)
        if model is not None:
            store.append_model_change(model.provider, model.id)
        store.append_thinking_level_change(thinking)
    return SessionBuild(session, registry, warnings, has_auth)


def _open_sandbox(
    request: SessionRequest, cwd: str, settings: Settings, trusted: bool, warnings: list[str]
) -> Sandbox:
    """The session's sandbox (``caddie.sandbox``); a mode that cannot be enforced here is a ``SetupError``
    saying what to install — never commands run unsandboxed."""
    if request.read_only:
        return Sandbox.off()  # views run no commands for the model
    try:
        config = load_sandbox_config(cwd, settings, project_trusted=trusted)
        mode = choose_mode(
            request.sandbox,
            config.mode,
            request.sandbox_default,
            os.environ.get(ENV_MODE),
            os.environ.get(ENV_INSIDE),
        )
        sandbox = open_sandbox(mode, cwd, config)
    except SandboxError as e:
        raise SetupError(str(e)) from None
    warnings += config.warnings
    if sandbox.active and request.tool_operations is not None and request.tool_operations.shell is not None:
        warnings.append(
            f"the sandbox ({sandbox.mode}) runs bash commands in caddie, not in the editor's terminal"
        )
    return sandbox


def _enabled_models(settings: Settings, warnings: list[str]) -> list[str]:
    value = settings.get("enabledModels")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        warnings.append('settings "enabledModels" must be a list of model patterns; ignored')
        return []
    return list(value)


def scoped_models(
    registry: ModelRegistry,
    patterns: list[str],
    has_auth: Callable[[Model], bool],
    warnings: list[str],
) -> list[tuple[Model, ThinkingLevel | None]]:
    """The models ``patterns`` name, in order, each with the thinking level its ``:level`` suffix gives.

    A pattern is ``provider/id``, a bare id, or a glob over ``provider/id`` or the id (``anthropic/*``,
    ``*sonnet*``). Models without a key are left out; a pattern that matches nothing is warned about."""
    out: list[tuple[Model, ThinkingLevel | None]] = []
    seen: set[tuple[str, str]] = set()
    candidates = [m for m in registry.all() if has_auth(m) or m.provider == "faux"]
    for raw in patterns:
        pattern, level = split_thinking(raw.strip())
        if not pattern:
            continue
        if any(ch in pattern for ch in "*?["):
            found = [
                m
                for m in candidates
                if fnmatch.fnmatchcase(f"{m.provider}/{m.id}".lower(), pattern.lower())
                or fnmatch.fnmatchcase(m.id.lower(), pattern.lower())
            ]
        else:
            try:
                found = [registry.resolve(pattern)]
            except ModelNotFound:
                found = []
        if not found:
            suggestion = closest_model(registry, pattern)
            hint = f" (did you mean {suggestion}?)" if suggestion else ""
            warnings.append(f"--models: no model matches '{raw.strip()}'{hint}")
        for m in found:
            if (m.provider, m.id) not in seen:
                seen.add((m.provider, m.id))
                out.append((m, level))
    return out


def _available_models(registry: ModelRegistry, has_auth: Callable[[Model], bool]) -> list[Model]:
    """Every model with auth, then what local servers serve (asked once per process, on first need: model
    cycling, RPC ``get_available_models``)."""
    registry.discover_local(refresh=False)
    listed = [m for m in registry.all() if m.provider != "faux" and has_auth(m)]
    known = {m.ref for m in listed}
    return listed + [m for m in registry.discovered() if m.ref not in known]


async def _no_auth() -> RequestAuth | None:
    return None

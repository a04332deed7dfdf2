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
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie.ai.constrained_sampling import JsonSchemaSampling
from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.oauth.types import RequestAuth
from caddie.ai.providers.preload import import_later, start_provider_preload
from caddie.ai.providers.thinking import clamp_thinking_level
from caddie.config.environment import experimental, offline, pi_variable_notices, session_dir_from_env
from caddie.config.paths import agent_dir
from caddie.config.pi_folders import pi_agent_notices, pi_project_notices
from caddie.config.settings import Settings, deep_merge, load_settings
from caddie.config.settings_keys import settings_notices
from caddie.extensions.api import ExtensionUI, Mode
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
from caddie.resources.packages import (
    InstalledPackage,
    ensure_project_packages,
    load_packages,
    missing_project_packages,
)
from caddie.runtime.core import SessionOptions
from caddie.runtime.model_lookup import RegistryLookup
from caddie.runtime.project_trust import decide_project_trust
from caddie.runtime.request import LoadedExtensions as LoadedExtensions
from caddie.runtime.request import SessionChoice as SessionChoice
from caddie.runtime.request import SessionRequest as SessionRequest
from caddie.runtime.request import SetupError as SetupError
from caddie.runtime.session import AgentSession
from caddie.runtime.system_prompt import PromptFiles, load_context_files, prompt_parts
from caddie.runtime.tool_selection import ToolSelection, unannounced
from caddie.runtime.trust import default_trust, project_has_code, remembered_trust
from caddie.runtime.ui import HeadlessUI
from caddie.sandbox import ENV_INSIDE, ENV_MODE, Sandbox, SandboxError, choose_mode, open_sandbox
from caddie.sandbox import load_config as load_sandbox_config
from caddie.session.entries import ThinkingLevelChangeEntry, entry_to_json
from caddie.session.files import json_line
from caddie.session.store import SessionFileError, SessionStore, default_session_dir, latest_session_file
from caddie.tools import ALL_TOOL_NAMES, DEFAULT_ACTIVE, create_builtin_tools
from caddie.tools.bash import EnvPolicy, session_env
from caddie.tools.validation import DEFERRED_MODULES


def project_trusted(cwd: str, trust: bool | None) -> bool:
    """``--approve`` / ``--no-approve``, else the remembered decision (trust.json), else settings
    ``defaultProjectTrust`` (``always``: trusted, ``never`` or ``ask``: not — the terminal UI asks first)."""
    if trust is not None:
        return trust
    remembered = remembered_trust(cwd)
    return remembered if remembered is not None else default_trust() == "always"


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
    trust_mode: Mode = "print",
    trust_ui: ExtensionUI | None = None,
    settings_overrides: dict[str, Any] | None = None,
) -> LoadedExtensions:
    """Discover and import extensions (before the session exists, so their flags can be parsed). When the
    project's trust is undecided (no ``--trust``, nothing remembered) and it has code to trust, the
    extensions loaded without it answer ``project_trust`` first (``trust_ui``: their dialogs)."""
    cwd = str(Path(cwd).expanduser().resolve())
    trusted = project_trusted(cwd, trust)
    loaded = await _load_extension_set(
        cwd, extension_paths, no_extensions, trusted, inline, settings_overrides
    )
    if trust is not None or trusted or remembered_trust(cwd) is not None or not project_has_code(cwd):
        return loaded
    decision, problems = await decide_project_trust(
        loaded.extensions, cwd, trust_mode, trust_ui or HeadlessUI()
    )
    if decision:
        loaded = await _load_extension_set(
            cwd, extension_paths, no_extensions, True, inline, settings_overrides
        )
    loaded.errors += problems
    loaded.trust_decision = decision
    return loaded


async def _load_extension_set(
    cwd: str,
    extension_paths: list[str],
    no_extensions: bool,
    trusted: bool,
    inline: list[Extension] | None,
    settings_overrides: dict[str, Any] | None,
) -> LoadedExtensions:
    settings = session_settings(cwd, trusted, settings_overrides)
    notices: list[str] = []
    setup_errors: list[str] = []
    if trusted and offline():  # --offline / CADDIE_OFFLINE / PI_OFFLINE: no network use at start-up
        missing = missing_project_packages(cwd)
        if missing:
            setup_errors.append(
                f"offline: project package(s) {', '.join(missing)} not installed; run caddie install -l "
                "<source> when online"
            )
    elif trusted:  # a trusted project's packages are installed on first run, as Pi does
        installed, failed = await asyncio.to_thread(ensure_project_packages, cwd)  # the UI keeps drawing
        notices += [f"installed project package {source}" for source in installed]
        setup_errors += failed
    packages, package_warnings = load_packages(cwd, project_trusted=trusted)
    setup_errors += package_warnings

    async def load() -> tuple[list[Extension], list[str]]:
        lists = scope_lists(cwd, trusted, "extensions")
        sources = collect_sources(
            cwd,
            cli_paths=extension_paths,
            agent_dir=agent_dir(),
            settings_paths=plain_entries(settings.extensions),
            project_trusted=trusted,
            no_extensions=no_extensions,
            disabled=settings.get("disabledExtensions", []) or [],
            packages=package_sources(packages),
            settings_lists=lists,
        )
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
    registry: ModelRegistry, settings: Settings, ref: str | None, required: bool, provider: str | None = None
) -> Model | None:
    """The model ``--model`` (and ``--provider``) name, or the default one. Beyond an exact
    ``provider/id``, id or name, a pattern matches as in Pi: part of an id or a name (``sonnet``),
    preferring an alias (no date suffix) and then the latest dated id."""
    try:
        if provider and not ref:
            raise SetupError(f"--provider {provider} needs --model too (as in Pi): --model {provider}/<id>.")
        if ref:
            pattern = split_thinking(ref)[0]
            if provider:
                known = {p.lower(): p for p in registry.providers()}
                canonical = known.get(provider.lower())
                if canonical is None:
                    raise SetupError(
                        f'Unknown provider "{provider}". Use --list-models to see the providers and models.'
                    )
                bare = (
                    pattern[len(canonical) + 1 :]
                    if pattern.lower().startswith(f"{canonical.lower()}/")
                    else pattern
                )
                pattern = f"{canonical}/{bare}"
            try:
                return registry.resolve(pattern)
            except ModelNotFound:
                found = partial_match(registry, pattern)
                if found is None:
                    raise
                return found
        return registry.default_model(settings, probe_local=not offline())
    except ModelNotFound as e:  # its text names the closest known models
        raise SetupError(str(e)) from None
    except NoModelConfigured as e:
        if required:
            raise SetupError(str(e)) from None
        return None


_DATED = re.compile(r"-\d{8}$")


def partial_match(registry: ModelRegistry, pattern: str) -> Model | None:
    """Pi's fallback for a pattern that names no model exactly: the models whose id or name contains it
    (within the provider, for ``provider/part``); an alias (no ``-YYYYMMDD`` suffix, or ``-latest``) that
    sorts highest, else the highest dated id."""
    provider, _, part = pattern.partition("/")
    scoped = provider in registry.providers() and bool(part)
    needle = (part if scoped else pattern).lower()
    if not needle:
        return None
    candidates = [
        m
        for m in registry.all()
        if (not scoped or m.provider == provider) and (needle in m.id.lower() or needle in m.name.lower())
    ]
    if not candidates:
        return None
    aliases = [m for m in candidates if m.id.endswith("-latest") or not _DATED.search(m.id)]
    pool = aliases or candidates
    best = max(pool, key=lambda m: _collation_key(m.id))
    return registry.find(best.provider, best.id)


def _collation_key(text: str) -> tuple[list[tuple[int, str]], str]:
    """An approximation of JavaScript's ``localeCompare`` (ICU root collation), which Pi sorts ids with:
    punctuation before digits before letters, case only as a tie-breaker."""
    rank = [(0 if not c.isalnum() else 1 if c.isdigit() else 2, c.lower()) for c in text]
    return rank, text.swapcase()


def fork_whole(request: SessionRequest) -> SessionStore:
    """``--fork``, as Pi's: a new session of this directory (``--session-id`` names it) holding every entry
    of the source (all its branches; opened, its last entry is the leaf), its header naming the source as
    parent."""
    assert request.fork_from is not None
    source = SessionStore.open(Path(request.fork_from).expanduser(), repair=False)
    folder = (
        Path(request.session_dir).expanduser() if request.session_dir else default_session_dir(request.cwd)
    )
    new = SessionStore.create(
        request.cwd, folder, parent_session=source.session_file, session_id=request.session_id
    )
    assert new.path is not None
    lines = [json_line(new.header.to_json()), *(json_line(entry_to_json(e)) for e in source.entries())]
    new.path.parent.mkdir(parents=True, exist_ok=True)
    with new.path.open("xb") as out:  # a new id: never an existing file
        out.write(b"".join(lines))
    return SessionStore.open(new.path)


def open_store(request: SessionRequest) -> SessionStore:
    try:
        if request.fork_from is not None:
            return fork_whole(request)
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


DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium"
"""Pi's ``DEFAULT_THINKING_LEVEL``: what a reasoning model starts with when nothing says otherwise."""


def _level(value: str | None) -> ThinkingLevel | None:
    return next((t for t in THINKING_LEVELS if t == value), None)


def initial_thinking(
    explicit: str | None,
    model: Model | None,
    settings: Settings,
    restored: tuple[bool, str | None],
) -> ThinkingLevel:
    """The level a session starts with, decided as Pi decides it: the command line's (``--thinking``, a
    ``:level`` suffix); else a resumed session's last ``thinking_level_change``; else settings
    ``modelThinkingLevels`` for the model, ``defaultThinkingLevel``, then ``medium`` — clamped to what the
    model supports (``off`` without a model or reasoning). ``restored``: (the session has messages, the
    level its branch last recorded or None). A bad ``--thinking`` is a ``SetupError``."""
    level: ThinkingLevel | None = None
    if explicit is not None:
        level = _level(explicit.strip().lower())
        if level is None:
            raise SetupError(
                f"Unknown thinking level '{explicit}'. Use one of: {', '.join(THINKING_LEVELS)}."
            )
    has_messages, recorded = restored
    if level is None and has_messages:
        level = _level(recorded) or _level(settings.default_thinking_level) or DEFAULT_THINKING_LEVEL
    if level is None and model is not None:
        level = _level(settings.model_thinking_level(model.provider, model.id))
    if level is None:
        level = _level(settings.default_thinking_level) or DEFAULT_THINKING_LEVEL
    return clamp_thinking_level(model, level) if model is not None else "off"


def _recorded_thinking(store: SessionStore) -> str | None:
    for entry in reversed(store.branch()):
        if isinstance(entry, ThinkingLevelChangeEntry):
            return entry.thinking_level
    return None


def tool_choice(request: SessionRequest, settings: Settings) -> tuple[list[str] | None, list[str]]:
    """Pi's tool selection: (the allowlist — ``--tools``, or nothing with ``-nt`` — or None, and the names
    active at start — ``--tools``, none with ``-nt``/``-nbt``, else settings ``defaultTools``, else read,
    bash, edit, write). Extension tools the allowlist admits are active at start too."""
    if request.tools is not None:
        return list(request.tools), list(request.tools)
    if request.no_tools == "all":
        return [], []
    if request.no_tools == "builtin":
        return None, []
    configured = settings.tools
    return None, list(configured if configured is not None else DEFAULT_ACTIVE)


async def open_session(request: SessionRequest) -> SessionBuild:
    cwd = str(Path(request.cwd).expanduser().resolve())
    if not Path(cwd).is_dir():
        raise SetupError(f"The working directory {cwd} does not exist.")
    trusted = project_trusted(cwd, request.trust)
    settings = session_settings(cwd, trusted, request.settings_overrides)
    warnings = [*request.notices, *settings.warnings]
    sandbox = _open_sandbox(request, cwd, settings, trusted, warnings)
    apply_http_proxy(settings)

    if request.session_dir is None:
        request.session_dir = session_dir_from_env()
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
        trust_mode=request.mode,
        trust_ui=request.ui,
        settings_overrides=request.settings_overrides,
    )
    if not request.read_only:
        warnings += pi_variable_notices()
        warnings += pi_project_notices(cwd)
        warnings += pi_agent_notices(agent_dir())
        warnings += settings_notices(settings.files, (e.name for e in loaded.extensions))
    if request.trust is None and loaded.trust_decision is not None and loaded.trust_decision != trusted:
        trusted = loaded.trust_decision  # an extension's project_trust answer (Pi)
        settings = session_settings(cwd, trusted, request.settings_overrides)
        warnings += [w for w in settings.warnings if w not in warnings]
    registry = ModelRegistry(request.models_json, auth=request.credentials)
    warnings += registry.warnings
    providers = ExtensionProviders(registry)  # api.register_provider: before the model is chosen
    warnings += providers.attach(loaded.extensions)
    restored = store.build_context() if len(store) else None
    model: Model | None = None
    if request.model is None and restored is not None and restored.model is not None:
        found = registry.find(*restored.model)  # a resumed session keeps its model when it still works
        model = found if found is not None and registry.has_auth(found) else None
    if model is None and not (request.read_only and request.model is None):  # views never probe for a model
        model = resolve_model(registry, settings, request.model, request.require_model, request.provider)
    if not request.read_only:  # its SDK imports in a worker thread while the rest is set up
        import_later(DEFERRED_MODULES, after=start_provider_preload(model))
    suffix = split_thinking(request.model)[1] if request.model else None
    has_messages = restored is not None and bool(restored.messages)
    thinking = initial_thinking(
        request.thinking or suffix,
        model,
        settings,
        (has_messages, _recorded_thinking(store) if has_messages else None),
    )

    allowed, tool_names = tool_choice(request, settings)
    announced = ToolSelection(expected=tuple(p for e in loaded.extensions for p in e.expected_tools))
    extension_tools = [t.name for e in loaded.extensions for t in e.tools.values()]
    known = [*ALL_TOOL_NAMES, *extension_tools]
    if request.tools is not None:
        unknown = unannounced(request.tools, known, announced)
        if unknown:
            raise SetupError(
                f"Unknown tool(s): {', '.join(unknown)}. Tools are: {', '.join(dict.fromkeys(known))}."
            )
    elif allowed is None and request.no_tools is None and settings.tools is not None:
        unknown = unannounced(tool_names, known, announced)
        if unknown:
            warnings.append(f'settings "defaultTools" names unknown tool(s) {", ".join(unknown)}; ignored')
            tool_names = [t for t in tool_names if t not in unknown]

    def read_prompt_files() -> PromptFiles:
        """At start and on ``/reload``: AGENTS.md …, SYSTEM.md / APPEND_SYSTEM.md or the flags' files."""
        append = request.append_system_prompt
        return PromptFiles(
            [] if request.no_context_files else load_context_files(cwd, agent_dir()),
            prompt_parts(
                request.system_prompt,
                [append] if isinstance(append, str) else append,
                cwd=cwd,
                agent_dir=agent_dir(),
                project_trusted=trusted,
            ),
        )

    prompt_files = read_prompt_files()
    warnings += prompt_files.parts.warnings

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
    if experimental():  # Pi's PI_EXPERIMENTAL=1: its four core tools prefer strict arguments
        for name in ("read", "bash", "edit", "write"):
            builtin[name].constrained_sampling = JsonSchemaSampling("prefer")

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
        active_builtin=tool_names,
        extensions=loaded.extensions,
        mode=request.mode,
        ui=request.ui,
        thinking_level=thinking,
        api_key_for=api_key_for,
        find_model=registry.find,
        context_files=prompt_files.context_files,
        custom_prompt=prompt_files.parts.custom,
        append_prompt=prompt_files.parts.append,
        project_trusted=trusted,
        reload_extensions=_reattaching(loaded.reload, providers),
        read_prompt_files=read_prompt_files,
        flags=dict(request.flags),
        restored=restored,
        resources=resources,
        rediscover=rediscover,
        sandbox=sandbox,
        tool_selection=ToolSelection(
            tuple(allowed) if allowed is not None else None,
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
    core.model_lookup = RegistryLookup(
        registry,
        api_key_for,
        has_auth,
        core.available_models,
        lambda: core.extensions,
        model.provider if request.api_key and model is not None else None,
    )
    patterns = request.models if request.models is not None else _enabled_models(settings, warnings)
    if patterns:
        core.preferences.scoped_models = scoped_models(registry, patterns, has_auth, warnings)
    if request.exclude_tools:
        unknown = unannounced(request.exclude_tools, known, announced)
        if unknown:
            raise SetupError(
                f"--exclude-tools: unknown tool(s) {', '.join(unknown)}. Tools are: "
                f"{', '.join(sorted(set(known)))}."
            )
    if request.name and request.name.strip():
        session.set_session_name(request.name.strip())
    if len(store) == 0 and not request.read_only:  # a new session records its model and level (as Pi)
        if model is not None:
            store.append_model_change(model.provider, model.id)
        store.append_thinking_level_change(thinking)
    return SessionBuild(session, registry, warnings, has_auth)


def apply_http_proxy(settings: Settings) -> None:
    """Settings ``httpProxy`` (global file only) becomes ``HTTP_PROXY`` and ``HTTPS_PROXY`` where they are
    not set already, as Pi applies it; the SDKs' HTTP clients read them."""
    proxy = settings.http_proxy
    if proxy:
        os.environ.setdefault("HTTP_PROXY", proxy)
        os.environ.setdefault("HTTPS_PROXY", proxy)


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

    A pattern is ``provider/id``, a bare id, part of one (as ``--model`` takes it), or a glob over
    ``provider/id`` or the id (``anthropic/*``, ``*sonnet*``). Models without a key are left out; a pattern that matches nothing is warned about."""
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
        else:  # an id, else part of one, as --model resolves it (Pi's parseModelPattern)
            try:
                found = [registry.resolve(pattern)]
            except ModelNotFound:
                partial = partial_match(registry, pattern)
                found = [partial] if partial is not None else []
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

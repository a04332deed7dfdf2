"""Building an AgentSession from what the user asked for (the CLI's and the tests' single entry point).

Order of work: settings (project trust decides which project keys apply) → model registry and model →
session store (new, continue, file, in-memory) → built-in tools → extensions → AgentSession.
Every user mistake surfaces as a ``SetupError`` with one clear sentence; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.registry import ModelNotFound, ModelRegistry, NoModelConfigured
from caddie.config.paths import agent_dir
from caddie.config.settings import Settings, load_settings
from caddie.extensions.api import ExtensionUI, FlagSpec, Mode
from caddie.extensions.loader import collect_sources, load_extensions
from caddie.extensions.runner import Extension
from caddie.runtime.session import AgentSession, SessionOptions, StreamFn
from caddie.runtime.system_prompt import load_context_files
from caddie.runtime.trust import remembered_trust
from caddie.session.store import SessionFileError, SessionStore, latest_session_file
from caddie.tools import ALL_TOOL_NAMES, DEFAULT_ACTIVE, create_builtin_tools
from caddie.tools.bash import session_env

SessionChoice = Literal["new", "continue", "file", "memory"]


class SetupError(Exception):
    """Something the user asked for cannot be done; the message says what to do instead."""


@dataclass
class SessionRequest:
    cwd: str
    mode: Mode = "print"
    model: str | None = None
    thinking: str | None = None
    session: SessionChoice = "new"
    session_file: str | None = None
    session_dir: str | None = None
    extension_paths: list[str] = field(default_factory=list)
    no_extensions: bool = False
    trust: bool | None = None
    """True/False from the command line; None: use the remembered decision (or ask, interactively)."""
    tools: list[str] | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    no_context_files: bool = False
    require_model: bool = True
    ui: ExtensionUI | None = None
    stream_fn: StreamFn | None = None
    inline_extensions: list[Extension] = field(default_factory=list)
    """Extensions already built in code (tests, SDK use): loaded after the discovered ones."""
    flags: dict[str, str | bool] = field(default_factory=dict)
    """Values of extension flags (``--goal ...``) already parsed against the extensions' ``FlagSpec``s."""
    preloaded: LoadedExtensions | None = None
    read_only: bool = False
    """Open the session without ever writing to its file (offline views such as ``caddie context``)."""


@dataclass
class LoadedExtensions:
    extensions: list[Extension]
    errors: list[str]
    reload: Callable[[], Awaitable[tuple[list[Extension], list[str]]]]

    def flag_specs(self) -> dict[str, FlagSpec]:
        return {name: spec for ext in self.extensions for name, spec in ext.flags.items()}


def project_trusted(cwd: str, trust: bool | None) -> bool:
    return trust if trust is not None else bool(remembered_trust(cwd))


async def load_extension_set(
    cwd: str,
    *,
    extension_paths: list[str],
    no_extensions: bool,
    trust: bool | None,
    inline: list[Extension] | None = None,
) -> LoadedExtensions:
    """Discover and import extensions (before the session exists, so their flags can be parsed)."""
    cwd = str(Path(cwd).expanduser().resolve())
    trusted = project_trusted(cwd, trust)
    settings = load_settings(cwd, project_trusted=trusted)

    async def load() -> tuple[list[Extension], list[str]]:
        sources = collect_sources(
            cwd,
            cli_paths=extension_paths,
            agent_dir=agent_dir(),
            settings_paths=settings.extensions,
            project_trusted=trusted,
            no_extensions=no_extensions,
            disabled=settings.get("disabledExtensions", []) or [],
        )
        loaded = await load_extensions(sources)
        return [*loaded.extensions, *(inline or [])], loaded.errors

    extensions, errors = await load()
    return LoadedExtensions(extensions, errors, load)


@dataclass
class SessionBuild:
    session: AgentSession
    registry: ModelRegistry
    warnings: list[str]


def resolve_model(
    registry: ModelRegistry, settings: Settings, ref: str | None, required: bool
) -> Model | None:
    try:
        if ref:
            return registry.resolve(ref)
        return registry.default_model(settings)
    except ModelNotFound as e:
        raise SetupError(str(e)) from None
    except NoModelConfigured as e:
        if required:
            raise SetupError(str(e)) from None
        return None


def open_store(request: SessionRequest) -> SessionStore:
    try:
        if request.session == "memory":
            return SessionStore.in_memory(request.cwd)
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
        return SessionStore.create(request.cwd, request.session_dir)
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


async def build_session(request: SessionRequest) -> SessionBuild:
    cwd = str(Path(request.cwd).expanduser().resolve())
    if not Path(cwd).is_dir():
        raise SetupError(f"The working directory {cwd} does not exist.")
    trusted = project_trusted(cwd, request.trust)
    settings = load_settings(cwd, project_trusted=trusted)
    warnings = list(settings.warnings)

    if request.session_dir is None and settings.session_dir:
        request.session_dir = str(Path(settings.session_dir).expanduser())
    store = open_store(request)
    if request.read_only:
        store.path = None  # views (caddie context) may run extensions, but nothing reaches the file
    registry = ModelRegistry()
    warnings += registry.warnings
    restored = store.build_context() if len(store) else None
    model: Model | None = None
    if request.model is None and restored is not None and restored.model is not None:
        found = registry.find(*restored.model)  # a resumed session keeps its model when it still works
        model = found if found is not None and registry.has_auth(found) else None
    if model is None and not (request.read_only and request.model is None):  # views never probe for a model
        model = resolve_model(registry, settings, request.model, request.require_model)
    if (
        request.thinking is None
        and restored is not None
        and len(store)
        and restored.thinking_level in THINKING_LEVELS
        and restored.thinking_level != "off"
    ):
        thinking = _thinking(restored.thinking_level, settings, warnings)
    else:
        thinking = _thinking(request.thinking, settings, warnings)
    if model is not None and not model.reasoning:
        thinking = "off"

    tool_names = request.tools if request.tools is not None else settings.tools
    if tool_names is not None:
        unknown = [t for t in tool_names if t not in ALL_TOOL_NAMES]
        if unknown and request.tools is not None:
            raise SetupError(
                f"Unknown tool(s): {', '.join(unknown)}. Built-in tools are: {', '.join(ALL_TOOL_NAMES)}."
            )
        if unknown:
            warnings.append(f'settings "tools" names unknown tool(s) {", ".join(unknown)}; ignored')
            tool_names = [t for t in tool_names if t in ALL_TOOL_NAMES]

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
        auto_resize_images=bool(settings.get("images.autoResize", True)),
    )

    loaded = request.preloaded or await load_extension_set(
        cwd,
        extension_paths=request.extension_paths,
        no_extensions=request.no_extensions,
        trust=request.trust,
        inline=request.inline_extensions,
    )
    warnings += loaded.errors
    specs = loaded.flag_specs()
    unknown_flags = [name for name in request.flags if name not in specs]
    if unknown_flags:
        raise SetupError(f"Unknown option --{unknown_flags[0]}. See caddie --help.")

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
        api_key_for=registry.api_key_for,
        find_model=registry.find,
        context_files=[] if request.no_context_files else load_context_files(cwd, agent_dir()),
        custom_prompt=request.system_prompt,
        append_prompt=request.append_system_prompt,
        project_trusted=trusted,
        reload_extensions=loaded.reload,
        flags=dict(request.flags),
        restored=restored,
    )
    if request.stream_fn is not None:
        options.stream_fn = request.stream_fn
    session = AgentSession(options)
    session.load_errors = loaded.errors
    session_ref.append(session)
    if len(store) == 0 and not request.read_only:  # a new session records its model and level (as Pi)
        if model is not None:
            store.append_model_change(model.provider, model.id)
        store.append_thinking_level_change(thinking)
    return SessionBuild(session, registry, warnings)

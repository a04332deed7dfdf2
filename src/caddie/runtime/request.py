"""What the user asked a session to be (``SessionRequest``), the extensions loaded for it, and the error that
says it cannot be.

Kept apart from ``factory`` (which re-exports both) so that the command line can describe a session
without importing what builds one: the interactive UI paints its first frame before the agent, the tools
and the extensions are imported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from caddie.errors import ConfigurationError

if TYPE_CHECKING:
    from caddie.extensions.api import ExtensionUI, FlagSpec, Mode
    from caddie.extensions.runner import Extension
    from caddie.models.auth import AuthStore
    from caddie.resources.packages import InstalledPackage
    from caddie.runtime.compaction_port import StreamFn
    from caddie.sandbox import SandboxMode
    from caddie.tools import ToolOperations

SessionChoice = Literal["new", "continue", "file", "memory"]


@dataclass
class LoadedExtensions:
    """Extensions discovered and imported before the session exists (so their flags can be parsed)."""

    extensions: list[Extension]
    errors: list[str]
    reload: Callable[[], Awaitable[tuple[list[Extension], list[str]]]]
    packages: list[InstalledPackage] = field(default_factory=list)
    """The configured packages (``caddie install`` / settings ``packages``), inspected."""
    notices: list[str] = field(default_factory=list)
    """Things done on the way that the user should hear about (project packages installed)."""
    trust_decision: bool | None = None
    """What the extensions' ``project_trust`` handlers decided (None: nobody did)."""

    def flag_specs(self) -> dict[str, FlagSpec]:
        return {name: spec for ext in self.extensions for name, spec in ext.flags.items()}


class SetupError(ConfigurationError):
    """Something the user asked for cannot be done; the message says what to do instead."""


@dataclass
class SessionRequest:
    cwd: str
    mode: Mode = "print"
    model: str | None = None
    provider: str | None = None
    """``--provider``: the provider ``model`` belongs to (else ``provider/id`` in ``model``)."""
    thinking: str | None = None
    session: SessionChoice = "new"
    session_file: str | None = None
    session_dir: str | None = None
    extension_paths: list[str] = field(default_factory=list)
    no_extensions: bool = False
    trust: bool | None = None
    """True/False from the command line; None: use the remembered decision (or ask, interactively)."""
    tools: list[str] | None = None
    """``--tools``: an allowlist over every tool (built-in, from extensions, MCP; globs for announced ones),
    as Pi's: the tools not named do not exist for the run. None: settings ``defaultTools``."""
    no_tools: Literal["all", "builtin"] | None = None
    """``-nt`` (``all``: no tool at all unless ``tools`` names some) / ``-nbt`` (``builtin``: no built-in
    tool at start, extension tools on)."""
    system_prompt: str | None = None
    """Replaces the default system prompt: the text, or the contents of the file it names (else SYSTEM.md)."""
    append_system_prompt: str | list[str] | None = None
    """Added to the system prompt: each text, or the contents of the file it names (else APPEND_SYSTEM.md)."""
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
    skill_paths: list[str] = field(default_factory=list)
    """``--skill PATH`` (loaded even with ``no_skills``)."""
    no_skills: bool = False
    prompt_paths: list[str] = field(default_factory=list)
    """``--prompt-template PATH`` (loaded even with ``no_prompt_templates``)."""
    no_prompt_templates: bool = False
    tool_operations: ToolOperations | None = None
    """Where the built-in tools read and write files and run commands (None: this machine)."""
    session_id: str | None = None
    """``--session-id``: the id a new session gets."""
    models: list[str] | None = None
    """``--models``: the patterns of the models to cycle through (else settings ``enabledModels``)."""
    api_key: str | None = None
    """``--api-key``: the key for the chosen model's provider, over env and models.json."""
    credentials: AuthStore | None = None
    """Where stored keys and logins are (None: ``auth.json`` in the agent folder; ``caddie.sdk``'s
    ``auth_path=`` / ``credentials=``)."""
    models_json: str | None = None
    """The models.json to read (None: the agent folder's; ``caddie.sdk``'s ``models_path=``)."""
    name: str | None = None
    """``--name``: the session's display name."""
    exclude_tools: list[str] = field(default_factory=list)
    """``--exclude-tools``: tools (built-in or from extensions) to leave inactive."""
    fork_from: str | None = None
    """``--fork``: a session file to copy (every entry, as Pi's) into a new session of this project."""
    compaction: bool = True
    """Automatic and manual compaction and branch summaries (off for read-only views)."""
    settings_overrides: dict[str, Any] | None = None
    """Settings deep-merged over the settings files, for this session only and never written
    (``caddie.sdk``'s ``settings=``, Pi's ``SettingsManager.applyOverrides``; the command line's
    ``--use-theme``, ``--theme``, ``--no-themes``, ``--verbose``)."""
    sandbox: str | None = None
    """``--sandbox``: off, read-only or workspace-write (None: the settings' ``sandbox`` block decides)."""
    sandbox_default: SandboxMode = "off"
    """The mode when neither ``--sandbox`` nor the settings name one (workspace-write for headless goals)."""
    notices: list[str] = field(default_factory=list)
    """Lines the caller already has for the user (the command line's refusals, ``--tui-mode regular``…):
    shown first among the session's start-up warnings."""

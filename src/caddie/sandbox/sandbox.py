"""One session's sandbox: the policy for its workspace, the OS backend that enforces it, a private temporary
directory, the allow-list proxy — and ``prepare``, which every place that starts a command calls.

``open_sandbox`` builds it (refusing with ``SandboxUnavailable`` when the mode cannot be enforced here, never
falling back to running commands unsandboxed); ``Sandbox.off()`` is the no-op a session has when the mode is
``off``. ``prepare(argv, cwd, env)`` returns a ``PreparedCommand``: the program line, environment and
descriptors to start the process with, ``explain`` for a note when the output shows the sandbox refused
something, and ``close`` for after the process ended.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.sandbox.backend import SandboxBackend, backend_for_platform
from caddie.sandbox.bubblewrap import StandIns
from caddie.sandbox.config import ENV_INSIDE, SandboxConfig, SandboxMode, pi_agent_dir
from caddie.sandbox.errors import SandboxUnavailable
from caddie.sandbox.guard import FileGuard
from caddie.sandbox.policy import DEFAULT_DENY_READ, PROTECTED_IN_WRITABLE, SandboxPolicy, inside
from caddie.sandbox.proxy import FilteringProxy

PRIVATE_PREFIX = "caddie-sandbox-"


@dataclass(slots=True)
class PreparedCommand:
    """A command ready to start: pass ``argv``, ``env`` and ``pass_fds`` to the process-starting call, then
    ``close()`` once it has ended (a ``with`` block does)."""

    argv: list[str]
    env: dict[str, str] | None
    pass_fds: tuple[int, ...] = ()
    sandboxed: bool = False
    _policy: SandboxPolicy | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)
    _refused: Callable[[], list[str]] = lambda: []
    _refused_seen: list[str] | None = None

    def explain(self, output: str) -> str | None:
        """A note for the model when ``output`` shows the sandbox's hand (see ``SandboxPolicy.explain``)."""
        if self._policy is None:
            return None
        refused = self._refused_seen if self._refused_seen is not None else self._refused()
        return self._policy.explain(output, refused)

    def close(self) -> None:
        if self._refused_seen is None:
            self._refused_seen = self._refused()
        closers, self._closers = self._closers, []
        for close in closers:
            with contextlib.suppress(OSError, RuntimeError):
                close()

    def __enter__(self) -> PreparedCommand:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class Sandbox:
    """See the module text. ``mode`` is ``off`` for the no-op sandbox."""

    def __init__(
        self,
        policy: SandboxPolicy | None = None,
        backend: SandboxBackend | None = None,
        stand_ins: StandIns | None = None,
        private_root: str | None = None,
    ) -> None:
        self.policy = policy
        self._backend = backend
        self._stand_ins = stand_ins
        self._private_root = private_root
        self._proxy: FilteringProxy | None = None
        if policy is not None and policy.network.kind == "allow-list" and policy.network.allowed:
            self._proxy = FilteringProxy(policy.network)
        self.file_guard: FileGuard | None = FileGuard(policy) if policy is not None else None
        """The in-process path policy for the file tools (None when off)."""

    @classmethod
    def off(cls) -> Sandbox:
        return cls()

    @property
    def mode(self) -> SandboxMode:
        return self.policy.mode if self.policy is not None else "off"

    @property
    def active(self) -> bool:
        return self.policy is not None

    @property
    def backend_name(self) -> str | None:
        return self._backend.name if self._backend is not None and self.policy is not None else None

    def summary(self) -> str:
        """``off`` or e.g. ``workspace-write, network off``."""
        return self.policy.summary() if self.policy is not None else "off"

    def guideline(self) -> str:
        """One line for the system prompt, so the model knows the limits before it meets them."""
        return self.policy.guideline() if self.policy is not None else ""

    def state(self) -> dict[str, object]:
        """The sandbox as RPC ``get_state`` reports it: mode, network, backend."""
        policy = self.policy
        if policy is None:
            return {"mode": "off"}
        network: dict[str, object] = {"mode": policy.network.kind}
        if policy.network.kind == "allow-list":
            network.update(allowed=list(policy.network.allowed), denied=list(policy.network.denied))
        return {"mode": policy.mode, "network": network, "backend": self.backend_name}

    def prepare(self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None = None) -> PreparedCommand:
        """``argv`` to run in ``cwd`` with ``env`` (None: caddie's own), sandboxed when the mode is not off."""
        return self._prepare(argv, cwd, env, standalone=False)

    def prepare_standalone(
        self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None = None
    ) -> PreparedCommand:
        """Like ``prepare``, for a process starter that passes no descriptors (an SDK that takes a command,
        its arguments, an environment and a directory, such as the MCP SDK's stdio client): ``pass_fds`` is
        empty, the command line opens what it needs itself. Call ``close()`` once the process has ended."""
        return self._prepare(argv, cwd, env, standalone=True)

    def _prepare(
        self, argv: Sequence[str], cwd: str, env: Mapping[str, str] | None, *, standalone: bool
    ) -> PreparedCommand:
        policy, backend, stand_ins = self.policy, self._backend, self._stand_ins
        if policy is None:
            return PreparedCommand(list(argv), dict(env) if env is not None else None)
        if backend is None or stand_ins is None:  # a policy with nothing to enforce it: never run unconfined
            raise SandboxUnavailable(f"the sandbox ({policy.mode}) has no backend to run commands with.")
        if standalone and self._private_root is None:
            raise SandboxUnavailable(f"the sandbox ({policy.mode}) is closed; it cannot start a command.")
        directory = self._private_root if standalone else None
        wrapped = backend.wrap(policy, stand_ins, argv, cwd, self._proxy, directory)
        run_env = dict(env if env is not None else os.environ)
        run_env.update(sandbox_env(policy, run_env, wrapped.proxy_url))
        proxy, channel = self._proxy, wrapped.channel
        return PreparedCommand(
            wrapped.argv,
            run_env,
            tuple(wrapped.pass_fds),
            sandboxed=True,
            _policy=policy,
            _closers=list(wrapped.closers),
            _refused=(lambda: proxy.refused_hosts(channel)) if proxy is not None else (lambda: []),
        )

    def close(self) -> None:
        """Stop the proxy and remove the private directory (its temporary files with it)."""
        if self._proxy is not None:
            self._proxy.close()
        if self._private_root is not None:
            remove_tree(self._private_root)
            self._private_root = None


def sandbox_env(policy: SandboxPolicy, base: Mapping[str, str], proxy_url: str | None) -> dict[str, str]:
    """What a sandboxed command's environment gains: its temp dir, caches that would be read-only moved into
    it (so package managers keep working), the proxy in allow-list mode, and ``CADDIE_SANDBOXED``."""
    temp = policy.temp_dir
    env = {"TMPDIR": temp, "TMP": temp, "TEMP": temp, ENV_INSIDE: policy.mode}
    home = base.get("HOME") or os.path.expanduser("~")

    def writable(path: str) -> bool:
        return policy.write_problem(os.path.realpath(path)) is None

    cache = base.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    if not writable(cache):
        env["XDG_CACHE_HOME"] = os.path.join(temp, ".cache")
    npm_cache = base.get("npm_config_cache") or os.path.join(home, ".npm")
    if not writable(npm_cache):
        env["npm_config_cache"] = os.path.join(temp, ".npm")
    mod_cache = base.get("GOMODCACHE") or os.path.join(
        base.get("GOPATH") or os.path.join(home, "go"), "pkg", "mod"
    )
    if not writable(mod_cache):
        env["GOMODCACHE"] = os.path.join(temp, "go-mod")
    if proxy_url is not None:
        loopback = ["localhost", "127.0.0.1", "::1"]
        direct = [h for h in loopback if h not in policy.network.allowed]
        for name in (
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "npm_config_proxy",
            "npm_config_https_proxy",
        ):
            env[name] = proxy_url
        env["NO_PROXY"] = env["no_proxy"] = ",".join(direct)
        env["NODE_USE_ENV_PROXY"] = "1"
    return env


def remove_tree(path: str) -> None:
    """``rm -rf`` that also gets through what is unreadable or read-only — the mode-000 stand-ins, and what
    commands made read-only in $TMPDIR (Go's module cache does) — and never follows a symlink."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not stat.S_ISDIR(mode):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    with contextlib.suppress(OSError):
        names = os.listdir(path)
        for name in names:
            remove_tree(os.path.join(path, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)


AGENT_SECRET_FILES = ("auth.json", "models.json", "mcp-auth.json")
"""Files in caddie's (and Pi's) agent directory that hold credentials: API keys and subscription tokens,
custom providers' ``apiKey`` values, the mcp extension's OAuth tokens (``mcp/oauth.py``'s ``AUTH_FILE``)."""


def secret_paths() -> list[str]:
    """The paths no sandboxed command reads, whatever the configuration adds: credential stores, and caddie's
    and Pi's files that hold keys or tokens (``AGENT_SECRET_FILES``)."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    paths = [os.path.join(home, p[2:]) for p in DEFAULT_DENY_READ]
    for directory in (agent_dir(), pi_agent_dir()):
        paths += [str(directory / name) for name in AGENT_SECRET_FILES]
    return paths


def build_policy(mode: SandboxMode, workspace: str, temp_dir: str, config: SandboxConfig) -> SandboxPolicy:
    """The policy for ``mode`` in ``workspace`` (all paths made real here)."""
    real = os.path.realpath
    workspace = real(workspace)
    if mode == "workspace-write":
        writable = [workspace, temp_dir, *(real(p) for p in config.writable)]
    else:
        writable = [temp_dir]
    writable = list(dict.fromkeys(writable))
    protected = [
        os.path.join(root, name) for root in writable if root != temp_dir for name in PROTECTED_IN_WRITABLE
    ]
    deny_read = list(dict.fromkeys(real(p) for p in [*secret_paths(), *config.deny_read]))
    deny_read = [p for p in deny_read if not inside(temp_dir, p)]
    return SandboxPolicy(
        mode=mode,
        workspace=workspace,
        temp_dir=temp_dir,
        writable=tuple(writable),
        protected=tuple(protected),
        deny_read=tuple(deny_read),
        deny_write=config.deny_write,
        network=config.network,
        allow_unix_sockets=config.allow_unix_sockets,
    )


def _private_root() -> tuple[str, StandIns, str]:
    """A new private directory: (its path, the stand-ins in it, the temp dir commands write to)."""
    _sweep_stale()
    root = tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-")
    temp = os.path.join(root, "tmp")
    os.mkdir(temp, 0o700)
    unreadable_dir = os.path.join(root, "unreadable")
    os.mkdir(unreadable_dir, 0o000)
    unreadable_file = os.path.join(root, "unreadable-file")
    os.close(os.open(unreadable_file, os.O_CREAT | os.O_WRONLY, 0o000))
    empty = os.path.join(root, "empty")
    os.mkdir(empty, 0o555)
    return root, StandIns(unreadable_dir, unreadable_file, empty), os.path.realpath(temp)


def _sweep_stale() -> None:
    """Private directories of caddie processes that no longer exist (a crash leaves them behind)."""
    base = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in base.glob(f"{PRIVATE_PREFIX}*"):
            pid_text = entry.name[len(PRIVATE_PREFIX) :].split("-", 1)[0]
            if not pid_text.isdigit() or entry.stat().st_uid != os.getuid():
                continue
            try:
                os.kill(int(pid_text), 0)
            except ProcessLookupError:
                remove_tree(str(entry))
            except OSError:
                continue


def open_sandbox(
    mode: SandboxMode, workspace: str, config: SandboxConfig, backend: SandboxBackend | None = None
) -> Sandbox:
    """The sandbox for ``mode`` (``off``: the no-op one). ``SandboxUnavailable`` when it cannot be enforced
    here — the message names the mode and what to install, and says ``--sandbox off`` runs without it."""
    if mode == "off":
        return Sandbox.off()
    outer = os.environ.get(ENV_INSIDE)
    if outer:
        raise SandboxUnavailable(
            f"the sandbox ({mode}) cannot start: caddie is running inside a caddie sandbox already ({outer}), "
            "which cannot hold a second one; run it with --sandbox off (it stays confined by the outer one)."
        )
    backend = backend or backend_for_platform()
    problem = backend.unavailable()
    if problem is not None:
        raise SandboxUnavailable(f"the sandbox ({mode}) cannot start: {problem}; or run with --sandbox off.")
    root, stand_ins, temp = _private_root()
    policy = build_policy(mode, workspace, temp, config)
    return Sandbox(policy, backend, stand_ins, root)

"""The Linux backend: every sandboxed command runs under bubblewrap (``bwrap``) in fresh namespaces.

The command sees the whole filesystem read-only (``--ro-bind / /``), its writable paths bound writable over
it, the protected paths inside those bound read-only again, and each denied path covered by an empty,
unreadable stand-in (mode 000, so reads fail with "Permission denied"). It gets its own user (all
capabilities dropped, no nested user namespaces), PID, IPC, UTS and — unless the network is ``on`` — network
namespace, a new session (no terminal to inject keystrokes into), the seccomp filter of ``seccomp.py``, and
dies with caddie. In allow-list mode ``netns_helper.py`` starts first and hands its proxy port to caddie.

``bwrap_args`` is pure (a ``MountPlan`` in, arguments out); ``plan_mounts`` looks at the disk to make the plan.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from caddie.sandbox import seccomp
from caddie.sandbox.errors import SandboxUnavailable
from caddie.sandbox.policy import SandboxPolicy, inside
from caddie.sandbox.proxy import FilteringProxy
from caddie.sandbox.wrapped import WrappedCommand

HELPER = str(Path(__file__).with_name("netns_helper.py"))
LAUNCHER = str(Path(__file__).with_name("launcher.py"))
LAUNCHER_SECCOMP_FD, LAUNCHER_CONTROL_FD = 3, 4
"""Where ``launcher.py`` puts the seccomp program and the proxy channel for a standalone command."""
PROXY_PORT = 3128
"""Where the allow-list proxy answers inside each sandbox (its own loopback, so any port is free)."""
PLACEHOLDER_NAMES = (".git", ".caddie", ".pi")
"""Protected directories that are made to exist (empty, read-only) in the workspace when missing, so a
command cannot create them: they would be read by caddie or Pi outside the sandbox later. bubblewrap creates
the empty mount point on the host, and it stays: removing it while another command's sandbox still has its
stand-in mounted there would detach that mount and let the command create the directory after all."""
DENY_WRITE_SCAN_LIMIT = 20_000
_SKIP_SCAN = {".git", "node_modules", ".venv", "__pycache__"}

INSTALL_HINT = (
    "install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; "
    "Arch: sudo pacman -S bubblewrap)"
)


@dataclass(frozen=True, slots=True)
class BwrapFeatures:
    disable_userns: bool
    """``--disable-userns`` (bubblewrap 0.8+): no user namespaces inside the sandbox."""


@dataclass(frozen=True, slots=True)
class StandIns:
    """Host paths bound over what a command may not see or change (created by the sandbox, never changed)."""

    unreadable_dir: str
    unreadable_file: str
    empty_dir: str


@dataclass(frozen=True, slots=True)
class MountPlan:
    writable: tuple[str, ...]
    read_only: tuple[str, ...]
    """Existing paths inside the writable ones that stay read-only (protected, denyWrite matches)."""
    placeholders: tuple[str, ...]
    """Missing protected directories: an empty read-only directory is bound there."""
    hidden_dirs: tuple[str, ...]
    hidden_files: tuple[str, ...]


def bwrap_args(
    bwrap: str,
    features: BwrapFeatures,
    plan: MountPlan,
    stand_ins: StandIns,
    *,
    cwd: str,
    share_network: bool,
    seccomp_fd: int,
) -> list[str]:
    """The bubblewrap command line up to (not including) the program to run."""
    args = [bwrap, "--new-session", "--die-with-parent", "--unshare-user"]
    if features.disable_userns:
        args.append("--disable-userns")
    args += ["--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not share_network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in sorted(plan.writable, key=len):
        args += ["--bind", path, path]
    for path in sorted(plan.read_only, key=len):
        args += ["--ro-bind", path, path]
    for path in plan.placeholders:
        args += ["--ro-bind", stand_ins.empty_dir, path]
    for path in sorted(plan.hidden_dirs, key=len):
        args += ["--ro-bind", stand_ins.unreadable_dir, path]
    for path in sorted(plan.hidden_files, key=len):
        args += ["--ro-bind", stand_ins.unreadable_file, path]
    args += ["--seccomp", str(seccomp_fd), "--chdir", cwd, "--"]
    return args


def _outermost(paths: Sequence[str]) -> list[str]:
    """Drop paths that lie inside another one of the list."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(inside(path, k) for k in kept):
            kept.append(path)
    return kept


def _kind(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _deny_write_matches(policy: SandboxPolicy, roots: Sequence[str]) -> list[str]:
    """Existing files in the writable paths that a denyWrite pattern names (a bounded walk)."""
    found: list[str] = []
    seen = 0
    for root in roots:
        stack = [root]
        while stack and seen < DENY_WRITE_SCAN_LIMIT:
            directory = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIP_SCAN:
                        stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and policy.deny_write_match(entry.path):
                    found.append(entry.path)
    return found


def _needs_placeholder(path: str, workspace: str) -> bool:
    """A missing protected directory that a command could otherwise create: the workspace's ``.git`` (git
    passes over an empty one when it looks for the repository), ``.caddie`` and ``.pi``."""
    return os.path.basename(path) in PLACEHOLDER_NAMES and os.path.dirname(path) == workspace


def plan_mounts(policy: SandboxPolicy) -> MountPlan:
    """What to bind for ``policy`` given what exists on disk now."""
    hidden = _outermost(policy.deny_read)
    writable = [
        p
        for p in _outermost(policy.writable)
        if _kind(p) in ("dir", "file") and not any(inside(p, h) for h in hidden)
    ]
    read_only: list[str] = []
    placeholders: list[str] = []
    for path in policy.protected:
        if any(inside(path, h) for h in hidden):
            continue
        kind = _kind(path)
        if kind in ("dir", "file"):
            read_only.append(path)
        elif kind is None and _needs_placeholder(path, policy.workspace):
            placeholders.append(path)
    if policy.deny_write:
        roots = [p for p in writable if p != policy.temp_dir]
        read_only += [
            p for p in _deny_write_matches(policy, roots) if not any(inside(p, r) for r in read_only)
        ]
    hidden_dirs = [p for p in hidden if _kind(p) == "dir"]
    hidden_files = [p for p in hidden if _kind(p) == "file"]
    return MountPlan(
        tuple(writable), tuple(read_only), tuple(placeholders), tuple(hidden_dirs), tuple(hidden_files)
    )


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> tuple[BwrapFeatures | None, str | None]:
    """Whether ``bwrap`` can make the namespaces a sandbox needs here: (features, None) or (None, why not)."""
    try:
        help_text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
        features = BwrapFeatures(disable_userns="--disable-userns" in help_text)
        trial = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc"]
        if features.disable_userns:
            trial.append("--disable-userns")
        trial += [
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--",
            "/bin/sh",
            "-c",
            ":",
        ]
        done = subprocess.run(trial, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"bubblewrap ({bwrap}) could not run: {e}"
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return None, (
            f"bubblewrap cannot create its namespaces here ({detail}): unprivileged user namespaces may be "
            "disabled (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ allow bwrap in AppArmor; in "
            "a container, allow user namespaces)"
        )
    return features, None


class BubblewrapBackend:
    """Commands in bubblewrap; see the module text."""

    name = "bubblewrap"

    def __init__(self, executable: str | None = None) -> None:
        self.executable = executable if executable is not None else shutil.which("bwrap")

    def unavailable(self) -> str | None:
        """Why this backend cannot run commands here (a clause for the user), or None."""
        if not sys.platform.startswith("linux"):
            return "bubblewrap needs Linux"
        if not seccomp.supported():
            return f"caddie has no seccomp table for this machine ({os.uname().machine})"
        if not self.executable:
            return f"it needs bubblewrap (bwrap), which is not installed: {INSTALL_HINT}"
        return _probe(self.executable)[1]

    def wrap(
        self,
        policy: SandboxPolicy,
        stand_ins: StandIns,
        argv: Sequence[str],
        cwd: str,
        proxy: FilteringProxy | None,
        standalone_dir: str | None = None,
    ) -> WrappedCommand:
        features, problem = _probe(self.executable or "bwrap")
        if features is None or self.executable is None:
            raise SandboxUnavailable(problem or "bubblewrap is not available")
        if standalone_dir is not None:
            return self._wrap_standalone(features, policy, stand_ins, argv, cwd, proxy, standalone_dir)
        program = seccomp.filter_program(allow_unix_sockets=policy.allow_unix_sockets)
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, program)
        finally:
            os.close(write_end)
        wrapped = WrappedCommand(argv=[], pass_fds=[read_end], closers=[lambda: os.close(read_end)])
        command = list(argv)
        if proxy is not None:
            channel, child_end = proxy.open_channel()
            wrapped.channel = channel
            wrapped.pass_fds.append(child_end.fileno())
            wrapped.closers += [child_end.close, lambda: proxy.close_channel(channel)]
            wrapped.proxy_url = f"http://127.0.0.1:{PROXY_PORT}"
            command = _through_helper(child_end.fileno(), command)
        wrapped.argv = [*self._prefix(features, policy, stand_ins, cwd, read_end), *command]
        return wrapped

    def _wrap_standalone(
        self,
        features: BwrapFeatures,
        policy: SandboxPolicy,
        stand_ins: StandIns,
        argv: Sequence[str],
        cwd: str,
        proxy: FilteringProxy | None,
        directory: str,
    ) -> WrappedCommand:
        """The same sandbox from a command line alone: ``launcher.py`` opens the seccomp program (a file in
        ``directory``) and connects the proxy channel (a Unix socket there), then execs bubblewrap."""
        seccomp_file = _seccomp_file(directory, policy.allow_unix_sockets)
        wrapped = WrappedCommand(argv=[])
        command, socket_path, token = list(argv), "-", "-"
        if proxy is not None:
            channel, token, socket_path = proxy.expect_channel(directory)
            wrapped.channel = channel
            wrapped.closers.append(lambda: proxy.close_channel(channel))
            wrapped.proxy_url = f"http://127.0.0.1:{PROXY_PORT}"
            command = _through_helper(LAUNCHER_CONTROL_FD, command)
        prefix = self._prefix(features, policy, stand_ins, cwd, LAUNCHER_SECCOMP_FD)
        launcher = [sys.executable, "-I", "-S", LAUNCHER, seccomp_file, socket_path, token, "--"]
        wrapped.argv = [*launcher, *prefix, *command]
        return wrapped

    def _prefix(
        self, features: BwrapFeatures, policy: SandboxPolicy, stand_ins: StandIns, cwd: str, seccomp_fd: int
    ) -> list[str]:
        assert self.executable is not None
        return bwrap_args(
            self.executable,
            features,
            plan_mounts(policy),
            stand_ins,
            cwd=cwd,
            share_network=policy.network.kind == "on",
            seccomp_fd=seccomp_fd,
        )


def _through_helper(control_fd: int, command: list[str]) -> list[str]:
    """``command`` started by ``netns_helper.py``, which first hands the proxy port over ``control_fd``."""
    return [sys.executable, "-I", "-S", HELPER, str(control_fd), str(PROXY_PORT), "--", *command]


def _seccomp_file(directory: str, allow_unix_sockets: bool) -> str:
    """The seccomp program as a file in ``directory`` (written once, read-only, replaced atomically)."""
    path = os.path.join(directory, "seccomp-unix.bpf" if allow_unix_sockets else "seccomp.bpf")
    if not os.path.exists(path):
        program = seccomp.filter_program(allow_unix_sockets=allow_unix_sockets)
        partial = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(partial, "wb") as out:
            out.write(program)
        os.chmod(partial, 0o400)
        os.replace(partial, path)
    return path

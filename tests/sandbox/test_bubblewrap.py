"""The ``bash`` tool in a real bubblewrap sandbox: what lands, what is refused, the network, aborts, escapes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from caddie.ai.abort import AbortController
from caddie.sandbox import NetworkRule, Sandbox
from caddie.tools.bash import create_bash_tool
from tests.interop.pi import skip_or_fail
from tests.sandbox.conftest import SECRET, MakeSandbox
from tests.tools.conftest import Outcome, run_tool

PY = sys.executable


def sh(sandbox: Sandbox, workspace: Path, command: str) -> Outcome:
    return asyncio.run(run_tool(create_bash_tool(str(workspace), sandbox=sandbox), {"command": command}))


def test_a_write_inside_the_workspace_lands_and_one_outside_does_not(
    make_sandbox: MakeSandbox, workspace: Path, outside: Path
) -> None:
    sandbox = make_sandbox(workspace)
    out = sh(
        sandbox,
        workspace,
        f"echo hi > in.txt; echo changed > {outside}/keep.txt; echo new > {outside}/new.txt; "
        'echo scratch > "$TMPDIR/s" && cat "$TMPDIR/s"; echo "mode=$CADDIE_SANDBOXED"',
    )
    assert (workspace / "in.txt").read_text() == "hi\n"
    assert (outside / "keep.txt").read_text() == "original\n"
    assert not (outside / "new.txt").exists()
    assert "scratch\nmode=workspace-write" in out.text
    assert "Read-only file system" in out.text
    assert f"[Blocked by the sandbox (workspace-write): only {workspace}, $TMPDIR are writable" in out.text


def test_secrets_are_unreadable(
    make_sandbox: MakeSandbox, workspace: Path, home: Path, isolated_caddie_dir: Path
) -> None:
    agent = isolated_caddie_dir / "agent"
    (agent / "models.json").write_text(SECRET)  # a custom provider's apiKey
    (agent / "mcp-auth.json").write_text(SECRET)  # MCP servers' OAuth tokens
    sandbox = make_sandbox(workspace)
    pi_auth = home.parent / "pi-agent" / "auth.json"
    out = sh(
        sandbox,
        workspace,
        f"cat ~/.ssh/id_ed25519; ls ~/.ssh; cat ~/.aws/credentials; cat {agent}/auth.json; "
        f"cat {pi_auth}; cat {agent}/models.json {agent}/mcp-auth.json; cat ~/notes.txt",
    )
    assert SECRET not in out.text
    assert out.text.count("Permission denied") == 7
    assert "ordinary file" in out.text  # the rest of home reads as usual
    assert "~/.ssh, ~/.aws" in out.text and "are not readable" in out.text


def test_read_only_mode_writes_only_to_its_temp_dir(make_sandbox: MakeSandbox, workspace: Path) -> None:
    sandbox = make_sandbox(workspace, "read-only")
    out = sh(sandbox, workspace, 'echo x > in.txt; echo t > "$TMPDIR/t" && cat "$TMPDIR/t"')
    assert not (workspace / "in.txt").exists()
    assert "t\n" in out.text and "[Blocked by the sandbox (read-only): only $TMPDIR is writable" in out.text


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    yield server
    server.close()


def test_with_the_network_off_a_listener_on_loopback_sees_no_connection(
    make_sandbox: MakeSandbox, workspace: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    sandbox = make_sandbox(workspace)
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')"
    out = sh(sandbox, workspace, f'{PY} -c "{connect}"')
    assert "CONNECTED" not in out.text and "Connection refused" in out.text
    with pytest.raises(TimeoutError):
        listener.accept()


class _Registry(http.server.BaseHTTPRequestHandler):
    """A PEP 503 package index with one wheel, and a page; records every path asked for."""

    wheel = b""
    npm_tarball = b""
    seen: ClassVar[list[str]] = []

    head_only = False

    def do_HEAD(self) -> None:
        self.head_only = True
        self.do_GET()

    def do_GET(self) -> None:
        _Registry.seen.append(self.path)
        if self.path.rstrip("/") == "/simple/fakepkg":
            digest = hashlib.sha256(self.wheel).hexdigest()
            body = f'<a href="/files/fakepkg-1.0-py3-none-any.whl#sha256={digest}">fakepkg-1.0-py3-none-any.whl</a>'
            self._send(body.encode(), "text/html")
        elif self.path == "/files/fakepkg-1.0-py3-none-any.whl":
            self._send(self.wheel, "application/octet-stream")
        elif self.path.rstrip("/") == "/fakenpm":
            tarball = f"http://{self.headers['Host']}/fakenpm/-/fakenpm-1.0.0.tgz"
            integrity = "sha512-" + base64.b64encode(hashlib.sha512(self.npm_tarball).digest()).decode()
            version = {
                "name": "fakenpm",
                "version": "1.0.0",
                "dist": {"tarball": tarball, "integrity": integrity},
            }
            document = {"name": "fakenpm", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}
            self._send(json.dumps(document).encode(), "application/json")
        elif self.path == "/fakenpm/-/fakenpm-1.0.0.tgz":
            self._send(self.npm_tarball, "application/octet-stream")
        elif self.path == "/hello":
            self._send(b"hello from the registry", "text/plain")
        else:
            self.send_error(404)

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not self.head_only:
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _wheel() -> bytes:
    files = {
        "fakepkg/__init__.py": b"VALUE = 42\n",
        "fakepkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n",
        "fakepkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "fakepkg-1.0.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("fakepkg-1.0.dist-info/RECORD", record)
    return buffer.getvalue()


def _npm_tarball() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in {
            "package/package.json": b'{"name": "fakenpm", "version": "1.0.0", "main": "index.js"}',
            "package/index.js": b"module.exports = 42;\n",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def registry() -> Iterator[int]:
    _Registry.wheel = _wheel()
    _Registry.npm_tarball = _npm_tarball()
    _Registry.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port
    server.shutdown()
    server.server_close()


def test_an_allowed_host_is_reached_through_the_proxy_and_others_are_refused(
    make_sandbox: MakeSandbox, workspace: Path, registry: int
) -> None:
    sandbox = make_sandbox(workspace, network=NetworkRule("allow-list", ("localhost",)))
    fetch = (
        "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
    )
    out = sh(sandbox, workspace, f"{PY} -c '{fetch}' http://localhost:{registry}/hello")
    assert "hello from the registry" in out.text and _Registry.seen == ["/hello"]
    refused = sh(sandbox, workspace, f"{PY} -c '{fetch}' http://example.com/")
    assert "HTTP Error 403" in refused.text
    assert "network access to example.com was refused (not in the allow-list)" in refused.text
    tunnel = sh(sandbox, workspace, f"{PY} -c '{fetch}' https://example.com/")
    assert "Tunnel connection failed: 403" in tunnel.text and "example.com was refused" in tunnel.text


def test_a_package_manager_installs_from_an_allowed_registry_only(
    make_sandbox: MakeSandbox, workspace: Path, registry: int
) -> None:
    uv = shutil.which("uv")
    if uv is None:
        skip_or_fail("uv is not on PATH")
    install = f"UV_HTTP_RETRIES=0 {uv} pip install --quiet --python {PY} --target site --index-url http://localhost:{registry}/simple/ fakepkg"
    allowed = make_sandbox(workspace, network=NetworkRule("allow-list", ("localhost",)))
    out = sh(allowed, workspace, install)
    assert out.error is None, out.text
    assert (workspace / "site" / "fakepkg" / "__init__.py").read_text() == "VALUE = 42\n"
    shutil.rmtree(workspace / "site")
    closed = make_sandbox(workspace)  # network off: the same install cannot reach the registry
    out = sh(closed, workspace, install)
    assert out.error is not None and not (workspace / "site" / "fakepkg").exists()
    assert (
        "[Blocked by the sandbox (workspace-write): there is no network (localhost is the sandbox's own)"
        in out.text
    )


def test_npm_installs_from_an_allowed_registry_only(
    make_sandbox: MakeSandbox, workspace: Path, registry: int
) -> None:
    npm = shutil.which("npm")
    if npm is None:
        skip_or_fail("npm is not on PATH")
    install = (
        f"{npm} install --no-audit --no-fund --no-update-notifier --fetch-retries=0 "
        f"--registry http://localhost:{registry}/ fakenpm"
    )
    allowed = make_sandbox(workspace, network=NetworkRule("allow-list", ("localhost",)))
    out = sh(allowed, workspace, install)
    assert out.error is None, out.text
    assert (workspace / "node_modules" / "fakenpm" / "index.js").read_text() == "module.exports = 42;\n"
    assert "/fakenpm/-/fakenpm-1.0.0.tgz" in _Registry.seen
    shutil.rmtree(workspace / "node_modules")
    (workspace / "package.json").unlink(missing_ok=True)
    (workspace / "package-lock.json").unlink(missing_ok=True)
    closed = make_sandbox(workspace)  # network off: the same install reaches nothing
    out = sh(closed, workspace, install)
    assert out.error is not None and not (workspace / "node_modules" / "fakenpm").exists()
    assert "[Blocked by the sandbox (workspace-write): there is no network" in out.text


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_abort_kills_everything_the_command_started(make_sandbox: MakeSandbox, workspace: Path) -> None:
    sandbox = make_sandbox(workspace)
    marker = "31.4159"

    async def go() -> Outcome:
        controller = AbortController()
        tool = create_bash_tool(str(workspace), sandbox=sandbox)
        seen: list[str] = []

        def on_update(result: object) -> None:
            text = "".join(getattr(b, "text", "") for b in getattr(result, "content", []))
            if "started" in text and not seen:
                seen.append(text)
                controller.abort()

        # a child in the group and one that left it (setsid): both must die with the sandbox
        command = f"sleep {marker} & setsid sleep {marker} & echo started; wait"
        return await run_tool(tool, {"command": command}, signal=controller.signal, on_update=on_update)

    assert asyncio.run(go()).error == "started\n\n\nCommand aborted"
    deadline = time.monotonic() + 5
    while _running(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(f"sleep {marker}") == []


def test_escape_attempts_fail(make_sandbox: MakeSandbox, workspace: Path, outside: Path, home: Path) -> None:
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    sandbox = make_sandbox(workspace)
    keep = outside / "keep.txt"
    out = sh(
        sandbox,
        workspace,
        f"ln -s {keep} link; echo pwned > link; "  # a symlink out of the workspace
        f"ln -s {home}/.ssh/id_ed25519 key; cat key; "
        f"echo pwned > /proc/self/root{keep}; cat /proc/self/root{home}/.ssh/id_ed25519; "  # /proc/self/root
        f"ln {keep} hard && echo pwned > hard; "  # a hard link to a file outside
        "echo 'echo pwned' > .git/hooks/pre-commit; echo '[core] fsmonitor = x' >> .git/config; "
        "echo /tmp > .git/commondir; mv .git .git-old; "
        "mkdir -p .caddie/extensions && echo 'x' > .caddie/extensions/evil.py; ls -d .pi; "
        "unshare -U true && echo NESTED",
    )
    assert keep.read_text() == "original\n"
    assert SECRET not in out.text
    assert not (workspace / "hard").exists() and "Invalid cross-device link" in out.text
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / ".git" / "commondir").exists() and not (workspace / ".git-old").exists()
    for stand_in in (".caddie", ".pi"):  # empty, and they stay: no command could put anything there
        assert list((workspace / stand_in).iterdir()) == []
    assert "NESTED" not in out.text


def test_a_repository_cannot_be_planted_where_there_was_none(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace)
    out = sh(
        sandbox, workspace, "git init -q . && echo INITIALISED; mkdir -p .git/hooks; echo ok > tracked.txt"
    )
    assert "INITIALISED" not in out.text and (workspace / "tracked.txt").exists()
    assert list((workspace / ".git").iterdir()) == []  # an empty stand-in: git passes over it
    git = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=workspace, capture_output=True, text=True)
    assert git.returncode != 0  # still no repository here


def test_ptrace_and_unix_sockets_are_refused(
    make_sandbox: MakeSandbox, workspace: Path, outside: Path
) -> None:
    path = outside / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.5)
    sandbox = make_sandbox(workspace)
    probe = (
        "import ctypes, os, socket, subprocess\n"
        "child = subprocess.Popen(['sleep', '5'])\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('attach', libc.ptrace(16, child.pid, 0, 0), os.strerror(ctypes.get_errno()))\n"
        "child.kill()\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX).connect(" + repr(str(path)) + ")\n"
        "    print('UNIX CONNECTED')\n"
        "except OSError as e:\n"
        "    print('unix', e.strerror)\n"
        "a, b = socket.socketpair(); a.send(b'ok'); print('pair', b.recv(2).decode())\n"
    )
    (workspace / "probe.py").write_text(probe)
    out = sh(sandbox, workspace, f"{PY} probe.py")
    assert "attach -1 Operation not permitted" in out.text
    assert "unix Operation not permitted" in out.text and "UNIX CONNECTED" not in out.text
    assert "pair ok" in out.text  # socketpair (used by event loops, subprocess pipes) still works
    assert "ptrace and Unix-domain sockets are not available" in out.text
    with pytest.raises(TimeoutError):
        server.accept()
    server.close()


def test_the_sandboxed_call_shares_nothing_with_caddies_processes(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace)
    out = sh(sandbox, workspace, "ls /proc | grep -c '^[0-9]'; echo pid=$$")
    count, pid = out.text.split()
    assert int(count) <= 4 and pid == "pid=2"  # its own PID namespace: only itself and its children


def test_a_caddie_started_inside_is_confined_by_the_outer_sandbox(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace)
    caddie = f"{PY} -m caddie -p --no-session --model faux/echo"
    out = sh(
        sandbox,
        workspace,
        f"{caddie} --goal 'say hi' --goal-budget 1k hello; {caddie} --sandbox read-only hi",
    )
    assert (
        "caddie: the sandbox (read-only) cannot start: caddie is running inside a caddie sandbox already "
        in out.text
    )
    assert "(workspace-write), which cannot hold a second one; run it with --sandbox off" in out.text
    assert out.text.count("cannot start") == 1  # the headless goal ran: its default is off in there


def run_standalone(sandbox: Sandbox, workspace: Path, script: str) -> tuple[str, str | None]:
    """``script`` started the way an SDK starts a server: a plain command line, no descriptors passed."""
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"]}
    prepared = sandbox.prepare_standalone([PY, "-c", script], str(workspace), env)
    assert prepared.pass_fds == () and prepared.env is not None
    with prepared:
        done = subprocess.run(
            prepared.argv, cwd=workspace, env=prepared.env, capture_output=True, text=True, timeout=60
        )
    out = done.stdout + done.stderr
    return out, prepared.explain(out)


def test_a_standalone_command_line_is_confined_the_same(
    make_sandbox: MakeSandbox, workspace: Path, outside: Path, home: Path, registry: int
) -> None:
    probe = (
        "import os, socket, sys, urllib.request\n"
        "open('in.txt', 'w').write('in')\n"
        "for path in [sys.argv[1], os.path.expanduser('~/.ssh/id_ed25519')]:\n"
        "    try:\n"
        "        open(path, 'a').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as e:\n"
        "        print('not written:', e.strerror)\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX)\n"
        "    print('UNIX SOCKET')\n"
        "except OSError as e:\n"
        "    print('unix', e.strerror)\n"
        "for url in sys.argv[2:]:\n"
        "    try:\n"
        "        print(urllib.request.urlopen(url, timeout=10).read().decode())\n"
        "    except Exception as e:\n"
        "        print('fetch', e)\n"
        "print('mode', os.environ['CADDIE_SANDBOXED'], os.getpid())\n"
    )
    (workspace / "probe.py").write_text(probe)
    hello = f"http://localhost:{registry}/hello"
    closed = make_sandbox(workspace)
    script = (
        f"import runpy, sys; sys.argv = ['p', '{outside}/keep.txt', '{hello}']; runpy.run_path('probe.py')"
    )
    out, _note = run_standalone(closed, workspace, script)
    assert (workspace / "in.txt").read_text() == "in" and (outside / "keep.txt").read_text() == "original\n"
    assert "not written: Read-only file system\nnot written: Permission denied" in out, out
    assert (home / ".ssh" / "id_ed25519").read_text() == SECRET
    assert "unix Operation not permitted" in out and "UNIX SOCKET" not in out  # the seccomp filter is on
    assert "hello from the registry" not in out and "fetch <urlopen error" in out  # no network
    assert "mode workspace-write 2" in out  # its own PID namespace

    allowed = make_sandbox(workspace, network=NetworkRule("allow-list", ("localhost",)))
    script = script.replace("]; runpy", ", 'http://example.com/']; runpy")
    for out, note in (run_standalone(allowed, workspace, script), run_standalone(allowed, workspace, script)):
        assert "hello from the registry" in out, out
        assert "fetch HTTP Error 403" in out and "WROTE" not in out
        assert note is not None and "network access to example.com was refused" in note  # its own channel
    assert _Registry.seen == ["/hello", "/hello"]


def test_a_standalone_command_reaches_the_proxy_from_a_deep_temporary_directory(
    make_sandbox: MakeSandbox, workspace: Path, tmp_path: Path, registry: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where $TMPDIR is too deep for a Unix socket's address, the proxy listens on an abstract socket."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    allowed = make_sandbox(workspace, network=NetworkRule("allow-list", ("localhost",)))
    fetch = f"import urllib.request; print(urllib.request.urlopen('http://localhost:{registry}/hello').read().decode())"
    out, _note = run_standalone(allowed, workspace, fetch)
    assert "hello from the registry" in out, out
    assert [p.name[:15] for p in deep.iterdir()] == ["caddie-sandbox-"]  # the private directory is there

"""The policy's decisions and texts (pure), the proxy's host rule, and the seccomp program's shape."""

from __future__ import annotations

import struct

import pytest

from caddie.sandbox import NetworkRule, SandboxConfig
from caddie.sandbox.policy import SandboxPolicy
from caddie.sandbox.proxy import ProxyRequest, host_allowed, parse_request, split_host_port
from caddie.sandbox.sandbox import build_policy
from caddie.sandbox.seccomp import TABLES, filter_program


@pytest.fixture
def policy(monkeypatch: pytest.MonkeyPatch) -> SandboxPolicy:
    monkeypatch.setenv("HOME", "/home/me")
    return SandboxPolicy(
        mode="workspace-write",
        workspace="/w",
        temp_dir="/t/tmp",
        writable=("/w", "/t/tmp", "/cache"),
        protected=("/w/.git", "/w/.caddie"),
        deny_read=("/home/me/.ssh", "/w/secrets"),
        deny_write=(".env", "*.pem", "/w/locked"),
    )


def test_writes_inside_the_writable_paths_only(policy: SandboxPolicy) -> None:
    assert policy.write_problem("/w/src/a.py") is None
    assert policy.write_problem("/t/tmp/scratch") is None
    assert policy.write_problem("/cache/x") is None
    assert policy.write_problem("/w") is None
    outside = policy.write_problem("/wx/a.py")  # a sibling sharing the prefix is outside
    assert outside == (
        "Blocked by the sandbox (workspace-write): /wx/a.py is outside the writable paths (/w, /cache, "
        "$TMPDIR). Write inside the project, or use $TMPDIR (/t/tmp) for scratch files."
    )


def test_protected_and_denied_paths_inside_the_workspace(policy: SandboxPolicy) -> None:
    hooks = policy.write_problem("/w/.git/hooks/pre-commit")
    assert hooks is not None and "is read-only (/w/.git holds configuration" in hooks
    assert policy.write_problem("/w/.git/commondir") is not None
    assert policy.write_problem("/w/.gitignore") is None
    assert policy.write_problem("/w/secrets/token") is not None
    assert policy.write_problem("/w/sub/.env") == (
        "Blocked by the sandbox (workspace-write): /w/sub/.env matches the denyWrite pattern '.env'."
    )
    assert policy.write_problem("/w/k.pem") is not None
    assert policy.write_problem("/w/locked/inner") is not None
    assert policy.write_problem("/w/.envrc") is None


def test_reads_everywhere_but_denied_paths_and_caddies_own_process(policy: SandboxPolicy) -> None:
    assert policy.read_problem("/etc/passwd") is None
    assert policy.read_problem("/home/me/.sshx") is None
    assert policy.read_problem("/home/me/.ssh/id_rsa") == (
        "Blocked by the sandbox (workspace-write): ~/.ssh/id_rsa is not readable (~/.ssh is protected from "
        "commands and tools). Work without it, or ask the user."
    )
    for own in ("/proc/self/environ", "/proc/1234/mem", "/proc/thread-self/environ"):
        assert policy.read_problem(own) is not None
    assert policy.read_problem("/proc/cpuinfo") is None


def test_read_only_mode_writes_nothing_but_the_temp_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    policy = build_policy("read-only", "/", "/t/tmp", SandboxConfig(writable=("/cache",)))
    assert policy.writable == ("/t/tmp",)  # extra writable paths are for workspace-write only
    assert policy.write_problem("/t/tmp/x") is None
    assert policy.write_problem("/x") == (
        "Blocked by the sandbox (read-only): nothing may be written in this mode except under $TMPDIR "
        "(/t/tmp); /x was not written."
    )


def test_the_default_secrets_are_always_denied(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    monkeypatch.setenv("CADDIE_DIR", "/home/me/.caddie")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "/home/me/.pi/agent")
    policy = build_policy("workspace-write", "/", "/t/tmp", SandboxConfig(deny_read=("/srv/keys",)))
    for path in (
        "/home/me/.ssh",
        "/home/me/.aws",
        "/home/me/.gnupg",
        "/home/me/.caddie/agent/auth.json",
        "/home/me/.caddie/agent/models.json",
        "/home/me/.caddie/agent/mcp-auth.json",
        "/home/me/.pi/agent/auth.json",
        "/home/me/.pi/agent/models.json",
        "/srv/keys",
    ):
        assert path in policy.deny_read


def test_explain_names_what_the_output_shows(policy: SandboxPolicy) -> None:
    assert policy.explain("all good\n") is None
    assert policy.explain("./run.sh: Permission denied") is None  # not about a protected path
    note = policy.explain("touch: cannot touch '/etc/x': Read-only file system")
    assert note is not None and note.startswith(
        "[Blocked by the sandbox (workspace-write): only /w, /cache, $TMPDIR"
    )
    read = policy.explain("cat: /home/me/.ssh/id_rsa: Permission denied")
    assert read is not None and "~/.ssh" in read and "are not readable" in read
    net = policy.explain("curl: (6) Could not resolve host: example.com")
    assert net is not None and "there is no network (localhost is the sandbox's own)" in net
    refused = policy.explain("curl: (56) CONNECT tunnel failed, response 403", ["evil.example"])
    assert refused is not None and "network access to evil.example was refused" in refused


def test_host_rule() -> None:
    allowed = ["pypi.org", "*.pythonhosted.org", "localhost"]
    assert host_allowed("pypi.org", allowed)
    assert host_allowed("PyPI.org.", allowed)
    assert not host_allowed("evil-pypi.org", allowed)
    assert not host_allowed("pypi.org.evil.com", allowed)
    assert host_allowed("files.pythonhosted.org", allowed)
    assert not host_allowed("pythonhosted.org", allowed)  # *. is subdomains only
    assert not host_allowed("127.0.0.1", allowed)  # an address must be named to be allowed
    assert host_allowed("anything.com", ["*"]) and not host_allowed("bad.com", ["*"], ["bad.com"])
    assert not host_allowed("gist.github.com", ["*.github.com"], ["gist.github.com"])


def test_split_host_port() -> None:
    assert split_host_port("example.com:443", 80) == ("example.com", 443)
    assert split_host_port("example.com", 80) == ("example.com", 80)
    assert split_host_port("[::1]:8080", 80) == ("::1", 8080)
    with pytest.raises(ValueError):
        split_host_port("example.com:99999", 80)


def test_proxy_requests_go_where_their_url_says() -> None:
    assert parse_request(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n") == ProxyRequest(
        "pypi.org", 443, None
    )
    plain = parse_request(
        b"GET http://allowed.test:8080/simple/?q=1 HTTP/1.1\r\nHost: other.test\r\nProxy-Connection: keep-alive\r\n"
        b"Accept: */*\r\n\r\n"
    )
    assert plain == ProxyRequest(
        "allowed.test",
        8080,
        b"GET /simple/?q=1 HTTP/1.1\r\nHost: allowed.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n",
    )  # the Host header cannot name a second site on the allowed server
    assert (
        parse_request(b"GET /relative HTTP/1.1\r\n\r\n")
        == "send absolute http:// URLs, or CONNECT for https."
    )
    assert (
        parse_request(b"CONNECT host:notaport HTTP/1.1\r\n\r\n") == "the request's target is not host:port."
    )
    assert parse_request(b"garbage\r\n\r\n") == "a request line is METHOD TARGET VERSION."


def test_seccomp_program_checks_the_architecture_first_and_ends_by_allowing() -> None:
    for machine, table in (("x86_64", TABLES["x86_64"]), ("aarch64", TABLES["aarch64"])):
        program = filter_program(machine)
        insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
        assert insns[0] == (0x20, 0, 0, 4)  # load the architecture
        assert insns[1][3] == table.audit_arch
        assert insns[-1] == (0x06, 0, 0, 0x7FFF0000)  # allow whatever was not refused
        refused = {k for code, _, _, k in insns if code == 0x15}
        assert table.refused["ptrace"] in refused and table.socket in refused
    assert len(filter_program("x86_64", allow_unix_sockets=True)) < len(filter_program("x86_64"))
    with pytest.raises(KeyError):
        filter_program("sparc")


def test_network_descriptions() -> None:
    assert NetworkRule().describe() == "network off"
    assert NetworkRule("on").describe() == "network on"
    assert NetworkRule("allow-list", ("a.com", "b.com")).describe() == "network: only a.com, b.com"


def test_the_mount_plan_and_the_bubblewrap_command_line(tmp_path: object) -> None:
    from pathlib import Path

    from caddie.sandbox.bubblewrap import BwrapFeatures, StandIns, bwrap_args, plan_mounts

    root = Path(str(tmp_path))
    ws, cache, secrets = root / "ws", root / "cache", root / "secrets"
    for d in (ws / ".git", cache, secrets / "inner"):
        d.mkdir(parents=True)
    (root / "history").write_text("")
    (ws / "prod.pem").write_text("")
    policy = SandboxPolicy(
        mode="workspace-write",
        workspace=str(ws),
        temp_dir=str(root / "tmp"),
        writable=(str(ws), str(cache), str(root / "history"), str(root / "missing"), str(secrets / "inner")),
        protected=(str(ws / ".git"), str(ws / ".caddie"), str(ws / ".pi")),
        deny_read=(str(secrets), str(secrets / "inner"), str(root / "gone")),
        deny_write=("*.pem",),
    )
    plan = plan_mounts(policy)
    assert plan.writable == (str(ws), str(cache), str(root / "history"))  # missing and denied paths left out
    assert plan.read_only == (str(ws / ".git"), str(ws / "prod.pem"))
    assert plan.placeholders == (str(ws / ".caddie"), str(ws / ".pi"))
    assert plan.hidden_dirs == (str(secrets),) and plan.hidden_files == ()

    stand_ins = StandIns("/s/unreadable", "/s/unreadable-file", "/s/empty")
    args = bwrap_args(
        "bwrap", BwrapFeatures(True), plan, stand_ins, cwd=str(ws), share_network=False, seccomp_fd=7
    )
    assert args[:4] == ["bwrap", "--new-session", "--die-with-parent", "--unshare-user"]
    assert (
        "--disable-userns" in args
        and "--unshare-net" in args
        and args[-5:] == ["--seccomp", "7", "--chdir", str(ws), "--"]
    )
    positions = [
        args.index(x) for x in ("--ro-bind", str(ws), str(ws / ".git"), str(ws / ".caddie"), str(secrets))
    ]
    assert positions == sorted(
        positions
    )  # root, then writable, then protected, stand-ins, hidden: later wins
    assert args[args.index(str(secrets)) - 1] == "/s/unreadable"
    shared = bwrap_args(
        "bwrap", BwrapFeatures(False), plan, stand_ins, cwd="/", share_network=True, seccomp_fd=7
    )
    assert "--unshare-net" not in shared and "--disable-userns" not in shared

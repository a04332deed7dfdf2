"""File checkpoints on a 10,000-file repository: the time of a checkpoint with no change and with 10
changed files, the first (cold) one, a 10-file restore, and the shadow repository's disk use.

    uv run python bench/bench_checkpoints.py [--files 10000] [--runs 15]

The workspace is the caddie repository's tracked files (``git archive HEAD``) copied into numbered folders
until there are ``--files`` files, then committed to its own git repository (as a project would be).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from caddie.checkpoints.service import WorkspaceCheckpoints
from caddie.checkpoints.shadow import ShadowRepo

ROOT = Path(__file__).resolve().parent.parent


def build_workspace(target: Path, files: int) -> int:
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    count, copy = 0, 0
    while count < files:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = [m for m in tar.getmembers() if m.isfile()][: files - count]
            tar.extractall(target / f"copy{copy}", members=members, filter="data")
        count += len(members)
        copy += 1
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=target, env=env, check=True, capture_output=True)
    return count


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CADDIE_DIR"] = str(Path(tmp) / "home")
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        count = build_workspace(workspace, args.files)
        service = WorkspaceCheckpoints(workspace, "bench")
        parent: list[str | None] = [None]

        def take() -> None:
            parent[0] = service.capture(parent[0], idle=True)["commit"]

        cold = timed(take)
        unchanged = [timed(take) for _ in range(args.runs)]
        files = sorted(p for p in workspace.rglob("*.py") if ".git" not in p.parts)[:10]
        changed = []
        for run in range(args.runs):
            for f in files:
                f.write_text(f.read_text() + f"# edit {run}\n")
            changed.append(timed(take))
        repo = ShadowRepo(service.workspace)
        print(
            f"workspace: {count} files, {sum(p.stat().st_size for p in workspace.rglob('*') if p.is_file() and '.git' not in p.parts) / 1e6:.1f} MB"
        )
        print(f"first checkpoint (cold): {cold * 1000:.0f} ms")
        print(
            f"no change:        median {statistics.median(unchanged) * 1000:.0f} ms (min {min(unchanged) * 1000:.0f})"
        )
        print(
            f"10 changed files: median {statistics.median(changed) * 1000:.0f} ms (min {min(changed) * 1000:.0f})"
        )
        print(f"shadow repository after {1 + 2 * args.runs} checkpoints: {repo.size_bytes() / 1e6:.1f} MB")


if __name__ == "__main__":
    main()

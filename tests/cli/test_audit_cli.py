"""``omxfs audit WS`` on a live mount (issue 27): a supervisor's write through the mount and a supervisor's
checkpoint of another agent's zone, each by a real process, are in the trail with who, which process and what,
and ``omxfs audit`` reaches the store beneath the mount as ``omxfs fsck`` does."""

# ruff: noqa: F811  (the ``mount`` fixture is imported from tests/fuse/conftest.py and requested by name)
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from tests.fuse.conftest import Mount, clean_env, mount  # noqa: F401


def omxfs(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "cli.omxfs", *args], capture_output=True, text=True, env=clean_env(), timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_supervisors_write_and_checkpoint_are_shown_by_omxfs_audit_on_the_mount(
    mount: Callable[..., Mount],
) -> None:
    m = mount(agents=["alice", "bob"], supervisors=["boss"])
    done = m.run("echo $$; echo fixed > agents/alice/report.md", agent="boss", check=True)
    shell = int(done.stdout.split()[0])
    omxfs("checkpoint", str(m.root), "--as", "boss", "--zone", "alice", "-m", "reviewed")
    listed = json.loads(omxfs("audit", str(m.root), "--json").stdout)
    seen = [(r["agent"], r["action"], r["path"]) for r in listed]
    assert ("boss", "create", "agents/alice/report.md") in seen and seen[-1] == ("boss", "checkpoint 1", "agents/alice")
    created = next(r for r in listed if r["action"] == "create")
    assert created["pid"] == shell
    text = omxfs("audit", str(m.root)).stdout.splitlines()
    assert text[0].split() == ["TIME", "AGENT", "UID", "PID", "PATH", "ACTION"]
    assert text[-1].split()[1] == "boss" and text[-1].endswith("checkpoint 1")

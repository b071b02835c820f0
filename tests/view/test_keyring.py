"""The kernel's keyrings from a view (issue 30): the caller's keys stay out of reach, and none is planted.

bwrap kept the caller's session keyring, and the view's filter let ``keyctl`` and ``add_key`` through: from a view,
a key the caller had put in ``@s`` was found, read (its secret printed), overwritten, and a key was added that the
caller's shell then saw. Each test plants real keys as a caller (``tests/support/keyring.py``: a session keyring of
its own with ``@u`` linked in, a key there and one in ``@u`` that its whole uid may read and change) and tries
every way to them from a view: by search, by serial, by link, by adding to ``@s``, ``@u`` and ``@us``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox.confine import LAUNCHER, SECCOMP, read_paths
from omxfs.store import Workspace
from omxfs.view.sandbox import SCOPE
from tests.support import keyring
from tests.support.sandbox import sandbox_or_skip
from tests.support.unprivileged import as_nobody, nobody_dir
from tests.view.conftest import OMXFS, clean_env, run_from_root, view_argv

HELPER = Path(keyring.__file__).resolve()
PLANTED = ("{session}", "{user}", "{session_name}", "{user_name}")
ATTEMPTS = 16  # ATTACK's lines of tries, the /proc/keys line aside


def as_caller(argv: Sequence[str], *, wrap: Any = None, cwd: Path | str = "/", helper: Path = HELPER) -> dict[str, Any]:
    """Run ``argv`` as the caller of ``keyring.py`` (keys planted first); its JSON report."""
    command = [sys.executable, "-I", str(helper), "--", *argv]
    done = subprocess.run(
        wrap(command) if wrap else command,
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def attack_in_view(ws: Path) -> list[str]:
    return view_argv(ws, "alice", 'exec python3 -c "$0" "$@"', args=(keyring.ATTACK, *PLANTED))


def assert_out_of_reach(report: dict[str, Any]) -> None:
    """Every try failed as on a kernel without keys, nothing secret was printed, nothing changed or was added, and
    ``/proc/keys`` (a view's is covered; a step may not read ``/proc``, or has none) did not list the caller's keys."""
    assert report["status"] == 0, report["stderr"]
    tries = report["stdout"].splitlines()
    assert len(tries) == ATTEMPTS + 1, report["stdout"]
    for line in tries[:ATTEMPTS]:
        assert line.endswith(": ENOSYS"), line
    assert tries[ATTEMPTS] in ("proc keys: unreadable EACCES", "proc keys: unreadable ENOENT"), tries[ATTEMPTS]
    assert keyring.SECRET_SESSION not in report["stdout"] and keyring.SECRET_USER not in report["stdout"]
    assert report["session"]["payload"] == keyring.SECRET_SESSION  # not overwritten
    assert report["user"]["payload"] == keyring.SECRET_USER
    assert report["after"] == report["before"]  # no key added to, linked into or taken from @s, @u, @us


def test_the_attack_reaches_the_keys_of_an_unconfined_process(tmp_path: Path) -> None:
    """The yardstick: run bare, the same tries read, overwrite and plant keys (else the tests below prove nothing)."""
    report = as_caller(["python3", "-c", keyring.ATTACK, *PLANTED])
    assert keyring.SECRET_SESSION in report["stdout"] and keyring.SECRET_USER in report["stdout"]
    assert report["session"]["payload"] == report["user"]["payload"] == "PWNED"
    assert report["after"] != report["before"]


def test_a_root_view_cannot_reach_the_callers_keyrings(store: Workspace) -> None:
    """Root's view is the host's uid 0, the owner of the caller's keys: only the filter stands between them."""
    assert_out_of_reach(as_caller(attack_in_view(store.root), cwd=store.root.parent))


@pytest.fixture
def home() -> Iterator[Path]:
    path = nobody_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_an_unprivileged_view_cannot_reach_the_callers_keyrings(tmp_path: Path, home: Path) -> None:
    ws = home / "ws"
    init = run_from_root(as_nobody([*OMXFS, "init", str(ws), "--agent", "alice"], tmp_path))
    assert init.returncode == 0, init.stderr
    helper = Path(shutil.copy(HELPER, home))  # nobody reaches no file of a checkout in a 0700 directory (/root/omx)
    as_nobody_here = lambda argv: as_nobody(argv, tmp_path)  # noqa: E731
    assert_out_of_reach(as_caller(attack_in_view(ws), wrap=as_nobody_here, helper=helper))


SESSION_OF_ITS_OWN = """
import ctypes, sys
sys.path.insert(0, sys.argv[1])
import keyring
try:
    found = keyring.keyctl(10, ctypes.c_long(keyring.SESSION), b"user", sys.argv[2].encode(), ctypes.c_long(0))
except OSError as exc:
    found = exc.strerror
print(keyring.keyring_id(keyring.SESSION), keyring.contents(keyring.SESSION), found)
"""


def test_command_starts_in_a_new_empty_session_keyring(tmp_path: Path) -> None:
    """What the kernel looks up in a session keyring by itself is never the caller's: ``scope.py``, which starts
    every view's command, joins a new, empty one first (the filter keeps keyctl from saying so inside a view)."""
    command = [sys.executable, "-I", "-S", str(SCOPE), sys.executable, "-I", "-c", SESSION_OF_ITS_OWN]
    report = as_caller([*command, str(HELPER.parent), "{session_name}"])
    session, contents, found = report["stdout"].split(" ", 2)
    assert int(session) != report["session"]["id"]
    assert (contents, found) == ("[]", "Required key not available\n")


def test_a_step_starts_in_a_new_empty_session_keyring() -> None:
    """The step launcher joins a new, empty session keyring before its filter goes in, as ``scope.py`` does for a
    view (issue 30: "the same for omx's step sandbox"); its probe, run as the caller, says which it had and has."""
    config = {"read": read_paths(False), "write": [], "seccomp": str(SECCOMP)}
    report = as_caller([sys.executable, "-I", "-S", str(LAUNCHER), "--probe", json.dumps(config)])
    before, after = json.loads(report["stdout"])["session_keyrings"]
    assert before == report["session"]["id"] and after not in (None, before)


@pytest.mark.parametrize("mode", ["bubblewrap", "landlock"], ids=["outside a view", "as in a view (Landlock alone)"])
def test_a_step_cannot_reach_the_callers_keyrings(tmp_path: Path, mode: str) -> None:
    """Every step gets the step filter (``seccomp.step_program``), under either mechanism, and the keyring rule is
    part of it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox_or_skip(ws)
    script = (
        "import json, sys; from pathlib import Path; from agent.sandbox.confine import Sandbox\n"
        f"box = Sandbox(Path(sys.argv[1]), mode={mode!r})\n"
        "done = box.run(['python3', '-c', *sys.argv[2:]], timeout=60)\n"
        "print(done.stdout, end='')\n"
        "sys.exit(done.returncode)\n"
    )
    report = as_caller([sys.executable, "-c", script, str(ws), keyring.ATTACK, *PLANTED])
    assert_out_of_reach(report)

"""A step holds no capability, whatever the mechanism: a step of root's run by Landlock (outside bubblewrap's user
namespace) kept every one of root's, so it could set a file capability on a program in the workspace (a root shell
for whoever runs it later), read and change other users' files whatever their modes, and more. Each is first shown
to work unconfined (the control). A step cannot read ``/proc`` (none in bubblewrap, Landlock hides it), so a running
step's capability sets are read from outside, in ``/proc/PID/status``, and from inside, as the kernel answers it."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox.confine import LAUNCHER, SECCOMP, ProcessResult, Sandbox, SandboxMode, read_paths
from tests.agent.sandbox.test_attacks import MODES, confined
from tests.support.unprivileged import NOBODY
from tests.view.conftest import clean_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root's capabilities are what is dropped")

REPO = Path(__file__).resolve().parents[3]
#: the lines of /proc/PID/status that say what a process may do beyond its uid
CAPABILITY_LINES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
#: securebits a step of root's has locked: NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off), NO_CAP_AMBIENT_RAISE
LOCKED = 0b1110_1111

#: what the kernel says of the step's capabilities (capget, PR_CAPBSET_READ up to the first EINVAL, ...)
KERNEL_SAYS = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
header, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
assert libc.capget(header, data) == 0, ctypes.get_errno()
known = []
while libc.prctl(23, len(known), 0, 0, 0) >= 0:
    known.append(len(known))
print(json.dumps({
    "effective": data[0] | data[3] << 32, "permitted": data[1] | data[4] << 32, "inheritable": data[2] | data[5] << 32,
    "bounding": [cap for cap in known if libc.prctl(23, cap, 0, 0, 0) == 1],
    "ambient": [cap for cap in known if libc.prctl(47, 1, cap, 0, 0) == 1],
    "securebits": libc.prctl(27, 0, 0, 0, 0), "no_new_privs": libc.prctl(39, 0, 0, 0, 0),
}))
"""

#: what only a capability lets root do here; prints {act: "done" or the errno's name}
PRIVILEGED = r"""
import errno, json, os
out = {}
def attempt(act, do):
    try:
        do()
        out[act] = "done"
    except OSError as exc:
        out[act] = errno.errorcode[exc.errno]
with open("capable", "wb") as f:  # a file of its own
    f.write(b"\x7fELF")
attempt("set a file capability", lambda: os.setxattr("capable", "security.capability",
        bytes.fromhex("01000002" "80000000" "00000000" "00000000" "00000000")))  # cap_setuid+ep
attempt("read another user's mode 000 file", lambda: open("locked").read())
attempt("write another user's mode 000 file", lambda: open("locked", "a").close())
attempt("chmod another user's file", lambda: os.chmod("locked", 0o644))
print(json.dumps(out))
"""
REFUSED = {
    "set a file capability": "EPERM",
    "read another user's mode 000 file": "EACCES",
    "write another user's mode 000 file": "EACCES",
    "chmod another user's file": "EPERM",
}


def _locked_file(ws: Path) -> None:
    """``ws/locked``: nobody's, mode 000, for no one but a holder of CAP_DAC_OVERRIDE and CAP_FOWNER."""
    locked = ws / "locked"
    locked.write_text("nobody's secret\n", encoding="utf-8")
    os.chown(locked, NOBODY, NOBODY)
    locked.chmod(0)


def _kernel_says(box: Sandbox) -> dict[str, Any]:
    done = box.run_python(KERNEL_SAYS, timeout=60)
    assert done.returncode == 0, done.stderr
    said: dict[str, Any] = json.loads(done.stdout)
    return said


def _status_while_running(box: Sandbox) -> tuple[dict[str, str], ProcessResult]:
    """The ``/proc/PID/status`` of a shell step's program (``sleep``, found by its unique argument) while it runs;
    then it is killed, and what the step returned."""
    marker = f"59.{secrets.randbelow(10**9)}"  # seconds to sleep, and the step's name among the host's processes
    results: list[ProcessResult] = []
    step = threading.Thread(target=lambda: results.append(box.run(["sleep", marker], timeout=60)))
    step.start()
    pid, status = None, ""
    try:
        deadline = time.monotonic() + 30
        while pid is None and time.monotonic() < deadline and step.is_alive():
            for entry in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                        pid, status = int(entry), Path(f"/proc/{entry}/status").read_text(encoding="utf-8")
                        break
                except OSError:
                    continue  # gone meanwhile
            time.sleep(0.02)
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        step.join(timeout=90)
    assert pid is not None, f"the step's sleep was never seen running: {results}"
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {name: value.strip() for name, value in fields.items()}, results[0]


def test_a_process_of_root_holds_capabilities_when_unconfined(ws: Path) -> None:
    """The control: unconfined, root's step holds capabilities, and its program shows them in /proc."""
    said = _kernel_says(Sandbox(ws, mode="off"))
    assert said["effective"] and said["permitted"] and said["bounding"], said
    status, _ = _status_while_running(Sandbox(ws, mode="off"))
    assert int(status["CapEff"], 16) and int(status["CapBnd"], 16), status


@pytest.mark.parametrize("mode", MODES)
def test_a_steps_program_holds_no_capability(ws: Path, mode: SandboxMode) -> None:
    """A shell step's program (exec'd by the launcher as uid 0) as ``/proc/PID/status`` shows it: every set empty,
    and no new privileges."""
    status, result = _status_while_running(confined(ws, mode))
    assert result.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), result  # ran until killed (bwrap: 137)
    assert {name: int(status[name], 16) for name in CAPABILITY_LINES} == dict.fromkeys(CAPABILITY_LINES, 0), status
    assert status["NoNewPrivs"] == "1"


@pytest.mark.parametrize("mode", MODES)
def test_a_python_step_holds_no_capability(ws: Path, mode: SandboxMode) -> None:
    """A python step's own process, as the kernel answers it: no capability in any set, none to regain. Landlock's
    step of root's has the securebits locked too; bubblewrap's step holds no CAP_SETPCAP to lock them with (its
    user namespace gives it none), nor a bounding set to regain any from."""
    said = _kernel_says(confined(ws, mode))
    empty = {"effective": 0, "permitted": 0, "inheritable": 0, "bounding": [], "ambient": [], "no_new_privs": 1}
    assert {name: said[name] for name in empty} == empty, said
    if mode == "landlock":
        assert said["securebits"] == LOCKED, said


def test_root_does_what_only_capabilities_allow_when_unconfined(ws: Path) -> None:
    """The control: unconfined, root sets a file capability, reads, writes and chmods nobody's mode 000 file."""
    _locked_file(ws)
    done = Sandbox(ws, mode="off").run_python(PRIVILEGED, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == dict.fromkeys(REFUSED, "done")
    assert "security.capability" in os.listxattr(ws / "capable")


@pytest.mark.parametrize("mode", MODES)
def test_a_step_of_root_is_refused_what_only_capabilities_allow(ws: Path, mode: SandboxMode) -> None:
    _locked_file(ws)
    done = confined(ws, mode).run_python(PRIVILEGED, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == REFUSED
    assert "security.capability" not in os.listxattr(ws / "capable")
    assert os.stat(ws / "locked").st_mode & 0o7777 == 0


def _launch(prefix: list[str], ws: Path, code: str) -> subprocess.CompletedProcess[str]:
    """The launcher run as omx runs it for a python step, after ``prefix``: its checks, not omx's probe, decide."""
    config = {"read": read_paths(False), "write": [str(ws)], "seccomp": str(SECCOMP), "python": True}
    argv = [*prefix, sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), "--", code]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ws, env=clean_env(), check=False)


def test_a_step_whose_capabilities_cannot_be_dropped_is_refused(ws: Path) -> None:
    """Root with NOROOT locked off (``setpriv --securebits -noroot,+noroot_locked``) cannot lock the securebits as
    the drop does: the sandbox is refused, naming it, and the launcher runs no step, whatever its caller checked."""
    securebits = ["setpriv", "--securebits", "-noroot,+noroot_locked"]
    detect = "from agent.sandbox.confine import Sandbox; Sandbox(__import__('pathlib').Path('.'), mode='landlock').info"
    refused = subprocess.run([*securebits, sys.executable, "-c", detect], capture_output=True, text=True, timeout=60,
                             cwd=REPO, env=clean_env(), check=False)  # fmt: skip
    assert refused.returncode != 0
    assert "SandboxUnavailable" in refused.stderr and "capabilities cannot be dropped" in refused.stderr, refused
    launched = _launch(securebits, ws, "open('ran', 'w').close()")
    assert launched.returncode == 125, launched
    assert "sandbox: capabilities: cannot lock the securebits" in launched.stderr, launched
    assert not (ws / "ran").exists()
    control = _launch([], ws, "open('ran', 'w').close()")
    assert control.returncode == 0, control
    assert (ws / "ran").exists()

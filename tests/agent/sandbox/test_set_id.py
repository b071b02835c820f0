"""A step makes no set-user-ID or set-group-ID file, for root and for an unprivileged user alike: a confirmed
python step ``shutil.copy('/bin/bash', 'tool'); os.chmod('tool', 0o4755)`` left a set-user-ID-root shell in the
workspace, which any local user ran as root (``./tool -p``). Every way to set such a mode is tried in both
mechanisms, judged by the files' modes afterwards, and first shown to work unconfined (the control). Through a
whole ``omx`` run: ``test_omx_set_id.py``; in an agent view: ``tests/view/test_step_set_id_in_view.py``."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.sandbox.confine import Sandbox, SandboxMode
from tests.agent.sandbox.test_attacks import MODES, confined
from tests.support.unprivileged import NOBODY, as_nobody, nobody_dir
from tests.view.conftest import clean_env

REPO = Path(__file__).resolve().parents[3]

#: each way to give a file a set-ID mode that plain Python has, on a file of its own (``ways``)
CALLS = """
import errno, json, os, shutil, stat
for name in ("chmod 4755", "chmod 2755", "fchmodat", "fchmod", "fchmodat2", "plain"):
    shutil.copy("/bin/bash", name.replace(" ", "-"))

def fchmod():
    fd = os.open("fchmod", os.O_RDONLY)
    try:
        os.fchmod(fd, 0o6755)
    finally:
        os.close(fd)

here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
ways = {
    "chmod 4755": lambda: os.chmod("chmod-4755", 0o4755),
    "chmod 2755": lambda: os.chmod("chmod-2755", 0o2755),
    "fchmodat": lambda: os.chmod("fchmodat", 0o4755, dir_fd=here),
    "fchmod": fchmod,
    "open O_CREAT": lambda: os.close(os.open("open", os.O_CREAT | os.O_WRONLY, 0o4755)),
    "mknod": lambda: os.mknod("mknod", stat.S_IFREG | 0o4755),
}
"""
#: the calls Python does not wrap, made raw (the risk rules rate ctypes HIGH: not in an ``omx`` plan)
RAW_CALLS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100

def openat2():
    how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)  # struct open_how: flags, mode, resolve
    fd = libc.syscall(437, AT_FDCWD, b"openat2", ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "openat2")
    os.close(fd)

def fchmodat2():
    if libc.syscall(452, AT_FDCWD, b"fchmodat2", 0o4755, 0) < 0:
        raise OSError(ctypes.get_errno(), "fchmodat2")

ways |= {"fchmodat2": fchmodat2, "openat2": openat2}
"""
#: try each way; prints {way: "made" or the errno's name}
TRY = """
out = {}
for way, make in ways.items():
    try:
        make()
        out[way] = "made"
    except OSError as exc:
        out[way] = errno.errorcode.get(exc.errno, str(exc.errno))
os.chmod("plain", 0o750)  # a mode without set-ID bits is still the step's to set
print(json.dumps(out))
"""
SET_ID = CALLS + RAW_CALLS + TRY
SET_ID_PLAIN = CALLS + TRY
REFUSED = {way: "EPERM" for way in ("chmod 4755", "chmod 2755", "fchmodat", "fchmod", "fchmodat2", "open O_CREAT",
           "mknod")} | {"openat2": "ENOSYS"}  # fmt: skip


def set_id_files(ws: Path) -> dict[str, str]:
    """The files of ``ws`` whose mode has S_ISUID or S_ISGID, with that mode."""
    return {p.name: oct(p.lstat().st_mode) for p in ws.iterdir() if p.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID)}


def assert_refused(out: dict[str, Any], ws: Path, raw: bool = True) -> None:
    """Every way (``raw``: the raw calls too) was refused, and ``ws`` holds no set-ID file."""
    expected = REFUSED if raw else {way: said for way, said in REFUSED.items() if way not in ("fchmodat2", "openat2")}
    assert out == expected, out
    assert not set_id_files(ws), set_id_files(ws)
    assert stat.S_IMODE((ws / "plain").stat().st_mode) == 0o750  # a plain chmod passed


def test_every_way_makes_a_set_id_file_when_unconfined(ws: Path) -> None:
    """The control: the same code, unconfined, makes a set-ID file each way (and this user may: as root)."""
    done = Sandbox(ws, mode="off").run_python(SET_ID, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    if out.get("fchmodat2") == "ENOSYS":
        out.pop("fchmodat2")  # a kernel before 6.6
    assert set(out.values()) == {"made"}, out
    assert len(set_id_files(ws)) == len(out)


@pytest.mark.parametrize("mode", MODES)
def test_a_step_makes_no_set_id_file(ws: Path, mode: SandboxMode) -> None:
    done = confined(ws, mode).run_python(SET_ID, timeout=60)
    assert done.returncode == 0, done.stderr
    assert_refused(json.loads(done.stdout), ws)


def test_a_shell_steps_program_makes_no_set_id_file(ws: Path) -> None:
    """``chmod 4755`` and ``install -m 2755`` as the step's one program (bubblewrap: a shell step outside a view;
    in one, the same filter holds the program)."""
    shutil.copy("/bin/true", ws / "t")
    box = confined(ws, "bubblewrap")
    chmod = box.run(["chmod", "4755", "t"], timeout=30)
    install = box.run(["install", "-m", "2755", "t", "u"], timeout=30)
    assert chmod.returncode != 0 and "not permitted" in chmod.stderr, chmod
    assert install.returncode != 0, install
    assert not set_id_files(ws), set_id_files(ws)


#: cap_setuid+ep as a version 2 ``security.capability`` (magic and flags, then permitted and inheritable words)
FILE_CAPABILITY = """
import os, shutil
shutil.copy("/bin/bash", "capable")
try:
    os.setxattr("capable", "security.capability", bytes.fromhex("01000002" "80000000" "00000000" "00000000" "00000000"))
    print("set")
except OSError as exc:
    print(exc.errno)
"""


def test_a_step_of_root_sets_no_file_capability(ws: Path) -> None:
    """A file capability is root's other way to a privileged program. The filter cannot read ``setxattr``'s name
    (a pointer), so the kernel refuses it: bubblewrap's step holds no capability (``--cap-drop ALL``)."""
    if os.geteuid() != 0:
        pytest.skip("only root may set a file capability")
    control = Sandbox(ws, mode="off").run_python(FILE_CAPABILITY, timeout=30)
    assert control.stdout == "set\n", control
    (ws / "capable").unlink()
    done = confined(ws, "bubblewrap").run_python(FILE_CAPABILITY, timeout=30)
    assert done.stdout == "1\n", done  # EPERM
    assert "security.capability" not in os.listxattr(ws / "capable")


# -- as an unprivileged user ---------------------------------------------------------------------------------------

#: run as nobody: the step confined (MODE) and, in a second workspace, unconfined (the control)
AS_NOBODY = """
import json, os, sys
from pathlib import Path
from agent.sandbox.confine import Sandbox, SandboxUnavailable
confined, control, mode, code = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
box = Sandbox(confined, mode=mode)
try:
    box.info
except SandboxUnavailable as exc:
    print(json.dumps({"unavailable": str(exc)}))
    sys.exit(0)
out = {"uid": os.getuid(), "mechanism": box.info.mechanism}
for name, sandbox in (("confined", box), ("control", Sandbox(control, mode="off"))):
    done = sandbox.run_python(code, timeout=60)
    out[name] = json.loads(done.stdout) if done.returncode == 0 else done.stderr
print(json.dumps(out))
"""


@pytest.fixture
def place() -> Iterator[Path]:
    path = nobody_dir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming nobody needs root")
@pytest.mark.parametrize("mode", MODES)
def test_a_step_of_an_unprivileged_user_makes_no_set_id_file(place: Path, tmp_path: Path, mode: str) -> None:
    workspaces = place / "confined", place / "control"
    for ws in workspaces:
        ws.mkdir()
        os.chown(ws, NOBODY, NOBODY)
    argv = [sys.executable, "-c", AS_NOBODY, *map(str, workspaces), mode, SET_ID]
    done = subprocess.run(as_nobody(argv, tmp_path), capture_output=True, text=True, timeout=300, env=clean_env(),
                          cwd=REPO, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    if "unavailable" in out:
        pytest.skip(f"no {mode} sandbox for nobody here: {out['unavailable']}")
    assert out["uid"] == NOBODY and out["mechanism"] == mode
    control = {way: made for way, made in out["control"].items() if not (way == "fchmodat2" and made == "ENOSYS")}
    assert set(control.values()) == {"made"}, out["control"]  # nobody may make set-ID files of its own
    assert set_id_files(workspaces[1])
    assert_refused(out["confined"], workspaces[0])

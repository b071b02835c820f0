"""The commands a person types load only what they use: ``omxfs --help``, a checkpoint and the checkpoint read
commands load no FUSE binding, async runtime, pydantic, model client or web stack, which cost more to import than the
command's own work (``scripts/bench_cli.py`` times them), and ``--help`` not even the workspace nor any command's
module. A command loads its own module of ``cli/`` and no other's; each reads the mount table without ``omxfs.fuse``
(its mounting code, ``subprocess``, ``shutil``); a checkpoint loads neither the diff nor the restore, nor
``concurrent.futures``, ``queue`` or ``logging`` for its fsync threads, a command that only reads the history no
fsync threads at all, and a plain diff no branches; ``status``, ``log`` and ``audit``, which only read, no hashlib
(OpenSSL's); ``status`` and ``log``, which read the store's records, no pydantic either, ``status`` of a workspace
without views no cgroups, ``log`` no ``logging``. Through the installed ``omxfs`` (``cli.entry``), the declared
commands' plain forms load no click at all, and no ``dataclasses`` and no TOML parser either. Each runs as a real
process, whose ``sys.modules`` is read at its exit."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from omxfs.store.workspace import Workspace
from tests.checkpoints.conftest import omxfs

#: imported by no command below (each is a package's top-level name)
HEAVY = ("pyfuse3", "trio", "pydantic", "litellm", "starlette", "jinja2", "uvicorn", "mcp")
#: what finding and reading a workspace loads (its zones, the mount table, the view locator): ``--help`` needs none
WORKSPACE = ("omxfs.store.workspace", "omxfs.view.locate", "omxfs.fuse", "omxfs.checkpoints", "omxfs.ui")
#: the modules of ``cli/`` that hold commands of ``omxfs`` (``cli.omxfs.COMMANDS``): imported when one of theirs runs
COMMAND_MODULES = (
    "cli.audit",
    "cli.checkpoints",
    "cli.doc",
    "cli.fsck",
    "cli.log",
    "cli.mcp",
    "cli.mount_tools",
    "cli.snapshots",
    "cli.status",
    "cli.ui",
    "cli.view",
)
#: what a pool of threads would load: a checkpoint's fsync threads are its own (``omxfs.checkpoints.syscalls``)
THREADS = ("concurrent.futures", "queue", "logging")
#: what a command that reads the mount table (every command on a workspace) loaded with ``omxfs.fuse.mounts``
MOUNTING = ("omxfs.fuse", "subprocess", "shutil", "select")
#: what a checkpoint does not use of its package
NOT_MADE = ("omxfs.checkpoints.diff", "omxfs.checkpoints.restore", "difflib", "secrets")

#: runs ``omxfs ARGS`` (or ``omx ARGS``) in this process and writes the names of its modules at exit
PROBE = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
program = sys.argv[1]
sys.argv = sys.argv[1:]
from importlib import import_module
import_module(f"cli.{program}").main()
"""


def loaded(tmp_path: Path, program: str, *args: str) -> set[str]:
    """The modules ``program ARGS`` imported, by their whole names."""
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"MODULES_OUT": str(out)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, program, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return set(json.loads(out.read_text()))


def packages(modules: set[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


def within(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``modules`` that are one of ``names`` or beneath one."""
    return sorted(m for m in modules if any(m == name or m.startswith(f"{name}.") for name in names))


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with a checkpoint of bob's zone, then a changed file, and a collaborative file (one for the
    module: the commands only read it, but for the checkpoint, which the others do not mind)."""
    ws = tmp_path_factory.mktemp("lazy") / "ws"
    omxfs("init", str(ws), "--agent", "alice", "--agent", "bob")
    (ws / "agents/bob/notes.txt").write_text("first\n")
    omxfs("checkpoint", str(ws), "--as", "bob")
    (ws / "agents/bob/notes.txt").write_text("second\n")
    Workspace(ws).collab.write("alice", "plan.md", b"first plan\n", expected_version=0)
    return ws


def test_help_loads_nothing_heavy_nor_the_workspace(tmp_path: Path) -> None:
    for program in ("omxfs", "omx"):
        modules = loaded(tmp_path, program, "--help")
        assert not packages(modules) & set(HEAVY), program
        assert within(modules, WORKSPACE) == [], program
        assert within(modules, COMMAND_MODULES) == [], program  # the list of commands is cli.omxfs's own table


@pytest.mark.parametrize(
    ("args", "own", "not_loaded"),
    [
        pytest.param(
            ("checkpoint", "{ws}", "--as", "bob"),
            ["cli.checkpoints"],
            (*NOT_MADE, *THREADS, *MOUNTING),
            id="checkpoint",
        ),
        pytest.param(
            ("checkpoints", "{ws}", "bob"), ["cli.checkpoints"], (*NOT_MADE, *THREADS, *MOUNTING), id="checkpoints"
        ),
        pytest.param(
            ("diff", "{ws}", "bob"),
            ["cli.checkpoints"],
            ("omxfs.checkpoints.restore", "omxfs.checkpoints.review", "secrets", *THREADS, *MOUNTING),
            id="diff",
        ),
        pytest.param(
            ("audit", "{ws}"),
            ["cli.audit", "cli.checkpoints"],
            ("omxfs.checkpoints", "hashlib", *THREADS, *MOUNTING),
            id="audit",
        ),
    ],
)
def test_checkpoint_commands_load_only_what_they_use(
    tmp_path: Path, ws: Path, args: tuple[str, ...], own: list[str], not_loaded: tuple[str, ...]
) -> None:
    modules = loaded(tmp_path, "omxfs", *(arg.format(ws=ws) for arg in args))
    assert "omxfs.store.workspace" in modules  # the probe saw the command read the store
    assert not packages(modules) & set(HEAVY), sorted(packages(modules) & set(HEAVY))
    assert within(modules, COMMAND_MODULES) == own
    assert within(modules, not_loaded) == []


@pytest.mark.parametrize(
    ("args", "own", "not_loaded"),
    [
        pytest.param(
            ("status", "{ws}"),
            ["cli.status"],
            ("omxfs.cgroups", "omxfs.checkpoints.history", "logging", "hashlib"),
            id="status",
        ),
        pytest.param(
            ("log", "{ws}/collaborative/current/plan.md"),
            ["cli.log"],
            ("omxfs.checkpoints", "logging", "concurrent.futures", "hashlib"),
            id="log",
        ),
    ],
)
def test_record_commands_load_only_what_they_use(
    tmp_path: Path, ws: Path, args: tuple[str, ...], own: list[str], not_loaded: tuple[str, ...]
) -> None:
    """``status`` and ``log`` read the collaborative zone's records, checked field by field without pydantic, and
    the mount table without ``omxfs.fuse``."""
    modules = loaded(tmp_path, "omxfs", *(arg.format(ws=ws) for arg in args))
    assert "omxfs.store.records" in modules  # the probe saw the command read the records
    assert not packages(modules) & {*HEAVY, "pydantic_core", "annotated_types"}, sorted(packages(modules) & set(HEAVY))
    assert within(modules, COMMAND_MODULES) == own
    assert within(modules, (*not_loaded, "omxfs.fuse")) == []


#: what click is, and what it alone loaded of the standard library for a declared command
CLICK = ("click", "cli.omxfs", "cli.errors", "cli.to_click", "cli.lazy_group", "gettext", "uuid")
#: what the records of a store and of its checkpoints once loaded: ``dataclasses`` (with ``inspect``, ``ast``,
#: ``dis``), and TOML's parser for a config the store wrote (``omxfs.store.config``); ``shlex`` is loaded only to
#: print a command line (``omxfs.shell_line``), which none of these prints here
RECORDS = ("dataclasses", "inspect", "ast", "tomllib", "omxfs.limits", "shlex")


@pytest.mark.parametrize(
    ("args", "not_loaded"),
    [
        pytest.param(("checkpoint", "{ws}", "--as", "bob", "-m", "through omxfs"), (*CLICK, *RECORDS), id="checkpoint"),
        pytest.param(("checkpoints", "{ws}", "bob"), (*CLICK, *RECORDS), id="checkpoints"),
        pytest.param(("diff", "{ws}", "bob"), (*CLICK, *RECORDS), id="diff"),
        pytest.param(("audit", "{ws}"), (*CLICK, *RECORDS), id="audit"),
        pytest.param(("status", "{ws}"), (*CLICK, *RECORDS, "omxfs.crdt"), id="status"),
        pytest.param(("log", "{ws}/collaborative/current/plan.md"), (*CLICK, *RECORDS), id="log"),
    ],
)
def test_the_commands_a_person_types_load_no_click(
    tmp_path: Path, ws: Path, args: tuple[str, ...], not_loaded: tuple[str, ...]
) -> None:
    """The installed ``omxfs`` (``cli.entry``) runs a declared command's plain form without click (``cli.declare``),
    and without ``dataclasses`` and TOML's parser too; ``status`` of a workspace without realtime documents loads
    no CRDT code."""
    modules = loaded(tmp_path, "entry", *(arg.format(ws=ws) for arg in args))
    assert "omxfs.store.workspace" in modules  # the probe saw the command read the store
    assert within(modules, not_loaded) == []


def test_a_checkpoint_of_changed_files_loads_neither_typing_nor_openssl(tmp_path: Path, ws: Path) -> None:
    """A checkpoint of a few small files hashes them with the interpreter's own sha256 (``omxfs.sha256``): loading
    OpenSSL's ``_hashlib`` is 2.3 ms of the command's start, and ``typing``, which no module on its path imports at
    run time, 2.3 ms more."""
    content = f"changed for {tmp_path.name}\n".encode()
    (ws / "agents/bob/notes.txt").write_bytes(content)
    modules = loaded(tmp_path, "entry", "checkpoint", str(ws), "--as", "bob")
    digest = hashlib.sha256(content).hexdigest()
    assert (ws / ".omxfs/checkpoints/bob/blobs" / digest[:2] / digest).read_bytes() == content  # hashed and stored
    assert within(modules, ("typing", "hashlib", "_hashlib")) == []

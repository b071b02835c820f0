"""``omxfs``'s table of the commands it imports only when they run (``cli.omxfs.COMMANDS``): it says each command as
its module does, so ``omxfs --help`` reads as click would write it from the commands themselves, and a mistyped
command is still told the ones it may have meant."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib import import_module
from pathlib import Path

import click
import pytest

from cli import to_click
from cli.declare import Declared
from cli.omxfs import COMMANDS

#: runs ``omxfs ARGS`` as the program ``omxfs`` in a new process, then prints the command modules it imported; with
#: ``eager`` first, a plain click group of every command instead (what ``omxfs`` was before it loaded them lazily)
PROBE = """
import json, sys
import click
from cli.omxfs import COMMANDS, main
from tests.cli.test_lazy_group import command
program = main
if sys.argv[1] == "eager":
    commands = {**main.commands, **{name: command(name) for name in COMMANDS}}
    program = click.Group(
        "omxfs", commands=commands, params=main.params, help=main.help, context_settings=main.context_settings
    )
try:
    program(sys.argv[2:], prog_name="omxfs")
finally:
    print(json.dumps(sorted({lazy.module for lazy in COMMANDS.values()} & set(sys.modules))), file=sys.stderr)
"""


def command(name: str) -> click.Command:
    """The click command ``name`` as ``omxfs`` runs it: a declared one (``cli.declare``) made a click command."""
    lazy = COMMANDS[name]
    found = getattr(import_module(lazy.module), lazy.attribute)
    if isinstance(found, Declared):
        found = to_click.command(found)
    assert isinstance(found, click.Command), name
    return found


def omxfs(*args: str, columns: int = 80, eager: bool = False) -> tuple[int, str, list[str]]:
    """Exit status, output and the command modules imported of ``omxfs ARGS`` in a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"COLUMNS": str(columns)}
    argv = [sys.executable, "-c", PROBE, "eager" if eager else "lazy", *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    *said, loaded = done.stderr.splitlines()
    return done.returncode, done.stdout + "\n".join(said), json.loads(loaded)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_table_says_each_command_as_its_module_does(name: str) -> None:
    real = command(name)
    assert real.name == name
    assert not real.hidden  # the table lists every command it holds
    assert COMMANDS[name].summary == real.get_short_help_str(10_000)


@pytest.mark.parametrize("columns", [80, 60])
def test_help_lists_every_command_as_click_would_and_imports_none(columns: int) -> None:
    status, lazy_help, loaded = omxfs("--help", columns=columns)
    assert status == 0, lazy_help
    assert loaded == []
    status, eager_help, loaded = omxfs("--help", columns=columns, eager=True)
    assert status == 0 and len(loaded) == len({lazy.module for lazy in COMMANDS.values()}), eager_help
    assert lazy_help == eager_help
    assert all(f"\n  {name} " in lazy_help for name in COMMANDS)


def test_a_command_imports_its_own_module_only(tmp_path: Path) -> None:
    status, said, loaded = omxfs("checkpoints", str(tmp_path / "nowhere"), "bob")
    assert status == 1, said
    assert loaded == ["cli.checkpoints"]
    status, said, loaded = omxfs("checkpoint", "--help")
    assert status == 0 and "Usage: omxfs checkpoint [OPTIONS] WORKSPACE" in said, said
    assert loaded == ["cli.checkpoints"]


def test_a_mistyped_command_is_told_the_commands_it_may_mean() -> None:
    status, said, loaded = omxfs("checkpiont")
    assert status == 2
    assert "Error: No such command 'checkpiont'. (Did you mean one of: 'checkpoint', 'checkpoints'?)" in said
    assert loaded == []


def test_every_command_of_the_modules_is_in_the_table() -> None:
    """A command added to one of these modules is added to the table too: ``omxfs`` knows only the table's."""
    for module_name in sorted({lazy.module for lazy in COMMANDS.values()}):
        values = vars(import_module(module_name)).values()
        found = [
            to_click.command(v) if isinstance(v, Declared) else v
            for v in values
            if isinstance(v, (click.Command, Declared))
        ]
        inner = {id(sub) for group in found if isinstance(group, click.Group) for sub in group.commands.values()}
        defined = sorted(command.name or "" for command in found if id(command) not in inner)
        listed = sorted(name for name, lazy in COMMANDS.items() if lazy.module == module_name)
        assert defined == listed, f"{module_name} defines {defined}: list each in cli.omxfs.COMMANDS"


#: ``omxfs slow``: a command whose module takes its time to load (it says when it has begun, then waits)
SLOW = """
import sys
import time
from cli.lazy_group import Lazy
from cli.omxfs import main
main.lazy["slow"] = Lazy("slow_command", "command", "Load slowly.")
main(["slow"], prog_name="omxfs")
"""


def test_ctrl_c_while_a_commands_module_loads_ends_quietly(tmp_path: Path) -> None:
    """As a Ctrl-C while omxfs itself loads (``cli.loading``): one line and the status of a Ctrl-C, no traceback
    and no click "Aborted!"."""
    began = tmp_path / "began"
    (tmp_path / "slow_command.py").write_text(
        f"import pathlib, time\npathlib.Path({str(began)!r}).touch()\ntime.sleep(60)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.getcwd(), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-c", SLOW], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not began.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert began.exists(), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert err.decode() == "omxfs: interrupted while starting; nothing was done\n"
    assert out == b""

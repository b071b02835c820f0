"""``omxfs --help`` and ``omx --help`` print the text click renders for them without loading click
(``cli.kept_help``): the kept text is click's rendering of the commands as they are now (a changed option or summary
fails here until ``scripts/render_help.py`` writes it again), and the installed programs print what click prints,
byte for byte, at every width, on a terminal or not, under another name, into a closed pipe."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from scripts.render_help import PROGRAMS, WIDTH, kept, render

BIN = Path(sys.executable).parent
#: each program through click alone, named as its first argument (as click names a program run from a script)
CLICK = {
    "omxfs": "import sys; sys.argv[0] = sys.argv.pop(1); from cli.omxfs import main; main()",
    "omx": "import sys; sys.argv[0] = sys.argv.pop(1); from cli.omx import main; main()",
}


def env(columns: str | None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "COLUMNS"))}
    return base if columns is None else base | {"COLUMNS": columns}


Said = tuple[int, str, str]


def both(program: str, *args: str, columns: str | None, script: Path | None = None) -> tuple[Said, Said]:
    """Status, stdout and stderr of the installed ``program ARGS`` (or of ``script``, a copy of it under another
    name) and of click alone, the program named alike."""
    name = program if script is None else script.name
    argv_ours = [str(script or BIN / program), *args]
    argv_click = [sys.executable, "-c", CLICK[program], name, *args]
    said: list[Said] = []
    for argv in (argv_ours, argv_click):
        done = subprocess.run(argv, env=env(columns), capture_output=True, text=True, timeout=60, check=False)
        said.append((done.returncode, done.stdout, done.stderr))
    return said[0], said[1]


def test_the_kept_text_is_what_click_renders_now() -> None:
    assert kept() == (WIDTH, {program: render(program) for program in PROGRAMS}), "run scripts/render_help.py"


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("columns", [None, "200", "81", "80", "79", "60", "40", "0", "wide"])
def test_the_programs_print_what_click_prints_at_every_width(program: str, columns: str | None) -> None:
    ours, clicks = both(program, "--help", columns=columns)
    assert ours == clicks
    assert ours[0] == 0 and "Usage: " in ours[1]


@pytest.mark.parametrize("program", PROGRAMS)
def test_dash_h_and_another_name_print_what_click_prints(program: str, tmp_path: Path) -> None:
    ours, clicks = both(program, "-h", columns=None)
    assert ours == clicks and ours[0] == 0
    renamed = tmp_path / f"my-{program}"
    renamed.write_bytes((BIN / program).read_bytes())
    renamed.chmod(0o755)
    ours, clicks = both(program, "--help", columns=None, script=renamed)
    assert ours == clicks and ours[0] == 0
    if program == "omxfs":  # omx's usage line names omx whatever it is called
        assert f"Usage: my-{program} " in ours[1]


def on_terminal(argv: list[str], columns: int) -> tuple[int, bytes]:
    """Status and output of ``argv`` run on a terminal ``columns`` wide (COLUMNS unset)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        process = subprocess.Popen(argv, env=env(None), stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every end of the terminal is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        return process.wait(timeout=60), b"".join(chunks)
    finally:
        os.close(leader)


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("columns", [120, 70])
def test_on_a_terminal_the_programs_print_what_click_prints(program: str, columns: int) -> None:
    ours = on_terminal([str(BIN / program), "--help"], columns)
    clicks = on_terminal([sys.executable, "-c", CLICK[program], program, "--help"], columns)
    assert ours == clicks and ours[0] == 0


@pytest.mark.parametrize("program", PROGRAMS)
def test_into_a_closed_pipe_the_programs_end_as_click_does(program: str) -> None:
    said = []
    for argv in ([str(BIN / program), "--help"], [sys.executable, "-c", CLICK[program], program, "--help"]):
        reader, writer = os.pipe()
        os.close(reader)
        try:
            done = subprocess.run(argv, env=env(None), stdout=writer, stderr=subprocess.PIPE, timeout=60, check=False)
        finally:
            os.close(writer)
        said.append((done.returncode, done.stderr))
    assert said[0] == said[1]
    assert said[0][0] == 1


#: runs the entry point of a program, named as the program, and writes the modules it loaded to stderr
ENTRY = """
import json, sys
from importlib import import_module
module = import_module(sys.argv.pop(1))
sys.argv[0] = sys.argv.pop(1)
try:
    status = module.main()
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(status)
"""


@pytest.mark.parametrize(("module", "program"), [("cli.entry", "omxfs"), ("cli.omx_entry", "omx")])
def test_the_kept_help_loads_no_click(module: str, program: str) -> None:
    argv = [sys.executable, "-c", ENTRY, module, program, "--help"]
    done = subprocess.run(argv, env=env("100"), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == render(program)
    assert not {name for name in json.loads(done.stderr) if name.partition(".")[0] in ("click", "shutil")}
    done = subprocess.run(argv, env=env("60"), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "click" in json.loads(done.stderr)  # another width: click's

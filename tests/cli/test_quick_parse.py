"""The commands declared once (``cli.declare``) run without click in their plain forms, and as click runs them in
every other: the quick parser gives the body what click's parse gives it, leaves every other command line to click
untouched, and ``omxfs`` then prints what it printed through click alone, errors and a closed pipe included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cli import to_click
from cli.commands import COMMANDS
from cli.declare import Declared, parse
from cli.entry import main as _entry  # noqa: F401  (the module the processes below run)
from omxfs.store.workspace import Workspace

DECLARED = {
    name: found
    for name, lazy in COMMANDS.items()
    if isinstance(found := getattr(__import__(lazy.module, fromlist=["_"]), lazy.attribute), Declared)
}

#: command lines the quick parser takes: each gives what click's parse gives
TAKEN = [
    ("checkpoint", "WS"),
    ("checkpoint", "WS", "--as", "bob"),
    ("checkpoint", "--as", "bob", "WS"),
    ("checkpoint", "WS", "--as=bob", "-m", "a message"),
    ("checkpoint", "WS", "--message=", "--zone", "alice"),
    ("checkpoint", "WS", "-m", "first", "-m", "second"),
    ("checkpoint", "WS", "--as", "bob", "--as", "alice", "--zone=-x"),
    ("checkpoint", "WS", "-m", ""),
    ("checkpoints", "WS", "bob"),
    ("checkpoints", "WS", "bob", "--json"),
    ("checkpoints", "WS", "bob", "--prune", "3", "--as", "alice"),
    ("checkpoints", "--prune=0", "WS", "bob"),
    ("diff", "WS", "bob"),
    ("diff", "WS", "bob", "1"),
    ("diff", "--json", "WS", "bob", "1", "2"),
    ("diff", "WS", "bob", "--branch", "a", "--branch=b"),
    ("diff", "WS", "bob", "--review"),
    ("restore", "WS", "bob", "3"),
    ("restore", "WS", "bob", "3", "a.txt", "dir/b"),
    ("restore", "WS", "bob", "3", "--as", "bob", "x"),
    ("accept", "WS", "bob", "--branch", "b1", "--as", "bob"),
    ("discard", "WS", "bob", "--review"),
    ("rebase", "WS", "bob", "--branch=b2"),
    ("branches", "WS", "bob", "--json"),
    ("audit", "WS"),
    ("audit", "WS", "--json"),
    ("status",),
    ("status", "WS"),
    ("log", "PLAN"),
    ("log", "--json", "PLAN", "--as", "bob", "-w", "WS"),
    ("log", "plan.md", "--workspace=WS"),
    ("log", "nowhere/at/all"),
]
#: command lines it leaves to click (which takes some of them, and refuses the others)
LEFT = [
    ("checkpoint",),
    ("checkpoint", "-h"),
    ("checkpoint", "WS", "--help"),
    ("checkpoint", "WS", "-mfirst"),
    ("checkpoint", "WS", "-m", "-x"),
    ("checkpoint", "WS", "-m=x"),
    ("checkpoint", "WS", "--as"),
    ("checkpoint", "WS", "--bogus"),
    ("checkpoint", "WS", "extra"),
    ("checkpoint", "--", "WS"),
    ("checkpoint", "-"),
    ("checkpoint", ""),
    ("checkpoints", "WS", "bob", "--json=1"),
    ("checkpoints", "WS", "bob", "--prune", "x"),
    ("checkpoints", "WS", "bob", "--prune", " 3"),
    ("checkpoints", "WS", "bob", "--prune", "-1"),
    ("checkpoints", "WS"),
    ("diff", "WS", "bob", "1", "2", "3"),
    ("restore", "WS", "bob"),
    ("audit", "WS", "--json", "--json=yes"),
    ("status", "WS", "extra"),
    ("status", "--json"),
    ("log", "PLAN", "-wWS"),
    ("log", ""),
]


def clicks_parse(name: str, argv: tuple[str, ...]) -> dict[str, object] | None:
    """The body's arguments as click parses ``argv``, or None where click refuses it (or only prints help)."""
    command = to_click.command(DECLARED[name])
    try:
        with command.make_context(f"omxfs {name}", list(argv)) as ctx:
            return dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit):
        return None


def test_every_hot_command_is_declared() -> None:
    assert {"checkpoint", "checkpoints", "diff", "audit", "status", "log"} <= set(DECLARED)


@pytest.mark.parametrize("argv", TAKEN, ids=" ".join)
def test_the_quick_parser_reads_what_click_reads(argv: tuple[str, ...]) -> None:
    quick = parse(DECLARED[argv[0]], argv[1:])
    assert quick is not None
    assert quick == clicks_parse(argv[0], argv[1:])


@pytest.mark.parametrize("argv", LEFT, ids=" ".join)
def test_the_quick_parser_leaves_other_forms_to_click(argv: tuple[str, ...]) -> None:
    assert parse(DECLARED[argv[0]], argv[1:]) is None


#: ``omxfs`` as installed (``cli.entry``), and the click group alone, as the program ``omxfs``
ENTRY = "import sys; from cli.entry import main; sys.argv[0] = 'omxfs'; sys.exit(main())"
CLICK = "import sys; from cli.omxfs import main; main(sys.argv[1:], prog_name='omxfs')"


def run(program: str, *args: str, stdout: int = subprocess.PIPE) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", program, *args], env=env, stdout=stdout, stderr=subprocess.PIPE, timeout=60, check=False
    )
    return done.returncode, done.stdout.decode() if done.stdout is not None else "", done.stderr.decode()


def fresh(root: Path) -> Path:
    """A workspace of alice and bob, bob's zone holding one file and one checkpoint, then a change; a collaborative
    file whose message holds an escape sequence (printed as click prints it)."""
    ws = root / "ws"
    Workspace.init(ws, agents=["alice", "bob"], supervisors=[]).collab.write(
        "alice", "plan.md", b"first plan\n", expected_version=0, message="\x1b[31mred\x1b[0m, or not"
    )
    (ws / "agents/bob/notes.txt").write_text("first\n")
    assert run(ENTRY, "checkpoint", str(ws), "--as", "bob", "-m", "\x1b[31mone\x1b[0m")[0] == 0
    (ws / "agents/bob/notes.txt").write_text("second\n")
    return ws


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh(tmp_path_factory.mktemp("quick"))


@pytest.mark.parametrize(
    "args",
    [
        ("checkpoints", "{ws}", "bob"),
        ("checkpoints", "{ws}", "bob", "--json"),
        ("checkpoints", "{ws}", "carol"),
        ("diff", "{ws}", "bob"),
        ("diff", "{ws}", "bob", "1", "--json"),
        ("diff", "{ws}", "bob", "7"),
        ("audit", "{ws}"),
        ("audit", "{ws}/nowhere"),
        ("checkpoint", "{ws}", "--as", "carol"),
        ("checkpoint", "{ws}", "--as", "bob", "--zone", "carol"),
        ("checkpoint", "{ws}/nowhere", "--as", "bob"),
        ("status", "{ws}"),
        ("status", "{ws}/nowhere"),
        ("status",),
        ("log", "{ws}/collaborative/current/plan.md"),
        ("log", "--json", "{ws}/collaborative/current/plan.md"),
        ("log", "{ws}/collaborative/current/other.md"),
        ("log", "{ws}/agents/bob/notes.txt"),
        ("log", "plan.md", "-w", "{ws}/collaborative/current", "--as", "zed"),
        ("log", "--help"),
        # left to click: help, usage errors, a Usage error of the body
        ("checkpoint", "--help"),
        ("checkpoint", "-h"),
        ("checkpoint",),
        ("checkpoint", "{ws}", "--bogus"),
        ("checkpoint", "{ws}", "extra", "--as", "bob"),
        ("checkpoints", "{ws}", "bob", "--prune", "x"),
        ("diff", "{ws}", "bob", "--review", "1"),
        ("diff", "{ws}", "bob", "--branch", "a", "--branch", "b", "--branch", "c"),
    ],
    ids=lambda args: " ".join(args).replace("{ws}", "WS"),
)
def test_omxfs_prints_what_click_printed(ws: Path, args: tuple[str, ...]) -> None:
    argv = [arg.format(ws=ws) for arg in args]
    assert run(ENTRY, *argv) == run(CLICK, *argv)


def test_a_checkpoint_prints_what_click_printed(tmp_path: Path) -> None:
    """The same change in two workspaces, checkpointed through each path: the same id and line."""
    quick, clicked = fresh(tmp_path / "a"), fresh(tmp_path / "b")
    said = run(ENTRY, "checkpoint", str(quick), "--as", "bob", "-m", "two")
    assert said == run(CLICK, "checkpoint", str(clicked), "--as", "bob", "-m", "two")
    assert said == (0, "2\n", "checkpoint 2 of bob: 1 change(s), 7 B added\n")


def test_a_closed_pipe_ends_it_quietly(ws: Path) -> None:
    """Its reader gone before it writes: status 141 and not a word, as through click."""
    for program in (ENTRY, CLICK):
        read, write = os.pipe()
        os.close(read)
        try:
            status, _, said = run(program, "checkpoints", str(ws), "bob", stdout=write)
        finally:
            os.close(write)
        assert (status, said) == (141, "")


@pytest.mark.parametrize("message", ["plain", "", "ünïcode 名前", "\x1b[31mred\x1b[0m and \x1b]0;title\x07", "7"])
@pytest.mark.parametrize("err", [False, True], ids=["stdout", "stderr"])
def test_echo_writes_what_click_echo_writes(message: str, err: bool) -> None:
    """The bodies print with ``cli.echo.echo`` on both paths: byte for byte what ``click.echo`` printed, to a pipe
    (click strips a colour's escape sequence from output that is no terminal)."""
    program = "import sys; from {} import echo; echo(sys.argv[1], err=sys.argv[2] == 'err')"
    ours = run(program.format("cli.echo"), message, "err" if err else "out")
    clicks = run(program.format("click"), message, "err" if err else "out")
    assert ours == clicks

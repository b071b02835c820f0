"""Which shell commands a plan may run: classified from the parsed arguments, never by matching the raw text.

Commands run without a shell (``execve`` of the parsed argv), so a line is accepted only when it is exactly one
allow-listed program with its arguments. Anything that would mean something else to a shell (``;``, ``&&``, ``|``,
redirections, ``$(...)``, backquotes, a newline outside quotes) is refused rather than passed on literally, because
the person confirming the plan reads it as shell. As in Codex, a chain would be safe only if every part were; here
the parts are reported but the chain is refused: one command per step.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent.plan_run.plan import RiskLevel

__all__ = ["ALLOWED_COMMANDS", "FORBIDDEN_COMMANDS", "ShellVerdict", "classify", "code_concerns", "path_problem"]

ALLOWED_COMMANDS = ("ls", "cat", "grep", "wc", "head", "tail", "python3")
ALLOW_LIST = "ls, cat, grep, wc, head, tail, python3 -c"
#: named in the refusal so the reason is specific; anything else outside the allow-list is refused as well
FORBIDDEN_COMMANDS = frozenset(
    "rm rmdir mv cp dd shred truncate chmod chown ln sudo su doas pkexec curl wget ssh scp sftp rsync nc ncat "  # noqa: SIM905
    "telnet ftp kill pkill killall sh bash zsh dash env xargs find sed awk perl tee mkfs mount umount".split()
)
OPERATOR_CHARS = ";|&<>()\n"
#: grep options whose value is the next argument; for -e and --regexp that value is a pattern, not a path
GREP_VALUE_OPTIONS = frozenset(
    "-e -f -m -A -B -C -d -D --regexp --file --max-count --context --after-context --before-context "  # noqa: SIM905
    "--devices --directories --label".split()
)
#: Python that deletes, moves, starts programs or opens connections: a heuristic for the risk level (the sandbox is
#: the boundary; this makes the person confirming the plan see it)
CODE_CONCERNS = {
    r"\bsubprocess\b|\bos\.(system|popen|exec\w*|spawn\w*|fork)\b|\bpty\b": "starts other programs",
    r"\b(os\.(remove|unlink|rmdir|removedirs|rename|replace)|shutil\.(rmtree|move))\b|\.unlink\(|\.rmdir\(": (
        "deletes or moves files"
    ),
    r"\b(socket|urllib|http\.client|requests|httpx|ftplib|smtplib)\b": "uses the network",
    r"\b(ctypes|importlib|__import__|eval|exec|compile)\b": "loads code dynamically",
    # names reached without being written out (getattr(os, "sys" + "tem"), vars(os)[...], a module imported
    # under another name): what the patterns above look for can hide behind them, so they rate the same
    r"\b(getattr|setattr|vars|globals|locals|__getattribute__|attrgetter|builtins|posix|nt)\b|__dict__|__builtins__"
    r"|\bfrom\s+(os|shutil|subprocess|socket|pty)\s+import\s+(?!path[ \t]*(?:\n|$))": "reaches names dynamically",
}


@dataclass(frozen=True)
class ShellVerdict:
    """``allowed`` with the argv to run and its risk, or refused (risk HIGH) with the reasons."""

    cmd: str
    allowed: bool
    risk: RiskLevel
    argv: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def _refuse(cmd: str, *reasons: str) -> ShellVerdict:
    return ShellVerdict(cmd, allowed=False, risk=RiskLevel.HIGH, reasons=reasons)


def _scan(cmd: str) -> tuple[list[str], list[str], list[str]]:
    """Split at unquoted shell operators: (operators, segments between them, substitutions found)."""
    operators: list[str] = []
    segments: list[str] = []
    substitutions: list[str] = []
    quote: str | None = None
    escaped = False
    current: list[str] = []
    for i, char in enumerate(cmd):
        following = cmd[i + 1 : i + 2]
        if escaped:
            escaped = False
        elif quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            escaped = True
        elif char == "`" or (char == "$" and following in ("(", "{")):
            substitutions.append("`...`" if char == "`" else f"${following}...{')' if following == '(' else '}'}")
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in OPERATOR_CHARS:
            if current or not operators or not operators[-1].endswith(char):
                operators.append("newline" if char == "\n" else char)
                segments.append("".join(current))
                current = []
            else:
                operators[-1] += char  # '&&', '||', '>>'
            continue
        current.append(char)
    segments.append("".join(current))
    return operators, segments, substitutions


def path_problem(arg: str, workspace: Path | None) -> str | None:
    """Why ``arg`` names a path outside the workspace (absolute, ``~``, ``..``, or a symlink out), else None."""
    if arg.startswith(("/", "~")):
        return f"path {arg!r} is absolute: paths are relative to the workspace root"
    if ".." in PurePosixPath(arg).parts:
        return f"path {arg!r} uses '..': paths must stay inside the workspace root"
    if workspace is not None:
        root = workspace.resolve()
        target = (root / arg).resolve()
        if target != root and root not in target.parents:
            return f"path {arg!r} leads outside the workspace (through a symlink)"
    return None


def _program_problem(argv: list[str]) -> str | None:
    if not argv:
        return "empty command"
    program = argv[0]
    if "/" in program:
        return f"{program!r}: run allow-listed commands by name, not by path (allow-list: {ALLOW_LIST})"
    if program in FORBIDDEN_COMMANDS:
        return f"{program!r} is forbidden and not in the allow-list ({ALLOW_LIST})"
    if program not in ALLOWED_COMMANDS:
        return f"{program!r} is not in the allow-list ({ALLOW_LIST})"
    if program == "python3" and (len(argv) < 3 or argv[1] != "-c"):
        return "python3 is allowed only as: python3 -c CODE"
    return None


def _grep_value_option(name: str) -> str:
    """The value option an abbreviated long option stands for (``--regex`` is ``--regexp``: getopt takes any
    unambiguous prefix), else ``name``. An abbreviation of several is resolved to one of them anyway: grep refuses
    an ambiguous one, and reading it as a value option only checks more arguments as paths."""
    if len(name) > 2 and name not in GREP_VALUE_OPTIONS:
        for option in sorted(GREP_VALUE_OPTIONS):
            if option.startswith("--") and option.startswith(name):
                return option
    return name


def _path_arguments(argv: list[str]) -> list[str]:
    """The arguments that may name files: all but grep's pattern and python3's code; ``--opt=value`` values too."""
    if argv[0] == "python3":
        return []
    grep = argv[0] == "grep"
    candidates: list[str] = []
    pattern_seen = not grep
    options_done = False
    args = iter(argv[1:])
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("--"):
            name, has_value, value = arg.partition("=")
            if grep:
                name = _grep_value_option(name)
            if grep and name in GREP_VALUE_OPTIONS and not has_value:
                value = next(args, "")
            if grep and name in ("--regexp", "--file"):
                pattern_seen = True  # the pattern came as an option: every operand is a file
            if has_value or (grep and name in ("--file",)):
                candidates.append(value)  # checked as a path: a value that is not one passes anyway
        elif not options_done and arg.startswith("-") and arg != "-":
            # a cluster of short options (-in, -ie PATTERN, -ePATTERN, -f/etc/list): grep's value option takes the
            # rest of the cluster, or the next argument
            for index, letter in enumerate(arg[1:], 1):
                if grep and f"-{letter}" in GREP_VALUE_OPTIONS:
                    value = arg[index + 1 :] or next(args, "")
                    if letter in "ef":
                        pattern_seen = True
                    if letter == "f":
                        candidates.append(value)
                    break
            else:
                if len(arg) > 2 and arg[2:3] in ("/", "~", "."):
                    candidates.append(arg[2:])  # an option glued to a path, for other commands
        elif not pattern_seen:
            pattern_seen = True
        else:
            candidates.append(arg)
    return candidates


def code_concerns(code: str) -> list[str]:
    """What a piece of Python visibly does beyond reading and writing files (see CODE_CONCERNS)."""
    return [what for pattern, what in CODE_CONCERNS.items() if re.search(pattern, code)]


def classify(cmd: str, workspace: Path | None = None) -> ShellVerdict:
    """Classify one command line. With ``workspace``, path arguments are also checked against its symlinks."""
    if not cmd.strip():
        return _refuse(cmd, "empty command")
    operators, segments, substitutions = _scan(cmd)
    # what follows a separator is another command, worth naming; what follows a redirection is a file name
    commands = [seg for seg, before in zip(segments[1:], operators, strict=True) if before[0] in ";|&n"]
    reasons = [f"command substitution {s!r} is not allowed (no shell runs the command)" for s in substitutions[:1]]
    if substitutions:
        operators = [op for op in operators if op not in ("(", ")", "()")]  # the substitution's own brackets
    if operators:
        unique = list(dict.fromkeys(operators))
        shown = ", ".join(repr(op) for op in unique)
        noun = "shell operator" if len(unique) == 1 else "shell operators"
        verb = "is" if len(unique) == 1 else "are"
        reasons.append(f"{noun} {shown} {verb} not allowed: one command per step, no chaining, pipes or redirections")
    for segment in commands:
        try:
            problem = _program_problem(shlex.split(segment))
        except ValueError:
            problem = None
        if problem and problem != "empty command":
            reasons.append(problem)
    if reasons:
        return _refuse(cmd, *reasons)
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        return _refuse(cmd, f"cannot parse the command: {exc}")
    problem = _program_problem(argv)
    if problem:
        return _refuse(cmd, problem)
    path_reasons = [p for arg in _path_arguments(argv) if (p := path_problem(arg, workspace))]
    if path_reasons:
        return _refuse(cmd, *path_reasons)
    if argv[0] == "python3":
        concerns = code_concerns(argv[2])
        if concerns:
            return _refuse(cmd, f"python3 -c code {', '.join(concerns)}")
        return ShellVerdict(
            cmd,
            allowed=True,
            risk=RiskLevel.MEDIUM,
            argv=tuple(argv),
            reasons=("python3 -c runs arbitrary code (sandboxed)",),
        )
    return ShellVerdict(cmd, allowed=True, risk=RiskLevel.LOW, argv=tuple(argv))

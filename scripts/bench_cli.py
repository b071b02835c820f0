#!/usr/bin/env python3
"""How long the ``omxfs`` and ``omx`` commands a person types take, against a yardstick measured in the same run.

    scripts/bench_cli.py [--repeat N] [--files N] [--dir DIR] [--tree SRC]

A command typed at a prompt should answer at once. The yardstick is what a person already waits for: a Python
program's start (``python -c pass``, this interpreter) plus ``git add -A && git commit -q`` of the same change
(10 changed files) in a scratch git repository. Each command runs as a new process of its entry point (``omxfs``,
``omx``, written as pip writes them for this interpreter, from the measured tree's pyproject.toml) on a real
workspace made with ``omxfs init`` and used as a store directory (nothing mounted): ``--help`` of both, ``omxfs
checkpoint`` after 10 files of the zone changed, and the read commands ``status``, ``checkpoints``, ``diff`` (those
10 files), ``log`` of a collaborative file and ``audit``.

Every round runs every command once, in the same order, the change made afresh before the checkpoint and before
the commit (untimed); the table gives each command's median over the rounds and its ratio to the yardstick's
median sum (the target: at most 1.5). The last line is one JSON object with the same figures. ``--tree SRC``
measures the code of another checkout (a ``git worktree`` of an older commit) through its own entry points: its
directory is put first on ``PYTHONPATH``. No assertion: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5
CHANGED = 10
#: the yardstick's two parts
PYTHON_START = "python -c pass"
GIT_COMMIT = f"git add -A && git commit ({CHANGED} files)"


def entry_point(name: str, tree: Path, scripts: Path) -> list[str]:
    """``name`` (``omxfs``, ``omx``) as ``tree``'s pyproject.toml declares it, written into ``scripts`` as pip writes
    a console script for this interpreter: so an older checkout is run through its own entry point."""
    import tomllib

    module, _, function = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["scripts"][name].partition(
        ":"
    )
    script = scripts / name
    script.write_text(
        f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\n"
        f"if __name__ == '__main__':\n    sys.exit({function}())\n"
    )
    script.chmod(0o755)
    return [str(script)]


#: the CPU seconds (user + system) of every process run so far: on a machine shared with other work, a
#: process's wall time includes its waits for a CPU, its CPU time does not
cpu_spent: list[float] = []


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds the process took from start to exit (its CPU seconds are appended to ``cpu_spent``); it must
    exit 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return took


def change(tree: Path, files: int, round_no: int) -> None:
    """Rewrite ``CHANGED`` of the ``files`` files (a different ten each round), as an edit would."""
    for n in range(CHANGED):
        index = (round_no * CHANGED + n) % files
        (tree / f"dir{index % 5}" / f"file{index}.txt").write_text(f"round {round_no}, file {index}\n" * 20)


def populate(tree: Path, files: int) -> None:
    for index in range(files):
        (tree / f"dir{index % 5}").mkdir(parents=True, exist_ok=True)
        (tree / f"dir{index % 5}" / f"file{index}.txt").write_text(f"first, file {index}\n" * 20)


class Bench:
    """A workspace (alice, bob; bob's zone of ``files`` files, checkpointed once; a collaborative file with two
    versions) and a git repository of the same files, in ``work``."""

    def __init__(self, work: Path, files: int, tree: Path | None) -> None:
        self.work, self.files = work, files
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")}
        self.env |= {"HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C.UTF-8"}
        if tree is not None:
            self.env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
        # byte-compiled first: with PYTHONDONTWRITEBYTECODE set (as here) a checkout without its cache would compile
        # every module on every run, and that, not the code, would be measured
        compileall.compile_dir(tree or ROOT, quiet=1, rx=re.compile(r"/(\.venv|build|node_modules|\.git)/"))
        self.ws = work / "ws"
        self.zone = self.ws / "agents" / "bob"
        self.repo = work / "repo"
        (work / "bin").mkdir()
        self.omxfs, self.omx = (entry_point(name, tree or ROOT, work / "bin") for name in ("omxfs", "omx"))
        run([*self.omxfs, "init", str(self.ws), "--agent", "alice", "--agent", "bob"], work, self.env)
        populate(self.zone, files)
        run([*self.omxfs, "checkpoint", str(self.ws), "--as", "bob", "-m", "first"], work, self.env)
        self._collaborative_file()
        self.repo.mkdir()
        populate(self.repo, files)
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        self.git = git
        for argv in (["git", "init", "-q"], [*git, "add", "-A"], [*git, "commit", "-q", "-m", "first"]):
            run(argv, self.repo, self.env)
        self.round_no = 0

    def _collaborative_file(self) -> None:
        """Two versions of ``plan.md``, written through the store as a mount would."""
        sys.path.insert(0, str(ROOT))
        from omxfs.store.workspace import Workspace

        ws = Workspace(self.ws)
        ws.collab.write("alice", "plan.md", b"first plan\n", expected_version=0, message="first")
        ws.collab.write("bob", "plan.md", b"second plan\n", expected_version=1, message="second")

    def commands(self) -> dict[str, Callable[[], float]]:
        """Each measured command: a function that prepares it (untimed) and returns its time."""
        ws, plan = str(self.ws), str(self.ws / "collaborative" / "current" / "plan.md")

        def timed(argv: list[str]) -> Callable[[], float]:
            return lambda: run(argv, self.work, self.env)

        def checkpoint() -> float:
            self.round_no += 1
            change(self.zone, self.files, self.round_no)
            return run([*self.omxfs, "checkpoint", ws, "--as", "bob"], self.work, self.env)

        def diff() -> float:  # the 10 files changed since the last checkpoint
            change(self.zone, self.files, self.round_no + 1)
            return run([*self.omxfs, "diff", ws, "bob"], self.work, self.env)

        def git_commit() -> float:
            change(self.repo, self.files, self.round_no)
            took = run([*self.git, "add", "-A"], self.repo, self.env)
            return took + run([*self.git, "commit", "-q", "-m", f"round {self.round_no}"], self.repo, self.env)

        return {
            PYTHON_START: timed([sys.executable, "-c", "pass"]),
            GIT_COMMIT: git_commit,
            "omxfs --help": timed([*self.omxfs, "--help"]),
            "omx --help": timed([*self.omx, "--help"]),
            f"omxfs checkpoint ({CHANGED} changed files)": checkpoint,
            f"omxfs diff ({CHANGED} changed files)": diff,
            "omxfs checkpoints": timed([*self.omxfs, "checkpoints", ws, "bob"]),
            "omxfs status WS": timed([*self.omxfs, "status", ws]),
            "omxfs log (2 versions)": timed([*self.omxfs, "log", plan]),
            "omxfs audit": timed([*self.omxfs, "audit", ws]),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="rounds (each runs every command once)")
    parser.add_argument("--files", type=int, default=100, help="files in the zone and the git repository")
    parser.add_argument("--dir", type=Path, help="where the scratch workspace and repository go (removed after)")
    parser.add_argument("--tree", type=Path, help="measure the code of this checkout instead of the installed one")
    args = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is the yardstick and is not installed")
    work = Path(tempfile.mkdtemp(prefix="bench-cli-", dir=args.dir))
    try:
        bench = Bench(work, max(args.files, CHANGED), args.tree.resolve() if args.tree else None)
        commands = bench.commands()
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, measure in commands.items():
                mark = len(cpu_spent)
                wall[name].append(measure())
                cpu[name].append(sum(cpu_spent[mark:]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(
        args,
        {name: statistics.median(t) for name, t in wall.items()},
        {n: statistics.median(t) for n, t in cpu.items()},
    )


def report(args: argparse.Namespace, wall: dict[str, float], cpu: dict[str, float]) -> None:
    """The table (milliseconds, and each command's ratio to the yardstick: wall time, then CPU time), then one
    JSON line with the same figures."""
    yardstick = {"wall": wall[PYTHON_START] + wall[GIT_COMMIT], "cpu": cpu[PYTHON_START] + cpu[GIT_COMMIT]}
    measured = [name for name in wall if name not in (PYTHON_START, GIT_COMMIT)]
    ratios = {name: wall[name] / yardstick["wall"] for name in measured}
    cpu_ratios = {name: cpu[name] / yardstick["cpu"] for name in measured}
    width = max(map(len, wall)) + 2
    print(f"{'command':{width}}{'wall ms':>8}  {'/ yardstick':>11}  {'CPU ms':>7}  {'/ yardstick':>11}")
    for name in (PYTHON_START, GIT_COMMIT):
        print(f"{name:{width}}{wall[name] * 1000:8.1f}  {'':11}  {cpu[name] * 1000:7.1f}")
    both = f"{yardstick['wall'] * 1000:8.1f}  {'1.00':>11}  {yardstick['cpu'] * 1000:7.1f}  {'1.00':>11}"
    print(f"{'yardstick (their sum)':{width}}{both}")
    for name in measured:
        mark = "" if ratios[name] <= TARGET else f"  over {TARGET}"
        print(
            f"{name:{width}}{wall[name] * 1000:8.1f}  {ratios[name]:11.2f}  {cpu[name] * 1000:7.1f}  "
            f"{cpu_ratios[name]:11.2f}{mark}"
        )
    print(
        json.dumps(
            {
                "repeat": args.repeat,
                "tree": str(args.tree or ROOT),
                "median_ms": {name: round(m * 1000, 1) for name, m in wall.items()},
                "cpu_median_ms": {name: round(m * 1000, 1) for name, m in cpu.items()},
                "yardstick_ms": round(yardstick["wall"] * 1000, 1),
                "cpu_yardstick_ms": round(yardstick["cpu"] * 1000, 1),
                "ratios": {name: round(r, 2) for name, r in ratios.items()},
                "cpu_ratios": {name: round(r, 2) for name, r in cpu_ratios.items()},
                "target": TARGET,
            }
        )
    )


if __name__ == "__main__":
    main()

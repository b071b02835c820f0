#!/usr/bin/env python3
"""What a branch of an agent's zone costs, each measure against a baseline measured in the same run.

    scripts/bench_branches.py [--repeat N] [--branches N] [--files N] [--quick] [--start-only] [--dir DIR]

``omxfs run WS --as NAME --branch B -- CMD`` runs CMD in a view whose writes to NAME's zone land in a kernel
overlay's upper layer, the branch, and ``omxfs accept WS NAME --branch B`` applies it (docs/review.md). Every round
runs each measure and its baseline back to back, in the other order the next round, on a scratch workspace whose
agent is ``bench`` (removed at the end, Ctrl-C included). Views need root here, as ``omxfs run``'s tests do; the
script runs in a mount namespace of its own, where its setup measure mounts overlays as a root launcher does.

1. Starting a branch (target: at most 5 ms more than a plain view of the same zone), two ways:
   - ``branch setup, isolated``: timed in this process, what a branch run does and a plain run does not, with the
     functions ``omxfs.view.launch.run`` calls: the check that no plain view runs, the branch's layers and record,
     its running lock (``branch setup: the launcher's steps``), and the overlay's mount in this process's own mount
     namespace, as a root launcher mounts it (``review_mount.py``), then an exec of ``true`` in place of bubblewrap
     (``branch setup: the overlay's mount``), against a plain run's pending-branch check and an exec of ``true``;
   - ``omxfs run --branch: start to command``: from just before the ``omxfs run --branch`` process is started to
     its command's first instruction (bash's ``$EPOCHREALTIME``), against the same for a plain ``omxfs run`` of the
     zone. This is the whole start, so the difference carries the noise of two view starts of hundreds of ms.
2. Work in a branch (target: at most 1.1x native): ``bench_real.py``'s ``tar_x`` (the interpreter's standard
   library, some 2,400 files), ``git_commit`` of that tree and ``venv_pip`` (a venv and ``pip install --no-index``
   of local wheels), the same scripts, timed by bash around each command, in a new branch of the zone per part
   against a plain directory of the same filesystem. The inputs lie in the zone: the overlay's lower layer.
3. Accepting a branch of 10 changed files (target: at most 1.5x git): ``omxfs accept`` (a new process: its
   checkpoint of the zone, the change applied) against ``git checkout BRANCH -- PATHS && git commit`` of the same
   change in a git repository of the same files. Also shown against Python's start plus git, the yardstick of
   ``bench_cli.py``: a command that is a Python program starts no faster.
4. Branches at once (target: each one's work at most 1.2x its work alone): ``--branches`` views of the zone, each
   its own branch, wait at a barrier, then do ``tar_x`` and ``git_commit`` at the same moment; the slowest one's
   time (bash's clock) and CPU seconds (bash's ``times``), the median over rounds, against the same work in one
   branch alone. On a machine with fewer CPUs than branches the wall time cannot meet the target when the work
   needs a CPU: the CPU seconds show what the branches cost each other beyond sharing the CPUs.
   Memory of a running branch: the PSS (``/proc/PID/smaps_rollup``) summed over the launcher (its FUSE daemon is a
   thread of it) and every process below it (cleanup helper, fusermount3, bwrap, the command), read while the
   command waits at a barrier, against the same for a plain view; the kernel's overlay and page cache are not in
   it.

``--start-only`` runs part 1 alone (the other parts take minutes a round).

Reported: each measure's median over the rounds and its baseline's, their difference and ratio, the median of the
per-round ratios (``paired``: a round's two figures share that moment's load) and the target, met or missed by the
medians; then one JSON line with the same figures (``measures``) and every round's (``samples``). No assertion: a
benchmark. The machine's load (printed before and after) moves every figure.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_real  # siblings, importable once their directory is on the path
from bench_real_inputs import Inputs, make_inputs

ROOT = Path(__file__).resolve().parents[1]
AGENT = "bench"
CHANGED = 10
SETUP_EXTRA_MS, WORK_RATIO, ACCEPT_RATIO, AT_ONCE_RATIO = 5.0, 1.1, 1.5, 1.2
WORKLOADS = ("tar_x", "git_commit", "venv_pip")
AT_ONCE_WORK = ("tar_x", "git_commit")
TIMEOUT_S = 600
#: what every view waits on: a FIFO this script holds open, one line a reader
BARRIERS = ("go", "end")
MARK = "@bench"


def entry_point() -> list[str]:
    """The installed ``omxfs`` beside this interpreter, as a person runs it (else the module)."""
    installed = Path(sys.executable).with_name("omxfs")
    return [str(installed)] if installed.is_file() else [sys.executable, "-m", "cli.omxfs"]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds the process took from start to exit; it must exit 0."""
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return took


# -- memory ---------------------------------------------------------------------------------------------------------


def process_tree(root: int) -> list[int]:
    """``root`` and every process below it, by the parents ``/proc/PID/stat`` names."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(text.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def tree_pss_mb(root: int) -> float:
    """The PSS of ``root``'s process tree, in MiB (shared pages split between their sharers)."""
    kib = 0
    for pid in process_tree(root):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    kib += int(line.split()[1])
    return kib / 1024


# -- views waiting at barriers ---------------------------------------------------------------------------------------


class Views:
    """Views started by this script, each a launcher whose command reads one line from a barrier (a FIFO under
    ``control``, bound into the view) before it goes on; ``release`` writes the lines. ``close`` ends every launcher
    still running: SIGTERM to its group (forwarded into its view), then SIGKILL."""

    def __init__(self, control: Path) -> None:
        self.control = control
        self.fds = {}
        for name in BARRIERS:
            os.mkfifo(control / name, 0o666)
            self.fds[name] = os.open(control / name, os.O_RDWR | os.O_CLOEXEC)  # never blocks; keeps lines buffered
        self.running: list[subprocess.Popen[str]] = []
        self.argv: dict[int, str] = {}

    def barrier(self, name: str) -> str:
        return f"read -r _ < {shlex.quote(str(self.control / name))}"

    def release(self, name: str, readers: int) -> None:
        os.write(self.fds[name], b"\n" * readers)

    def start(self, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], float]:
        """The launcher, started now, and the clock (``time.time()``, bash's ``$EPOCHREALTIME``'s) just before."""
        started = time.time()
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        self.running.append(proc)
        self.argv[proc.pid] = shlex.join(argv)
        return proc, started

    def read_until(self, proc: subprocess.Popen[str], word: str) -> list[str]:
        """The lines the view's command prints up to the one that is ``word``; the launcher's stderr if it ends
        first."""
        assert proc.stdout is not None
        lines = []
        while (line := proc.stdout.readline()) != f"{word}\n":
            if not line:
                self.release("go", 64)
                self.release("end", 64)
                _, err = proc.communicate(timeout=TIMEOUT_S)
                raise SystemExit(f"{self.argv[proc.pid]}: exit {proc.returncode} before {word!r}\n{err}")
            lines.append(line.rstrip("\n"))
        return lines

    def finish(self, proc: subprocess.Popen[str]) -> None:
        _, err = proc.communicate(timeout=TIMEOUT_S)
        self.running.remove(proc)
        if proc.returncode != 0:
            raise SystemExit(f"{self.argv[proc.pid]}: exit {proc.returncode}\n{err}")

    def close(self) -> None:
        for proc in self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for fd in self.fds.values():
            os.close(fd)


# -- the bench -------------------------------------------------------------------------------------------------------


@dataclass
class Samples:
    """Every round's figure of a measure and of its baseline."""

    unit: str
    baseline_name: str
    target: tuple[str, float] | None  # ("extra", ms) or ("ratio", x); None: shown for what it tells
    value: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)


class Bench:
    """Two workspaces of agent ``bench`` in ``work``: ``ws`` (the inputs in its zone: starts, work, branches at
    once) and ``ws-accept`` (``files`` files in its zone, and a git repository of the same files); a plain
    directory ``native`` with the inputs beside it."""

    def __init__(self, work: Path, args: argparse.Namespace) -> None:
        self.work, self.files, self.count = work, args.files, args.branches
        self.omxfs = entry_point()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OMX_")} | {"HOME": str(work)}
        # byte-compiled first: a checkout without its cache would compile modules in every measured process
        compileall.compile_dir(ROOT, quiet=1, rx=re.compile(r"/(\.venv|build|node_modules|\.git)/"))
        self.inputs: Inputs = make_inputs(work / "inputs", args.quick)
        self.ws, self.accept_ws = work / "ws", work / "ws-accept"
        for ws in (self.ws, self.accept_ws):
            run([*self.omxfs, "init", str(ws), "--agent", AGENT], work, self.env)
        self.zone, self.accept_zone = self.ws / "agents" / AGENT, self.accept_ws / "agents" / AGENT
        shutil.copytree(self.inputs.directory, self.zone / "inputs", symlinks=True)
        self.native = work / "native"
        shutil.copytree(self.inputs.directory, self.native / "inputs", symlinks=True)
        self.repo = work / "repo"
        self.git_env = self.env | bench_real.ENVIRONMENT
        for tree in (self.accept_zone, self.repo):
            for index in range(self.files):
                path = tree / self.path(index)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"first, file {index}\n" * 20)
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "first"]):
            run(argv, self.repo, self.git_env)
        for ws in (self.ws, self.accept_ws):  # the zone as every view start finds it: checkpointed already
            run([*self.omxfs, "checkpoint", str(ws), "--as", AGENT, "-m", "first"], work, self.env)
        self.control = work / "control"
        self.control.mkdir()
        base = Path(sys.base_prefix).resolve()  # the interpreter venv_pip runs, outside /usr with pyenv
        self.binds = ["--bind", str(self.control), *([] if base.is_relative_to("/usr") else ["--ro-bind", str(base)])]
        self.samples = measures(self.count)

    @staticmethod
    def path(index: int) -> str:
        return f"files/dir{index % 5}/file{index}.txt"

    def sample(self, name: str, value: float, baseline: float) -> None:
        self.samples[name].value.append(value)
        self.samples[name].baseline.append(baseline)

    def view_prefix(self, ws: Path, branch: str | None) -> list[str]:
        """``omxfs run WS --as bench [--branch B] --bind CONTROL [--ro-bind PYTHON] --``"""
        named = ["--branch", branch] if branch else []
        return [*self.omxfs, "run", str(ws), "--as", AGENT, *named, *self.binds, "--"]

    def view_argv(self, ws: Path, branch: str | None, script: str) -> list[str]:
        return [*self.view_prefix(ws, branch), "bash", "-c", script]

    def discard_if_pending(self, ws: Path, branch: str) -> None:
        if (ws / ".omxfs" / "branches" / AGENT / branch).is_dir():
            run([*self.omxfs, "discard", str(ws), AGENT, "--branch", branch, "--as", AGENT], self.work, self.env)

    # -- 1. starting a branch

    def setup_isolated(self, number: int) -> None:
        """A branch's own steps, as ``omxfs.view.launch.run`` takes them before its view starts, timed here: the
        check that no plain view of the zone runs (before the branch is made, and again once its lock is held), the
        branch's layers and record, its running lock, then the overlay's mount and ``true`` for bubblewrap."""
        from omxfs.checkpoints.branches import REVIEW, hold_running, running_pid
        from omxfs.checkpoints.review import Review, pending_branches
        from omxfs.checkpoints.views import running_views
        from omxfs.store.workspace import Workspace
        from omxfs.view.review_mount import Overlay

        true = shutil.which("true") or "/bin/true"
        ws = Workspace(self.ws)
        real = Path(os.path.realpath(self.ws))

        def alone() -> None:
            siblings = {running_pid(branch.dir) for branch in pending_branches(ws, AGENT)}
            if [pid for pid in running_views(ws.meta, AGENT) if pid not in siblings]:
                raise SystemExit(f"a plain view of {AGENT} runs: the benchmark's own views should all have ended")

        def branch() -> tuple[float, float]:
            """Seconds of the launcher's own steps, then of the overlay's mount and an exec of ``true``."""
            started = time.perf_counter()
            pending = Review(ws, AGENT, f"s{number}")
            alone()
            pending.prepare()
            with hold_running(pending.dir, pending.called):
                alone()
                upper, work, merged = (
                    str(real / p.relative_to(ws.root)) for p in (pending.upper, pending.work, pending.merged)
                )
                overlay = Overlay(str(real / "agents" / AGENT), upper, work, merged)
                zone_fd = os.open(self.zone, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                steps = time.perf_counter() - started
                try:
                    started = time.perf_counter()
                    root = overlay.mount(zone_fd)
                    try:
                        subprocess.run([true], pass_fds=(root,), check=True)
                        mount = time.perf_counter() - started
                    finally:
                        os.close(root)
                        overlay.unmount()
                finally:
                    os.close(zone_fd)
            shutil.rmtree(pending.dir)  # a branch that never ran: nothing to discard
            return steps, mount

        def plain() -> tuple[float, float]:
            """Seconds of a plain launcher's check, then of an exec of ``true``."""
            started = time.perf_counter()
            Review(ws, AGENT, REVIEW).refuse_plain_run()
            steps = time.perf_counter() - started
            started = time.perf_counter()
            subprocess.run([true], check=True)
            return steps, time.perf_counter() - started

        first, second = (branch, plain) if number % 2 else (plain, branch)
        times = {first: first(), second: second()}
        (steps, mount), (plain_steps, plain_exec) = times[branch], times[plain]
        self.sample("branch setup, isolated", (steps + mount) * 1000, (plain_steps + plain_exec) * 1000)
        self.sample("branch setup: the launcher's steps", steps * 1000, plain_steps * 1000)
        self.sample("branch setup: the overlay's mount", mount * 1000, plain_exec * 1000)

    def start_to_command(self, views: Views, number: int) -> None:
        """A plain view and a branch view of the same zone, one after the other; each one's time to its command and
        its memory while the command waits."""
        script = f'echo "$EPOCHREALTIME"; echo up; {views.barrier("go")}'
        ms: dict[str, float] = {}
        mb: dict[str, float] = {}
        for kind in ("plain", "branch") if number % 2 else ("branch", "plain"):
            proc, started = views.start(
                self.view_argv(self.ws, f"t{number}" if kind == "branch" else None, script), self.work, self.env
            )
            (clock,) = views.read_until(proc, "up")
            ms[kind] = (float(clock) - started) * 1000
            mb[kind] = tree_pss_mb(proc.pid)
            views.release("go", 1)
            views.finish(proc)
            self.discard_if_pending(self.ws, f"t{number}")
        self.sample("omxfs run --branch: start to command", ms["branch"], ms["plain"])
        self.sample("memory of a branch's processes, alone", mb["branch"], mb["plain"])

    # -- 2. work in a branch

    def work_round(self, number: int) -> None:
        parts = bench_real.round_parts(list(WORKLOADS), True, self.inputs)
        for part, steps in parts.items():
            times: dict[str, dict[str, float]] = {}
            for kind in ("native", "branch") if number % 2 else ("branch", "native"):
                name = f"w{number}-{part}"
                root = self.zone if kind == "branch" else self.native
                place = bench_real.Place(root, tuple(self.view_prefix(self.ws, name)) if kind == "branch" else ())
                script = bench_real.round_script(root, f"r{number}-{part}", steps)
                try:
                    times[kind], _, _ = bench_real.run_part(place, script, self.work / f"{kind}.log")
                except RuntimeError as exc:  # the script or its view failed: what it printed, not a traceback
                    raise SystemExit(f"{part} work ({kind}): {exc}") from None
                self.discard_if_pending(self.ws, name)
            for workload in times["branch"]:
                self.sample(
                    f"{workload} in a branch", times["branch"][workload] * 1000, times["native"][workload] * 1000
                )

    # -- 3. accepting a branch

    def accept_round(self, number: int) -> None:
        name = f"a{number}"
        paths = [self.path((number * CHANGED + n) % self.files) for n in range(CHANGED)]
        text = f"round {number}\\n"
        change = "; ".join(f"printf '{text}' > {shlex.quote(p)}" for p in paths)  # untimed: the branch's work
        run(self.view_argv(self.accept_ws, name, change), self.accept_zone, self.env)
        run(["git", "checkout", "-q", "-b", name], self.repo, self.git_env)  # the same change, on a git branch
        for path in paths:
            (self.repo / path).write_text(f"round {number}\n")
        run(["git", "commit", "-q", "-a", "-m", name], self.repo, self.git_env)
        run(["git", "checkout", "-q", "-"], self.repo, self.git_env)

        def omx() -> float:
            return run(
                [*self.omxfs, "accept", str(self.accept_ws), AGENT, "--branch", name, "--as", AGENT],
                self.work,
                self.env,
            )

        def git() -> float:
            took = run(["git", "checkout", name, "--", *paths], self.repo, self.git_env)
            return took + run(["git", "commit", "-q", "-m", f"accept {name}"], self.repo, self.git_env)

        def python() -> float:
            return run([sys.executable, "-c", "pass"], self.work, self.env)

        order = (omx, git, python) if number % 2 else (python, git, omx)
        times = {measure: measure() for measure in order}
        label = f"omxfs accept ({CHANGED} changed files)"
        self.sample(label, times[omx] * 1000, times[git] * 1000)
        self.sample(
            "omxfs accept, against python's start + git", times[omx] * 1000, (times[git] + times[python]) * 1000
        )

    # -- 4. branches at once

    def at_once(self, views: Views, number: int, count: int) -> tuple[list[tuple[float, float]], list[float]]:
        """``count`` branches, each doing the work once all are up: each one's (seconds, CPU seconds), and its
        memory while it waits at the end."""
        here = f"c{number}-{count}"
        steps = "; ".join(bench_real.COMMANDS[w] for w in AT_ONCE_WORK)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in bench_real.ENVIRONMENT.items())
        script = (
            f"set -eu; export {exports}; cd {shlex.quote(str(self.zone))}; mkdir {here}; cd {here}; echo up; "
            f"{views.barrier('go')}; echo {MARK} $EPOCHREALTIME; times; {steps}; echo {MARK} $EPOCHREALTIME; times; "
            f"echo done; {views.barrier('end')}; cd ..; rm -rf {here}"
        )
        names = [f"o{number}-{count}-{k}" for k in range(count)]
        procs = [views.start(self.view_argv(self.ws, name, script), self.work, self.env)[0] for name in names]
        for proc in procs:
            views.read_until(proc, "up")
        views.release("go", count)
        outputs = [views.read_until(proc, "done") for proc in procs]
        memory = [tree_pss_mb(proc.pid) for proc in procs]
        views.release("end", count)
        for proc in procs:
            views.finish(proc)
        for name in names:
            self.discard_if_pending(self.ws, name)
        return [work_times(lines) for lines in outputs], memory

    def at_once_round(self, views: Views, number: int) -> None:
        counts = (1, self.count) if number % 2 else (self.count, 1)
        results = {count: self.at_once(views, number, count) for count in counts}
        (alone,), _ = results[1]
        together, memory = results[self.count]
        n = self.count
        self.sample(f"{n} at once: slowest one's work", max(w for w, _ in together) * 1000, alone[0] * 1000)
        self.sample(f"{n} at once: slowest one's CPU", max(c for _, c in together) * 1000, alone[1] * 1000)
        self.sample(
            f"memory of each of {n} branches at once",
            statistics.median(memory),
            self.samples["memory of a branch's processes, alone"].baseline[-1],
        )


def work_times(lines: list[str]) -> tuple[float, float]:
    """(seconds, CPU seconds of the children) between the two marks of a view's output: each mark is followed by
    bash's ``times``, whose second line is its children's user and system time (``0m1.234s 0m0.056s``)."""
    marks = [i for i, line in enumerate(lines) if line.startswith(MARK)]
    clocks = [float(lines[i].split()[1]) for i in marks]
    cpu = [sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", lines[i + 2])) for i in marks]
    return clocks[1] - clocks[0], cpu[1] - cpu[0]


def measures(count: int) -> dict[str, Samples]:
    """Every measure, in the order of the table, with its baseline and its target."""
    return {
        "branch setup, isolated": Samples("ms", "a plain run's check, exec of true", ("extra", SETUP_EXTRA_MS)),
        "branch setup: the launcher's steps": Samples("ms", "a plain run's check", None),
        "branch setup: the overlay's mount": Samples("ms", "exec of true", None),
        "omxfs run --branch: start to command": Samples("ms", "omxfs run: start to command", ("extra", SETUP_EXTRA_MS)),
        **{f"{w} in a branch": Samples("ms", f"{w}, native", ("ratio", WORK_RATIO)) for w in WORKLOADS},
        f"omxfs accept ({CHANGED} changed files)": Samples(
            "ms", "git checkout BR -- PATHS + git commit", ("ratio", ACCEPT_RATIO)
        ),
        "omxfs accept, against python's start + git": Samples("ms", "python -c pass + the same git", None),
        f"{count} at once: slowest one's work": Samples("ms", "one branch's work alone", ("ratio", AT_ONCE_RATIO)),
        f"{count} at once: slowest one's CPU": Samples("ms", "one branch's CPU alone", None),
        "memory of a branch's processes, alone": Samples("MiB", "a plain view's", None),
        f"memory of each of {count} branches at once": Samples("MiB", "a plain view's", None),
    }


def warm_up(bench: Bench, views: Views, work: bool) -> None:
    """One round of the work in a plain directory (if ``work``) and one view start, untimed: the first run of git,
    python, bwrap and omxfs reads them from disk, and no measure should pay for that."""
    parts = bench_real.round_parts(list(WORKLOADS), True, bench.inputs) if work else {}
    for part, steps in parts.items():
        script = bench_real.round_script(bench.native, f"warm-up-{part}", steps)
        bench_real.run_part(bench_real.Place(bench.native), script, bench.work / "warm-up.log")
    proc, _ = views.start(bench.view_argv(bench.ws, None, "echo up"), bench.work, bench.env)
    views.read_until(proc, "up")
    views.finish(proc)


def one_round(bench: Bench, views: Views, number: int, start_only: bool) -> None:
    steps: list[tuple[str, Callable[[], None]]] = [
        ("branch setup", lambda: bench.setup_isolated(number)),
        ("start to command", lambda: bench.start_to_command(views, number)),
    ]
    if not start_only:
        steps += [
            ("accept", lambda: bench.accept_round(number)),
            ("work", lambda: bench.work_round(number)),
            ("branches at once", lambda: bench.at_once_round(views, number)),
        ]
    for what, step in steps:
        started = time.perf_counter()
        step()
        print(f"round {number}: {what} ({time.perf_counter() - started:.1f} s)", file=sys.stderr, flush=True)


# -- the report ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    unit: str
    value: float
    baseline_name: str
    baseline: float
    target: tuple[str, float] | None
    #: the median over the rounds of each round's value / baseline: paired against a load that moves between rounds
    paired: float

    @property
    def extra(self) -> float:
        return self.value - self.baseline

    @property
    def ratio(self) -> float:
        return self.value / self.baseline

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        kind, limit = self.target
        return f"+{limit:g} {self.unit}" if kind == "extra" else f"{limit:g}x"

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        kind, limit = self.target
        return (self.extra if kind == "extra" else self.ratio) <= limit


def rows(samples: dict[str, Samples]) -> list[Row]:
    return [
        Row(
            name,
            s.unit,
            statistics.median(s.value),
            s.baseline_name,
            statistics.median(s.baseline),
            s.target,
            statistics.median(v / b for v, b in zip(s.value, s.baseline, strict=True)),
        )
        for name, s in samples.items()
        if s.value  # a part not run (--start-only) has none
    ]


def report(args: argparse.Namespace, table: list[Row], samples: dict[str, Samples], load: list[float]) -> None:
    """The table (medians over the rounds), then one JSON line with the same figures and every round's."""
    width = max(len(row.name) for row in table) + 2
    base_width = max(len(row.baseline_name) for row in table) + 2
    print(
        f"{'measure':{width}}{'median':>9}     {'baseline':{base_width}}{'median':>9}  {'extra':>9}  {'ratio':>6}  "
        f"{'paired':>6}  {'target':>8}"
    )
    for row in table:
        verdict = {None: "", True: "  met", False: "  MISSED"}[row.met]
        print(
            f"{row.name:{width}}{row.value:9.1f} {row.unit:3} {row.baseline_name:{base_width}}{row.baseline:9.1f}  "
            f"{row.extra:+9.1f}  {row.ratio:6.2f}  {row.paired:6.2f}  {row.target_text:>8}{verdict}"
        )
    print(
        f"{args.repeat} round(s), {args.branches} branches at once, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} before, {load[1]:.2f} after; memory is PSS (/proc/PID/smaps_rollup) summed over each "
        "launcher's process tree"
    )
    print(
        json.dumps(
            {
                "repeat": args.repeat,
                "quick": args.quick,
                "branches": args.branches,
                "files": args.files,
                "cpus": os.cpu_count(),
                "load_before": round(load[0], 2),
                "load_after": round(load[1], 2),
                "memory": "PSS of each launcher's process tree, MiB",
                "measures": {
                    row.name: {
                        "unit": row.unit,
                        "value": round(row.value, 1),
                        "baseline_name": row.baseline_name,
                        "baseline": round(row.baseline, 1),
                        "extra": round(row.extra, 1),
                        "ratio": round(row.ratio, 2),
                        "paired_ratio": round(row.paired, 2),
                        "target": row.target_text if row.target else None,
                        "met": row.met,
                    }
                    for row in table
                },
                "samples": {
                    name: {"value": [round(v, 1) for v in s.value], "baseline": [round(v, 1) for v in s.baseline]}
                    for name, s in samples.items()
                    if s.value
                },
            }
        )
    )


# -- main ------------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--repeat", type=int, help="rounds; each figure is the median of its rounds (default 5; 1 with --quick)"
    )
    parser.add_argument("--branches", type=int, help="branches at once (default 8; 2 with --quick)")
    parser.add_argument(
        "--files",
        type=int,
        help="files in the zone and the git repository of the accept (default 100; 20 with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small inputs (three stdlib packages, a venv without pip), fewer rounds, branches and files: a smoke test",
    )
    parser.add_argument(
        "--start-only", action="store_true", help="only part 1, starting a branch (its setup, and start to command)"
    )
    parser.add_argument("--dir", type=Path, help="where the scratch directory goes (default: the system temp dir)")
    args = parser.parse_args(argv)
    quick = args.quick
    args.repeat = args.repeat if args.repeat is not None else (1 if quick else 5)
    args.branches = args.branches if args.branches is not None else (2 if quick else 8)
    args.files = args.files if args.files is not None else (20 if quick else 100)
    if args.repeat < 1 or args.branches < 2:
        parser.error("--repeat: at least 1; --branches: at least 2")
    if args.files < CHANGED * 2:
        parser.error(f"--files: at least {CHANGED * 2}")
    return args


def refusal() -> str | None:
    """Why this machine or user cannot run the benchmark, or None."""
    if os.geteuid() != 0:
        return (
            "bench_branches.py needs root, as omxfs run's views do here: run it as root (sudo "
            f"{sys.executable} {sys.argv[0]}); it reads the memory of other users' processes too"
        )
    missing = [tool for tool in ("git", "bwrap", "tar") if shutil.which(tool) is None]
    return f"bench_branches.py needs {', '.join(missing)}: not installed" if missing else None


def leave(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    began = time.perf_counter()
    args = parse_args(argv)
    if why := refusal():
        raise SystemExit(why)
    from omxfs.view import namespaces

    namespaces.private_mounts()  # the overlays the setup's measure mounts stay this process's, as a launcher's do
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)  # the views are ended and the scratch directory removed, as on Ctrl-C
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-branches-", dir=args.dir)).resolve()
    load = [os.getloadavg()[0]]
    try:
        bench = Bench(work, args)
        print(f"set up in {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
        views = Views(bench.control)
        try:
            if not args.quick:
                warm_up(bench, views, not args.start_only)
            for number in range(1, args.repeat + 1):
                one_round(bench, views, number, args.start_only)
        finally:
            views.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load.append(os.getloadavg()[0])
    print(f"done in {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    report(args, rows(bench.samples), bench.samples, load)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the views have ended and the scratch directory is removed by then
        raise SystemExit("bench_branches.py: interrupted") from None

"""Real developer work, timed on a native directory, through FUSE's yardsticks, through omx and inside a view.

``bench_fs.py`` times single system calls; agents run git, tar, grep, pip and compilers, whose request patterns
(lookup and getattr storms, xattr probes on every write, whole-tree removals) it does not show. This script runs
that work, the same shell commands in the same order, on every target in one run, so the ratios compare work done
under the same machine load:

- ``native``: a plain directory;
- ``passthrough_ll`` and ``pyfuse3_floor``: libfuse's C example and the do-nothing pyfuse3 + trio daemon, each over
  a plain directory of its own, mounted exactly as ``bench_fs.py`` mounts them (its docstring says why they are the
  yardsticks: the limit of FUSE, and the floor of the binding);
- ``pyfuse3_floor_xattr``: the floor with xattrs (``pyfuse3_floor.py --xattr``, as passthrough_ll's ``-o xattr``):
  it receives the xattr requests omx must answer and the other two refuse once with ENOSYS, the kernel's
  ``security.capability`` before every write among them;
- ``omx``: the private zone ``agents/bench/`` of a fresh workspace mounted with ``omxfs mount WS MNT --as bench``;
- ``view``: ``agents/bench/`` of a fresh (unmounted) workspace seen from inside ``omxfs run WS --as bench --
  bash -c SCRIPT``, where it is the store's own directory bound into the view; the interpreter's
  prefix is added with ``--ro-bind`` when it lies outside ``/usr`` (pyenv). Where ``omxfs run --help`` fails (an
  older tree), one line says the view is skipped and the rest runs;
- ``review``: the same view started with ``--review``: ``agents/bench/`` is a kernel overlay whose
  upper layer, under the store's ``.omxfs/reviews/bench/``, holds the run's changes apart; each round's script
  continues the same pending change, discarded (``omxfs discard``) at the end, untimed. Skipped, in one line,
  where ``omxfs run`` has no ``--review``.

The workloads, in this order, in a fresh directory per round (what the issues 14 and 16 name):

- ``tar_x``: ``tar --no-same-owner -xf`` of a source tree: the interpreter's standard library, about 2,400 files
  (``bench_real_inputs.py`` says which; ``--small``: three packages of it);
- ``git_commit``: ``git init -q && git add -A && git commit -q -m x`` in that tree;
- ``git_status``: ``git status`` right after the commit, then ``git_status_later``: again after sleeping 1.2 s
  (untimed), when the kernel's entry and attribute caches of 1 s have expired;
- ``grep_r``: ``grep -r import`` over the tree, ``.git`` included;
- ``cp_a_git``: ``cp -a`` of the tree's ``.git`` directory beside it;
- ``rm_rf``: ``rm -rf`` of the tree (the copy of ``.git`` is removed afterwards, untimed);
- ``make_j2``: ``make -j2`` of a generated C project of 60 units, copied into the round's directory untimed;
- ``venv_pip``: ``python -m venv venv`` (pip included, from ``ensurepip``: some 1,600 files) and ``venv/bin/python
  -m pip install --no-index --find-links`` of three local wheels. It takes seconds even natively, so it runs in
  the first ``--venv-rounds`` rounds only (default 1); the others run in all ``--repeat`` rounds (default 3).
  ``--small`` makes the venv ``--without-pip`` and runs pip from ensurepip's wheel (``bench_real_inputs.py``), so
  a smoke test stays short.

What is reported: each time is the best of its rounds. Where the load of a shared machine moves during a run, the
best of a few runs of a long workload (the venv's 5 s) can still land in a quiet moment for one target and not for
the other; a round runs every target back to back, so the ratio of two targets' times *in the same round* is
paired against that drift, and the median of those per-round ratios (``median_round_ratio_vs_native``, where a
workload ran in at least two rounds) tells a real difference from noise better than the ratio of two bests.

How it is timed: a round has three independent parts (the tree's workloads, make, the venv), each ONE bash script
run in a new directory of the target (``bash -c SCRIPT``, or ``omxfs run ... -- bash -c SCRIPT`` for the view) that
it removes at its end, untimed. The script reads bash's ``$EPOCHREALTIME`` (no process started to read the clock)
right before and right after each workload's command, and prints both. So only the command itself is timed, inside
the view too: never the view's start, never the untimed preparation between workloads (a ``sync`` starts each
script, so no other target's writeback lands in its times). Every target is mounted before the first round, and
each round goes through all of them in turn, starting one target later than the round before, after one untimed
warm-up round in a plain directory (the first run of git, gcc and python reads them from disk): the load of a
shared machine spreads over every target instead of landing on one. A target that fails keeps the figures it has.

The inputs (``tree.tar``, the wheels, the C project) are made once per run outside the targets, then copied
(untimed) into each target's directory, so every target reads its input through itself, as a developer's download
would be; the view's copy goes straight into the store's ``agents/bench/``, which is what the view shows. Git's
settings (``safe.directory=*``, an author) and pip's offline ones are exported by the script itself, so nothing of
the caller's configuration (or of the view's empty home) changes the work.

Output: progress on stderr; a table of seconds (workload x target), the ratios of every target to ``native``,
``passthrough_ll``, ``pyfuse3_floor`` and ``pyfuse3_floor_xattr`` and the median per-round ratios to ``native`` on
stdout, then ONE JSON line: ``seconds`` ({workload: {target: s}}), ``ratio_vs_native``, ``ratio_vs_passthrough_ll``,
``ratio_vs_pyfuse3_floor``, ``ratio_vs_pyfuse3_floor_xattr`` ({target: {workload: ratio}}),
``median_round_ratio_vs_native`` (the same shape; ``null`` for a workload timed in fewer than two rounds),
``samples`` ({workload: {target: [s, one a round]}}), ``goals`` (the view within 1.1x of native on every
workload; the review view within 1.1x of native on every workload; omx within 1.5x of
passthrough_ll, and within 1.2x of pyfuse3_floor where the floor itself is over 1.5x passthrough_ll; ``null``
when a side did not run), ``requests`` ({target: {workload: {operation: count}}}
of the last round, for omx, whose daemon counts its requests: the script reads the mount root's xattr
``user.omx.requests`` with ``getfattr`` right outside each timed command, so a count may include a request of
``getfattr`` itself; ``null`` for the other targets; also printed as a table after the ratios), ``daemon_cpu``
({workload: {target: CPU seconds}}: the user and system time of each FUSE daemon during the command, every thread,
read by the script from ``/proc/PID/stat`` outside the timed reads; the least of the rounds; ``null`` for native and
the view, which have no daemon; printed with its ratio to the floor's: the daemon is what limits this work, and its
CPU time moves far less with the machine's load than the seconds do), ``options`` (how each target ran), ``params``
(rounds, inputs, load average before and after) and ``skipped`` and ``failed`` ({target: why}). Exits 1 if a target
failed, 0 otherwise (a missed goal is not a failure).
Mounts are unmounted on every exit, Ctrl-C and SIGTERM included; the run directory is removed unless ``--keep``.

    .venv/bin/python scripts/bench_real.py
        [--targets native,passthrough_ll,pyfuse3_floor,pyfuse3_floor_xattr,omx,view]
        [--workloads tar_x,git_commit,...] [--repeat 3] [--venv-rounds 1] [--small] [--keep] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fs  # siblings, importable once their directory is on the path
from bench_real_inputs import GREP_WORD, Inputs, make_inputs

from omxfs.store.layout import REQUESTS

TARGETS = ("native", "passthrough_ll", "pyfuse3_floor", "pyfuse3_floor_xattr", "omx", "view", "review")
BASES = ("native", "passthrough_ll", "pyfuse3_floor", "pyfuse3_floor_xattr")  # what ratios are taken against
#: the tree's workloads, in the order they run; each works on what the ones before it left
TREE = ("tar_x", "git_commit", "git_status", "git_status_later", "grep_r", "cp_a_git", "rm_rf")
WORKLOADS = (*TREE, "make_j2", "venv_pip")
#: what later tree workloads need even when not timed: the tree, and its repository
SETUP = ("tar_x", "git_commit")
COMMANDS = {
    "tar_x": "mkdir tree && tar --no-same-owner -xf ../inputs/tree.tar -C tree",
    "git_commit": "git -C tree init -q && git -C tree add -A && git -C tree commit -q -m x",
    "git_status": "git -C tree status >/dev/null",
    "git_status_later": "git -C tree status >/dev/null",
    "grep_r": f"grep -r {GREP_WORD} tree >/dev/null",
    "cp_a_git": "cp -a tree/.git git-copy",
    "rm_rf": "rm -rf tree",
    "make_j2": "make -s -j2 -C cproj >/dev/null",
}
STATUS_PAUSE_S = 1.2  # past the 1 s entry/attribute timeouts of passthrough_ll and pyfuse3_floor
VIEW_GOAL, PASSTHROUGH_GOAL, FLOOR_GOAL = 1.1, 1.5, 1.2
#: exported by every round's script: C locale (``$EPOCHREALTIME`` with a dot), git and pip configured here alone
ENVIRONMENT = {
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "safe.directory",  # a view may show the tree as owned by another uid
    "GIT_CONFIG_VALUE_0": "*",
    "GIT_CONFIG_KEY_1": "init.defaultBranch",
    "GIT_CONFIG_VALUE_1": "main",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "PIP_NO_CACHE_DIR": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
}
MARK = "@bench"
COUNTS = "@requests"
CPU = "@cpu"
CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")  # the unit of the CPU times in /proc/PID/stat
GRACE_S = 10.0  # for a script's processes to end on SIGTERM
#: the interpreter behind this one's venv: ``python -m venv`` of a venv's python would nest venvs
BASE_PYTHON = Path(sys.base_prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
log = bench_fs.log


class Skipped(Exception):
    """A target this tree cannot run (the view without ``omxfs run``): one line, not a failure."""


@dataclass(frozen=True)
class Step:
    workload: str | None  # None: preparation or clean-up, run but not timed
    command: str


@dataclass(frozen=True)
class Place:
    """Where a target's work runs: ``root`` as the script sees it, and what runs ``bash`` there."""

    root: Path
    wrap: tuple[str, ...] = ()
    #: a mount root whose ``user.omx.requests`` the script reads around each timed command (the omx daemon)
    counter: Path | None = None
    #: the FUSE daemon serving ``root``, whose CPU time the script reads around each timed command
    daemon_pid: int | None = None


@dataclass
class Results:
    workloads: list[str]
    targets: list[str]
    seconds: dict[str, dict[str, float | None]] = field(init=False)
    options: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    #: {target: {workload: {operation: requests}}} of the last round, for targets whose daemon counts them
    requests: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: {workload: {target: {round: seconds}}}: every time, so that targets can be compared round by round
    samples: dict[str, dict[str, dict[int, float]]] = field(init=False)
    #: {workload: {target: CPU seconds of its daemon (user + system, every thread)}}, the least of its rounds: a
    #: FUSE daemon is what limits this work, and its CPU time moves far less with the machine's load than seconds
    daemon_cpu: dict[str, dict[str, float | None]] = field(init=False)

    def __post_init__(self) -> None:
        self.seconds = {w: dict.fromkeys(self.targets) for w in self.workloads}
        self.samples = {w: {t: {} for t in self.targets} for w in self.workloads}
        self.daemon_cpu = {w: dict.fromkeys(self.targets) for w in self.workloads}

    def record_cpu(self, target: str, workload: str, seconds: float) -> None:
        best = self.daemon_cpu[workload][target]
        self.daemon_cpu[workload][target] = round(seconds if best is None else min(best, seconds), 3)

    def record(self, target: str, workload: str, seconds: float, number: int) -> None:
        best = self.seconds[workload][target]
        self.seconds[workload][target] = round(seconds if best is None else min(best, seconds), 4)
        self.samples[workload][target][number] = round(seconds, 4)
        log(f"  {target:15} {workload:17} {seconds:9.3f} s")


# -- the rounds -------------------------------------------------------------------------------------------------


def round_parts(selected: list[str], venv: bool, inputs: Inputs) -> dict[str, list[Step]]:
    """One round: its independent parts (the tree's workloads, make, the venv), each a list of steps where the
    selected workloads are timed and what they need runs untimed; a part with nothing to time is left out."""
    tree: list[Step] = []
    last_tree = max((TREE.index(w) for w in selected if w in TREE), default=-1)
    for workload in TREE[: last_tree + 1]:
        if workload == "git_status_later" and workload in selected:
            tree.append(Step(None, f"sleep {STATUS_PAUSE_S}"))
        if workload in selected or workload in SETUP:
            tree.append(Step(workload if workload in selected else None, COMMANDS[workload]))
    parts = {
        "tree": tree,
        "make": [Step(None, "cp -a ../inputs/cproj cproj"), Step("make_j2", COMMANDS["make_j2"])],
        "venv": [Step("venv_pip", venv_pip(inputs))] if venv else [],
    }
    return {name: steps for name, steps in parts.items() if any(step.workload in selected for step in steps)}


def venv_pip(inputs: Inputs) -> str:
    """A venv and a pip install into it; with a pip wheel (``--small``), pip runs from it instead of into the venv."""
    python = shlex.quote(str(BASE_PYTHON))
    install = f"-m pip install -q --no-index --find-links ../inputs/wheels {' '.join(inputs.packages)}"
    if inputs.pip_wheel:
        pip = f"PYTHONPATH=../inputs/{inputs.pip_wheel.name}"
        return f"{python} -m venv --without-pip venv && {pip} venv/bin/python {install}"
    return f"{python} -m venv venv && venv/bin/python {install}"


def round_script(
    root: Path, here: str, steps: list[Step], counter: Path | None = None, daemon_pid: int | None = None
) -> str:
    """bash, in a new directory ``here`` of ``root``: each timed command between two reads of ``$EPOCHREALTIME``,
    printed as ``@bench NAME START END``; the first command that fails stops the script with its name on stderr.
    With a ``counter`` (a mount root), the daemon's request counts are read just outside those two reads and
    printed as ``@requests NAME BEFORE AFTER`` (compact JSON); with a ``daemon_pid``, its CPU time (clock ticks
    of user and system time, all threads: fields 14 and 15 of ``/proc/PID/stat``, read by bash itself) as
    ``@cpu NAME BEFORE AFTER``. The directory is removed at the end, untimed."""
    read_counts = f"getfattr --only-values --absolute-names -n {REQUESTS} {shlex.quote(str(counter))}"
    read_cpu = f"read -r -a f < /proc/{daemon_pid}/stat; echo $((f[13] + f[14]))"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in ENVIRONMENT.items())
    lines = ["set -eu", f"export {exports}", f"cd {shlex.quote(str(root))}", f"mkdir {here}", f"cd {here}"]
    lines.append("sync")  # no writeback of the target before, or of earlier parts, lands in this part's times
    for step in steps:
        fail = f"{{ echo '{MARK}: failed: {step.workload or step.command}' >&2; exit 1; }}"
        if step.workload is None:
            lines.append(f"{step.command} || {fail}")
            continue
        before: list[str] = []
        after: list[str] = []
        reports = [f"echo {MARK} {step.workload} $s $e"]
        if counter is not None:
            before.append(f"b=$({read_counts})")
            after.append(f"a=$({read_counts})")
            reports.append(f"echo {COUNTS} {step.workload} $b $a")
        if daemon_pid is not None:  # read nearest the command: the counts' getfattr is a request to the daemon
            before.append(f"cb=$({read_cpu})")
            after.insert(0, f"ca=$({read_cpu})")
            reports.append(f"echo {CPU} {step.workload} $cb $ca")
        timed = f"s=$EPOCHREALTIME; {step.command} || {fail}; e=$EPOCHREALTIME"
        lines.append("; ".join([*before, timed, *after, *reports]))
    lines += ["cd ..", f"rm -rf {here}"]
    return "\n".join(lines) + "\n"


def run_part(
    place: Place, script: str, log_path: Path
) -> tuple[dict[str, float], dict[str, dict[str, int]], dict[str, float]]:
    """Run one part's script in the target; the seconds of each timed workload, the requests each sent to the
    daemon by operation, and the daemon's CPU seconds during each (where the script reads them)."""
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}  # the mount's --as identity, not the caller's
    command = [*place.wrap, "bash", "--noprofile", "--norc", "-c", script]
    with open(log_path, "ab") as errors:
        # A session of its own, so that on Ctrl-C or an error the whole group (tar, git, the view) ends before the
        # mount is unmounted and the run directory removed, not only the shell.
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=env, start_new_session=True
        )
        try:
            out, _ = proc.communicate()
        except BaseException:  # Ctrl-C, SIGTERM: the shell is not reaped yet, so its group id is still its own
            end_group(proc)
            raise
    lines = out.decode(errors="replace").splitlines()

    def marked(mark: str) -> list[list[str]]:
        return [line.split() for line in lines if line.startswith(mark)]

    timed = {name: float(end) - float(start) for _, name, start, end in marked(MARK)}
    requests = {name: bench_fs.request_delta(json.loads(b), json.loads(a)) for _, name, b, a in marked(COUNTS)}
    cpu = {name: (int(a) - int(b)) * CLOCK_TICK_S for _, name, b, a in marked(CPU)}
    if proc.returncode:
        after = f"after {', '.join(timed)}" if timed else "before any workload ended"
        raise RuntimeError(f"the script exited {proc.returncode} {after}; {log_path}:\n{bench_fs.log_tail(log_path)}")
    return timed, requests, cpu


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the script's process group (``omxfs run`` forwards it into the view), SIGKILL if that is not
    enough; when this returns the shell is reaped and no process of its group is left (a tar or git that outlived
    the shell would write into the run directory while it is removed)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=GRACE_S)  # the shell reaped: no zombie of it keeps the group
    if not _group_gone(proc.pid, GRACE_S):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _group_gone(proc.pid, GRACE_S)


def _group_gone(group: int, seconds: float) -> bool:
    """Whether process group ``group`` has no process left, waiting up to ``seconds`` for that."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def run_round(
    results: Results, target: str, place: Place, number: int, venv: bool, inputs: Inputs, log_path: Path
) -> None:
    for part, steps in round_parts(results.workloads, venv, inputs).items():
        script = round_script(place.root, f"r{number}-{part}", steps, place.counter, place.daemon_pid)
        timed, requests, cpu = run_part(place, script, log_path)
        for workload, seconds in timed.items():
            results.record(target, workload, seconds, number)
        for workload, seconds in cpu.items():
            results.record_cpu(target, workload, seconds)
        for workload, counts in requests.items():
            results.requests.setdefault(target, {})[workload] = counts


def warm_up(results: Results, inputs: Inputs, run_dir: Path) -> None:
    """One round in a plain directory, its times thrown away: the first run of git, gcc, python and pip reads them
    from disk, and no target should pay for that."""
    log("warm-up round (untimed)")
    for part, steps in round_parts(results.workloads, True, inputs).items():
        run_part(Place(run_dir), round_script(run_dir, f"warm-up-{part}", steps), run_dir / "warm-up.log")


def measure(results: Results, inputs: Inputs, args: argparse.Namespace, run_dir: Path) -> None:
    """Every target mounted at once, then round after round through all of them, so that a change in the machine's
    load spreads over every target instead of landing on whichever ran then."""
    with contextlib.ExitStack() as mounts:
        places: dict[str, Place] = {}
        for target in results.targets:
            attempt(
                results,
                target,
                functools.partial(mount, results, target, mounts, places, inputs, run_dir, args.build_dir),
            )
        warm_up(results, inputs, run_dir)
        for number in range(1, args.repeat + 1):
            log(f"round {number} of {args.repeat}")
            names = list(places)
            turn = (number - 1) % max(len(names), 1)  # each round starts one target later
            for target in names[turn:] + names[:turn]:
                log_path = run_dir / f"{target}.log"
                venv = number <= args.venv_rounds
                action = functools.partial(run_round, results, target, places[target], number, venv, inputs, log_path)
                if not attempt(results, target, action):
                    del places[target]
        for target in places:
            if missing := [w for w in results.workloads if results.seconds[w][target] is None]:
                results.failed[target] = f"no time was printed for {', '.join(missing)}"


def mount(
    results: Results,
    target: str,
    mounts: contextlib.ExitStack,
    places: dict[str, Place],
    inputs: Inputs,
    run_dir: Path,
    build_dir: Path,
) -> None:
    """Make ``target``'s place (mounted until ``mounts`` closes) and copy the inputs into it, untimed."""
    place = mounts.enter_context(PLACES[target](results, run_dir, build_dir))
    log(f"{target}: {place.root}")
    shutil.copytree(inputs.directory, place.root / "inputs", symlinks=True)  # each target reads its own copy
    places[target] = place


def attempt(results: Results, target: str, action: Callable[[], None]) -> bool:
    """``action`` for ``target``; if it cannot run or fails, that is recorded with one line, and the answer is no."""
    try:
        action()
        return True
    except Skipped as e:
        print(f"{target}: skipped ({e})", file=sys.stderr, flush=True)
        results.skipped[target] = str(e)
    except bench_fs.Unavailable as e:
        log(f"{target}: FAILED: {e}")
        results.failed[target] = str(e)
    except Exception as e:  # a workload failed: keep the other targets' figures, and exit 1
        log(f"{target}: FAILED\n{traceback.format_exc()}")
        results.failed[target] = repr(e)
    return False


# -- the targets ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def native(results: Results, run_dir: Path, build_dir: Path) -> Iterator[Place]:
    (run_dir / "native").mkdir()
    results.options["native"] = f"a plain directory on the run directory's filesystem ({run_dir})"
    yield Place(run_dir / "native")


@contextlib.contextmanager
def fuse_peer(
    results: Results, run_dir: Path, name: str, command_for: Callable[[Path, Path], list[str]], how: str
) -> Iterator[Place]:
    """A yardstick daemon mounted over a plain directory of its own, as ``bench_fs.py`` mounts it."""
    source, mountpoint = run_dir / f"{name}-src", run_dir / f"{name}-mnt"
    source.mkdir()
    command = command_for(source, mountpoint)
    results.options[name] = f"{' '.join(command)} ({how}, as in bench_fs.py)"
    with bench_fs.fuse_daemon_process(name, command, mountpoint, run_dir / f"{name}-daemon.log") as (root, proc):
        yield Place(root, daemon_pid=proc.pid)


def passthrough_ll(results: Results, run_dir: Path, build_dir: Path) -> AbstractContextManager[Place]:
    binary, build = bench_fs.build_passthrough_ll(build_dir)
    command_for = functools.partial(bench_fs.passthrough_ll_command, binary)
    return fuse_peer(results, run_dir, "passthrough_ll", command_for, f"its defaults; built with: {build}")


def pyfuse3_floor(results: Results, run_dir: Path, build_dir: Path) -> AbstractContextManager[Place]:
    how = f"pyfuse3 {bench_fs.pyfuse3_version()} + trio"
    return fuse_peer(results, run_dir, "pyfuse3_floor", bench_fs.floor_command, how)


def pyfuse3_floor_xattr(results: Results, run_dir: Path, build_dir: Path) -> AbstractContextManager[Place]:
    """The floor with xattrs (``--xattr``): it receives the xattr requests omx must answer, which the other
    yardsticks refuse once with ENOSYS (the kernel's ``security.capability`` before every write among them)."""
    how = f"pyfuse3 {bench_fs.pyfuse3_version()} + trio, with xattrs"
    command_for = functools.partial(bench_fs.floor_command, xattr=True)
    return fuse_peer(results, run_dir, "pyfuse3_floor_xattr", command_for, how)


@contextlib.contextmanager
def omx(results: Results, run_dir: Path, build_dir: Path) -> Iterator[Place]:
    ws, mountpoint = run_dir / "omx-ws", run_dir / "omx-mnt"
    bench_fs.init_workspace(ws)
    command = bench_fs.omxfs("mount", str(ws), str(mountpoint), "--as", bench_fs.AGENT, "--foreground")
    results.options["omx"] = (
        f"omxfs mount WS MNT --as {bench_fs.AGENT} --foreground; work in MNT/agents/{bench_fs.AGENT}/"
    )
    unmount = bench_fs.omxfs("umount")
    counter = shutil.which("getfattr")
    if counter is None:
        log("omx: getfattr (Debian package attr) is not installed: requests are not counted")
    log_path = run_dir / "omx-daemon.log"
    with bench_fs.fuse_daemon_process("omxfs", command, mountpoint, log_path, unmount=unmount) as (mnt, proc):
        yield Place(mnt / "agents" / bench_fs.AGENT, counter=mnt if counter else None, daemon_pid=proc.pid)


@contextlib.contextmanager
def view(results: Results, run_dir: Path, build_dir: Path) -> Iterator[Place]:
    """The view's own zone: the store's ``agents/bench/``, the same directory inside the view as outside."""
    usage = subprocess.run(bench_fs.omxfs("run", "--help"), capture_output=True, text=True, cwd=bench_fs.REPO)
    if usage.returncode:
        raise Skipped(f"`omxfs run` is not available yet: {(usage.stderr.strip().splitlines() or [''])[-1]}")
    ws = run_dir / "view-ws"
    bench_fs.init_workspace(ws)
    # The venv's interpreter may live outside the host's system directories (pyenv under /root here).
    base = Path(sys.base_prefix).resolve()
    binds = () if base.is_relative_to("/usr") or "--ro-bind" not in usage.stdout else ("--ro-bind", str(base))
    wrap = tuple(bench_fs.omxfs("run", str(ws), "--as", bench_fs.AGENT, *binds, "--"))
    results.options["view"] = (
        f"omxfs run WS --as {bench_fs.AGENT} {' '.join(binds)} -- bash -c SCRIPT; work in WS/agents/{bench_fs.AGENT}/"
    )
    yield Place(ws / "agents" / bench_fs.AGENT, wrap)


@contextlib.contextmanager
def review(results: Results, run_dir: Path, build_dir: Path) -> Iterator[Place]:
    """The view's own zone seen through a review's overlay (``omxfs run --review``): the inputs are copied into the
    store's ``agents/bench/``, the overlay's lower layer, and read through it; what the work writes lands in the
    upper layer."""
    usage = subprocess.run(bench_fs.omxfs("run", "--help"), capture_output=True, text=True, cwd=bench_fs.REPO)
    if usage.returncode or "--review" not in usage.stdout:
        raise Skipped("`omxfs run --review` is not available yet")
    ws = run_dir / "review-ws"
    bench_fs.init_workspace(ws)
    base = Path(sys.base_prefix).resolve()
    binds = () if base.is_relative_to("/usr") else ("--ro-bind", str(base))
    wrap = tuple(bench_fs.omxfs("run", str(ws), "--as", bench_fs.AGENT, "--review", *binds, "--"))
    results.options["review"] = (
        f"omxfs run WS --as {bench_fs.AGENT} --review {' '.join(binds)} -- bash -c SCRIPT; work in "
        f"WS/agents/{bench_fs.AGENT}/ (an overlay; upper layer in WS/.omxfs/reviews/{bench_fs.AGENT}/)"
    )
    try:
        yield Place(ws / "agents" / bench_fs.AGENT, wrap)
    finally:  # untimed; the run directory goes anyway, but a discard is what a person would do
        discard = bench_fs.omxfs("discard", str(ws), bench_fs.AGENT, "--as", bench_fs.AGENT)
        subprocess.run(discard, capture_output=True, cwd=bench_fs.REPO, check=False)


PLACES = {
    "native": native,
    "passthrough_ll": passthrough_ll,
    "pyfuse3_floor": pyfuse3_floor,
    "pyfuse3_floor_xattr": pyfuse3_floor_xattr,
    "omx": omx,
    "view": view,
    "review": review,
}


# -- the report -------------------------------------------------------------------------------------------------


def ratios(results: Results, base: str) -> dict[str, dict[str, float | None]]:
    return {
        target: {w: bench_fs.ratio(results.seconds[w][target], results.seconds[w][base]) for w in results.workloads}
        for target in results.targets
        if target != base
    }


def median_round_ratios(results: Results, base: str) -> dict[str, dict[str, float | None]]:
    """{target: {workload: the median over rounds of target / base in the same round}}, None below two rounds."""
    medians: dict[str, dict[str, float | None]] = {}
    for target in results.targets:
        if target == base:
            continue
        medians[target] = {}
        for workload in results.workloads:
            times, bases = results.samples[workload][target], results.samples[workload][base]
            paired = [times[n] / bases[n] for n in times.keys() & bases.keys() if bases[n]]
            medians[target][workload] = round(statistics.median(paired), 3) if len(paired) > 1 else None
    return medians


def goals(results: Results) -> dict[str, bool | None]:
    """The issues' targets; ``None`` where a side did not run."""
    seconds, workloads = results.seconds, results.workloads

    def within(target: str, base: str, limit: float, among: list[str]) -> bool | None:
        if target not in results.targets or base not in results.targets:
            return None
        return (
            bench_fs.all_of(
                [bench_fs.at_most(bench_fs.ratio(seconds[w][target], seconds[w][base]), limit) for w in among]
            )
            if among
            else True
        )

    floor_misses = [
        w
        for w in workloads
        if (r := bench_fs.ratio(seconds[w].get("pyfuse3_floor"), seconds[w].get("passthrough_ll")))
        and r > PASSTHROUGH_GOAL
    ]
    return {
        "view_within_1_1x_native": within("view", "native", VIEW_GOAL, workloads),
        "review_within_1_1x_native": within("review", "native", VIEW_GOAL, workloads),
        "omx_within_1_5x_passthrough_ll": within("omx", "passthrough_ll", PASSTHROUGH_GOAL, workloads),
        "omx_within_1_2x_floor_where_floor_misses": within("omx", "pyfuse3_floor", FLOOR_GOAL, floor_misses),
    }


def table(rows: dict[str, dict[str, float | None]], columns: list[str], unit: str) -> str:
    width = max(len(c) for c in columns) + 2
    lines = [f"{unit:18}" + "".join(f"{c:>{width}}" for c in columns)]
    for name, values in rows.items():
        cells = (f"{v:{width}.3f}" if v is not None else f"{'-':>{width}}" for v in (values.get(c) for c in columns))
        lines.append(f"{name:18}" + "".join(cells))
    return "\n".join(lines)


def cpu_ratio(results: Results, workload: str, target: str, base: str) -> float | None:
    return bench_fs.ratio(results.daemon_cpu[workload][target], results.daemon_cpu[workload][base])


def print_tables(results: Results) -> None:
    print(table(results.seconds, results.targets, "seconds"))
    for base in BASES:
        if base in results.targets and len(results.targets) > 1:
            by_target = ratios(results, base)
            rows = {w: {t: by_target[t][w] for t in by_target} for w in results.workloads}
            print(f"\n{table(rows, list(by_target), f'/ {base}')}")
    if "native" in results.targets and len(results.targets) > 1:
        paired = median_round_ratios(results, "native")
        rows = {w: {t: paired[t][w] for t in paired} for w in results.workloads}
        print("\nmedian of the per-round ratios to native (where a workload ran in two rounds or more)")
        print(table(rows, list(paired), "/ native, paired"))
    daemons = [t for t in results.targets if any(results.daemon_cpu[w][t] is not None for w in results.workloads)]
    if daemons:
        print("\nthe daemon's CPU seconds (user + system, all its threads; the least of the rounds)")
        print(table(results.daemon_cpu, daemons, "daemon CPU s"))
        if "pyfuse3_floor" in daemons and len(daemons) > 1:
            rows = {w: {t: cpu_ratio(results, w, t, "pyfuse3_floor") for t in daemons} for w in results.workloads}
            print(f"\n{table(rows, daemons, 'CPU / floor')}")
    for target, by_workload in results.requests.items():
        print(f"\nrequests to the {target} daemon (last round)")
        for workload, counts in by_workload.items():
            ops = " ".join(f"{op}={n}" for op, n in counts.items())
            total, cpu = sum(counts.values()), results.daemon_cpu[workload].get(target)
            per = f"  ({cpu / total * 1e6:.0f} us of daemon CPU a request)" if cpu is not None and total else ""
            print(f"{workload:18}{total:>9}  {ops}{per}")


def report(results: Results, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "seconds": results.seconds,
        **{f"ratio_vs_{base}": ratios(results, base) if base in results.targets else {} for base in BASES},
        "median_round_ratio_vs_native": median_round_ratios(results, "native") if "native" in results.targets else {},
        "samples": {
            w: {t: list(by_round.values()) for t, by_round in times.items()} for w, times in results.samples.items()
        },
        "goals": goals(results),
        "requests": {target: results.requests.get(target) for target in results.targets},
        "daemon_cpu": results.daemon_cpu,
        "options": results.options,
        "params": params,
        "skipped": results.skipped,
        "failed": results.failed,
    }


def journal_warning(path: Path) -> str | None:
    """Why the times of ``path``'s filesystem may mislead, or None.

    ext4 without a journal skips every inode freed in the last 30 s when it allocates one (``recently_deleted`` in
    fs/ext4/ialloc.c), checking each of them: after a large ``rm -rf`` every create costs up to a millisecond for
    half a minute, so ``tar x`` and ``git`` after an earlier round's removal measure that, on every target."""
    st = os.stat(path)
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields, _, rest = line.partition(" - ")
            fstype, source = rest.split()[:2]
            if fields.split()[2] != device or fstype != "ext4":
                continue
            if not any(j.name.startswith(f"{Path(source).name}-") for j in Path("/proc/fs/jbd2").glob("*")):
                return (
                    f"{path} is on ext4 without a journal ({source}): a create soon after a large rm -rf scans the "
                    "inodes freed in the last 30 s, so tar_x and git_commit are inflated on every target; "
                    "--workdir on a journaled filesystem (or a tmpfs) avoids it"
                )
    return None


# -- main -------------------------------------------------------------------------------------------------------


def names(text: str, known: tuple[str, ...], flag: str, parser: argparse.ArgumentParser) -> list[str]:
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    if unknown := [s for s in chosen if s not in known]:
        parser.error(f"{flag}: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    return [k for k in known if k in chosen]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma list of {', '.join(TARGETS)}")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {', '.join(WORKLOADS)}")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each time is the best of them (default 3)")
    parser.add_argument(
        "--venv-rounds", type=int, default=1, help="rounds that run venv_pip, the first ones (default 1: it is long)"
    )
    parser.add_argument("--small", action="store_true", help="a tiny tree, C project and wheels (smoke test)")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (it is printed)")
    parser.add_argument("--workdir", type=Path, help="where the run directory goes (default: the system temp dir)")
    parser.add_argument(
        "--build-dir", type=Path, default=bench_fs.REPO / "build" / "bench", help="where passthrough_ll is built"
    )
    args = parser.parse_args(argv)
    args.targets = names(args.targets, TARGETS, "--targets", parser)
    args.workloads = names(args.workloads, WORKLOADS, "--workloads", parser)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if not 1 <= args.venv_rounds <= args.repeat:
        parser.error("--venv-rounds: from 1 to --repeat")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_dir = bench_fs.start_run(args.workdir, "omx-bench-real-")
    results = Results(args.workloads, args.targets)
    load_before = os.getloadavg()
    log(f"run directory {run_dir}; load average {load_before[0]:.2f} on {os.cpu_count()} CPUs")
    if warning := journal_warning(run_dir):
        log(f"warning: {warning}")
    try:
        inputs = make_inputs(run_dir / "inputs", args.small)
        log(f"inputs: {inputs.tree_files} files in tree.tar, {len(inputs.packages)} wheels, {inputs.c_units} C units")
        measure(results, inputs, args, run_dir)
    except KeyboardInterrupt:
        log("interrupted: mounts are gone, no results")
        return 130
    finally:
        if args.keep:
            log(f"kept {run_dir}")
        else:
            bench_fs.remove_run_dir(run_dir)
    params = {
        "repeat": args.repeat,
        "venv_rounds": args.venv_rounds,
        "small": args.small,
        "tree_files": inputs.tree_files,
        "wheels": list(inputs.packages),
        "c_units": inputs.c_units,
        "workloads": args.workloads,
        "targets": args.targets,
        "load_average_before": round(load_before[0], 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "filesystem_warning": warning,
        "workdir": str(run_dir),
    }
    print_tables(results)
    print(json.dumps(report(results, params)))
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""The project's scripts and CLI as tests drive them: a script loaded as a module, a benchmark or ``omxfs`` run as a
process."""

from __future__ import annotations

import functools
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.fuse.conftest import clean_env

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as the module ``name``, loaded once (its dataclasses look their module up by name)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def with_ctrl_c(argv: list[str]) -> list[str]:
    """``argv`` run with SIGINT at its default (coreutils' ``env --default-signal``, which then execs it: the same
    process), for a test that presses Ctrl-C on it: however the suite was started, its Python raises
    KeyboardInterrupt (a background job of a non-interactive shell starts with SIGINT ignored, and Python keeps
    an inherited SIG_IGN)."""
    return ["env", "--default-signal=INT", *argv]


def run_omxfs(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``omxfs ARGS`` in a process of its own, with a clean environment, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "cli.omxfs", *args],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def unmount_everything_under(path: Path) -> None:
    """Lazily unmount whatever a benchmark left mounted below ``path`` (it unmounts its own; this is the net)."""
    with open("/proc/self/mounts") as f:
        mounts = [Path(line.split()[1].replace("\\040", " ")) for line in f if line.strip()]
    for mountpoint in mounts:
        if mountpoint.is_relative_to(path.resolve()):
            subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, timeout=30)


def run_bench(script: str, *args: str, workdir: Path, timeout: float = 600) -> tuple[int, str, str]:
    """``scripts/<script>.py ARGS --workdir WORKDIR`` as a process, without ``OMX_AGENT``: its exit code, stdout
    and stderr. Past ``timeout`` it gets SIGTERM (the benchmarks unmount on it) and the test fails; whatever is
    still mounted under ``workdir`` afterwards is unmounted, so a failed run never leaves a mount behind."""
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    command = [sys.executable, str(REPO / "scripts" / f"{script}.py"), *args, "--workdir", str(workdir)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
            pytest.fail(f"{script} timed out:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        unmount_everything_under(workdir)
    return proc.returncode, out, err


def changes_and_undo(output: str) -> tuple[list[str], list[str]]:
    """The ``Changes:`` and ``Undo:`` commands an omx run on a workspace prints last, each as an argv."""

    def command(prefix: str) -> list[str]:
        (line,) = [text for text in output.splitlines() if text.startswith(prefix)]
        return shlex.split(line.removeprefix(prefix))

    return command("Changes: "), command("Undo:    ")

"""The project's scripts and CLI as tests drive them: a script loaded as a module, ``omxfs`` run as a process."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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

"""The OS sandbox for tests that need one: skipped, not failed, on a machine that has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.sandbox.confine import Sandbox, SandboxUnavailable


def sandbox_or_skip(ws: Path) -> Sandbox:
    """The machine's strongest sandbox for ``ws``; the test is skipped where there is none."""
    box = Sandbox(ws)
    try:
        box.info  # noqa: B018
    except SandboxUnavailable as exc:
        pytest.skip(f"no OS sandbox on this machine: {exc}")
    return box

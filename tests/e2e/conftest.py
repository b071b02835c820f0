"""Fixtures of the omx end-to-end tests: a workspace to work in, and a scripted model injected into the CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cli.omx
from agent.model.llm import ScriptedModel
from tests.e2e.helpers import NOTES


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with data/notes.txt, also the current directory (omx works where it is started)."""
    workspace = tmp_path / "workspace"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text(NOTES, encoding="utf-8")
    monkeypatch.chdir(workspace)
    return workspace.resolve()


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedModel]:
    """Inject a scripted model into the CLI (STYLE lesson 9): ``script(reply, ...)``."""

    def install(*replies: Any) -> ScriptedModel:
        model = ScriptedModel(replies)
        monkeypatch.setattr(cli.omx, "build_model", lambda name, base, timeout=None: model)
        return model

    return install

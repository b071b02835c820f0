from __future__ import annotations

from pathlib import Path

import pytest

from omxfs.store import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A fresh workspace with the agents the seed cases use."""
    return Workspace.init(tmp_path / "ws", agents=["alice", "bob", "charlie"], supervisors=["boss"])

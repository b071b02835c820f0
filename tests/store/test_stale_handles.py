"""A file replaced through another client of a shared filesystem can answer ESTALE for a moment (GlusterFS does
for a second or two after a rename over it): the store opens the name again instead of failing the request."""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from omxfs.errors import OSFailure
from omxfs.store import atomic


def stale_for(monkeypatch: pytest.MonkeyPatch, times: int) -> list[str]:
    """``os.open`` of a file (not a directory) answers ESTALE ``times`` times, then opens it."""
    real = os.open
    refused: list[str] = []

    def flaky(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if not flags & os.O_DIRECTORY and len(refused) < times:
            refused.append(str(path))
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(atomic.os, "open", flaky)
    return refused


def test_a_stale_handle_is_opened_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "history.json").write_bytes(b"[]\n")
    refused = stale_for(monkeypatch, 3)
    assert atomic.read_bytes(tmp_path, PurePosixPath("history.json")) == b"[]\n"
    assert refused == ["history.json"] * 3


def test_a_handle_that_stays_stale_is_an_error_with_its_errno(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f").write_bytes(b"x")
    monkeypatch.setattr(atomic, "STALE_RETRIES", 2)
    stale_for(monkeypatch, 10)
    with pytest.raises(OSFailure) as err:
        atomic.read_bytes(tmp_path, PurePosixPath("f"))
    assert err.value.errno == errno.ESTALE

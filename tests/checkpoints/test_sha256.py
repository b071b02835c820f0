"""``omxfs.sha256``: the interpreter's own SHA-256 for a process's first few MiB, OpenSSL's after, the same digests."""

from __future__ import annotations

import hashlib
import os

import pytest

from omxfs import sha256 as module
from omxfs.sha256 import BUILT_IN_BYTES, sha256


@pytest.fixture(autouse=True)
def nothing_hashed_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_built_in_hashed", 0)


def test_small_data_is_hashed_without_openssl_and_gives_openssls_digest() -> None:
    data = os.urandom(4096)
    made = sha256(data)
    assert type(made).__module__ in ("_sha256", "_sha2")
    assert made.hexdigest() == hashlib.sha256(data).hexdigest()


def test_fed_in_pieces_the_announced_size_decides_and_the_digest_is_the_same() -> None:
    pieces = [os.urandom(1 << 16) for _ in range(4)]
    small = sha256(size=sum(map(len, pieces)))
    large = sha256(size=BUILT_IN_BYTES + 1)
    for piece in pieces:
        small.update(piece)
        large.update(piece)
    assert type(large) is type(hashlib.sha256())  # OpenSSL's, for what would pass the process's budget
    assert small.hexdigest() == large.hexdigest() == hashlib.sha256(b"".join(pieces)).hexdigest()


def test_once_the_process_hashed_its_budget_openssl_hashes_the_rest() -> None:
    assert type(sha256(size=BUILT_IN_BYTES)).__module__ in ("_sha256", "_sha2")
    after = sha256(b"x")
    assert type(after) is type(hashlib.sha256())
    assert after.hexdigest() == hashlib.sha256(b"x").hexdigest()

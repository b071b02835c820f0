"""pytest fixtures from tests/support; use with ``pytest_plugins = ["tests.support.fixtures"]`` in a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_stub import OpenAIStub


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    """A fresh OpenAI-compatible stub on 127.0.0.1 for one test; closed (sockets and thread) afterwards."""
    stub = OpenAIStub()
    try:
        yield stub
    finally:
        stub.close()

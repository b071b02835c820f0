"""The workspace config as the mount reads it: re-read when the file changes, looked at once per request."""

from __future__ import annotations

from omxfs.store import Workspace
from omxfs.store.workspace import REQUESTER


def request(uid: int, pid: int) -> tuple[int, int]:
    """A request's ``REQUESTER`` value, made as the mount makes it: a new tuple each time (a literal is one object)."""
    return (uid, pid)


def test_one_request_reads_the_config_once_and_the_next_request_sees_a_change(ws: Workspace) -> None:
    token = REQUESTER.set(request(0, 1))
    try:
        assert not ws.config.knows("carol")
        Workspace.init(ws.root, agents=["carol"])  # another process adds an agent mid-request
        assert not ws.config.knows("carol"), "one request sees one config"
    finally:
        REQUESTER.reset(token)
    token = REQUESTER.set(request(0, 1))  # equal, but another request: the file is looked at again
    try:
        assert ws.config.knows("carol")
    finally:
        REQUESTER.reset(token)


def test_outside_a_request_every_read_sees_the_file(ws: Workspace) -> None:
    assert not ws.config.knows("carol")
    Workspace.init(ws.root, agents=["carol"])
    assert ws.config.knows("carol")

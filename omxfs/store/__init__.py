"""The workspace on disk: every rule of SPEC §2-§5, with no FUSE anywhere below here.

The names below are imported on first use: a program that needs one module of the store (``layout``, ``config``)
does not load every zone and the records' pydantic models with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omxfs.store.collab import NO_CHECK, CollabFile
    from omxfs.store.handoff import Delivery
    from omxfs.store.records import HandoffMeta, VersionEntry
    from omxfs.store.workspace import Workspace

#: each public name, and the module that defines it
_HOMES = {
    "NO_CHECK": "omxfs.store.collab",
    "CollabFile": "omxfs.store.collab",
    "Delivery": "omxfs.store.handoff",
    "HandoffMeta": "omxfs.store.records",
    "VersionEntry": "omxfs.store.records",
    "Workspace": "omxfs.store.workspace",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = ["NO_CHECK", "CollabFile", "Delivery", "HandoffMeta", "VersionEntry", "Workspace"]

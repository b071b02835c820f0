"""The history of the private zones: checkpoints, diffs and restores.

Store data written by the store's rules, in its own package beside ``omxfs/store/``: content-addressed blobs written
once and one small manifest per checkpoint (``history.py``), a zone read into manifest entries (``scan.py``), the
comparison of two states (``diff.py``), and a restore that swaps a whole tree in at once (``restore.py``).

The names below load with their module on first use: a command that makes a checkpoint loads no diff or restore.
``diff`` and ``restore`` are the functions, never the modules of the same name, whichever is imported first.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omxfs.checkpoints.diff import ZoneDiff, diff
    from omxfs.checkpoints.history import Pruned, ZoneHistory
    from omxfs.checkpoints.manifest import Entry, Manifest
    from omxfs.checkpoints.restore import Restored, restore

__all__ = ["Entry", "Manifest", "Pruned", "Restored", "ZoneDiff", "ZoneHistory", "diff", "restore"]

#: each name's module
_HOME = {
    "ZoneDiff": "diff",
    "diff": "diff",
    "Pruned": "history",
    "ZoneHistory": "history",
    "Entry": "manifest",
    "Manifest": "manifest",
    "Restored": "restore",
    "restore": "restore",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    setattr(sys.modules[__name__], name, value)
    return value


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # the import system names each submodule loaded as an attribute of the package: ``diff`` and ``restore``
        # stay the functions their modules define
        if name in ("diff", "restore") and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

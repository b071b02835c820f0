"""The history of the private zones: checkpoints, diffs and restores.

Store data written by the store's rules, in its own package beside ``omxfs/store/``: content-addressed blobs written
once and one small manifest per checkpoint (``history.py``), a zone read into manifest entries (``scan.py``), the
comparison of two states (``diff.py``), and a restore that swaps a whole tree in at once (``restore.py``).

The names below load with their module on first use: a command that makes a checkpoint loads no diff or restore.
``diff`` and ``restore`` are the functions, never the modules of the same name, whichever is imported first.
"""

from __future__ import annotations

import sys
import types

from omxfs.lazy_names import name_loader

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from omxfs.checkpoints.diff import ZoneDiff, diff
    from omxfs.checkpoints.history import Pruned, ZoneHistory
    from omxfs.checkpoints.manifest import Entry, Manifest
    from omxfs.checkpoints.restore import Restored, restore

__all__ = ["Entry", "Manifest", "Pruned", "Restored", "ZoneDiff", "ZoneHistory", "diff", "restore"]

#: each name, loaded from its module on first use
__getattr__ = name_loader(
    __name__,
    {
        "ZoneDiff": f"{__name__}.diff",
        "diff": f"{__name__}.diff",
        "Pruned": f"{__name__}.history",
        "ZoneHistory": f"{__name__}.history",
        "Entry": f"{__name__}.manifest",
        "Manifest": f"{__name__}.manifest",
        "Restored": f"{__name__}.restore",
        "restore": f"{__name__}.restore",
    },
)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # the import system names each submodule loaded as an attribute of the package: ``diff`` and ``restore``
        # stay the functions their modules define
        if name in ("diff", "restore") and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

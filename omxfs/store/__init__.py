"""The workspace on disk: every rule of SPEC §2-§5, with no FUSE anywhere below here.

The names below are imported on first use: a program that needs one module of the store (``layout``, ``config``)
does not load every zone and the records with it.
"""

from __future__ import annotations

from omxfs.lazy_names import name_loader

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from omxfs.store.collab import NO_CHECK, CollabFile
    from omxfs.store.handoff import Delivery
    from omxfs.store.records import HandoffMeta, VersionEntry
    from omxfs.store.workspace import Workspace

#: each public name, loaded from the module that defines it on first use
__getattr__ = name_loader(
    __name__,
    {
        "NO_CHECK": "omxfs.store.collab",
        "CollabFile": "omxfs.store.collab",
        "Delivery": "omxfs.store.handoff",
        "HandoffMeta": "omxfs.store.records",
        "VersionEntry": "omxfs.store.records",
        "Workspace": "omxfs.store.workspace",
    },
)

__all__ = ["NO_CHECK", "CollabFile", "Delivery", "HandoffMeta", "VersionEntry", "Workspace"]

"""The workspace on disk: every rule of SPEC §2-§5, with no FUSE anywhere below here."""

from omxfs.store.collab import NO_CHECK, CollabFile
from omxfs.store.handoff import Delivery
from omxfs.store.records import HandoffMeta, VersionEntry
from omxfs.store.workspace import Workspace

__all__ = ["NO_CHECK", "CollabFile", "Delivery", "HandoffMeta", "VersionEntry", "Workspace"]

"""The history of the private zones: checkpoints, diffs and restores (issue 27).

Store data written by the store's rules, in its own package beside ``omxfs/store/``: content-addressed blobs written
once and one small manifest per checkpoint (``history.py``), a zone read into manifest entries (``scan.py``), the
comparison of two states (``diff.py``), and a restore that swaps a whole tree in at once (``restore.py``).
"""

from omxfs.checkpoints.diff import ZoneDiff, diff
from omxfs.checkpoints.history import Pruned, ZoneHistory
from omxfs.checkpoints.manifest import Entry, Manifest
from omxfs.checkpoints.restore import Restored, restore

__all__ = ["Entry", "Manifest", "Pruned", "Restored", "ZoneDiff", "ZoneHistory", "diff", "restore"]

"""The CRDT field types of realtime documents, and the document that holds them (SPEC §5).

Pure data and merge, no I/O: the store persists ``Document.to_json()`` and the mount edits fields through
``render`` / ``base`` / ``write_text``. ``TYPES`` maps each schema type name to its class.
"""

from omxfs.crdt.base import CRDT
from omxfs.crdt.document import TYPES, Document
from omxfs.crdt.lww_map import LWWMap
from omxfs.crdt.lww_register import LWWRegister
from omxfs.crdt.or_set import ORSet
from omxfs.crdt.pn_counter import PNCounter
from omxfs.crdt.rga import RGA

__all__ = ["CRDT", "RGA", "TYPES", "Document", "LWWMap", "LWWRegister", "ORSet", "PNCounter"]

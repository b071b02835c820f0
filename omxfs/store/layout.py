"""Every name the workspace gives on disk, in one place: zone directories, ``.omxfs/`` and its areas, the files of
the collaborative history, handoff metadata, realtime state, and the ``user.omx.*`` extended attributes.

The store, the mount, ``fsck``, the CLI and the agent tools all import these, so a name cannot drift between the
code that writes it and the code that reads it (SPEC §2)::

    WS/
    ├── agents/<agent>/...                       private zones
    ├── handoff/<from>_to_<to>/<file>            deliveries, each with <file>.meta.json
    ├── collaborative/
    │   ├── current/<path>                       the latest version of each file
    │   ├── .versions/<path>/                    vN.txt, vN.json, history.json, .vN.<token>.staged
    │   └── .conflicts/<agent>/<path>(.json)     rejected writes, each also kept as <path>.rejected-K(.json)
    ├── realtime/
    │   ├── <doc>/<field>                        the fields of a document (a view; nothing on disk)
    │   └── .crdt_state/<doc>.crdt.json          merged state; .writers/<doc>/ holds each writer's own file
    └── .omxfs/
        ├── config.toml
        ├── tmp/ locks/ logs/ mounts/            atomic-write staging, lock files, logs, mount records
        ├── scratch/<agent>/...                  editors' temporary files written through the mount
        ├── views/<agent>/<pid>.json             one record per running view of <agent> (restore refuses then)
        ├── checkpoints/<agent>/                 a private zone's history (``omxfs.checkpoints``)
        │   ├── blobs/<aa>/<sha256>              file contents, named by their hash, written once
        │   ├── manifests/<N>.json               checkpoint N: every entry of the zone, naming its blob
        │   └── restoring/<token>/               a restore's tree, built beside the zone before the swap
        ├── deliveries/                          every handoff delivery ever made (``store.delivery_history``)
        │   ├── <from>_to_<to>/<quoted file>/<N>.json   the N-th delivery of a file: its metadata
        │   └── blobs/<aa>/<sha256>              the contents delivered, named by their hash, written once
        └── snapshots/<N>.json                   snapshot N of the whole workspace (``omxfs.snapshots``)
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# -- zones -------------------------------------------------------------------------------------------------------
AGENTS = "agents"
HANDOFF = "handoff"
COLLABORATIVE = "collaborative"
REALTIME = "realtime"
META_DIR = ".omxfs"
#: the top level of a workspace, in the order a listing shows it
TOP_LEVEL = (AGENTS, HANDOFF, COLLABORATIVE, REALTIME, META_DIR)

# -- .omxfs/ -----------------------------------------------------------------------------------------------------
CONFIG = PurePosixPath("config.toml")
TMP = "tmp"
LOCKS = "locks"
LOGS = "logs"
AUDIT_LOG = "audit.jsonl"  # under logs/: the audit as older stores appended it (read, never written)
#: under logs/: one record file per audited change, created exclusively, in a directory per UTC day
AUDIT_DIR = "audit"
AUDIT_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
AUDIT_RECORD = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[0-9a-f]{16}\.json")
MOUNT_RECORDS = "mounts"
SCRATCH = "scratch"
VIEWS = "views"
#: a private zone's history: content-addressed blobs and one manifest per checkpoint (``omxfs.checkpoints``)
CHECKPOINTS = "checkpoints"
BLOBS = "blobs"
MANIFESTS = "manifests"
#: checkpoint N's manifest, ``N.json``, created exclusively (N counts up from 1 per zone)
MANIFEST = re.compile(r"([0-9]+)\.json")
#: where a restore builds the zone's new tree, then swapped with the zone (same filesystem)
RESTORING = "restoring"
#: a review run's pending change to a zone (``omxfs.checkpoints.review``): ``reviews/<zone>/upper`` and ``work``, the
#: kernel overlay's layers, ``merged`` its mountpoint, and ``accepting``, the marker of an accept in progress
#: (resumed by accept or fsck --repair)
REVIEWS = "reviews"
REVIEW_UPPER = "upper"
REVIEW_WORK = "work"
REVIEW_ACCEPTING = "accepting"
#: what starts the name of a branch's directory, ``agents/<zone>/@<branch>``, on the mount: a top-level name of a zone
#: that starts with it is the mount's (``omxfs.fuse.zones.branch_dirs``)
BRANCH_MARK = "@"
#: where the overlay is mounted, in the review view's own mount namespace only (an empty directory everywhere else)
REVIEW_MERGED = "merged"
#: the overlay's topmost lower layer in a branch's view: one empty directory ``@<sibling>`` per other pending branch
#: of the zone as the view started, on which the view binds that sibling read-only (``omxfs.view.launch``)
REVIEW_MARKS = "marks"
#: a blob's name: the sha256 of its content, in a directory named by the first two hex digits
BLOB = re.compile(r"[0-9a-f]{64}")
#: every delivery of each handoff file, kept when a re-delivery replaces it (``store.delivery_history``)
DELIVERIES = "deliveries"
#: the N-th delivery of a file, ``N.json`` under ``deliveries/<box>/<quoted file>/``, created exclusively
DELIVERY_RECORD = re.compile(r"([0-9]+)\.json")
#: snapshots of the whole workspace (``omxfs.snapshots``): ``N.json``, created exclusively, N counting up from 1
SNAPSHOTS = "snapshots"
SNAPSHOT_RECORD = re.compile(r"([0-9]+)\.json")
#: the suffix of omx's own temp files (``.<name>.XXXXXXXX.omx-tmp``), scratch names in the shared zones
TEMP_SUFFIX = ".omx-tmp"

# -- collaborative/ ----------------------------------------------------------------------------------------------
CURRENT = "current"
VERSIONS = ".versions"
CONFLICTS = ".conflicts"
#: the directories of collaborative/ shown read-only, as they are on disk
READ_ONLY_COLLAB = (VERSIONS, CONFLICTS)
HISTORY = "history.json"
#: a version's content and its record, in ``.versions/<path>/``
VERSION_FILE = re.compile(r"v[0-9]+\.txt")
ENTRY = re.compile(r"v([0-9]+)\.json")
#: a version staged by a writer before it links it into place
STAGED = re.compile(r"\.v([0-9]+)\.[0-9a-f]{16}\.staged")
#: ``<path>.rejected-K``: the K-th rejected write of a path, never overwritten
REJECTED = ".rejected-"


def version_name(number: int) -> str:
    return f"v{number}.txt"


def entry_name(number: int) -> str:
    return f"v{number}.json"


def manifest_name(number: int) -> str:
    return f"{number}.json"


def blob_path(digest: str) -> PurePosixPath:
    """``<aa>/<sha256>``: a blob's path under ``blobs/``."""
    return PurePosixPath(digest[:2], digest)


def staged_name(number: int, token: str) -> str:
    """``token`` is 16 hex digits, random per attempt (``STAGED`` matches the result)."""
    return f".v{number}.{token}.staged"


# -- handoff/ ----------------------------------------------------------------------------------------------------
META_SUFFIX = ".meta.json"

# -- realtime/ ---------------------------------------------------------------------------------------------------
CRDT_STATE = ".crdt_state"
STATE_DIR = PurePosixPath(REALTIME, CRDT_STATE)
STATE_SUFFIX = ".crdt.json"
#: the directory of the writers' files, inside ``.crdt_state/`` (a dot name: never a document id)
WRITERS = ".writers"
SCHEMA = ".schema.json"
SNAPSHOT = ".snapshot.json"

#: the directories ``Workspace.init`` makes
ZONE_DIRS = (
    AGENTS,
    HANDOFF,
    f"{COLLABORATIVE}/{CURRENT}",
    f"{COLLABORATIVE}/{VERSIONS}",
    f"{COLLABORATIVE}/{CONFLICTS}",
    f"{REALTIME}/{CRDT_STATE}",
)

# -- extended attributes -----------------------------------------------------------------------------------------
USER_XATTRS = "user."
OMX_XATTRS = "user.omx."
#: POSIX ACLs: an access ACL is kept only as the mode it stands for, a default ACL never (``omxfs.store.acl``)
ACCESS_ACL = "system.posix_acl_access"
DEFAULT_ACL = "system.posix_acl_default"
OWNER = "user.omx.owner"
VERSION = "user.omx.version"
AUTHOR = "user.omx.author"
SHA256 = "user.omx.sha256"
MESSAGE = "user.omx.message"
EXPECTED = "user.omx.expected_version"
TYPE = "user.omx.type"
FROM = "user.omx.from"
TO = "user.omx.to"
TIMESTAMP = "user.omx.timestamp"
#: the mount root's virtual, read-only xattr: the daemon's request counts by operation, as JSON
REQUESTS = "user.omx.requests"

# -- renameat2(2) flags (<linux/fs.h>), which the os module lacks ------------------------------------------------
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

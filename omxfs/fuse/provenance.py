"""What produced a write: the ``omx`` run, step and model request, read from the writer's environment.

``omx`` starts the processes that do its tools' file I/O with ``OMX_RUN`` (the run directory, relative to the
workspace), ``OMX_STEP`` (the plan step) and ``OMX_REQUEST`` (the model request that asked for the call) in their
environment. The mount reads them from ``/proc/<pid>/environ`` of the process that opens a collaborative file or
a delivery, the way it reads ``OMX_AGENT`` (``identity.py``), and the store records them in the version's history
entry or the delivery's metadata as ``provenance``. A person then goes from any version to ``<run>/trace.jsonl``,
its step, and the model request with that id. Like ``OMX_AGENT`` this is cooperative: it explains, it proves
nothing. Values that do not look like what omx writes are dropped rather than recorded.

The environment is cached per process image, with the same key as the identity cache (pid, start time and where
the environment lies in memory), so a recycled pid or an ``exec`` never inherits another process's provenance.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from pathlib import Path

from omxfs.fuse.identity import ENVIRON_LIMIT, parse_environ, parse_image_key

#: environment variable → key in the record, and what its value must look like
FIELDS: dict[bytes, tuple[str, re.Pattern[str]]] = {
    b"OMX_RUN": ("run", re.compile(r"[A-Za-z0-9._/-]{1,255}")),
    b"OMX_STEP": ("step", re.compile(r"[0-9]{1,9}")),
    b"OMX_REQUEST": ("request", re.compile(r"[A-Za-z0-9._:-]{1,128}")),
}
CACHE_SIZE = 4096

Provenance = dict[str, str]


def provenance_from_environ(env: dict[bytes, bytes]) -> Provenance | None:
    """The provenance record in an environment, None when it names no run."""
    record: Provenance = {}
    for var, (key, shape) in FIELDS.items():
        raw = env.get(var)
        if raw is None:
            continue
        value = raw.decode("utf-8", "replace")
        if shape.fullmatch(value) and ".." not in value.split("/"):
            record[key] = value
    return record if "run" in record else None


class ProvenanceReader:
    """``of(pid)``: the provenance of the process ``pid``; None when it has none or is gone. Thread-safe."""

    def __init__(self, proc: Path = Path("/proc"), cache_size: int = CACHE_SIZE) -> None:
        self._proc = proc
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[int, tuple[int, int, int]], Provenance | None] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, pid: int) -> Provenance | None:
        if pid <= 0:
            return None
        try:
            key = (pid, parse_image_key(self._read(pid, "stat", 4096)))
            with self._lock:
                if key in self._cache:
                    self._cache.move_to_end(key)
                    found = self._cache[key]
                    return dict(found) if found is not None else None
            record = provenance_from_environ(parse_environ(self._read(pid, "environ", ENVIRON_LIMIT)))
            if parse_image_key(self._read(pid, "stat", 4096)) != key[1]:
                return None  # exec'd or replaced while read: record nothing rather than the wrong run
        except (OSError, ValueError):
            return None  # gone, or not ours to inspect: the write is made, without provenance
        with self._lock:
            self._cache[key] = record
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return dict(record) if record is not None else None

    def _read(self, pid: int, name: str, limit: int) -> bytes:
        with open(self._proc / str(pid) / name, "rb", buffering=0) as f:
            return f.read(limit)


#: the mount's reader; handlers take another in tests
READER = ProvenanceReader()

"""What produced a write: the ``omx`` run, step and model request, read from the writer's environment.

``omx`` starts the processes that do its tools' file I/O with ``OMX_RUN`` (the run directory, relative to the
workspace), ``OMX_STEP`` (the plan step) and ``OMX_REQUEST`` (the model request that asked for the call) in their
environment. The mount reads them from ``/proc/<pid>/environ`` of the process that opens a collaborative file or
a delivery, the way it reads ``OMX_AGENT`` (``identity.py``), and the store records them in the version's history
entry or the delivery's metadata as ``provenance``. A person then goes from any version to ``<run>/trace.jsonl``,
its step, and the model request with that id. Like ``OMX_AGENT`` this is cooperative: it explains, it proves
nothing. Values that do not look like what omx writes are dropped rather than recorded.

The variables come from the same per-process-image cache as ``OMX_AGENT`` (``identity.CALLERS``), so a recycled pid
or an ``exec`` never inherits another process's provenance, and a request reads ``/proc`` once for both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from omxfs.errors import ZoneDenied
from omxfs.fuse.identity import CALLERS, CallerEnvironments, ProcessGone

#: environment variable → key in the record, and what its value must look like
FIELDS: dict[bytes, tuple[str, re.Pattern[str]]] = {
    b"OMX_RUN": ("run", re.compile(r"[A-Za-z0-9._/-]{1,255}")),
    b"OMX_STEP": ("step", re.compile(r"[0-9]{1,9}")),
    b"OMX_REQUEST": ("request", re.compile(r"[A-Za-z0-9._:-]{1,128}")),
}

Provenance = dict[str, str]


def provenance_from_environ(env: Mapping[bytes, bytes]) -> Provenance | None:
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
    """``of(pid)``: the provenance of the process ``pid``; None when it has none, is gone or may not be read."""

    def __init__(self, environments: CallerEnvironments = CALLERS) -> None:
        self.environments = environments

    def of(self, pid: int) -> Provenance | None:
        try:
            env = self.environments.of(pid)
        except (ProcessGone, ZoneDenied):
            return None  # the write is made, without provenance
        return provenance_from_environ(env)


#: the mount's reader; handlers take another in tests
READER = ProvenanceReader()

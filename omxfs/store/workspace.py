"""``Workspace(root)``: the shared workspace on disk, the single place that knows every rule (SPEC §2-§5).

The store works with no FUSE at all; the mount, the CLI conveniences and the agent tools all go through it,
so they agree. Each zone is an object of its own module (``ws.private``, ``ws.handoff``, ``ws.collab``,
``ws.realtime``); every mutating call names the acting agent first, and the zone decides whether it may.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path

from omxfs.errors import NotFound, ZoneDenied
from omxfs.shell_line import named, shell_line
from omxfs.store import audit as audit_log
from omxfs.store.atomic import AtomicWriter, Locks, fsync_dir, held_dir
from omxfs.store.config import Config, parse_config, render_config
from omxfs.store.layout import AGENTS, CONFIG, LOCKS, META_DIR, TMP, ZONE_DIRS
from omxfs.store.names import AGENT_NAME, check_agent

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from omxfs.store.collab import CollabZone
    from omxfs.store.handoff import HandoffZone
    from omxfs.store.private import PrivateZone
    from omxfs.store.realtime import RealtimeZone

#: ``(uid, pid)`` of the process a request of the mount comes from, set by the mount around the naming of its caller
#: and its work (trio carries it into the worker thread): what the audit log records beside the agent. A new tuple
#: per request, so it also tells one request from the next (``Workspace.config``)
REQUESTER: ContextVar[tuple[int, int] | None] = ContextVar("omx_requester", default=None)


def _private(ws: Workspace) -> PrivateZone:
    from omxfs.store.private import PrivateZone

    return PrivateZone(ws)


def _handoff(ws: Workspace) -> HandoffZone:
    from omxfs.store.handoff import HandoffZone

    return HandoffZone(ws)


def _collab(ws: Workspace) -> CollabZone:
    from omxfs.store.collab import CollabZone

    return CollabZone(ws)


def _realtime(ws: Workspace) -> RealtimeZone:
    from omxfs.store.realtime import RealtimeZone

    return RealtimeZone(ws)


class _Zone:
    """A zone of the workspace, made (and its module imported) on first use: a command that needs one zone, or
    none (a checkpoint), does not load the others (the shared zones' records are pydantic models). Made once per
    workspace, whichever thread asks first: a zone keeps locks and caches. Then it is a plain attribute. (Its
    type for a checker is the zone's class, declared in ``Workspace``.)"""

    def __init__(self, make: Callable[[Workspace], object]) -> None:
        self.make = make

    def __set_name__(self, owner: type[Workspace], name: str) -> None:
        self.name = name

    def __get__(self, ws: Workspace | None, owner: object = None) -> object:
        if ws is None:  # looked up on the class (introspection, mocks): the descriptor itself
            return self
        with ws._making_zone:
            made = ws.__dict__.get(self.name)
            if made is None:
                made = ws.__dict__[self.name] = self.make(ws)
        return made


class Workspace:
    """A workspace directory laid out as SPEC §2 says. Create one with ``Workspace.init``."""

    if TYPE_CHECKING:  # what each zone is to a checker; at run time a ``_Zone``, made on first use
        private: PrivateZone
        handoff: HandoffZone
        collab: CollabZone
        realtime: RealtimeZone
    else:
        private = _Zone(_private)
        handoff = _Zone(_handoff)
        collab = _Zone(_collab)
        realtime = _Zone(_realtime)

    def __init__(self, root: str | os.PathLike[str], shown_as: str | None = None) -> None:
        """``shown_as``: the workspace as the person named it (the path they typed), which the commands that
        messages print for them to run carry; by default ``root``, or ``WS`` where ``root`` is a descriptor's path."""
        self.root = Path(root)
        self.shown_as = shown_as if shown_as is not None else named(self.root)
        self.meta = self.root / META_DIR
        if not (self.meta / CONFIG).is_file():
            raise NotFound(
                f"{self.root} is not an omx workspace (no {META_DIR}/config.toml): "
                f"run `{shell_line('omxfs', 'init', root)}`"
            )
        self.writer = AtomicWriter(self.meta / TMP)
        self.locks = Locks(self.meta / LOCKS)
        self._config: tuple[tuple[int, int], Config] | None = None
        #: the config as the request being served first read it (its ``REQUESTER`` value, the config)
        self._request_config: tuple[tuple[int, int], Config] | None = None
        self._config_path = os.fspath(self.meta / CONFIG)
        held = held_dir(self.root)
        # stat'ed on every request of the mount: relative to the held store descriptor, it skips the magic link
        self._config_at = (os.path.join(held[1], META_DIR, CONFIG), held[0]) if held else (self._config_path, None)
        self._making_zone = threading.RLock()  # a zone made on first use may use another as it is made

    @classmethod
    def init(
        cls, root: str | os.PathLike[str], agents: Sequence[str] = (), supervisors: Sequence[str] = ()
    ) -> Workspace:
        """Create the layout, or complete it; idempotent. Listed agents are added to the config."""
        root = Path(root)
        for name in [*agents, *supervisors]:
            check_agent(name)
        meta = root / META_DIR
        for sub in (*ZONE_DIRS, f"{META_DIR}/tmp", f"{META_DIR}/locks", f"{META_DIR}/logs"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        config_path = meta / CONFIG
        old = parse_config(config_path.read_text("utf-8")) if config_path.exists() else None
        new = (old or Config()).with_agents(list(agents), list(supervisors))
        if new != old:
            AtomicWriter(meta / TMP).write(meta, CONFIG, render_config(new).encode("utf-8"))
        for agent in new.agents:
            (root / AGENTS / agent).mkdir(exist_ok=True)
        fsync_dir(root / AGENTS)
        return cls(root)

    # -- identity ---------------------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The config, re-read when the file changes (another process may add agents).

        Within one request of the mount (``REQUESTER``) the file is looked at once: naming the caller, the zone rule
        and the caller's uid each ask for the config, and one look answers them all as of the same moment, as if
        the request had come a few microseconds earlier or later."""
        request = REQUESTER.get()
        seen = self._request_config
        if request is not None and seen is not None and seen[0] is request:
            return seen[1]
        # One plain os.stat (no pathlib on the way): the mount asks for the config on every request.
        # It is replaced by a rename, so a new inode number tells a new file even within one mtime tick.
        st = os.stat(self._config_at[0], dir_fd=self._config_at[1])
        stamp = (st.st_ino, st.st_mtime_ns)
        cached = self._config
        if cached is None or cached[0] != stamp:
            with open(self._config_path, encoding="utf-8") as f:
                cached = self._config = (stamp, parse_config(f.read()))
        if request is not None:
            self._request_config = (request, cached[1])  # one tuple: a thread never sees half of another's
        return cached[1]

    def add_agent(self, name: str, *, supervisor: bool = False) -> None:
        check_agent(name)
        with self.locks.hold("config"):
            config = self.config.with_agents([] if supervisor else [name], [name] if supervisor else [])
            self.writer.write(self.meta, CONFIG, render_config(config).encode("utf-8"))
            self._config = None
        (self.root / AGENTS / name).mkdir(exist_ok=True)

    def agents(self) -> list[str]:
        return sorted(self.config.agents)

    def require_actor(self, actor: str) -> str:
        """The acting agent must be well-formed and known; anything else is refused, never guessed (SPEC §3)."""
        if not isinstance(actor, str) or not AGENT_NAME.fullmatch(actor) or not self.config.knows(actor):
            add = shell_line("omxfs", "init", self.shown_as, "--agent", "NAME")  # a person's path, never an fd's
            raise ZoneDenied(f"unknown agent {actor!r}: add it with `{add}`")
        return actor

    def require_known(self, agent: str) -> str:
        """A named agent (a recipient, a zone owner) must exist."""
        check_agent(agent)
        if not self.config.knows(agent):
            raise NotFound(f"no agent named {agent!r} in this workspace")
        return agent

    def is_supervisor(self, agent: str) -> bool:
        return agent in self.config.supervisors

    def audit(self, actor: str, action: str, path: str) -> None:
        """Record a supervisor's write outside their own zone (SPEC §3), with the uid and pid that made it: the
        process that asked the mount (``REQUESTER``), or this one when the store is called directly: a record file of
        its own, which no other writer can overwrite, on a shared filesystem too (``audit.py``)."""
        uid, pid = REQUESTER.get() or (os.getuid(), os.getpid())
        audit_log.append(self.meta, audit_log.new_record(actor, action, path, uid, pid))

    def audit_trail(self) -> audit_log.Trail:
        """Every audit record, oldest first: the record files and a store's older ``audit.jsonl`` (``audit.py``)."""
        return audit_log.read_trail(self.meta)

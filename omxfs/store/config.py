"""The workspace configuration, ``WS/.omxfs/config.toml``: who the agents are, who may write anywhere, and the
limits of each view and omx step run on it (``[limits]``, ``omxfs.limits``).

It is read with the standard library's tomllib (but a text exactly as this module writes it, ``parse_config``); it
is small and fixed in shape, so it is written here by hand rather than with another dependency.
"""

from __future__ import annotations

from omxfs.errors import InvalidInput
from omxfs.store.names import check_agent

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from omxfs.limits import Limits


class Config:
    """What ``config.toml`` says. Compared by its fields; not to be changed once made (``with_agents`` makes
    another)."""

    __slots__ = ("_limits", "agents", "supervisors", "uids")

    def __init__(
        self,
        agents: tuple[str, ...] = (),
        supervisors: tuple[str, ...] = (),
        uids: dict[int, str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.agents = agents
        #: may write in every zone; each such write is recorded in the audit log with their name
        self.supervisors = supervisors
        #: kernel uid → agent: the only identity the mount cannot be lied to about (SPEC §3)
        self.uids: dict[int, str] = {} if uids is None else uids
        self._limits = limits  # None: none set (``limits`` makes them when asked: a command on a store never asks)

    @property
    def limits(self) -> Limits:
        """The limits of each view and omx step on this workspace; a limit not set here is the command line's or
        the default."""
        if self._limits is None:
            from omxfs.limits import Limits

            return Limits()
        return self._limits

    def _fields(self) -> tuple[Any, ...]:
        return (self.agents, self.supervisors, self.uids, self.limits)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is self.__class__ and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # its uid map is a dict, as the frozen dataclass it was could not hash

    def __repr__(self) -> str:
        return "Config(agents={!r}, supervisors={!r}, uids={!r}, limits={!r})".format(*self._fields())

    def knows(self, agent: str) -> bool:
        return agent in self.agents or agent in self.supervisors

    def bound_uids(self, agent: str) -> list[int]:
        """The uids the uid map binds to ``agent``, in order: a bound name is theirs alone."""
        return sorted(uid for uid, name in self.uids.items() if name == agent)

    def with_agents(self, agents: list[str], supervisors: list[str]) -> Config:
        merged = tuple(dict.fromkeys([*self.agents, *agents]))
        merged_sup = tuple(dict.fromkeys([*self.supervisors, *supervisors]))
        return Config(agents=merged, supervisors=merged_sup, uids=dict(self.uids), limits=self._limits)


def parse_config(text: str) -> Config:
    """The config ``text`` says; InvalidInput where it is no config. A text exactly as ``render_config`` writes it
    (what the store wrote, not edited since) is read back without TOML's parser, which costs a command on a store
    more to import than the rest of its start; any other text is read with ``tomllib``."""
    own = _as_rendered(text)
    if own is not None:
        return own
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config.toml: {exc}") from exc
    agents = data.get("agents", [])
    supervisors = data.get("supervisors", [])
    uids = data.get("uids", {})
    limits = data.get("limits", {})
    if not isinstance(agents, list) or not isinstance(supervisors, list) or not isinstance(uids, dict):
        raise InvalidInput("config.toml: agents and supervisors must be lists, uids a table")
    if not isinstance(limits, dict):
        raise InvalidInput("config.toml: limits must be a table ([limits])")
    try:
        uid_map = {int(uid): check_agent(name) for uid, name in uids.items()}
    except ValueError as exc:
        raise InvalidInput(f"config.toml: uids: {exc}") from exc
    chosen = None
    if limits:
        from omxfs.limits import limits_from_table

        chosen = limits_from_table(limits, "config.toml: limits")
    return Config(
        agents=tuple(check_agent(a) for a in agents),
        supervisors=tuple(check_agent(s) for s in supervisors),
        uids=uid_map,
        limits=chosen,
    )


def _as_rendered(text: str) -> Config | None:
    """The config whose ``render_config`` is ``text`` exactly, with no limits set; None for any other text. What
    is read here is only a guess, taken once it renders back to the very same text: so it is what ``tomllib``
    reads there too (``tests/store/test_config_reads.py`` holds the two to each other)."""
    lines = text.split("\n")
    try:
        agents, supervisors = (_names(lines[i], key) for i, key in ((2, "agents = "), (3, "supervisors = ")))
        uids = {}
        for line in lines[7 : lines.index("", 7)]:
            uid, _, name = line.partition(" = ")
            uids[int(uid)] = name[1:-1]
    except (IndexError, ValueError):
        return None
    try:
        config = Config(tuple(map(check_agent, agents)), tuple(map(check_agent, supervisors)), uids)
        uids_checked = all(check_agent(name) == name for name in uids.values())
    except InvalidInput:
        return None
    return config if uids_checked and render_config(config) == text else None


def _names(line: str, key: str) -> list[str]:
    if not (line.startswith(key + "[") and line.endswith("]")):
        raise ValueError(line)
    inside = line[len(key) + 1 : -1]
    return [name[1:-1] for name in inside.split(", ")] if inside else []


def render_config(config: Config) -> str:
    def names(values: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{v}"' for v in values) + "]"

    lines = [
        "# omx workspace configuration. Read-only through the mount: edit it on the store directly.",
        "# agents: names that may act here. supervisors: may write in every zone (each such write is audited).",
        f"agents = {names(config.agents)}",
        f"supervisors = {names(config.supervisors)}",
        "",
        "# uid = agent: requests from this kernel uid are this agent, whatever the process claims.",
        "[uids]",
        *(f'{uid} = "{name}"' for uid, name in sorted(config.uids.items())),
        "",
        "# the limits of each view (omxfs run) and omx step: max_procs (processes at once), max_memory and",
        '# max_file_size (like "512M", "2G"); 0 is no limit; unset: 512, half the memory up to 8G, 16G',
        "# (docs/views.md, Limits).",
        "[limits]",
        *_limit_lines(config._limits),
    ]
    return "\n".join(lines) + "\n"


def _limit_lines(limits: Limits | None) -> list[str]:
    if limits is None:
        return []
    from omxfs.limits import NO_LIMIT, size_text

    lines = []
    if limits.max_procs is not None:
        lines.append(f"max_procs = {limits.max_procs}")
    for name, value in (("max_memory", limits.max_memory), ("max_file_size", limits.max_file_size)):
        if value is not None:
            shown = "0" if value == NO_LIMIT else f'"{size_text(value)}"'
            lines.append(f"{name} = {shown}")
    return lines

"""The workspace configuration, ``WS/.omxfs/config.toml``: who the agents are, who may write anywhere, and the
limits of each view and omx step run on it (``[limits]``, ``omxfs.limits``).

It is read with the standard library's tomllib; it is small and fixed in shape, so it is written here by hand
rather than with another dependency.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

from omxfs.errors import InvalidInput
from omxfs.limits import NO_LIMIT, Limits, limits_from_table, size_text
from omxfs.store.names import check_agent


@dataclass(frozen=True)
class Config:
    agents: tuple[str, ...] = ()
    #: may write in every zone; each such write is recorded in the audit log with their name
    supervisors: tuple[str, ...] = ()
    #: kernel uid → agent: the only identity the mount cannot be lied to about (SPEC §3)
    uids: dict[int, str] = field(default_factory=dict)
    #: the limits of each view and omx step on this workspace; a limit not set here is the command line's or the default
    limits: Limits = field(default_factory=Limits)

    def knows(self, agent: str) -> bool:
        return agent in self.agents or agent in self.supervisors

    def bound_uids(self, agent: str) -> list[int]:
        """The uids the uid map binds to ``agent``, in order: a bound name is theirs alone."""
        return sorted(uid for uid, name in self.uids.items() if name == agent)

    def with_agents(self, agents: list[str], supervisors: list[str]) -> Config:
        merged = tuple(dict.fromkeys([*self.agents, *agents]))
        merged_sup = tuple(dict.fromkeys([*self.supervisors, *supervisors]))
        return Config(agents=merged, supervisors=merged_sup, uids=dict(self.uids), limits=self.limits)


def parse_config(text: str) -> Config:
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
    return Config(
        agents=tuple(check_agent(a) for a in agents),
        supervisors=tuple(check_agent(s) for s in supervisors),
        uids=uid_map,
        limits=limits_from_table(limits, "config.toml: limits"),
    )


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
        *_limit_lines(config.limits),
    ]
    return "\n".join(lines) + "\n"


def _limit_lines(limits: Limits) -> list[str]:
    lines = []
    if limits.max_procs is not None:
        lines.append(f"max_procs = {limits.max_procs}")
    for name, value in (("max_memory", limits.max_memory), ("max_file_size", limits.max_file_size)):
        if value is not None:
            shown = "0" if value == NO_LIMIT else f'"{size_text(value)}"'
            lines.append(f"{name} = {shown}")
    return lines

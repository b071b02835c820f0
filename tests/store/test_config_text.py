"""``parse_config`` reads a config exactly as the store writes it without TOML's parser, and gets from it what
``tomllib`` gets; a text changed in any way (a comment, spacing, a quote, a limit) is ``tomllib``'s, read as before."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from omxfs.errors import InvalidInput
from omxfs.limits import Limits, limits_from_table
from omxfs.store.config import Config, parse_config, render_config

CONFIGS = [
    Config(),
    Config(agents=("alice",)),
    Config(agents=("alice", "bob"), supervisors=("boss",)),
    Config(agents=("a-1", "b2"), supervisors=("boss", "chief"), uids={0: "boss", 1001: "a-1", 65534: "b2"}),
    Config(agents=("alice",), uids={1001: "alice"}, limits=Limits(max_procs=64)),
    Config(agents=("alice",), limits=Limits(max_memory=0, max_file_size=1 << 20)),
]


def by_tomllib(text: str) -> Config:
    """What ``text`` says, read by ``tomllib`` as ``parse_config`` reads any text it did not write."""
    data = tomllib.loads(text)
    limits = data.get("limits", {})
    return Config(
        agents=tuple(data.get("agents", [])),
        supervisors=tuple(data.get("supervisors", [])),
        uids={int(uid): name for uid, name in data.get("uids", {}).items()},
        limits=limits_from_table(limits, "config.toml: limits") if limits else None,
    )


@pytest.mark.parametrize("config", CONFIGS, ids=repr)
def test_a_config_as_written_reads_back_as_tomllib_reads_it(config: Config) -> None:
    text = render_config(config)
    assert parse_config(text) == config == by_tomllib(text)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace('agents = ["alice", "bob"]', 'agents = [ "alice", "bob" ]'),
        lambda t: t.replace('agents = ["alice", "bob"]', "agents = ['alice', 'bob']"),
        lambda t: t.replace('agents = ["alice", "bob"]', 'agents = ["alice", "bob",]'),
        lambda t: t.replace('agents = ["alice", "bob"]', 'agents = ["alice",\n  "bob"]'),
        lambda t: t.replace('1001 = "alice"', '"1001" = "alice"'),
        lambda t: t.replace('1001 = "alice"', '1001 = "alice"  # the first'),
        lambda t: t.replace('1001 = "alice"', '1001 = "alice"\n1002 = "bob"'),
        lambda t: t.replace("[limits]\n", "[limits]\nmax_procs = 8\n"),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "# edited by hand\n" + t,
        lambda t: t + "\n",
    ],
)
def test_an_edited_config_is_read_as_tomllib_reads_it(edit: object) -> None:
    written = render_config(Config(agents=("alice", "bob"), supervisors=("boss",), uids={1001: "alice"}))
    text = edit(written)  # type: ignore[operator]
    assert text != written
    assert parse_config(text) == by_tomllib(text)


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace('agents = ["alice", "bob"]', 'agents = ["alice", "Bob"]'),
        lambda t: t.replace('1001 = "alice"', '1001 = "Alice"'),
        lambda t: t.replace('1001 = "alice"', '1001 = "al\\"ice"'),
        lambda t: t.replace('agents = ["alice", "bob"]', 'agents = ["alice", "bob"'),
        lambda t: t.replace("[limits]\n", "[limits]\nmax_procs = -1\n"),
    ],
)
def test_an_edit_that_breaks_it_is_refused_as_before(edit: object) -> None:
    written = render_config(Config(agents=("alice", "bob"), supervisors=("boss",), uids={1001: "alice"}))
    with pytest.raises(InvalidInput):
        parse_config(edit(written))  # type: ignore[operator]


def test_a_command_on_a_store_as_written_loads_no_toml_parser() -> None:
    probe = (
        "import sys; from omxfs.store.config import Config, parse_config, render_config; "
        "parse_config(render_config(Config(agents=('alice',), uids={1001: 'alice'}))); "
        "print(sorted(m for m in sys.modules if m.startswith(('tomllib', 'omxfs.limits', 'dataclasses'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "[]\n"

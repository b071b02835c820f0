"""Who a request comes from (SPEC §3): the resolver against a fake ``/proc``, then the order through a real mount."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from omxfs.errors import ZoneDenied
from omxfs.fuse.identity import (
    CallerEnvironments,
    FixedIdentity,
    IdentityResolver,
    parse_environ,
    split_image,
)
from omxfs.store.config import Config
from tests.fuse.conftest import Mount

CONFIG = Config(agents=("alice", "bob", "carol"), supervisors=("boss",), uids={1001: "carol", 1002: "ghost"})


def fake_process(
    proc: Path, pid: int, env: dict[str, str], *, start: int = 100, env_start: int = 5000, comm: str = "cmd"
) -> None:
    """``/proc/<pid>/stat`` and ``environ`` as the kernel writes them (52 fields; comm in parentheses)."""
    d = proc / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    environ = b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())
    fields = ["S"] + ["0"] * 49  # fields 3 .. 52
    fields[19] = str(start)  # field 22
    fields[45], fields[46] = str(env_start), str(env_start + len(environ))  # fields 48, 49
    (d / "stat").write_text(f"{pid} ({comm}) " + " ".join(fields) + "\n")
    (d / "task" / str(pid)).mkdir(parents=True, exist_ok=True)  # the thread's own, which the resolver reads
    (d / "task" / str(pid) / "stat").write_text(f"{pid} ({comm}) " + " ".join(fields) + "\n")
    (d / "environ").write_bytes(environ)


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    return tmp_path / "proc"


def resolver(proc: Path, default: str = "alice", config: Config = CONFIG, **kw: int) -> IdentityResolver:
    return IdentityResolver(lambda: config, default, CallerEnvironments(proc, **kw))


def test_parse_environ_is_nul_separated_and_first_definition_wins() -> None:
    env = parse_environ(b"A=1\0OMX_AGENT=bob\0OMX_AGENT=eve\0junk\0B=x=y")
    assert env == {b"A": b"1", b"OMX_AGENT": b"bob", b"B": b"x=y"}


def test_split_image_gives_the_raw_start_time_and_the_end_from_field_48() -> None:
    line = b"42 (a) (b c)) S " + b" ".join(str(n).encode() for n in range(4, 53)) + b"\n"  # field n holds n
    assert split_image(line) == (b"22", b" 48 49 50 51 52\n")
    for truncated in (b"42 (truncated", line[: line.index(b" 49 ")]):
        with pytest.raises(ValueError):
            split_image(truncated)


def test_default_identity_when_nothing_is_claimed(proc: Path) -> None:
    fake_process(proc, 10, {"PATH": "/bin"})
    assert resolver(proc).resolve(0, 10) == "alice"


def test_omx_agent_beats_the_default(proc: Path) -> None:
    fake_process(proc, 10, {"OMX_AGENT": "bob"})
    assert resolver(proc).resolve(0, 10) == "bob"


def test_uid_map_beats_omx_agent(proc: Path) -> None:
    fake_process(proc, 10, {"OMX_AGENT": "alice"})
    assert resolver(proc).resolve(1001, 10) == "carol"


@pytest.mark.parametrize("uid", [0, 1003])
def test_a_name_the_uid_map_binds_cannot_be_claimed_through_omx_agent(proc: Path, uid: int) -> None:
    """Regression (issue 14): every unmapped uid, root included, became carol by starting with OMX_AGENT=carol."""
    fake_process(proc, 10, {"OMX_AGENT": "carol"})
    with pytest.raises(ZoneDenied, match="the uid map binds carol to uid 1001, and only that uid acts as carol"):
        resolver(proc).resolve(uid, 10)
    assert resolver(proc).resolve(1001, 10) == "carol"  # the bound uid itself, whatever it claims


def test_a_supervisor_bound_to_a_uid_is_reserved_too(proc: Path) -> None:
    config = Config(agents=("alice",), supervisors=("boss",), uids={1005: "boss"})
    fake_process(proc, 10, {"OMX_AGENT": "boss"})
    with pytest.raises(ZoneDenied, match="binds boss to uid 1005"):
        resolver(proc, config=config).resolve(0, 10)


def test_a_uid_mapped_to_an_unknown_agent_is_refused(proc: Path) -> None:
    fake_process(proc, 10, {"OMX_AGENT": "alice"})
    with pytest.raises(ZoneDenied, match="unknown agent 'ghost' from the uid map entry for uid 1002"):
        resolver(proc).resolve(1002, 10)


@pytest.mark.parametrize("claimed", ["Bob", "bob_smith", "", "-bob", "../alice", "bob\nalice", "bøb", "a" * 64])
def test_malformed_names_are_refused_never_guessed(proc: Path, claimed: str) -> None:
    fake_process(proc, 10, {"OMX_AGENT": claimed})
    with pytest.raises(ZoneDenied, match="malformed agent name"):
        resolver(proc).resolve(0, 10)


def test_unknown_names_are_refused(proc: Path) -> None:
    fake_process(proc, 10, {"OMX_AGENT": "mallory"})
    with pytest.raises(ZoneDenied, match="unknown agent 'mallory' from OMX_AGENT of pid 10"):
        resolver(proc).resolve(0, 10)
    fake_process(proc, 11, {})
    with pytest.raises(ZoneDenied, match="unknown agent 'root' from the mount's default"):
        resolver(proc, default="root").resolve(0, 11)


def test_supervisors_are_known_agents(proc: Path) -> None:
    fake_process(proc, 10, {"OMX_AGENT": "boss"})
    assert resolver(proc).resolve(0, 10) == "boss"


def test_a_reused_pid_is_not_trusted(proc: Path) -> None:
    r = resolver(proc)
    fake_process(proc, 10, {"OMX_AGENT": "bob"}, start=100)
    assert r.resolve(0, 10) == "bob"
    # the process exits and an unrelated one gets the same pid: a later start time, another environment
    fake_process(proc, 10, {"OMX_AGENT": "boss"}, start=250)
    assert r.resolve(0, 10) == "boss"
    fake_process(proc, 10, {}, start=300)
    assert r.resolve(0, 10) == "alice"


def test_exec_brings_a_new_environment_under_the_same_pid(proc: Path) -> None:
    r = resolver(proc)
    fake_process(proc, 10, {}, start=100, env_start=5000)
    assert r.resolve(0, 10) == "alice"  # e.g. subprocess's child after fork, before exec
    fake_process(proc, 10, {"OMX_AGENT": "bob"}, start=100, env_start=9000)
    assert r.resolve(0, 10) == "bob"


def test_an_exec_is_noticed_when_the_new_address_ends_in_the_old_one(proc: Path) -> None:
    """The kept image is compared by the raw end of the stat line, from the space before field 48."""
    r = resolver(proc)
    fake_process(proc, 10, {"OMX_AGENT": "bob"})
    assert r.resolve(0, 10) == "bob"
    stat = proc / "10" / "task" / "10" / "stat"
    line = stat.read_bytes()
    fields = line.split(b" ")
    fields[47] = b"9" + fields[47]  # field 48 (arg_start) 5000 -> 95000: the line still ends with "5000 5014 ..."
    stat.write_bytes(b" ".join(fields))
    (proc / "10" / "environ").write_bytes(b"OMX_AGENT=boss\0")
    assert r.resolve(0, 10) == "boss"


def test_one_image_is_one_mapping_and_a_new_image_another(proc: Path) -> None:
    """What the resolver's own cache relies on: ``of`` gives the same object while the image is the same."""
    envs = CallerEnvironments(proc)
    fake_process(proc, 10, {"OMX_AGENT": "bob"})
    first = envs.of(10)
    assert envs.of(10) is first
    fake_process(proc, 10, {"OMX_AGENT": "bob"}, env_start=9000)  # exec'd, the same environment
    assert envs.of(10) is not first and envs.of(10) == first
    envs.close()


def test_the_environment_is_read_once_per_process_image(proc: Path) -> None:
    r = resolver(proc)
    fake_process(proc, 10, {"OMX_AGENT": "bob"})
    assert r.resolve(0, 10) == "bob"
    (proc / "10" / "environ").write_bytes(b"OMX_AGENT=boss\0")  # same key: the cache answers
    assert r.resolve(0, 10) == "bob"


def test_the_cache_is_bounded(proc: Path) -> None:
    r = resolver(proc, cache_size=2)
    for pid in range(10, 15):
        fake_process(proc, pid, {"OMX_AGENT": "bob"})
        assert r.resolve(0, pid) == "bob"
    assert r.environments.cached() == 2


def test_a_vanished_process_falls_back_to_the_default(proc: Path) -> None:
    proc.mkdir()
    assert resolver(proc).resolve(0, 12345) == "alice"
    assert resolver(proc).resolve(0, 0) == "alice"  # pid 0: a request the kernel makes on its own


def test_an_unreadable_process_is_refused(proc: Path) -> None:
    fake_process(proc, 10, {})
    (proc / "10" / "environ").unlink()
    (proc / "10" / "environ").mkdir()  # reading it fails with EISDIR, like EACCES for another user's process
    with pytest.raises(ZoneDenied, match="cannot read the identity of pid 10"):
        resolver(proc).resolve(0, 10)


def test_the_config_is_consulted_on_every_request(proc: Path) -> None:
    config = {"now": Config(agents=("alice",))}
    r = IdentityResolver(lambda: config["now"], "alice", CallerEnvironments(proc))
    fake_process(proc, 10, {"OMX_AGENT": "carol"})
    with pytest.raises(ZoneDenied):
        r.resolve(0, 10)
    config["now"] = Config(agents=("alice", "carol"))  # `omxfs init WS --agent carol` while mounted
    assert r.resolve(0, 10) == "carol"


def test_a_name_given_before_is_not_given_after_the_config_changes(proc: Path) -> None:
    """The resolver keeps a pid's name with the config it came from: a new config settles it again, at once."""
    config = {"now": Config(agents=("alice", "bob"))}
    r = IdentityResolver(lambda: config["now"], "alice", CallerEnvironments(proc))
    fake_process(proc, 10, {"OMX_AGENT": "bob"})
    fake_process(proc, 11, {})
    assert (r.resolve(0, 10), r.resolve(0, 11)) == ("bob", "alice")
    config["now"] = Config(agents=("alice",))  # bob removed from the workspace while mounted
    with pytest.raises(ZoneDenied, match="unknown agent 'bob'"):
        r.resolve(0, 10)
    config["now"] = Config(agents=("alice", "bob"), uids={1001: "bob"})  # bob bound to a uid
    with pytest.raises(ZoneDenied, match="binds bob to uid 1001"):
        r.resolve(0, 10)
    assert r.resolve(1001, 10) == "bob"
    config["now"] = Config(agents=("bob",))  # the default removed
    with pytest.raises(ZoneDenied, match="unknown agent 'alice' from the mount's default"):
        r.resolve(0, 11)


def test_a_view_s_agent_removed_from_the_config_stops_acting_at_once() -> None:
    config = {"now": Config(agents=("alice", "bob"))}
    fixed = FixedIdentity(lambda: config["now"], "bob")
    assert fixed.resolve(0, 10) == "bob"
    config["now"] = Config(agents=("alice",))
    with pytest.raises(ZoneDenied, match="unknown agent 'bob' from the view's identity"):
        fixed.resolve(0, 10)
    config["now"] = Config(agents=("alice",), supervisors=("bob",))
    assert fixed.resolve(0, 10) == "bob"


def test_the_real_proc_of_a_child_process() -> None:
    r = IdentityResolver(lambda: CONFIG, "alice", CallerEnvironments())
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**env, "OMX_AGENT": "bob"},
    )
    try:
        # Popen returns once exec began, before the kernel has set up the new environment: wait for the program.
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        assert r.resolve(os.getuid(), child.pid) == "bob"
    finally:
        child.communicate(b"")
    assert r.resolve(os.getuid(), os.getpid()) == (os.environ.get("OMX_AGENT") or "alice")


def test_a_kept_stat_descriptor_sees_exec_and_exit_of_a_real_process() -> None:
    """The per-pid ``stat`` descriptor is re-read, not trusted: exec brings the new name, exit the default."""
    r = IdentityResolver(lambda: CONFIG, "alice", CallerEnvironments())
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    exec_bob = (
        "import os, sys; sys.stdin.readline(); "
        "os.execve(sys.executable, [sys.executable, '-c', 'import sys; print(1, flush=True); sys.stdin.read()'], "
        "{**os.environ, 'OMX_AGENT': 'bob'})"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", exec_bob], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert r.resolve(os.getuid(), child.pid) == "alice"
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "1\n"  # the new image runs
        assert r.resolve(os.getuid(), child.pid) == "bob"
    finally:
        child.communicate("")
    assert r.resolve(os.getuid(), child.pid) == "alice"  # exited: its descriptor answers ESRCH, the default answers
    r.environments.close()


# -- through a real mount ------------------------------------------------------------------------------------


def test_omx_agent_or_the_default_through_the_mount(mount: Callable[..., Mount]) -> None:
    m = mount()
    m.run("echo b > agents/bob/by-bob", agent="bob", check=True)
    m.run("echo a > agents/alice/by-default", agent=None, check=True)
    refused = m.run("echo a > agents/alice/by-bob", agent="bob")
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr
    assert sorted(os.listdir(m.store / "agents/bob")) == ["by-bob"]
    assert sorted(os.listdir(m.store / "agents/alice")) == ["by-default"]


@pytest.mark.parametrize("claimed", ["Bad_Name", "mallory", ""])
def test_malformed_or_unknown_omx_agent_is_eacces_through_the_mount(mount: Callable[..., Mount], claimed: str) -> None:
    m = mount()
    m.ws.private.write("alice", "alice", "a.txt", b"x")
    for command in ("cat agents/alice/a.txt", "ls agents", "echo x > agents/alice/b.txt"):
        done = m.run(command, agent=claimed)
        assert done.returncode != 0 and b"Permission denied" in done.stderr, (command, done.stderr)
    assert sorted(os.listdir(m.store / "agents/alice")) == ["a.txt"]
    assert "errno=EACCES" in m.log() and (f"agent name {claimed!r}" in m.log() or f"agent {claimed!r}" in m.log())


def test_a_bound_name_claimed_by_another_uid_is_refused_through_the_mount(mount: Callable[..., Mount]) -> None:
    m = mount(uids={os.getuid() + 4242: "bob"})  # bob belongs to another uid: this one may not be bob
    refused = m.run("echo x > agents/bob/claimed", agent="bob")
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr
    assert not (m.store / "agents/bob/claimed").exists()
    assert "errno=EACCES" in m.log() and "the uid map binds bob" in m.log()


def test_uid_map_beats_omx_agent_through_the_mount(mount: Callable[..., Mount]) -> None:
    m = mount(uids={os.getuid(): "bob"})
    m.run("echo b > agents/bob/by-uid", agent="alice", check=True)  # claims alice, the kernel's uid says bob
    refused = m.run("echo a > agents/alice/x", agent="alice")
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr
    assert (m.store / "agents/bob/by-uid").read_text() == "b\n"
    assert not (m.store / "agents/alice/x").exists()

"""``omxfs run --bind/--ro-bind``: host paths a view may show, and the workspace's store, which it may not.

Only the destination was checked: a source that was the store, held it or lay inside it showed the raw store
read-write in the view (another agent's zone, the config, the history), with no daemon in the way.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from omxfs.store import Workspace
from tests.view.conftest import OMXFS, clean_env, run_from_root, run_view, view_argv

Ok = Callable[..., str]
WRITE_BOB = "echo pwn > /mnt/raw/agents/bob/viaraw 2>/dev/null; echo pwn > /mnt/raw/ws/agents/bob/viaraw; echo ran"


def refused(done: subprocess.CompletedProcess[str], option: str, source: object) -> str:
    """The one line that refused a bind before the view started."""
    assert done.returncode == 1, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    assert "ran" not in done.stdout and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {option} {source}: ") and "bind a directory beside the workspace" in line
    return line


def test_a_bind_of_the_store_above_or_inside_it_is_refused(store: Workspace) -> None:
    ws = store.root
    for option, source in [
        ("--bind", ws),
        ("--bind", ws.parent),
        ("--ro-bind", ws.parent),
        ("--bind", ws / "agents/bob"),
        ("--bind", ws / ".omxfs"),
        ("--bind", "/"),
    ]:
        refused(run_view(ws, "alice", WRITE_BOB, option, f"{source}:/mnt/raw"), option, source)
    assert not (ws / "agents/bob/viaraw").exists()


def test_a_bind_of_another_path_to_the_store_is_refused(store: Workspace, tmp_path: Path) -> None:
    """A bind mount on the host names the store's directory by another path: judged by device and inode."""
    ws = store.root
    alias = tmp_path / "alias"
    alias.mkdir()
    for source in (alias, alias / "ws/agents"):  # the alias holds the store; the alias leads inside it
        view = view_argv(ws, "alice", WRITE_BOB, "--bind", f"{source}:/mnt/raw")
        alias_then = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        # a mount namespace of its own (private): the alias never shows on the host
        done = run_from_root(["unshare", "--mount", "sh", "-c", alias_then, "sh", tmp_path, alias, *view])
        refused(done, "--bind", source)
    assert not (ws / "agents/bob/viaraw").exists()


def test_a_bind_of_a_workspace_mounted_in_place_is_refused_from_above(mount: Callable[..., object]) -> None:
    """As root the launcher uncovers the store under its mount in place: a bind from above would show it raw."""
    shared = mount(agents=("alice", "bob"), default="alice", in_place=True)
    root: Path = shared.root  # type: ignore[attr-defined]
    refused(run_view(root, "alice", WRITE_BOB, "--ro-bind", f"{root.parent}:/mnt/raw"), "--ro-bind", root.parent)
    refused(run_view(root, "alice", WRITE_BOB, "--bind", f"{root}:/mnt/raw"), "--bind", root)
    assert not os.path.exists(f"/proc/self/fd/{shared._store_fd}/agents/bob/viaraw")  # type: ignore[attr-defined]


def test_a_bind_beside_the_workspace_still_works(store: Workspace, tmp_path: Path, ok: Ok) -> None:
    beside = tmp_path / "beside"
    beside.mkdir()
    assert ok(run_view(store.root, "alice", "echo x > /mnt/out/f && echo ran", "--bind", f"{beside}:/mnt/out")) == (
        "ran\n"
    )
    assert (beside / "f").read_text() == "x\n"


def test_an_empty_source_is_refused_not_taken_for_the_current_directory(store: Workspace, tmp_path: Path) -> None:
    for spec in ("", ":/mnt/here"):
        done = subprocess.run(
            [*OMXFS, "run", str(store.root), "--as", "alice", "--bind", spec, "--", "sh", "-c", "echo ran"],
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_env(),
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 2 and "ran" not in done.stdout, done.stdout + done.stderr
        assert "Invalid value for --bind" in done.stderr and "names no source path" in done.stderr


def test_a_refused_destination_names_the_option_used(store: Workspace, tmp_path: Path) -> None:
    done = run_view(store.root, "alice", "echo ran", "--ro-bind", f"{tmp_path}:{store.root}/agents/x")
    assert done.returncode == 1 and "ran" not in done.stdout
    assert done.stderr.startswith(f"Error: --ro-bind {store.root}/agents/x: nothing may cover the workspace")


def test_a_bind_of_an_omxfs_mount_is_refused(mount: Callable[..., object]) -> None:
    """A shared mount of the workspace (or any omxfs mount) believes the caller's ``OMX_AGENT``: bound into bob's
    view, it let bob write alice's zone with ``OMX_AGENT=alice`` (found by trying it)."""
    shared = mount(agents=("alice", "bob"), default="alice")
    root: Path = shared.root  # type: ignore[attr-defined]
    store: Path = shared.store  # type: ignore[attr-defined]
    write_alice = 'OMX_AGENT=alice sh -c "echo x > /mnt/m/agents/alice/from-bob" 2>/dev/null; echo ran'
    for option, source in [("--bind", root), ("--ro-bind", root), ("--bind", root / "agents")]:
        done = run_view(store, "bob", write_alice, option, f"{source}:/mnt/m")
        assert done.returncode == 1 and "ran" not in done.stdout, done.stdout + done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"Error: {option} {source}: ") and f"the omxfs mount at {root}" in line, line
    assert not (store / "agents/alice/from-bob").exists()

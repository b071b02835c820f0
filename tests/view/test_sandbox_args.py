"""The order of a view's bubblewrap arguments: later mounts cover earlier ones, so order is what the view shows."""

from __future__ import annotations

from omxfs.view.sandbox import Bind, ViewSpec, bwrap_args


def spec(**changes: object) -> ViewSpec:
    base: dict[str, object] = {
        "agent": "alice",
        "workspace": "/tmp/ws",
        "daemon_mount": "/run/user/0/omxfs-view-alice-x",
        "own_fd": 6,
        "meta_fd": 7,
        "cwd": "/tmp/ws/agents/alice",
        "command": ["sh"],
        "runtime": ["/tmp/checkout/.venv", "/tmp/checkout/omxfs"],
        "binds": [Bind("/tmp/tools", "/tmp/tools", True)],
        "home": "/root",
    }
    return ViewSpec(**{**base, **changes})  # type: ignore[arg-type]


def test_what_lives_in_tmp_is_bound_after_the_private_tmp() -> None:
    """A checkout or a venv under /tmp (a CI clone) was hidden by the view's own /tmp: omx could not start."""
    args = bwrap_args("bwrap", spec())
    tmp = args.index("--tmpfs")
    assert args[tmp + 1] == "/tmp"
    for path in ("/tmp/checkout/.venv", "/tmp/checkout/omxfs", "/tmp/tools", "/tmp/ws"):
        assert args.index(path) > tmp, path


def test_the_workspace_comes_last_and_its_zones_after_the_daemon() -> None:
    args = bwrap_args("bwrap", spec())
    daemon = args.index("/run/user/0/omxfs-view-alice-x")
    assert args.index("/tmp/ws/agents/alice") > daemon and "/tmp/ws/agents" not in args  # other zones: the daemon's
    assert args.index("/tmp/ws/.omxfs") > daemon
    assert max(args.index("/tmp/tools"), args.index("/tmp/checkout/omxfs")) < daemon

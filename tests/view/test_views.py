"""``omxfs run WS --as NAME -- COMMAND`` (issue 14): what a view shows, how it starts and ends, real processes."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from omxfs.process import pid_alive
from omxfs.store import Workspace
from omxfs.store.names import AGENT_RULE
from omxfs.view.launch import EMPTY_HOME
from tests.support.scripts import REPO, with_ctrl_c
from tests.view.conftest import OMXFS, clean_env, omxfs_view_mounts, poll, run_from_root, run_view, running, view_argv

Ok = Callable[..., str]


def test_own_zone_is_the_store_directory_read_write_and_other_zones_are_read_only(store: Workspace, ok: Ok) -> None:
    ws = store.root
    out = ok(
        run_view(
            ws,
            "alice",
            "pwd; echo mine > notes.md; mkdir -p src && echo x > src/a.c; "
            "echo no > ../bob/f 2>/dev/null || echo bob-refused; "
            "echo no > ../../.omxfs/config.toml 2>/dev/null || echo meta-refused; cat ../../.omxfs/config.toml",
        )
    )
    assert out.splitlines()[0] == f"{ws}/agents/alice"  # started in its own zone: the caller was outside WS
    assert (ws / "agents/alice/notes.md").read_text() == "mine\n"  # the store's own file, written natively
    assert (ws / "agents/alice/src/a.c").read_text() == "x\n"
    assert "bob-refused" in out and "meta-refused" in out and "alice" in out
    assert not (ws / "agents/bob/f").exists()


def test_own_zone_bypasses_the_daemon_and_the_host_is_out_of_sight(store: Workspace, ok: Ok) -> None:
    """Issue 14: no daemon on the agent's own path; a private /tmp, no /run or /home, a minimal /dev."""
    marker = Path(f"/tmp/omx-view-marker-{os.getpid()}")
    marker.write_text("host")
    try:
        out = ok(
            run_view(
                store.root,
                "alice",
                f"stat -f -c %T . ../../collaborative; cat {marker} 2>/dev/null || echo no-marker; ls /dev; "
                "test -e /run || echo no-run; test -e /home || echo no-home",
            )
        )
    finally:
        marker.unlink()
    own, shared, tmp, *rest = out.splitlines()
    assert "fuse" not in own and "fuse" in shared  # the store's filesystem itself, the daemon's mount
    assert tmp == "no-marker"  # the host's /tmp (this file, every socket in it) is not there
    assert "no-run" in rest and "no-home" in rest
    devices = set(rest) - {"no-run", "no-home"}
    assert devices <= {"console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr",
                       "stdin", "stdout", "tty", "urandom", "zero"}, devices  # fmt: skip


def test_shared_zones_are_served_as_the_view_agent(store: Workspace, ok: Ok) -> None:
    ws = store.root
    ok(run_view(ws, "alice", f"echo plan > {ws}/collaborative/current/plan.md"))
    history = store.collab.history("plan.md")
    assert [(v.version, v.author) for v in history] == [(1, "alice")]
    ok(run_view(ws, "alice", f"cp {ws}/agents/alice/../../.omxfs/config.toml {ws}/handoff/alice_to_bob/cfg"))
    assert store.handoff.meta("alice", "bob", "cfg").sender == "alice"


def test_command_starts_in_the_callers_directory_inside_the_workspace(store: Workspace, ok: Ok) -> None:
    ws = store.root
    (ws / "agents/bob/sub").mkdir()
    assert ok(run_view(ws, "alice", "pwd", cwd=ws / "agents/bob/sub")).strip() == f"{ws}/agents/bob/sub"


def test_exit_status_is_the_commands(store: Workspace, ok: Ok) -> None:
    ok(run_view(store.root, "alice", "exit 5"), 5)
    ok(run_view(store.root, "alice", "kill -9 $$"), 128 + 9)


def test_a_signal_to_omxfs_run_reaches_the_command(store: Workspace) -> None:
    script = 'trap "echo got-TERM; exit 7" TERM; echo ready; while :; do sleep 0.05; done'
    with subprocess.Popen(
        view_argv(store.root, "alice", script), stdout=subprocess.PIPE, text=True, env=clean_env(), cwd="/"
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 7
        assert proc.stdout.read().strip() == "got-TERM"


def test_ctrl_c_in_a_terminal_reaches_the_command_and_only_the_command(store: Workspace) -> None:
    """A terminal's Ctrl-C goes to its whole foreground process group: bwrap's outer process, which does not
    handle SIGINT, died of it, and took the view with it (``--die-with-parent``), COMMAND's handler halfway
    through its cleanup (exit 130 or "Aborted!", the file never saved). COMMAND now runs its handler to the end,
    and omxfs run exits with its status."""
    script = 'trap "sleep 0.5; echo saved > cleanup-done; exit 5" INT; echo ready; while :; do sleep 0.05; done'
    pid, terminal = pty.fork()  # the child leads a session whose terminal is the pty, in its foreground
    if pid == 0:
        os.chdir("/")
        os.execvpe("env", with_ctrl_c(view_argv(store.root, "alice", script)), clean_env())
    try:
        shown = b""
        while b"ready" not in shown:
            shown += os.read(terminal, 4096)
        os.write(terminal, b"\x03")  # Ctrl-C, typed
        with contextlib.suppress(OSError):  # EIO once the terminal's last process has exited
            while os.read(terminal, 4096):
                pass
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(terminal)
    assert os.waitstatus_to_exitcode(status) == 5, shown
    assert (store.root / "agents/alice/cleanup-done").read_text() == "saved\n"


def test_a_killed_view_leaves_no_stale_mount_and_no_process(store: Workspace) -> None:
    before = set(omxfs_view_mounts())
    marker = "4242.5"  # a sleep only this view runs
    with subprocess.Popen(
        view_argv(store.root, "alice", f"echo ready; exec sleep {marker}"),
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd="/",
    ) as proc:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        view_dirs = omxfs_view_mounts(proc.pid)
        assert view_dirs  # the view's daemon is mounted while it runs (in its launcher's namespace)
        helpers = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()  # bwrap, fusermount3...
        assert helpers
        proc.kill()
        proc.wait(30)
    poll(lambda: not set(omxfs_view_mounts()) - before, what="the killed view's mount to go")
    poll(lambda: not running(f"sleep {marker}"), what="the killed view's command to die")
    # as root the mount lives in the launcher's own namespace, which ends with the last of these
    poll(lambda: not any(pid_alive(int(pid)) for pid in helpers), timeout=30, what="the launcher's helpers to end")
    poll(
        lambda: not any(os.path.exists(d) for d in view_dirs),
        timeout=30,
        what="the mount's directory to go (cleanup.py)",
    )


def test_views_of_a_workspace_mounted_in_place(mount: Callable[..., object], ok: Ok) -> None:
    shared = mount(agents=("alice", "bob"), default="alice", in_place=True)
    root: Path = shared.root  # type: ignore[attr-defined]
    out = ok(run_view(root, "bob", "pwd; echo from-bob > agents/bob/notes.md; cat agents/bob/notes.md", cwd=root))
    assert out.splitlines() == [str(root), "from-bob"]  # the caller's directory, although under the detached mount
    # the view wrote the store underneath; the shared daemon shows it
    assert (root / "agents/bob/notes.md").read_text() == "from-bob\n"


def test_a_workspace_whose_daemon_does_not_answer_is_refused_not_waited_on(mount: Callable[..., object]) -> None:
    """``omxfs run`` of the quick start's mount with its daemon stopped waited for good (click.Path and locate stat
    WS): now it probes the mount first and says so in one line."""
    shared = mount(agents=("alice", "bob"), default="alice", in_place=True)
    root: Path = shared.root  # type: ignore[attr-defined]
    daemon: subprocess.Popen[bytes] = shared.proc  # type: ignore[attr-defined]
    poll(lambda: "ready:" in shared.log(), what="the daemon to finish starting")  # type: ignore[attr-defined]
    os.kill(daemon.pid, signal.SIGSTOP)
    try:
        done = run_view(root, "bob", "echo inside")  # TimeoutExpired (60 s) where it waits
    finally:
        os.kill(daemon.pid, signal.SIGCONT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "does not answer" in done.stderr and f"omxfs umount {root}" in done.stderr
    assert "inside" not in done.stdout and "Traceback" not in done.stderr


def test_views_of_a_workspace_mounted_elsewhere_hide_the_store(mount: Callable[..., object], ok: Ok) -> None:
    shared = mount(agents=("alice", "bob"), default="alice")
    root: Path = shared.root  # type: ignore[attr-defined]
    store: Path = shared.store  # type: ignore[attr-defined]
    out = ok(run_view(root, "alice", f"echo hi > note; pwd; test -e {store}/.omxfs && echo store-visible || true"))
    assert out.splitlines()[0] == f"{root}/agents/alice"
    assert "store-visible" not in out
    assert (store / "agents/alice/note").read_text() == "hi\n"


def test_another_mount_unmounts_while_a_view_runs(mount: Callable[..., object]) -> None:
    """A root launcher's mount namespace begins as a copy of the host's, FUSE mounts included; where the host's
    mounts are not shared (this VM, many containers) its unmount never reached the copy, the copy kept the daemon
    serving, and ``omxfs umount`` of any other mount waited 10 s, then failed, for as long as a view ran."""
    other = mount(agents=("alice",), default="alice")
    viewed = mount(agents=("alice",), default="alice")
    ws: Path = viewed.store  # type: ignore[attr-defined]
    script = "touch started; while [ ! -e stop ]; do sleep 0.05; done; echo done"
    with subprocess.Popen(
        view_argv(ws, "alice", script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env()
    ) as view:
        poll(lambda: (ws / "agents/alice/started").exists(), timeout=30, what="the view to start")
        done = subprocess.run(
            [*OMXFS, "umount", str(other.root)],  # type: ignore[attr-defined]
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_env(),
            check=False,
        )
        other.unmounted = True  # type: ignore[attr-defined]
        (ws / "agents/alice/stop").touch()
        out, err = view.communicate(timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("unmounted"), done.stdout + done.stderr
    assert other.proc.wait(10) == 0  # type: ignore[attr-defined]
    assert view.returncode == 0 and out == "done\n", err


def test_two_agents_in_two_views_editing_one_collaborative_file_get_a_conflict(store: Workspace, ok: Ok) -> None:
    ws = store.root
    store.collab.write("alice", "plan.md", b"v1\n", expected_version=0)
    plan = f"{ws}/collaborative/current/plan.md"
    # alice reads v1, then waits for bob's v2 before she saves: her save is a conflict, kept for her
    with subprocess.Popen(
        view_argv(
            ws,
            "alice",
            f"cat {plan} > /dev/null; touch {ws}/agents/alice/read; "
            f"while [ ! -e {ws}/agents/bob/saved ]; do sleep 0.02; done; "
            f"echo alice > {plan} && echo saved || echo conflict",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd="/",
    ) as alice:
        poll(lambda: (ws / "agents/alice/read").exists(), timeout=30, what="alice to read v1")
        ok(run_view(ws, "bob", f"cat {plan} > /dev/null; echo bob > {plan}; touch {ws}/agents/bob/saved"))
        out, err = alice.communicate(timeout=60)
    assert out.strip() == "conflict", err
    assert "busy" in err.lower()
    assert [v.author for v in store.collab.history("plan.md")] == ["alice", "bob"]
    refused = store.collab.conflicts("alice", "plan.md")  # refused at open (her base was v1): kept on record
    assert len(refused) == 1 and refused[0]["current_version"] == 2, refused


def test_bind_and_ro_bind_add_host_paths(store: Workspace, tmp_path: Path, ok: Ok) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "conf").write_text("setting\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = ok(
        run_view(
            store.root,
            "alice",
            f"cat {tools}/conf; echo x > {tools}/new 2>/dev/null || echo ro; echo y > {out_dir}/made",
            "--ro-bind",
            str(tools),
            "--bind",
            str(out_dir),
        )
    )
    assert out.splitlines() == ["setting", "ro"]
    assert (out_dir / "made").read_text() == "y\n"


def test_clear_errors_instead_of_tracebacks(store: Workspace, tmp_path: Path) -> None:
    unknown = run_view(store.root, "carol", "true")
    assert unknown.returncode == 1
    assert "no agent named 'carol'" in unknown.stderr and "omxfs init" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    nothing = run_view(plain, "alice", "true")
    assert nothing.returncode == 1 and "not an omxfs workspace" in nothing.stderr
    inside = run_view(store.root, "alice", "true", "--bind", f"{tmp_path}:{store.root}/agents/x")
    assert inside.returncode == 1 and "nothing may cover the workspace" in inside.stderr


def test_invalid_names_an_empty_command_and_nesting_each_get_one_line(store: Workspace, ok: Ok) -> None:
    """An invalid name was told to add it with ``omxfs init`` (which refuses it), an empty command printed a
    traceback from the view, and ``omxfs run``/``mount`` in a view advised ``modprobe fuse``."""
    for name in ("Alice", "../bob", ""):
        done = run_view(store.root, name, "echo ran")
        assert done.returncode == 1 and "ran" not in done.stdout
        assert done.stderr == f"Error: {name!r} is not a valid agent name: {AGENT_RULE}\n"
    empty = subprocess.run(
        [*OMXFS, "run", str(store.root), "--as", "alice", "--", ""],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
        check=False,
    )
    assert empty.returncode == 2 and "Traceback" not in empty.stderr
    assert empty.stderr.splitlines()[-1] == "Error: Invalid value for COMMAND: the command name is empty"
    omxfs = " ".join([sys.executable, "-m", "cli.omxfs"])
    nested = run_view(
        store.root,
        "alice",
        f"cd {REPO}; {omxfs} run {store.root} --as alice -- true 2>&1; {omxfs} mount {store.root} /tmp --as alice 2>&1",
    )
    lines_out = nested.stdout.splitlines()
    assert len(lines_out) == 2 and all("views and mounts cannot be nested in a view" in line for line in lines_out)
    assert not any("modprobe" in line for line in lines_out)


def test_a_home_inside_the_workspace_is_replaced_by_an_empty_one(store: Workspace, ok: Ok) -> None:
    env = {**clean_env(), "HOME": str(store.root / "agents/bob")}
    out = ok(run_view(store.root, "alice", 'echo "$HOME"; ls -A "$HOME"; touch "$HOME/.rc" && echo writable', env=env))
    assert out.splitlines() == [EMPTY_HOME, "writable"]


def test_where_no_user_namespace_can_be_made_one_line_says_what_to_do(store: Workspace) -> None:
    """Root in a user namespace of its own that may make none (user.max_user_namespaces 0 there, as in a container
    without them): the daemon mounts, bubblewrap cannot start the view, and omxfs run says what to enable."""
    no_userns = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    view = view_argv(store.root, "alice", "echo inside")
    done = run_from_root(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", no_userns, "sh", *view])
    assert done.returncode == 1 and "inside" not in done.stdout, done.stdout + done.stderr
    (ours,) = [line for line in done.stderr.splitlines() if not line.startswith("bwrap:")]
    assert "views need user namespaces" in ours and "user.max_user_namespaces" in ours
    assert "run omxfs run as root" not in ours  # it is root already


def test_a_views_log_is_kept_only_when_it_has_something_to_say(store: Workspace, ok: Ok) -> None:
    logs = store.root / ".omxfs/logs"
    ok(run_view(store.root, "alice", "echo x > collaborative/current/a.md", cwd=store.root))
    assert not list(logs.glob("mount-*.log"))  # start and stop only: every omx --as run would leave one
    ok(run_view(store.root, "alice", "touch handoff/stray 2>/dev/null || echo refused", cwd=store.root))
    (log,) = logs.glob("mount-*.log")
    assert "WARNING agent=alice op=create path=handoff/stray errno=EACCES" in log.read_text()


def test_a_view_lives_as_long_as_its_command(store: Workspace, ok: Ok) -> None:
    """bwrap's --die-with-parent fires when the *thread* that started it exits: started from one of trio's worker
    threads, which retire after 10 s idle, every view was killed after about 10 s (exit 137)."""
    assert ok(run_view(store.root, "alice", "sleep 11; echo still-here")).strip() == "still-here"


def test_a_path_in_the_callers_tmp_is_named_with_the_bind_that_shows_it(store: Workspace, tmp_path: Path) -> None:
    """Issue 25: a file under the caller's /tmp is not in the view (its /tmp is its own), and the command only said
    "No such file": omxfs run says so, in one line, with the --ro-bind that shows it; the command runs all the same."""
    data = tmp_path / "data.csv"  # tmp_path is in the host's /tmp
    data.write_text("a,b\n")
    assert str(data).startswith("/tmp/")
    hint = (
        f"omxfs run: {data}: not in the view, whose /tmp and /var/tmp are its own, empty: show it with "
        f"--ro-bind {data} (--bind to write)"
    )
    hidden = run_view(store.root, "alice", 'cat "$1" 2>/dev/null || echo missing', args=[f"--in={data}", str(data)])
    # (sh -c SCRIPT takes the first argument after SCRIPT as $0)
    assert hidden.returncode == 0 and hidden.stdout == "missing\n"
    assert hidden.stderr.splitlines() == [hint]
    bound = run_view(store.root, "alice", 'cat "$1"', "--ro-bind", str(data), args=["sh", str(data)])
    assert (bound.returncode, bound.stdout, bound.stderr) == (0, "a,b\n", "")
    # the workspace (here in /tmp too), a path not there, /tmp itself, a relative path, and omx's own interpreter
    # (in /tmp for a checkout under mktemp -d, and in the view all the same): nothing to say
    (store.root / "agents/alice/mine.txt").write_text("mine\n")
    quiet = run_view(
        store.root,
        "alice",
        'cat "$1"; ls -d "$2" "$3" 2>/dev/null; true',
        args=[
            "sh",
            str(store.root / "agents/alice/mine.txt"),
            "/tmp",
            str(tmp_path / "absent"),
            "data.csv",
            sys.executable,
        ],
    )
    assert (quiet.stdout, quiet.stderr) == ("mine\n/tmp\n", "")

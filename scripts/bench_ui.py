#!/usr/bin/env python3
"""How fast ``omxfs ui`` answers on a large workspace, and how soon a write shows as an event (issue 29).

Builds a workspace through the store's own calls (AGENTS agents, VERSIONS collaborative versions over FILES files,
DELIVERIES deliveries, DOCS realtime documents, RUNS omx run records), starts the real ``omxfs ui`` process, asks
each page REPEAT times over HTTP on 127.0.0.1 (p50 and p95 in ms: the client's time, which on the loopback is the
server's plus well under a millisecond), then commits WRITES times while an event stream is open and measures
each write's delay to its event. Targets (issue 29): every page p95 < 300 ms, an event < 1 s.

Then the daemon's own request rate with and without an open page (issue 29: "unchanged while a page is open"): the
workspace mounted with ``omxfs mount``, a steady workload through the mount (a process writing, reading back and
stat'ing files in its private zone, and every ``COMMIT_EVERY``-th round a collaborative file, so that the page gets
events) for DAEMON_SECONDS, alternately with no ``omxfs ui`` at all and with ``omxfs ui MOUNTPOINT`` serving an open
page: ``/events`` held open and ``/team`` and ``/activity`` fetched every ``REFRESH`` seconds (the page's own
refresh at most that often: a bound above what one open page asks). The daemon's count is its ``user.omx.requests``
xattr (every request, by operation, read before and after each phase); the workload counts its own rounds. Also the
daemon's requests while the page is open and nothing else runs: what the page itself costs the daemon (the app reads
the store beneath the mount, so none is expected). Ends with one line of JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omxfs.store import Workspace

REPO = Path(__file__).resolve().parent.parent
#: the daemon's request counts, by operation, as JSON on the mount's root (``omxfs.fuse.ops``; uncounted itself)
REQUESTS_XATTR = "user.omx.requests"
#: an open page's refresh, at most this often (``omxfs.ui.app.REFRESH``), and what the measure fetches then
REFRESH = 0.5
OPEN_PAGE = ["/team", "/activity"]
#: a collaborative commit every this many rounds of the workload
COMMIT_EVERY = 10
#: the workload, run as its own process (the page's client shares no interpreter with it): rounds of
#: write/read/stat in the private zone for SECONDS, then the count of rounds done
WORKLOAD = """
import os, sys, time
mnt, agent, seconds, every = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
mine = os.path.join(mnt, "agents", agent, "bench")
os.makedirs(mine, exist_ok=True)
shared = os.path.join(mnt, "collaborative", "current", f"bench-{os.getpid()}.md")
end, rounds = time.monotonic() + seconds, 0
while time.monotonic() < end:
    path = os.path.join(mine, f"f{rounds % 16}.txt")
    with open(path, "w") as f:
        f.write(f"round {rounds}\\n")
    with open(path) as f:
        f.read()
    os.stat(path)
    if rounds % every == 0:
        with open(shared, "w") as f:
            f.write(f"round {rounds}\\n")
    rounds += 1
print(rounds)
"""
PAGES = ["/team", "/activity", "/handoffs", "/collab", "/collab/file?path=f0.md", "/realtime", "/checkpoints", "/runs"]


def build(root: Path, agents: int, versions: int, files: int, deliveries: int, docs: int, runs: int) -> Workspace:
    names = [f"agent-{i}" for i in range(agents)]
    ws = Workspace.init(root, agents=names, supervisors=["boss"])
    for n in range(versions):
        ws.collab.write(names[n % agents], f"f{n % files}.md", f"line {n}\n".encode(), expected_version=-1)
    for n in range(deliveries):
        sender, recipient = names[n % agents], names[(n + 1) % agents]
        ws.handoff.deliver(sender, recipient, f"d{n}.txt", b"x", message=f"delivery {n}")
    for n in range(docs):
        ws.realtime.create(names[n % agents], f"doc{n}", {"title": "lww_register"})
        ws.realtime.update(names[(n + 1) % agents], f"doc{n}", lambda d, r: d.field("title").set("t", r))  # type: ignore[attr-defined]
    for n in range(runs):
        run = root / "agents" / names[n % agents] / "runs" / f"run-{n:05d}"
        run.mkdir(parents=True)
        lines = [
            {"kind": "run", "event": "start", "time": "2026-11-27T09:30:00+00:00", "data": {"task": f"task {n}"}},
            {"kind": "step", "step_id": 1, "tool": "read_text", "status": "success", "start_time": None},
            {"kind": "run", "event": "end", "time": "2026-11-27T09:30:02+00:00", "data": {"status": "success"}},
        ]
        (run / "trace.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ws


@dataclass
class Ui:
    process: subprocess.Popen[str]
    port: int
    headers: dict[str, str]

    def get(self, page: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("GET", page, headers=self.headers)
        answer = connection.getresponse()
        answer.read()
        connection.close()
        return answer.status


@contextlib.contextmanager
def serving(workspace: Path) -> Iterator[Ui]:
    """``omxfs ui WORKSPACE`` as a real process, once it printed its URL; ended after."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cli.omxfs", "ui", str(workspace), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = next(line.split()[1] for line in server.stdout if line.startswith("open http://"))
        port, token = int(url.split(":")[2].split("/")[0]), url.rpartition("token=")[2]
        yield Ui(server, port, {"Host": f"127.0.0.1:{port}", "Cookie": f"omxfs-ui-{port}={token}"})
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()


@contextlib.contextmanager
def open_page(ui: Ui) -> Iterator[None]:
    """What an open page asks of the server: its event stream, held open and read, and the page again every
    ``REFRESH`` seconds; until the block ends."""
    stop = threading.Event()
    stream = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=60)
    stream.request("GET", "/events", headers=ui.headers)
    events = stream.getresponse()
    assert events.readline().startswith(b"event: ready")

    def read_events() -> None:
        with contextlib.suppress(OSError, ValueError):  # the end: the socket shut down under it
            while not stop.is_set() and events.readline():
                pass

    def refresh() -> None:
        while not stop.wait(REFRESH):
            for page in OPEN_PAGE:
                assert ui.get(page) == 200, page

    threads = [threading.Thread(target=read_events, daemon=True), threading.Thread(target=refresh, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        threads[1].join(60)
        if stream.sock is not None:
            stream.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader; closed once it is gone (not under it)
        threads[0].join(60)
        stream.close()


def requests(mountpoint: Path) -> int:
    counts = json.loads(os.getxattr(mountpoint, REQUESTS_XATTR))
    return sum(int(n) for n in counts.values())


@contextlib.contextmanager
def mounted(ws: Path, mountpoint: Path, agent: str) -> Iterator[Path]:
    mountpoint.mkdir()
    subprocess.run(
        [sys.executable, "-m", "cli.omxfs", "mount", str(ws), str(mountpoint), "--as", agent],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield mountpoint
    finally:
        subprocess.run(
            [sys.executable, "-m", "cli.omxfs", "umount", str(mountpoint)], cwd=REPO, check=False, stdout=sys.stderr
        )


def phase(mountpoint: Path, agent: str, seconds: float) -> dict[str, float]:
    """The workload for ``seconds``: its rounds and the daemon's requests, each per second."""
    before, began = requests(mountpoint), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(mountpoint), agent, str(seconds), str(COMMIT_EVERY)],
        capture_output=True,
        text=True,
        check=True,
    )
    took, asked = time.monotonic() - began, requests(mountpoint) - before
    return {"rounds": int(done.stdout), "requests": asked, "seconds": took}


def ratio(a: dict[str, float], b: dict[str, float], per: str) -> float | None:
    """(a's requests per ``per``) / (b's), or None when b asked nothing."""
    mine, theirs = a["requests"] / max(a[per], 1e-9), b["requests"] / max(b[per], 1e-9)
    return round(mine / theirs, 3) if theirs else None


def daemon_rate(ws: Path, scratch: Path, seconds: float, rounds: int) -> dict[str, Any]:
    """The daemon's request rate and the workload's rate, without any ``omxfs ui`` and with an open page,
    alternately ``rounds`` times; and the daemon's requests while only the page is open."""
    agent = "agent-0"
    totals: dict[str, dict[str, float]] = {
        way: {"rounds": 0, "requests": 0, "seconds": 0.0} for way in ("without_ui", "with_open_page")
    }
    with mounted(ws, scratch / "mnt", agent) as mnt:
        phase(mnt, agent, min(seconds, 1.0))  # warm: the directories made, the caches filled
        idle: dict[str, float] = {}
        for _ in range(rounds):
            for way, total in totals.items():
                with contextlib.ExitStack() as stack:
                    if way == "with_open_page":
                        ui = stack.enter_context(serving(mnt))  # the mountpoint, as a person names it
                        stack.enter_context(open_page(ui))
                        if not idle:
                            before, began = requests(mnt), time.monotonic()
                            time.sleep(seconds)  # the page alone, nothing else asking the daemon
                            idle = {"requests": requests(mnt) - before, "seconds": time.monotonic() - began}
                    for key, value in phase(mnt, agent, seconds).items():
                        total[key] += value
    result: dict[str, Any] = {}
    for way, total in totals.items():
        result[way] = {
            "daemon_requests_per_s": round(total["requests"] / total["seconds"], 1),
            "workload_rounds_per_s": round(total["rounds"] / total["seconds"], 1),
            "requests_per_round": round(total["requests"] / max(total["rounds"], 1), 2),
        }
    without, with_page = totals["without_ui"], totals["with_open_page"]
    result["ratio_requests_per_s"] = ratio(with_page, without, "seconds")
    result["ratio_requests_per_round"] = ratio(with_page, without, "rounds")
    result["idle_requests_per_s_with_open_page"] = round(idle["requests"] / idle["seconds"], 2) if idle else None
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--deliveries", type=int, default=1_000)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--daemon-seconds", type=float, default=10.0, help="each phase of the daemon measure (0: none)")
    parser.add_argument("--daemon-rounds", type=int, default=2, help="alternations without and with an open page")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    # killed (a test's timeout), the blocks end as on an error: the page server stopped, the mount unmounted
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        began = time.monotonic()
        ws = build(Path(scratch) / "ws", args.agents, args.versions, args.files, args.deliveries, args.docs, args.runs)
        print(f"built in {time.monotonic() - began:.1f} s", file=sys.stderr)
        began = time.monotonic()
        with serving(ws.root) as ui:
            start_s = time.monotonic() - began
            pages: dict[str, dict[str, float]] = {}
            for page in PAGES:
                times = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    status = ui.get(page)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert status == 200, (page, status)
                pages[page] = {
                    "p50_ms": round(statistics.median(times), 1),
                    "p95_ms": round(percentile(times, 0.95), 1),
                }
            stream = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=60)
            stream.request("GET", "/events?kind=commit", headers=ui.headers)
            events = stream.getresponse()
            assert events.readline().startswith(b"event: ready")
            delays = []
            for n in range(args.writes):
                name = f"live-{n}.md"
                t0 = time.perf_counter()
                ws.collab.write("boss", name, b"x", expected_version=0)
                while name.encode() not in events.readline():
                    pass
                delays.append((time.perf_counter() - t0) * 1000)
            stream.close()
        daemon: dict[str, Any] | None = (
            daemon_rate(ws.root, Path(scratch), args.daemon_seconds, args.daemon_rounds)
            if args.daemon_seconds
            else None
        )
    event_ms = {"p50": round(statistics.median(delays), 1), "p95": round(percentile(delays, 0.95), 1)}
    result = {"start_s": round(start_s, 2), "pages": pages, "event_ms": event_ms, "daemon": daemon}
    for page, t in pages.items():
        print(f"{page:28} p50 {t['p50_ms']:7.1f} ms  p95 {t['p95_ms']:7.1f} ms", file=sys.stderr)
    print(f"write → event: p50 {event_ms['p50']} ms, p95 {event_ms['p95']} ms", file=sys.stderr)
    if daemon is not None:
        for way in ("without_ui", "with_open_page"):
            d = daemon[way]
            print(
                f"daemon {way:15} {d['daemon_requests_per_s']:8.1f} requests/s, workload "
                f"{d['workload_rounds_per_s']:7.1f} rounds/s, {d['requests_per_round']} requests/round",
                file=sys.stderr,
            )
        print(
            f"daemon with an open page / without: requests/s x{daemon['ratio_requests_per_s']}, requests/round "
            f"x{daemon['ratio_requests_per_round']}; the page alone: {daemon['idle_requests_per_s_with_open_page']}"
            " requests/s",
            file=sys.stderr,
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()

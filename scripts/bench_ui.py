#!/usr/bin/env python3
"""How fast ``omxfs ui`` answers on a large workspace, and how soon a write shows as an event (issue 29).

Builds a workspace through the store's own calls (AGENTS agents, VERSIONS collaborative versions over FILES files,
DELIVERIES deliveries, DOCS realtime documents, RUNS omx run records, and a private zone of ZONE_FILES files with
a nested git repository, as an agent's checkout is), starts the real ``omxfs ui`` process, asks each page REPEAT
times over HTTP on 127.0.0.1 (p50 and p95 in ms: the client's time, which on the loopback is the server's plus well
under a millisecond), then again while a writer process commits to the collaborative zone and writes in a private
zone without pause ("under load": what changes between requests is read again). Then it commits WRITES times while
an event stream is open and measures each write's delay to its event, and the same for files made natively in the
big private zone and rewritten in place there; and the feed's own poll, timed in this process. Targets (issue 29):
every page p95 < 300 ms, an event < 1 s.

Then a team's zones: every other agent's zone holds TEAM_ZONE_FILES files (50 zones of 3,600 files by default, what
a team of checkouts holds), and a file of the zone the sweep reaches last is rewritten in place, SWEEP_WRITES times:
its delay to its event through the server (a file of the last zone by name), and in this process with the zones
watched as the server does (inotify and the stamps) and with the stamps alone (``watch=False``, what the zones did
before inotify, and what a write made by another machine on a shared store still costs): a poll every ``POLL``
seconds, the write made just after one (the sweep's file picked then: the one it stats last).

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omxfs.store import Workspace
from omxfs.ui.app import POLL
from omxfs.ui.feed import Feed
from omxfs.ui.zones import PrivateZones

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
#: the writer of the "under load" measure: commits and private-zone writes until killed
LOAD = """
import os, sys
from omxfs.store.workspace import Workspace
ws, n = Workspace(sys.argv[1]), 0
zone = os.path.join(sys.argv[1], "agents", "agent-1", "load")
os.makedirs(zone, exist_ok=True)
while True:
    ws.collab.write("agent-1", f"load-{n % 20}.md", str(n).encode(), expected_version=-1)
    with open(os.path.join(zone, f"f{n % 50}.txt"), "w") as f:
        f.write(str(n))
    n += 1
"""
PAGES = ["/team", "/activity", "/handoffs", "/collab", "/collab/file?path=f0.md", "/realtime", "/checkpoints", "/runs"]


def build_zone(zone: Path, files: int) -> None:
    """A checkout in a private zone: ``files`` files in directories of 60, committed to a nested git repository."""
    for n in range(files):
        path = zone / f"dir{n // 60:03d}" / f"file{n:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"line {n}\n")
    git = ["git", "-C", str(zone), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run(git + argv, check=True, stdout=subprocess.DEVNULL)


def build_team(ws: Workspace, files: int) -> list[Path]:
    """``files`` files in directories of 60 in every zone but agent-0's (its checkout is ``build_zone``'s); the
    zones, in name order."""
    team = [ws.root / "agents" / agent for agent in sorted(ws.agents()) if agent != "agent-0"]
    for zone in team:
        for n in range(files):
            path = zone / "work" / f"dir{n // 60:03d}" / f"file{n:05d}.txt"
            if n % 60 == 0:
                path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"line {n}\n")
    return team


def last_swept_delays(root: Path, writes: int, watch: bool) -> tuple[list[float], int]:
    """In this process: each rewrite in place of the file the sweep stats last, and its delay (ms) to the first
    poll that reports it, a poll every ``POLL`` s from the write (made just after a poll); and the known files."""
    feed = Feed(root, PrivateZones(root / "agents", watch=watch))
    delays = []
    for _ in range(writes):
        last = feed.zones.sweep_order()[-1]
        agent, rel = last.split("/", 1)
        t0 = time.perf_counter()
        rewrite(root / "agents" / last)
        while True:
            time.sleep(POLL)
            if any(e.agent == agent and rel in e.summary for e in feed.poll() if e.kind == "write"):
                break
        delays.append((time.perf_counter() - t0) * 1000)
    known = len(feed.zones.sweep_order())
    feed.zones.close()
    return delays, known


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


def spread(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 0.95), 1)}


def time_pages(ui: Ui, repeat: int) -> dict[str, dict[str, float]]:
    pages: dict[str, dict[str, float]] = {}
    for page in PAGES:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            status = ui.get(page)
            times.append((time.perf_counter() - t0) * 1000)
            assert status == 200, (page, status)
        pages[page] = {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(percentile(times, 0.95), 1)}
    return pages


@contextlib.contextmanager
def loaded(workspace: Path) -> Iterator[None]:
    """The ``LOAD`` writer running (committing and writing in a private zone) until the block ends."""
    writer = subprocess.Popen([sys.executable, "-c", LOAD, str(workspace)], cwd=REPO)
    try:
        time.sleep(1.0)  # under way: its first commits made
        yield
    finally:
        writer.terminate()
        writer.wait(30)


def commit(ws: Workspace, n: int) -> str:
    name = f"live-{n}.md"
    ws.collab.write("boss", name, b"x", expected_version=0)
    return name


def make(dirs: list[Path], n: int) -> str:
    """A new file in one of the big zone's directories, written natively (as a view does)."""
    path = dirs[n % len(dirs)] / f"new-{n}.txt"
    path.write_text("new\n")
    return path.name


def rewrite(path: Path) -> str:
    """A file of the big zone rewritten in place: no directory's stamp moves, the sweep finds it."""
    with open(path, "r+") as f:
        f.write("#")
    return path.name


def write_delays(ui: Ui, kind: str, writes: int, write: Callable[[int], str]) -> list[float]:
    """Each write's delay (ms) to its event in an open event stream of ``kind``."""
    stream = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=60)
    stream.request("GET", f"/events?kind={kind}", headers=ui.headers)
    events = stream.getresponse()
    assert events.readline().startswith(b"event: ready")
    delays = []
    for n in range(writes):
        t0 = time.perf_counter()
        name = write(n)
        while name.encode() not in events.readline():
            pass
        delays.append((time.perf_counter() - t0) * 1000)
    stream.close()
    return delays


def time_feed(root: Path, repeat: int) -> tuple[dict[str, float], int]:
    """The feed's poll of an unchanged workspace, timed in this process: (p50 and p95 in ms, its stat calls)."""
    feed = Feed(root)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        feed.poll()
        times.append((time.perf_counter() - t0) * 1000)
    return spread(times), feed.zones.stats + feed.watched_dirs()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--deliveries", type=int, default=1_000)
    parser.add_argument("--docs", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--zone-files", type=int, default=3_600, help="files of the private zone's git checkout")
    parser.add_argument("--team-zone-files", type=int, default=3_600, help="files of every other agent's zone")
    parser.add_argument(
        "--sweep-writes", type=int, default=3, help="rewrites timed with the stamps alone (each waits a whole sweep)"
    )
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
        checkout = ws.root / "agents" / "agent-0" / "checkout"
        build_zone(checkout, args.zone_files)
        team = build_team(ws, args.team_zone_files)
        last_zone = sorted(p for p in (team[-1] / "work").rglob("*.txt")) if team and args.team_zone_files else []
        print(f"built in {time.monotonic() - began:.1f} s", file=sys.stderr)
        began = time.monotonic()
        with serving(ws.root) as ui:
            start_s = time.monotonic() - began
            pages = time_pages(ui, args.repeat)
            with loaded(ws.root):
                pages_under_load = time_pages(ui, args.repeat)
            delays = write_delays(ui, "commit", args.writes, lambda n: commit(ws, n))
            zone_files = sorted(p for p in checkout.rglob("*.py") if ".git" not in p.parts)
            dirs = sorted(p for p in checkout.iterdir() if p.is_dir() and p.name != ".git")
            made = write_delays(ui, "write", args.writes, lambda n: make(dirs, n))
            rewritten = write_delays(ui, "write", args.writes, lambda n: rewrite(zone_files[n * 97 % len(zone_files)]))
            in_last_zone = (
                write_delays(ui, "write", args.writes, lambda n: rewrite(last_zone[-1 - n * 31 % len(last_zone)]))
                if last_zone
                else []
            )
        poll_ms, poll_stats = time_feed(ws.root, args.repeat)
        watched, known = last_swept_delays(ws.root, args.writes, watch=True)
        stamps_only, _ = last_swept_delays(ws.root, args.sweep_writes, watch=False) if args.sweep_writes else ([], 0)
        daemon: dict[str, Any] | None = (
            daemon_rate(ws.root, Path(scratch), args.daemon_seconds, args.daemon_rounds)
            if args.daemon_seconds
            else None
        )
    event_ms = spread(delays)
    zone_event_ms = {"added": spread(made), "rewritten_in_place": spread(rewritten)}
    team_event_ms = {
        "zones": len(team) + 1,
        "files": known,
        "server_last_zone_rewritten": spread(in_last_zone) if in_last_zone else None,
        "last_swept_inotify_and_stamps": spread(watched),
        "last_swept_stamps_only": spread(stamps_only) if stamps_only else None,
    }
    result = {
        "start_s": round(start_s, 2),
        "pages": pages,
        "pages_under_load": pages_under_load,
        "event_ms": event_ms,
        "zone_event_ms": zone_event_ms,
        "team_event_ms": team_event_ms,
        "feed_poll": {**poll_ms, "stats": poll_stats},
        "daemon": daemon,
    }
    for page, t in pages.items():
        loaded_t = pages_under_load[page]
        print(
            f"{page:28} p50 {t['p50_ms']:7.1f} ms  p95 {t['p95_ms']:7.1f} ms;  under load: p50 "
            f"{loaded_t['p50_ms']:7.1f} ms  p95 {loaded_t['p95_ms']:7.1f} ms",
            file=sys.stderr,
        )
    print(f"commit → event: p50 {event_ms['p50']} ms, p95 {event_ms['p95']} ms", file=sys.stderr)
    for what, t in zone_event_ms.items():
        print(f"private zone, file {what} → event: p50 {t['p50']} ms, p95 {t['p95']} ms", file=sys.stderr)
    zones_files = f"{team_event_ms['zones']} zones, {known} files"
    print(f"team: {zones_files}; a rewrite in place in the last one → event:", file=sys.stderr)
    for what in ("server_last_zone_rewritten", "last_swept_inotify_and_stamps", "last_swept_stamps_only"):
        t = team_event_ms[what]
        if isinstance(t, dict):
            print(f"  {what:30} p50 {t['p50']} ms, p95 {t['p95']} ms", file=sys.stderr)
    print(f"feed poll: p50 {poll_ms['p50']} ms, p95 {poll_ms['p95']} ms, {poll_stats} stat calls", file=sys.stderr)
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

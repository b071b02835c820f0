#!/usr/bin/env python3
"""How fast ``omxfs ui`` answers on a large workspace, and how soon a write shows as an event (issue 29).

Builds a workspace through the store's own calls (AGENTS agents, VERSIONS collaborative versions over FILES files,
DELIVERIES deliveries, DOCS realtime documents, RUNS omx run records), starts the real ``omxfs ui`` process, asks
each page REPEAT times over HTTP on 127.0.0.1 (p50 and p95 in ms: the client's time, which on the loopback is the
server's plus well under a millisecond), then commits WRITES times while an event stream is open and measures
each write's delay to its event. Targets (issue 29): every page p95 < 300 ms, an event < 1 s. Ends with one line
of JSON. Not measured here: a mount daemon's request rate while a page is open (the app never asks a mount: it
reads the store directly, beneath any mount).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omxfs.store import Workspace

REPO = Path(__file__).resolve().parent.parent
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
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        began = time.monotonic()
        ws = build(Path(scratch) / "ws", args.agents, args.versions, args.files, args.deliveries, args.docs, args.runs)
        print(f"built in {time.monotonic() - began:.1f} s", file=sys.stderr)
        began = time.monotonic()
        server = subprocess.Popen(
            [sys.executable, "-m", "cli.omxfs", "ui", str(ws.root), "--port", "0"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = next(line.split()[1] for line in server.stdout if line.startswith("open http://"))
            start_s = time.monotonic() - began
            port, token = int(url.split(":")[2].split("/")[0]), url.rpartition("token=")[2]
            headers = {"Host": f"127.0.0.1:{port}", "Cookie": f"omxfs-ui-{port}={token}"}
            pages: dict[str, dict[str, float]] = {}
            for page in PAGES:
                times = []
                for _ in range(args.repeat):
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    t0 = time.perf_counter()
                    connection.request("GET", page, headers=headers)
                    answer = connection.getresponse()
                    answer.read()
                    times.append((time.perf_counter() - t0) * 1000)
                    connection.close()
                    assert answer.status == 200, (page, answer.status)
                pages[page] = {
                    "p50_ms": round(statistics.median(times), 1),
                    "p95_ms": round(percentile(times, 0.95), 1),
                }
            stream = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            stream.request("GET", "/events?kind=commit", headers=headers)
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
        finally:
            server.terminate()
            server.wait(30)
            if server.stdout is not None:
                server.stdout.close()
    result = {
        "start_s": round(start_s, 2),
        "pages": pages,
        "event_ms": {"p50": round(statistics.median(delays), 1), "p95": round(percentile(delays, 0.95), 1)},
    }
    for page, t in pages.items():
        print(f"{page:28} p50 {t['p50_ms']:7.1f} ms  p95 {t['p95_ms']:7.1f} ms", file=sys.stderr)
    print(f"write → event: p50 {result['event_ms']['p50']} ms, p95 {result['event_ms']['p95']} ms", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

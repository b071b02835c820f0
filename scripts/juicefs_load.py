"""The store on JuiceFS, outside CI: one store on a JuiceFS volume mounted by three clients
(``scripts/juicefs_volume.py``: a private redis-server on 127.0.0.1 for the metadata, a local bucket, the
volume's trash off), as machines sharing a volume would run it. Clients 0 and 1 each serve a daemon
(``bench_load.py --daemons 2 --store-views``) and run store commands; client 2 only creates the store and checks
it afterwards (its caches hold nothing stale). Then, in order:

1. ``load``: ``scripts/bench_load.py`` for SECONDS with one daemon per client: nothing acknowledged lost, every
   conflict reported and explained; refused writes are counted (conflicts are EBUSY; any other errno is an error,
   in ``errors``), and the daemons' logged refusals by operation and errno;
2. ``fsck``: ``omxfs fsck`` of the store through the checking client, findings by kind;
3. ``checkpoints``: a checkpoint of agent-0's zone made through client 0, the zone changed there (a file added,
   one changed, one removed), ``omxfs diff`` and ``omxfs restore`` of it through client 1, the zone compared
   (content and mode of every file) through both clients with the zone as checkpointed; and ROUNDS rounds of
   ``omxfs checkpoint`` of agent-1's zone from both clients at once: every id distinct, all listed;
4. ``audit``: one process per client appends RECORDS audit records at once (``Workspace.audit``); all of them
   must read back, none torn, through the checking client.

Prints bench_load's JSON line, then one JSON line of every check's figures and ``ok``; exits 0 only if all
hold. Tears everything down, also on failure. Needs root (FUSE mounts).

    .venv/bin/python scripts/juicefs_load.py [--seconds 30] [--rounds 5] [--records 200] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripts import juicefs_volume  # noqa: E402

AGENTS = ["agent-0", "agent-1", "agent-2", "agent-3"]
SUPERVISOR = "boss"
SETTLE = 10.0  # seconds another client may take to see a change (JuiceFS: its 1 s caches)


def omxfs(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    command = [sys.executable, "-m", "cli.omxfs", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def must(done: subprocess.CompletedProcess[str]) -> str:
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, done.args[2:]))} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def zone_manifest(zone: Path) -> dict[str, tuple[str, str]]:
    """Every regular file of a zone (hidden ones too): relative path -> (mode, sha256)."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, _dirs, files in os.walk(zone):
        for name in files:
            path = Path(dirpath) / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[str(path.relative_to(zone))] = (oct(stat.S_IMODE(st.st_mode)), digest)
    return found


def settled(zone: Path, expected: dict[str, tuple[str, str]]) -> bool:
    """Whether ``zone`` reads as ``expected`` within ``SETTLE`` seconds (another client's caches expire)."""
    deadline = time.monotonic() + SETTLE
    while True:
        with contextlib.suppress(OSError):
            if zone_manifest(zone) == expected:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def run_load(seconds: float, work: Path, views: list[Path], check: Path, extra: list[str]) -> dict[str, Any]:
    command = [sys.executable, str(REPO / "scripts" / "bench_load.py"), "--seconds", str(seconds), "--daemons", "2"]
    command += ["--workdir", str(work), "--store-views", *map(str, views), "--check-store", str(check), *extra]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=seconds + 600)
    except BaseException:
        proc.terminate()  # bench_load unmounts its daemons on SIGTERM; a kill would leave them mounted
        proc.wait(60)
        raise
    sys.stderr.write(err)
    lines = out.strip().splitlines()
    if not lines:
        raise RuntimeError(f"bench_load printed nothing (exit {proc.returncode})")
    print(lines[-1], flush=True)
    result: dict[str, Any] = json.loads(lines[-1])
    result["exit"] = proc.returncode
    return result


def refused_writes(check: Path) -> dict[str, int]:
    """What the daemons refused, by operation and errno (their logs' WARNING lines): one conflicting write is
    refused at ``write`` or ``flush`` (and the next ``open`` on a stale base), so these outnumber the writes."""
    counts: Counter[str] = Counter()
    for log in (check / ".omxfs" / "logs").glob("mount-*.log"):
        for line in log.read_text("utf-8", "replace").splitlines():
            if " WARNING " in line and " errno=" in line:
                op = line.split(" op=", 1)[1].split()[0] if " op=" in line else "?"
                counts[f"{op}:{line.split(' errno=', 1)[1].split(':')[0]}"] += 1
    return dict(sorted(counts.items()))


def run_fsck(check: Path) -> dict[str, Any]:
    done = omxfs("fsck", str(check))
    kinds = Counter(
        line.split()[0] for line in done.stdout.splitlines() if len(line.split()) > 2 and line.split()[0] != "checked"
    )
    return {"exit": done.returncode, "findings": dict(kinds), "last": (done.stdout.strip().splitlines() or [""])[-1]}


def checkpoint_id(output: str) -> str:
    """The id ``omxfs checkpoint`` prints on stdout (its summary goes to stderr)."""
    made = output.strip()
    if not made or len(made.split()) != 1:
        raise RuntimeError(f"omxfs checkpoint printed {output!r}")
    return made


def run_checkpoints(ws0: Path, ws1: Path, rounds: int) -> dict[str, Any]:
    zone0, zone1 = ws0 / "agents" / "agent-0", ws1 / "agents" / "agent-0"
    (zone0 / "kept.txt").write_text("kept\n")
    (zone0 / "changed.txt").write_text("before\n")
    (zone0 / "removed.txt").write_text("removed later\n")
    os.chmod(zone0 / "kept.txt", 0o640)
    made = checkpoint_id(must(omxfs("checkpoint", str(ws0), "--as", "agent-0", "-m", "on client 0")))
    before = zone_manifest(zone0)
    (zone0 / "added.txt").write_text("added\n")
    (zone0 / "changed.txt").write_text("after\n")
    (zone0 / "removed.txt").unlink()
    expected_diff = {"added": ["added.txt"], "modified": ["changed.txt"], "deleted": ["removed.txt"]}
    deadline = time.monotonic() + SETTLE
    while True:  # client 1 sees client 0's changes once its caches expire
        diff = json.loads(must(omxfs("diff", str(ws1), "agent-0", made, "--json")))
        seen = {key: sorted(diff[key]) for key in expected_diff}
        if seen == expected_diff or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    restore = must(omxfs("restore", str(ws1), "agent-0", made, "--as", SUPERVISOR))
    restored_on_1 = settled(zone1, before)
    restored_on_0 = settled(zone0, before)
    concurrent: list[str] = []
    listed: set[str] = set()
    for n in range(rounds):
        for ws in (ws0, ws1):  # a change on each side, so that neither checkpoint is "nothing changed"
            (ws / "agents" / "agent-1" / f"round-{n}-{ws.parent.name}.txt").write_text(f"{n}\n")
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "cli.omxfs", "checkpoint", str(ws), "--as", "agent-1", "-m", f"round {n}"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for ws in (ws0, ws1)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"a concurrent checkpoint exited {proc.returncode}: {err.strip()}")
            concurrent.append(checkpoint_id(out))
    listed = {entry["id"] for entry in json.loads(must(omxfs("checkpoints", str(ws0), "agent-1", "--json")))}
    return {
        "made_on_client_0": made,
        "diff_on_client_1": seen,
        "diff_as_expected": seen == expected_diff,
        "restore_on_client_1": restore.strip().splitlines()[0] if restore.strip() else "",
        "restored_exactly_seen_by_client_1": restored_on_1,
        "restored_exactly_seen_by_client_0": restored_on_0,
        "concurrent_checkpoints": len(concurrent),
        "concurrent_ids_distinct": len(set(concurrent)) == len(concurrent),
        "concurrent_ids_all_listed": set(concurrent) <= listed,
    }


AUDIT_WRITER = """
import sys
from pathlib import Path
from omxfs.store import Workspace
ws, client, records = Workspace(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3])
for n in range(records):
    ws.audit("boss", "juicefs-check", f"{client}/{n}")
"""


def run_audit(ws0: Path, ws1: Path, check: Path, records: int) -> dict[str, Any]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", AUDIT_WRITER, str(ws), f"client{i}", str(records)],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, ws in enumerate((ws0, ws1))
    ]
    failures = []
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(err.strip()[-500:])
    from omxfs.store import Workspace

    deadline = time.monotonic() + SETTLE
    while True:  # the checking client lists both clients' record files once its caches expire
        trail = Workspace(check).audit_trail()
        ours = Counter(r["path"].split("/")[0] for r in trail.records if r["action"] == "juicefs-check")
        if sum(ours.values()) >= 2 * records or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    cli = json.loads(must(omxfs("audit", str(check), "--json")))
    return {
        "written": 2 * records,
        "read_back": dict(sorted(ours.items())),
        "lost": 2 * records - sum(ours.values()),
        "unreadable": len(trail.unreadable),
        "writer_failures": failures,
        "restore_audited": any(r.get("action", "").startswith("restore") for r in cli),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="the load's length")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of concurrent checkpoints")
    parser.add_argument("--records", type=int, default=200, help="audit records each client writes")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (not the mounts)")
    parser.add_argument("bench_load_args", nargs="*", help="more options for bench_load.py (after --)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the mounts and redis are ended in finally
    if os.geteuid() != 0:
        print("juicefs_load.py: the FUSE mounts need root", file=sys.stderr)
        return 2
    reason = juicefs_volume.missing()
    if reason is not None:
        print(f"juicefs_load.py: {reason}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="omx-juicefs-"))
    figures: dict[str, Any] = {}
    try:
        with juicefs_volume.clients(work, n=3) as (mnt0, mnt1, check_mnt):
            ws0, ws1, check = mnt0 / "ws", mnt1 / "ws", check_mnt / "ws"
            print(f"==> a store on a JuiceFS volume, three clients under {mnt0.parent}", file=sys.stderr)
            agents = [arg for agent in AGENTS for arg in ("--agent", agent)]
            must(omxfs("init", str(check), *agents, "--supervisor", SUPERVISOR))
            print(f"==> bench_load for {args.seconds:g} s, one daemon per client", file=sys.stderr)
            load = run_load(args.seconds, work, [ws0, ws1], check, args.bench_load_args)
            figures["load"] = {k: load[k] for k in ("ops", "lost_updates", "conflicts_reported", "conflicts_expected")}
            figures["load"].update({k: load[k] for k in ("errors", "unexplained", "deadlock", "daemon_exit", "exit")})
            # every refused write is in the workers' journals: a conflict (EBUSY, explained by the history when
            # conflicts_reported == conflicts_expected and nothing is unexplained) or an unexpected errno (errors)
            figures["load"]["refused_writes"] = load["conflicts_reported"] + sum(load["errors"].values())
            figures["load"]["daemon_log_refusals"] = refused_writes(check)
            print("==> omxfs fsck through the checking client", file=sys.stderr)
            figures["fsck"] = run_fsck(check)
            print("==> checkpoints: made on client 0, diff and restore on client 1, concurrent ones", file=sys.stderr)
            figures["checkpoints"] = run_checkpoints(ws0, ws1, args.rounds)
            print(f"==> audit: {args.records} records from each client at once", file=sys.stderr)
            figures["audit"] = run_audit(ws0, ws1, check, args.records)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        elif not any(os.path.ismount(p) for p in work.rglob("client*")):
            shutil.rmtree(work, ignore_errors=True)
    figures["ok"] = ok(figures)
    print(json.dumps(figures), flush=True)
    return 0 if figures["ok"] else 1


def ok(figures: dict[str, Any]) -> bool:
    load, fsck, cps, audit = figures["load"], figures["fsck"], figures["checkpoints"], figures["audit"]
    return bool(
        load["exit"] == 0
        and load["lost_updates"] == 0
        and load["conflicts_reported"] == load["conflicts_expected"]
        and not load["errors"]
        and fsck["exit"] == 0
        and cps["diff_as_expected"]
        and cps["restored_exactly_seen_by_client_1"]
        and cps["restored_exactly_seen_by_client_0"]
        and cps["concurrent_ids_distinct"]
        and cps["concurrent_ids_all_listed"]
        and audit["lost"] == 0
        and audit["unreadable"] == 0
        and not audit["writer_failures"]
        and audit["restore_audited"]
    )


if __name__ == "__main__":
    sys.exit(main())

"""Load test: many processes under several identities mix every zone through one mount (or two daemons on one
store), and afterwards every acknowledged write is looked for in the store (SPEC §7: nothing acknowledged is lost).

Why a journal: a write is *acknowledged* when the system call that commits it returned success (``close`` for
the zones whose writes are staged, ``rename`` for a private save). Each worker appends ``try`` before and ``ack``
(or ``fail`` with the errno) after every write to a journal outside the mount, so the final store can be
checked against what each program was told, not against what it hoped. A write that was tried but neither
acknowledged nor refused was in flight when the daemon died (the crash test reuses this module): its effect may
or may not be there, but nothing else may.

What each worker ``w<i>`` (agent ``agents[i % A]``) does, at random, until its time is up:

- ``private_replace``: save ``agents/<me>/w<i>-<k>.txt`` as editors do (temp file, rename); final = last acked;
- ``private_append``: append a line to ``agents/<me>/w<i>.log``; the acked lines are a prefix of the file;
- ``read``: list and read another agent's zone;
- ``handoff``: deliver ``handoff/<me>_to_<other>/w<i>-<k>.txt``; final file and its metadata = last acked;
- ``collab_own``: commit ``collaborative/current/w<i>.md`` on the version read from ``user.omx.version``;
- ``collab_shared``: the same on ``shared-<g>.md``, which one worker of every agent writes (``g = i // A``), so
  commits race: an acked commit on base ``b`` must be version ``b + 1`` in the history, and a refused one (EBUSY)
  must have lost ``b + 1`` to someone else (``conflicts_expected`` counts those from the history afterwards);
- ``rt_count`` / ``rt_member`` / ``rt_note``: ``+1`` to a ``pn_counter``, a line added to an ``or_set``, the
  worker's own key set in an ``lww_map`` of the realtime document ``board``.

Where the daemons find the store: by default every daemon serves the store directory itself. With
``--shared-fs sshfs|bindfs`` daemon ``i`` serves client ``i``'s view of it (``scripts/shared_fs.py``: FUSE clients
that share no locks and cache attributes, as machines on a shared filesystem do), and the check reads the store
directory itself. With ``--store-views A B`` the store is already there, seen through one path per daemon (two
mounts of a shared filesystem, as ``scripts/gluster_load.sh`` makes): it must be fresh (``omxfs init`` at most),
daemon ``i`` serves view ``i`` and the check reads view ``A``, or ``--check-store PATH``: a client that served no
daemon, whose caches hold nothing stale (a FUSE client of GlusterFS answers ESTALE for a name that the other client
replaced). The workers and their journals stay local.

The last line on stdout is one JSON object: ``ops``, ``lost_updates``, ``conflicts_reported``,
``conflicts_expected``, ``p50_ms``, ``p99_ms``, and ``errors`` (unexpected errnos), ``deadlock``, ``daemons``,
``procs``, ``seconds``, ``shared_fs`` (``none``, ``sshfs``, ``bindfs`` or ``store-views``). Exits 1 if anything
was lost, a conflict went unreported or unexplained, a worker hung or a daemon failed.

    .venv/bin/python scripts/bench_load.py --seconds 60 [--procs 16] [--agents 4] [--daemons 1|2] [--keep]
        [--shared-fs none|sshfs|bindfs | --store-views A B [--check-store C]]
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BOARD = {"count": "pn_counter", "members": "or_set", "notes": "lww_map"}
GONE = (errno.ENOTCONN, errno.ECONNABORTED)  # the daemon died: the worker stops
OPS = (
    ("private_replace", 3),
    ("private_append", 3),
    ("read", 2),
    ("handoff", 2),
    ("collab_own", 2),
    ("collab_shared", 3),
    ("rt_count", 2),
    ("rt_member", 2),
    ("rt_note", 1),
)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def agent_names(n: int) -> list[str]:
    return [f"agent-{i}" for i in range(n)]


# -- the worker: runs in its own process, as its own identity ----------------------------------------------------


class Worker:
    def __init__(self, mnt: Path, wid: int, agents: list[str], journal: Path, seed: int) -> None:
        self.mnt = mnt
        self.wid = wid
        self.agents = agents
        self.me = agents[wid % len(agents)]
        self.rng = random.Random(seed)
        self.journal = open(journal, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (closed in run)
        self.n = 0

    def log(self, state: str, op: str, key: str, value: Any = None, **extra: Any) -> None:
        self.journal.write(json.dumps({"s": state, "op": op, "key": key, "v": value, **extra}) + "\n")

    def run(self, seconds: float) -> int:
        names = [name for name, _ in OPS]
        weights = [w for _, w in OPS]
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                self.n += 1
                op = self.rng.choices(names, weights)[0]
                t0 = time.perf_counter()
                try:
                    getattr(self, op)()
                except OSError as exc:
                    if exc.errno in GONE:
                        return 0
                    self.log("error", op, "", None, errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)))
                self.log("op", op, "", ms=(time.perf_counter() - t0) * 1000)
        finally:
            self.journal.close()
        return 0

    def _write(self, path: Path, data: bytes, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> None:
        fd = os.open(path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)  # the commit point of staged zones: its error is the write's

    def _content(self) -> bytes:
        line = f"{self.me} w{self.wid} seq {self.n}\n".encode()
        return line * self.rng.randint(1, 1500)

    def private_replace(self) -> None:
        key = f"agents/{self.me}/w{self.wid}-{self.rng.randrange(3)}.txt"
        data = self._content()
        self.log("try", "private_replace", key, digest(data))
        tmp = self.mnt / f"agents/{self.me}/.w{self.wid}.tmp"
        self._write(tmp, data)
        os.replace(tmp, self.mnt / key)
        self.log("ack", "private_replace", key, digest(data))

    def private_append(self) -> None:
        key = f"agents/{self.me}/w{self.wid}.log"
        line = f"w{self.wid} line {self.n}"
        self.log("try", "private_append", key, line)
        self._write(self.mnt / key, (line + "\n").encode(), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.log("ack", "private_append", key, line)

    def read(self) -> None:
        zone = self.mnt / "agents" / self.rng.choice(self.agents)
        names = [n for n in os.listdir(zone) if not n.startswith(".")]
        if names:
            with contextlib.suppress(FileNotFoundError):  # replaced meanwhile
                (zone / self.rng.choice(names)).read_bytes()

    def handoff(self) -> None:
        to = self.rng.choice([a for a in self.agents if a != self.me] or [self.me])
        if to == self.me:
            return
        key = f"handoff/{self.me}_to_{to}/w{self.wid}-{self.rng.randrange(2)}.txt"
        data = self._content()
        self.log("try", "handoff", key, digest(data))
        self._write(self.mnt / key, data)
        self.log("ack", "handoff", key, digest(data))

    def _commit(self, op: str, key: str) -> None:
        path = self.mnt / key
        base = int(os.getxattr(path, "user.omx.version")) if os.path.exists(path) else 0
        data = self._content()
        self.log("try", op, key, digest(data), base=base, agent=self.me)
        try:
            self._write(path, data)
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            self.log("fail", op, key, digest(data), base=base, agent=self.me, errno="EBUSY")
            return
        self.log("ack", op, key, digest(data), base=base, agent=self.me)

    def collab_own(self) -> None:
        self._commit("collab_own", f"collaborative/current/w{self.wid}.md")

    def collab_shared(self) -> None:
        self._commit("collab_shared", f"collaborative/current/shared-{self.wid // len(self.agents)}.md")

    def rt_count(self) -> None:
        self.log("try", "rt_count", "count", 1)
        self._write(self.mnt / "realtime/board/count", b"+1", os.O_WRONLY | os.O_APPEND)
        self.log("ack", "rt_count", "count", 1)

    def rt_member(self) -> None:
        item = f"w{self.wid}-{self.n}"
        self.log("try", "rt_member", "members", item)
        self._write(self.mnt / "realtime/board/members", (item + "\n").encode(), os.O_WRONLY | os.O_APPEND)
        self.log("ack", "rt_member", "members", item)

    def rt_note(self) -> None:
        path = self.mnt / "realtime/board/notes"
        notes = json.loads(path.read_bytes() or b"{}")
        notes[f"w{self.wid}"] = self.n
        self.log("try", "rt_note", f"w{self.wid}", self.n)
        self._write(path, json.dumps(notes, sort_keys=True).encode(), os.O_WRONLY | os.O_TRUNC)
        self.log("ack", "rt_note", f"w{self.wid}", self.n)


# -- setting up, and checking the end state against the journals ------------------------------------------------


def prepare(store: Path, agents: list[str], procs: int) -> None:
    """The workspace, the realtime board and the shared collaborative files (version 1 each)."""
    from omxfs.store import Workspace

    ws = Workspace.init(store, agents=agents)
    if not ws.realtime.exists("board"):
        ws.realtime.create(agents[0], "board", BOARD)
    for group in range((procs + len(agents) - 1) // len(agents)):
        if ws.collab.current_version(f"shared-{group}.md") == 0:
            ws.collab.write(agents[0], f"shared-{group}.md", b"start\n", expected_version=0)


def spawn_worker(
    mnt: Path, wid: int, agents: list[str], journal: Path, seconds: float, seed: int
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    env["OMX_AGENT"] = agents[wid % len(agents)]
    argv = [sys.executable, __file__, "worker", str(mnt), str(wid), ",".join(agents), str(journal), str(seconds)]
    return subprocess.Popen([*argv, str(seed)], env=env, cwd=mnt, stdin=subprocess.DEVNULL)


@dataclass
class Outcome:
    ops: int = 0
    lost_updates: int = 0
    conflicts_reported: int = 0
    conflicts_expected: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    #: what was lost, one line each: the evidence behind ``lost_updates``
    lost: list[str] = field(default_factory=list)
    #: conflicts that the history does not explain, or commits whose version is not base + 1
    unexplained: list[str] = field(default_factory=list)

    def lose(self, what: str, n: int = 1) -> None:
        self.lost_updates += n
        self.lost.append(what)


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):  # a worker killed mid-line acknowledged nothing on that line
                yield json.loads(line)


def verify(store: Path, journals: list[Path]) -> Outcome:
    """Compare the store with every journal. Writes tried but never answered (the daemon died) may or may not
    have landed; acknowledged ones must be there, refused ones must be explained, nothing else may appear."""
    from omxfs.store import Workspace

    ws = Workspace(store)
    out = Outcome()
    # key -> list of (state, value) in order, per op kind
    last: dict[tuple[str, str], tuple[str | None, set[str]]] = {}
    appended: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    commits: list[dict[str, Any]] = []
    counts = [0, 0]  # acked, tried
    members: tuple[set[str], set[str]] = (set(), set())
    for journal in journals:
        for rec in read_journal(journal):
            state, op, key, value = rec["s"], rec["op"], rec["key"], rec["v"]
            if state == "op":
                out.ops += 1
                out.latencies_ms.append(rec["ms"])
            elif state == "error":
                out.errors[f"{op}:{rec['errno']}"] = out.errors.get(f"{op}:{rec['errno']}", 0) + 1
            elif op in ("private_replace", "handoff", "rt_note"):
                acked, pending = last.get((op, key), (None, set()))
                last[(op, key)] = (value, set()) if state == "ack" else (acked, pending | {value})
            elif op == "private_append":
                appended[key][0 if state == "ack" else 1].append(value)
            elif op.startswith("collab"):
                commits.append(rec)
            elif op == "rt_count":
                counts[0 if state == "ack" else 1] += 1
            elif op == "rt_member":
                members[0 if state == "ack" else 1].add(value)
    _check_last_values(ws, store, last, out)
    _check_appends(store, appended, out)
    _check_commits(ws, commits, out)
    board = ws.realtime.snapshot("board")["fields"]
    if board["count"] < counts[0]:
        out.lose(f"realtime count {board['count']} < {counts[0]} acknowledged increments", counts[0] - board["count"])
    if board["count"] > counts[1]:
        out.unexplained.append(f"realtime count {board['count']} > {counts[1]} increments ever tried")
    for item in sorted(members[0] - set(board["members"])):
        out.lose(f"realtime members: acknowledged {item} missing")
    return out


def _check_last_values(
    ws: Any, store: Path, last: dict[tuple[str, str], tuple[str | None, set[str]]], out: Outcome
) -> None:
    notes = ws.realtime.snapshot("board")["fields"]["notes"]
    for (op, key), (acked, pending) in sorted(last.items(), key=lambda kv: kv[0]):
        if op == "rt_note":
            found: str | None = notes.get(key)
        else:
            path = store / key
            found = digest(path.read_bytes()) if path.is_file() else None
            if op == "handoff" and found is not None:
                sender, _, recipient = key.split("/")[1].partition("_to_")
                meta = ws.handoff.meta(sender, recipient, key.split("/", 2)[2])
                if meta.sha256 != found:
                    out.lose(f"{key}: metadata sha256 is not the file's")
        if found != acked and found not in pending:
            out.lose(f"{op} {key}: holds {found}, acknowledged {acked} (in flight: {len(pending)})")


def _check_appends(store: Path, appended: dict[str, tuple[list[str], list[str]]], out: Outcome) -> None:
    """Every acknowledged line, in order; between them only lines that were tried (an attempt the daemon died
    answering may have landed, even if the worker then wrote the same line again and was answered)."""
    for key, (acked, tried) in sorted(appended.items()):
        path = store / key
        lines = path.read_text("utf-8", "replace").split("\n") if path.exists() else []
        attempted = set(tried)
        found = 0
        for line in lines:
            if found < len(acked) and line == acked[found]:
                found += 1
            elif line and line not in attempted:
                out.unexplained.append(f"{key}: a line no writer was told about or tried: {line[:60]!r}")
        if found < len(acked):
            missing = [line for line in acked if line not in lines]
            out.lose(f"{key}: acknowledged lines missing or out of order: {missing[:3]}", max(1, len(missing)))


def _check_commits(ws: Any, commits: list[dict[str, Any]], out: Outcome) -> None:
    histories: dict[str, list[Any]] = {}
    tried: dict[str, set[str]] = defaultdict(set)
    for rec in commits:
        tried[rec["key"]].add(rec["v"])
    for rec in commits:
        rel = rec["key"].removeprefix("collaborative/current/")
        history = histories.setdefault(rel, ws.collab.history(rel))
        base, state = rec["base"], rec["s"]
        successor = history[base] if len(history) > base else None
        ours = successor is not None and successor.sha256 == rec["v"] and successor.author == rec["agent"]
        if state == "ack" and not ours:
            out.lose(f"{rec['key']}: commit acknowledged on v{base} is not v{base + 1}")
        elif state == "fail":
            out.conflicts_reported += 1
            if successor is not None and not ours:
                out.conflicts_expected += 1
            else:
                out.unexplained.append(f"{rec['key']}: conflict on v{base} but v{base + 1} is not another's")
    for rel, history in histories.items():
        allowed = tried[f"collaborative/current/{rel}"] | {digest(b"start\n")}
        for entry in history:
            if entry.sha256 not in allowed:
                out.unexplained.append(f"{rel} v{entry.version}: content no worker wrote")


# -- the run --------------------------------------------------------------------------------------------------


def mount(store: Path, mnt: Path, agent: str) -> subprocess.Popen[bytes]:
    mnt.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "OMX_AGENT"}
    argv = [sys.executable, "-m", "cli.omxfs", "mount", str(store), str(mnt), "--as", agent, "--foreground"]
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the daemon for {mnt} did not mount (exit {proc.poll()})")
        time.sleep(0.01)
    return proc


def unmount(mnt: Path, proc: subprocess.Popen[bytes]) -> int | None:
    subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, check=False)
    try:
        return proc.wait(20)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True, check=False)
        proc.kill()
        proc.wait()
        return None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q * 100) - 1))]


@contextlib.contextmanager
def store_views(args: argparse.Namespace, work: Path, agents: list[str]) -> Iterator[tuple[Path, list[Path]]]:
    """The store the check reads, and the path daemon ``i`` serves it from, for as long as the run lasts."""
    if args.store_views:
        views = [view.resolve() for view in args.store_views]
        store = (args.check_store or views[0]).resolve()
        prepare(store, agents, args.procs)
        yield store, views
        return
    store = work / "ws"
    prepare(store, agents, args.procs)
    if args.shared_fs == "none":
        yield store, [store] * args.daemons
        return
    from scripts.shared_fs import clients

    with clients(args.shared_fs, store, work, n=args.daemons) as views:
        yield store, views


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="omx-load-", dir=args.workdir))
    agents = agent_names(args.agents)
    daemons: list[tuple[Path, subprocess.Popen[bytes]]] = []
    workers: list[subprocess.Popen[bytes]] = []
    journals = [work / f"journal-{i}.jsonl" for i in range(args.procs)]
    deadlock = False
    daemon_codes: list[int | None] = []
    with store_views(args, work, agents) as (store, views):
        try:
            for d, view in enumerate(views):
                mnt = work / f"mnt{d}"
                daemons.append((mnt, mount(view, mnt, agents[d % len(agents)])))
            for i in range(args.procs):
                mnt = daemons[i % len(daemons)][0]
                workers.append(spawn_worker(mnt, i, agents, journals[i], args.seconds, args.seed * 1000 + i))
            deadline = time.monotonic() + args.seconds + 60
            for proc in workers:
                try:
                    proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    deadlock = True
                    print(f"worker {proc.pid} hung: {_stacks(daemons)}", file=sys.stderr)
                    proc.kill()
                    proc.wait()
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for mnt, proc in daemons:
                daemon_codes.append(unmount(mnt, proc))
    outcome = verify(store, journals)
    for line in outcome.lost + outcome.unexplained:
        print(line, file=sys.stderr)
    result = {
        "ops": outcome.ops,
        "lost_updates": outcome.lost_updates,
        "conflicts_reported": outcome.conflicts_reported,
        "conflicts_expected": outcome.conflicts_expected,
        "p50_ms": round(percentile(outcome.latencies_ms, 0.50), 3),
        "p99_ms": round(percentile(outcome.latencies_ms, 0.99), 3),
        "errors": outcome.errors,
        "unexplained": len(outcome.unexplained),
        "deadlock": deadlock,
        "daemon_exit": daemon_codes,
        "daemons": args.daemons,
        "procs": args.procs,
        "seconds": args.seconds,
        "shared_fs": "store-views" if args.store_views else args.shared_fs,
    }
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}", file=sys.stderr)
    return result


def _stacks(daemons: list[tuple[Path, subprocess.Popen[bytes]]]) -> str:
    """For a hang: the daemons' kernel stacks say which request waits where."""
    found = []
    for _, proc in daemons:
        try:
            found.append(Path(f"/proc/{proc.pid}/stack").read_text())
        except OSError:
            continue
    return "\n".join(found)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        mnt, wid, agents, journal, seconds, seed = argv[1:7]
        worker = Worker(Path(mnt), int(wid), agents.split(","), Path(journal), int(seed))
        return worker.run(float(seconds))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--procs", type=int, default=16)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--daemons", type=int, default=1, choices=(1, 2))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--shared-fs",
        default="none",
        choices=("none", "sshfs", "bindfs"),
        help="daemon i serves client i's view of the store (FUSE clients sharing no locks, caching attributes)",
    )
    where.add_argument(
        "--store-views",
        type=Path,
        nargs="+",
        metavar="VIEW",
        help="one path per daemon to a fresh store on a shared filesystem; the check reads the first",
    )
    parser.add_argument(
        "--check-store",
        type=Path,
        metavar="PATH",
        help="with --store-views: where the check reads the store (default: the first view), e.g. an unused client",
    )
    args = parser.parse_args(argv)
    if args.store_views and len(args.store_views) != args.daemons:
        parser.error(f"--store-views needs one view per daemon ({args.daemons}), {len(args.store_views)} given")
    if args.check_store and not args.store_views:
        parser.error("--check-store goes with --store-views")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: unmount in run()'s finally
    result = run(args)
    print(json.dumps(result), flush=True)
    bad = (
        result["lost_updates"]
        or result["conflicts_reported"] != result["conflicts_expected"]
        or result["unexplained"]
        or result["errors"]
        or result["deadlock"]
        or any(code != 0 for code in result["daemon_exit"])
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the RGA text type against pycrdt (Yrs) and loro, each measured in the same run.

Workloads, each an op list ``(pos, delete_count, insert_text)`` applied in order, the same list for every
library, with the expected final text known in advance:

- ``automerge_paper``: the editing trace of the Automerge paper (259,778 single-patch transactions);
- ``append``: single characters appended at the end;
- ``random_insert``: single characters inserted at seeded random positions of a growing text;
- ``random_delete``: single characters deleted at seeded random positions of a longer text (set up untimed).

Each library does one transaction per op: ``RGA.insert``/``delete``; pycrdt ``with doc.transaction()``;
loro ``commit()``. Times come from ``time.perf_counter``, the best of ``--repeat`` runs (one for pycrdt on the
full trace: it takes seconds), garbage collector on as in real use.
``state_bytes`` is the full state of the traced document: our compact JSON (UTF-8), loro's snapshot, pycrdt's
``get_update()``. ``merge_ms`` is the median time for a replica of a ~7k-character document to merge another
replica that made 1000 concurrent edits.

``write_text`` is a realtime field written as a whole new text (``RGA.write_text``: diff, then apply), ours only:
``scattered_s``, the best of ``--repeat`` writes of a 300,000-character body with 6,000 scattered edits (each
deletes up to 3 characters and inserts up to 3), diff and apply, and ``scattered_rewritten``, how many characters
of the old text its spans delete (the fewer, the more characters keep their identity); ``one_line_diff_ms`` and
``one_line_write_ms``, the median of one changed line in a 100,000-character body, the diff alone and the whole
write.

Progress goes to stderr; the last line on stdout is the results as JSON. Exits 1 if any final text is wrong.

    .venv/bin/python scripts/bench_crdt.py [--quick] [--trace PATH]
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
#: in the repository, so that a clone benchmarks (and its smoke test runs) with nothing beside it
TRACE = REPO / "data" / "automerge-paper.json.gz"

from omxfs.crdt.rga import RGA  # noqa: E402
from omxfs.crdt.text_diff import diff_spans  # noqa: E402

Op = tuple[int, int, str]
Runner = Callable[[str, list[Op]], tuple[float, str, Any]]
LIBS = ("omx", "loro", "pycrdt")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- workloads ----------------------------------------------------------------------------------------------


def replay(start: str, ops: list[Op]) -> str:
    """The expected text, by plain string edits."""
    text = start
    for pos, deleted, inserted in ops:
        text = text[:pos] + inserted + text[pos + deleted :]
    return text


def load_trace(path: Path, limit: int | None) -> tuple[list[Op], str]:
    with gzip.open(path) as f:
        trace = json.load(f)
    ops = [(pos, deleted, inserted) for txn in trace["txns"] for pos, deleted, inserted in txn["patches"]]
    if limit is None:
        return ops, trace["endContent"]
    ops = ops[:limit]
    return ops, replay(trace["startContent"], ops)


def synthetic(n: int, seed: int = 42) -> dict[str, tuple[str, list[Op]]]:
    """``append``, ``random_insert`` and ``random_delete`` of ``n`` ops: workload → (start text, ops)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz "
    append = [(i, 0, rng.choice(letters)) for i in range(n)]
    inserts = [(rng.randint(0, i), 0, rng.choice(letters)) for i in range(n)]
    start = "".join(rng.choice(letters) for _ in range(2 * n))
    deletes = [(rng.randrange(2 * n - i), 1, "") for i in range(n)]
    return {"append": ("", append), "random_insert": ("", inserts), "random_delete": (start, deletes)}


# -- the three libraries, one transaction per op ----------------------------------------------------------------


def run_omx(start: str, ops: list[Op]) -> tuple[float, str, Any]:
    doc = RGA()
    doc.insert(0, start, "bench")
    insert, delete = doc.insert, doc.delete
    t0 = time.perf_counter()
    for pos, deleted, inserted in ops:
        if deleted:
            delete(pos, pos + deleted)
        if inserted:
            insert(pos, inserted, "bench")
    elapsed = time.perf_counter() - t0
    return elapsed, doc.text(), doc


def run_loro(start: str, ops: list[Op]) -> tuple[float, str, Any]:
    loro: Any = importlib.import_module("loro")  # a benchmark peer only, and untyped
    doc = loro.LoroDoc()
    text = doc.get_text("text")
    if start:
        text.insert(0, start)
        doc.commit()
    t0 = time.perf_counter()
    for pos, deleted, inserted in ops:
        if deleted:
            text.delete(pos, deleted)
        if inserted:
            text.insert(pos, inserted)
        doc.commit()
    elapsed = time.perf_counter() - t0
    return elapsed, text.to_string(), doc


def run_pycrdt(start: str, ops: list[Op]) -> tuple[float, str, Any]:
    pycrdt: Any = importlib.import_module("pycrdt")
    doc = pycrdt.Doc()
    text = doc.get("text", type=pycrdt.Text)
    if start:
        text.insert(0, start)
    t0 = time.perf_counter()
    for pos, deleted, inserted in ops:
        with doc.transaction():
            if deleted:
                del text[pos : pos + deleted]
            if inserted:
                text.insert(pos, inserted)
    elapsed = time.perf_counter() - t0
    return elapsed, str(text), doc


RUNNERS: dict[str, Runner] = {"omx": run_omx, "loro": run_loro, "pycrdt": run_pycrdt}


def state_bytes(lib: str, doc: Any) -> int:
    if lib == "omx":
        return len(json.dumps(doc.to_json(), separators=(",", ":"), ensure_ascii=False).encode())
    if lib == "loro":
        return len(doc.export(importlib.import_module("loro").ExportMode.Snapshot()))
    return len(doc.get_update())


# -- merge ------------------------------------------------------------------------------------------------------


def merge_ms(runs: int = 7, seed: int = 7) -> float:
    """Median ms for a ~7k-character replica to merge one that made 1000 concurrent edits."""
    rng = random.Random(seed)
    alice = RGA()
    while len(alice) < 7000:  # typed word by word, with some going back, so the runs look like real ones
        word = rng.choice(["lorem", "ipsum", "dolor", "sit", "amet", "consectetur\n"]) + " "
        at = len(alice) if rng.random() < 0.8 else rng.randint(0, len(alice))
        alice.insert(at, word, "alice")
    bob = alice.copy()
    for _ in range(1000):
        if rng.random() < 0.6:
            bob.insert(rng.randint(0, len(bob)), rng.choice(["x", "yz", "new "]), "bob")
        else:
            at = rng.randrange(len(bob))
            bob.delete(at, at + rng.randint(1, 4))
    times = []
    for _ in range(runs):
        receiver = alice.copy()
        t0 = time.perf_counter()
        receiver.merge(bob)
        times.append(time.perf_counter() - t0)
        if receiver.text() != bob.text():
            raise SystemExit("merge: the merged text differs from the sender's")
    return statistics.median(times) * 1000


# -- writing a whole text --------------------------------------------------------------------------------------

VOCABULARY = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do"]
VOCABULARY += ["eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua"]


def prose(size: int, rng: random.Random) -> str:
    """``size`` characters of lines of ten words from a small vocabulary, and every fourth line or so one of a few
    that recur (blank, a rule, a heading), as in a real document: words repeat, most lines do not."""
    recurring = ["\n", "---\n", "## Notes\n", "- see above\n"]
    lines: list[str] = []
    length = 0
    while length < size:
        if rng.random() < 0.25:
            line = rng.choice(recurring)
        else:
            line = " ".join(rng.choice(VOCABULARY) for _ in range(10)) + "\n"
        lines.append(line)
        length += len(line)
    return "".join(lines)[:size]


def scattered(text: str, edits: int, rng: random.Random) -> str:
    """``text`` with ``edits`` edits at distinct random places, each deleting 0-3 characters and inserting 0-3."""
    pieces: list[str] = []
    at = 0
    for place in sorted(rng.sample(range(len(text)), edits)):
        if place < at:
            continue  # inside the previous edit's deletion
        deleted = rng.randint(0, 3)
        pieces += [text[at:place], "".join(rng.choice("XYZ") for _ in range(rng.randint(0 if deleted else 1, 3)))]
        at = place + deleted
    pieces.append(text[at:])
    return "".join(pieces)


def timed_write(old: str, new: str, runs: int) -> list[float]:
    """Seconds for ``write_text(old → new)``, each time on a fresh copy of a replica holding ``old``."""
    doc = RGA()
    doc.insert(0, old, "reader")
    base = doc.base()
    times = []
    for _ in range(runs):
        replica = doc.copy()
        t0 = time.perf_counter()
        replica.write_text(base, new, "writer")
        times.append(time.perf_counter() - t0)
        if replica.text() != new:
            raise SystemExit("write_text: the written text differs from the one given")
    return times


def write_text_figures(repeat: int, seed: int = 13) -> dict[str, float]:
    rng = random.Random(seed)
    old = prose(300_000, rng)
    new = scattered(old, 6000, rng)
    scattered_s = min(timed_write(old, new, repeat))
    rewritten = sum(i2 - i1 for i1, i2, _, _ in diff_spans(old, new))
    old = prose(100_000, rng)
    lines = old.split("\n")
    middle = len(lines) // 2
    lines[middle] = lines[middle].replace("o", "0")
    new = "\n".join(lines)
    diffs = []
    for _ in range(200):
        t0 = time.perf_counter()
        diff_spans(old, new)
        diffs.append(time.perf_counter() - t0)
    return {
        "scattered_s": round(scattered_s, 3),
        "scattered_rewritten": rewritten,
        "one_line_diff_ms": round(statistics.median(diffs) * 1000, 3),
        "one_line_write_ms": round(statistics.median(timed_write(old, new, 50)) * 1000, 3),
    }


# -- main -------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE, help="the editing trace (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="first 20k trace ops and 600-op workloads (CI)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)

    trace_ops, trace_end = load_trace(args.trace, 20_000 if args.quick else None)
    workloads: dict[str, tuple[str, list[Op], str]] = {"automerge_paper": ("", trace_ops, trace_end)}
    for name, (start, ops) in synthetic(600 if args.quick else 6000).items():
        workloads[name] = (start, ops, replay(start, ops))

    trace_ms: dict[str, dict[str, float]] = {}
    sizes: dict[str, int] = {}
    wrong: list[str] = []
    for name, (start, ops, expected) in workloads.items():
        trace_ms[name] = {}
        for lib in LIBS:
            # pycrdt takes seconds on the full trace, where one run is plenty to see it is slower
            repeat = 1 if name == "automerge_paper" and lib == "pycrdt" and not args.quick else args.repeat
            best = float("inf")
            for _ in range(repeat):
                elapsed, text, doc = RUNNERS[lib](start, ops)
                best = min(best, elapsed)
                if text != expected:
                    wrong.append(f"{lib}/{name}")
            trace_ms[name][lib] = round(best * 1000, 2)
            if name == "automerge_paper":
                sizes[lib] = state_bytes(lib, doc)
            log(f"{name:16} {lib:7} {best * 1000:9.1f} ms  {len(ops) / best:12,.0f} ops/s")

    merge = round(merge_ms(), 3)
    log(f"merge: {merge} ms")
    writes = write_text_figures(args.repeat)
    log(f"write_text: {writes}")
    results = {
        "trace_ms": trace_ms,
        "ratio_vs_loro": {w: round(t["omx"] / t["loro"], 3) for w, t in trace_ms.items()},
        "ratio_vs_pycrdt": {w: round(t["omx"] / t["pycrdt"], 3) for w, t in trace_ms.items()},
        "state_bytes": sizes,
        "merge_ms": merge,
        "write_text": writes,
    }
    if wrong:
        log(f"WRONG final text: {', '.join(sorted(set(wrong)))}")
    print(json.dumps(results))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())

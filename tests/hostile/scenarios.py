"""One scenario per supervisor command under attack, and ``run_try``: one try of it, judged.

A scenario sets the zone up once (``prepare``), readies each try (``before``: a pending review, checkpoints to
prune; it returns the zone as it is before the command), says how bob attacks (``arm``: a trigger and an attack
for ``attacker.py``, or None where the attack is laid before the command runs), runs the command (``run``) and says
whether the zone is as the command meant (``meant``: what is not). ``run_try`` then holds every try to the same
rules, whether the attack landed in time or not:

1. the canary is unchanged and no checkpoint blob holds a canary file's content;
2. the command succeeded, or failed cleanly: a message, no traceback (``Outcome.problem``);
3. a failed command that has a documented way to finish (an accept: run it again) finishes once bob stops;
4. the undo the command printed (or, failing that, the checkpoint it made first) restores, and brings the zone back
   exactly as before the command (types, modes, owners, contents), or, where bob changed the zone while the undo
   checkpoint was made, exactly as that checkpoint holds it; a command with no undo (discard, prune) leaves the zone
   as it was.

The attacker's own exchange is swapped back before the zone is judged (``Arena.normalize``): a command that holds
on to the directory it checked, as a descriptor, has then done exactly what it meant.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.hostile.harness import (
    OMXFS,
    REPO,
    SWAPPED,
    Arena,
    Outcome,
    Report,
    changes,
    clean_env,
    digest_changes,
    kill_when,
    leaked_blobs,
    swap_attack,
    zone_digest,
)

Digest = dict[str, tuple[Any, ...]]
Arm = tuple[dict[str, Any], dict[str, Any]]

#: bob's crontab line: what lands in the canary if an accept follows his symlink
VICTIM = "* * * * * root sh -c 'echo pwned by bob'\n"
SECRET_V1 = "bob's secret.conf, as checkpointed\n"
SECRET_V2 = "bob's secret.conf, edited since\n"


@dataclass
class Start:
    """The zone before a try's command, and the checkpoints it had then."""

    digest: Digest
    checkpoints: set[int]


@dataclass
class Try:
    command: str
    outcome: Outcome
    report: Report | None
    canary: list[str]  # what changed in the canary
    leaks: list[str]  # blobs holding a canary file's content
    problems: list[str]
    as_meant: bool

    @property
    def landed(self) -> bool:
        return self.report is not None and self.report.landed

    @property
    def failed_cleanly(self) -> bool:
        return not self.outcome.ok and self.outcome.problem() is None

    def verdict(self) -> list[str]:
        """Every rule this try broke, one line each (empty: it held)."""
        canary = self.canary[:8] + [c for c in self.canary[8:] if ".conf" in c]
        if len(self.canary) > len(canary):
            canary.append(f"... and {len(self.canary) - len(canary)} more")
        found = [f"canary changed: {c}" for c in canary]
        found += [f"a checkpoint copied a file outside the zone: {leak}" for leak in self.leaks]
        return found + self.problems

    def shown(self) -> str:
        attack = "no attack" if self.report is None else f"attack: {self.report}"
        return f"{self.outcome.shown()}\n{attack}\n" + "\n".join(self.verdict())


def checkpoint_numbers(arena: Arena) -> set[int]:
    try:
        names = os.listdir(arena.store / ".omxfs" / "checkpoints" / "bob" / "manifests")
    except FileNotFoundError:
        return set()
    return {int(name.split(".")[0]) for name in names if name.split(".")[0].isdigit()}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def prepare_swapped(arena: Arena, make: str) -> None:
    """The entry bob swaps with ``d``, made on the store (as bob could make it through the mount) before a try's
    zone is recorded, so that the zone's state before and after a command both hold it."""
    path = arena.zone / SWAPPED
    if os.path.lexists(path):
        return
    if make == "symlink":
        os.symlink(arena.canary.root, path)
    elif make == "file":
        path.write_text("not a directory\n")
    else:
        os.mkfifo(path)


def link_canary_file(arena: Arena) -> None:
    """``d/linked.conf``: a hard link to the canary's ``linked.conf``, made on the store by the test. Through the
    mount bob cannot make it (a link to a file outside the mount is EXDEV); an agent whose uid owns its zone on
    disk and a file outside can (``protected_hardlinks`` allows a link to one's own file), so a command must
    never write through such a name: it replaces or removes the zone's name, and the canary's file stays as it
    was."""
    linked, outside = arena.zone / "d" / "linked.conf", arena.canary.root / arena.canary.LINKED
    try:
        if os.lstat(linked).st_ino == os.lstat(outside).st_ino:
            return
        linked.unlink()
    except FileNotFoundError:
        pass
    os.link(outside, linked)


class Scenario:
    """The base: see the module. ``undo_kind``: how the command names its undo (``harness.UNDO``); ``has_undo``:
    whether it has one at all."""

    name = "scenario"
    undo_kind = "checkpoint"
    has_undo = True
    make = "symlink"
    #: the zone as ``prepare`` left it (taken on the first try)
    baseline: Digest | None = None

    def prepare(self, arena: Arena) -> None:
        write(arena.zone / "d" / "keep.txt", "bob's, before\n")
        write(arena.zone / "notes.md", "bob's notes\n")
        prepare_swapped(arena, self.make)

    def ready(self, arena: Arena) -> None:
        """What a try needs that a copy of the zone cannot hold (a hard link to the canary)."""
        prepare_swapped(arena, self.make)

    def reset(self, arena: Arena) -> None:
        """The zone as ``prepare`` left it, again, where a try left it otherwise: an undo restores what its
        checkpoint read, and a checkpoint of a zone whose ``d`` bob was flipping may hold no directory ``d``."""
        copy = arena.base / "baseline"
        if self.baseline is None:
            subprocess.run(["cp", "-a", str(arena.zone), str(copy)], check=True)
            self.baseline = zone_digest(arena.zone)
        elif zone_digest(arena.zone) != self.baseline:
            for child in arena.zone.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            subprocess.run(["cp", "-a", f"{copy}/.", str(arena.zone)], check=True)
        self.ready(arena)

    def before(self, arena: Arena) -> Start:
        self.reset(arena)
        return Start(zone_digest(arena.zone), checkpoint_numbers(arena))

    def arm(self, arena: Arena) -> Arm | None:
        return None

    def run(self, arena: Arena) -> Outcome:
        raise NotImplementedError

    def meant(self, arena: Arena) -> list[str]:
        return []

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        """The documented way to finish what a failed command left half done, once bob stopped (None: none)."""
        return None

    def undo(self, arena: Arena, number: int) -> Outcome:
        return arena.restore(number)

    def recorded(self, arena: Arena, undo: int, made: list[int]) -> int | None:
        """The checkpoint of bob's zone that the undo ``undo`` restores (``made``: those the try made)."""
        return undo


def run_try(arena: Arena, scenario: Scenario) -> Try:
    start = scenario.before(arena)
    canary = arena.canary.fingerprint()
    leaked = set(leaked_blobs(arena.store, arena.canary))
    spec = scenario.arm(arena)
    if spec is not None:
        assert arena.attacker is not None, "this scenario's attacker acts through the mount"
        arena.attacker.arm(*spec)
    try:
        outcome = scenario.run(arena)
    finally:
        report = arena.attacker.stop() if spec is not None and arena.attacker is not None else None
    arena.normalize()
    problems: list[str] = []
    unclean = outcome.problem()
    if unclean:
        problems.append(unclean)
    final = outcome
    if not outcome.ok and not unclean:
        finished = scenario.finish(arena, outcome)
        if finished is not None:
            final = finished
            if not finished.ok:
                problems.append(f"finishing after the failure failed: {finished.shown()}")
    missed = scenario.meant(arena) if final.ok else ["the command failed"]
    if scenario.has_undo:
        number = final.undo(scenario.undo_kind) or outcome.undo(scenario.undo_kind)
        made = sorted(checkpoint_numbers(arena) - start.checkpoints)
        if number is None and made and scenario.undo_kind == "checkpoint":
            number = made[0]  # a failure that printed none: the checkpoint it made first
        if number is not None:
            problems += _undo(arena, scenario, number, start, scenario.recorded(arena, number, made))
        elif missed and final.ok:
            problems.append(f"the zone is not as meant and there is no undo: {missed[:5]}")
        elif digest_changes(start.digest, zone_digest(arena.zone)):
            problems.append("a failed command without an undo changed the zone")
    else:  # a discard, a prune: the zone is left as it was
        if missed and final.ok:
            problems.append(f"not as meant: {missed[:10]}")
        changed = digest_changes(start.digest, zone_digest(arena.zone))
        if changed:
            problems.append(f"{final.what} changed the zone:\n" + "\n".join(changed[:20]))
    escaped = changes(canary, arena.canary.fingerprint())
    if escaped:
        arena.canary.reset()
    leaks = sorted(set(leaked_blobs(arena.store, arena.canary)) - leaked)
    leaks += named_secrets(arena, checkpoint_numbers(arena) - start.checkpoints)
    return Try(scenario.name, outcome, report, escaped, leaks, problems, not missed)


def named_secrets(arena: Arena, numbers: set[int]) -> list[str]:
    """The checkpoints among ``numbers`` whose manifest names a canary file's content (its blob may have been
    stored by an earlier try already: a manifest tells each try's own)."""
    found = []
    for number in sorted(numbers):
        try:
            text = (arena.store / ".omxfs" / "checkpoints" / "bob" / "manifests" / f"{number}.json").read_text()
        except OSError:
            continue
        if any(digest in text for digest in arena.canary.secrets):
            found.append(f"checkpoint {number} names a canary file's content")
    return found


def _undo(arena: Arena, scenario: Scenario, number: int, start: Start, recorded: int | None) -> list[str]:
    """Run the undo ``number``: it must bring the zone back as before the command; or, where bob changed the zone
    before or while the command made its undo checkpoint (``recorded``: a checkpoint of a moving tree holds what it
    read when, as ``tar`` of a live tree does), exactly as that checkpoint holds it."""
    undone = scenario.undo(arena, number)
    if undone.problem() or not undone.ok:
        return [f"its undo failed: {undone.shown()}"]
    if zone_digest(arena.zone) == start.digest:
        return []
    if recorded is not None:
        diff = arena.omxfs("diff", str(arena.store), "bob", str(recorded), "--json")
        if diff.ok and not any(json.loads(diff.stdout)[key] for key in ("added", "modified", "deleted")):
            arena.normalize()
            return []
    arena.normalize()
    lost = digest_changes(start.digest, zone_digest(arena.zone))
    if lost:
        return [f"its undo ({undone.what}) did not bring the zone back:\n" + "\n".join(lost[:20])]
    return []


# -- accept (and its finishers: fsck --repair, the dashboard's Accept) ----------------------------------------


def review_code(files: int, *extra: str) -> str:
    """bob's review run, as Python: ``files`` files into ``d/``, then his ``d/zz-victim.conf``, then ``extra``."""
    lines = [
        "import os",
        "os.makedirs('d', exist_ok=True)",
        f"for n in range({files}):",
        "    name = f'd/f{n:05d}'",
        "    with open(name, 'w') as f:",
        "        f.write(f'bob {name}\\n')",
        f"open('d/zz-victim.conf', 'w').write({VICTIM!r})",
        *extra,
    ]
    return "\n".join(lines)


class Accept(Scenario):
    """``omxfs accept WS bob --as boss`` of a review run that wrote ``files`` files into ``d/``, while bob swaps
    ``d`` for a symlink to the canary (or a file, a FIFO) as soon as the first of them lands in the zone."""

    def __init__(self, files: int = 3000, *, make: str = "symlink", mode: str = "once", real: bool = True) -> None:
        self.files, self.make, self.mode, self.real = files, make, mode, real
        self.name = "accept" if make == "symlink" else f"accept-{make}"

    def names(self) -> list[str]:
        return [f"f{n:05d}" for n in range(self.files)]

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        arena.pending_review(review_code(self.files), real=self.real)
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "new_name", "dir": "agents/bob/d"}, swap_attack(self.make, arena.canary.root, self.mode)

    def run(self, arena: Arena) -> Outcome:
        return arena.omxfs("accept", str(arena.store), "bob", "--as", "boss")

    def meant(self, arena: Arena) -> list[str]:
        d = arena.zone / "d"
        missed = []
        if os.path.lexists(arena.store / ".omxfs" / "reviews" / "bob"):
            missed.append("the review is still pending")
        for name in self.names():
            try:
                if (d / name).read_text() != f"bob d/{name}\n":
                    missed.append(f"d/{name}: another content")
            except OSError as exc:
                missed.append(f"d/{name}: {exc.strerror}")
        if not (d / "zz-victim.conf").is_file() or (d / "zz-victim.conf").read_text() != VICTIM:
            missed.append("d/zz-victim.conf is not bob's")
        if not (d / "keep.txt").is_file():
            missed.append("d/keep.txt is gone")
        return missed

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        return arena.omxfs("accept", str(arena.store), "bob", "--as", "boss")


class FsckRepair(Accept):
    """An accept killed once its first files landed, finished by ``omxfs fsck --repair`` while bob swaps ``d``
    as soon as the next file lands."""

    def __init__(self, files: int = 3000, *, make: str = "symlink", real: bool = True) -> None:
        super().__init__(files, make=make, real=real)
        self.name = "fsck-repair"

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        d = arena.zone / "d"
        had = len(os.listdir(d))
        for _ in range(5):
            accept = subprocess.Popen(
                [*OMXFS, "accept", str(arena.store), "bob", "--as", "boss"],
                cwd=REPO,
                env=clean_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            if kill_when(accept, lambda: len(os.listdir(d)) > had + 2):
                return start
            # it finished first: undo it and try again
            arena.restore(min(checkpoint_numbers(arena) - start.checkpoints))
            arena.pending_review(review_code(self.files), real=self.real)
        raise AssertionError("could not kill an accept half-way (it always finished first)")

    def run(self, arena: Arena) -> Outcome:
        return arena.omxfs("fsck", str(arena.store), "--repair")


class Discard(Scenario):
    """``omxfs discard WS bob --as boss`` of a review holding a symlink to the canary and bob's zz-victim.conf,
    while bob flips ``d`` and the canary symlink over and over."""

    has_undo = False

    def __init__(self, *, make: str = "symlink", real: bool = True) -> None:
        self.make, self.real = make, real
        self.name = "discard" if make == "symlink" else f"discard-{make}"

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        code = review_code(50, f"os.symlink({str(arena.canary.root)!r}, 'd/evil')")
        arena.pending_review(code, real=self.real)
        return start

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack(self.make, arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        return arena.omxfs("discard", str(arena.store), "bob", "--as", "boss")

    def meant(self, arena: Arena) -> list[str]:
        if os.path.lexists(arena.store / ".omxfs" / "reviews" / "bob"):
            return ["the review is still pending"]
        return []


# -- restore of paths, of the whole zone, its undo checkpoint --------------------------------------------------


class RestorePaths(Scenario):
    """``omxfs restore WS bob T d/secret.conf --as boss`` while bob swaps ``d`` for a symlink to the canary (which
    holds a secret.conf of root's) as soon as the restore's work directory shows under ``restoring/``. With
    ``absent``, checkpoint T lacks d/secret.conf: the restore removes it (moves it out of the zone)."""

    def __init__(self, *, absent: bool = False, make: str = "symlink", mode: str = "once") -> None:
        self.absent, self.make, self.mode = absent, make, mode
        self.name = "restore-paths" + ("-absent" if absent else "") + ("" if make == "symlink" else f"-{make}")
        self.target = 0

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        if not self.absent:
            write(arena.zone / "d" / "secret.conf", SECRET_V1)
        self.target = arena.checkpoint("before bob's edit")
        write(arena.zone / "d" / "secret.conf", SECRET_V2)

    def arm(self, arena: Arena) -> Arm | None:
        trigger = {"kind": "new_name", "dir": ".omxfs/checkpoints/bob/restoring"}
        return trigger, swap_attack(self.make, arena.canary.root, self.mode)

    def run(self, arena: Arena) -> Outcome:
        return arena.restore(self.target, "d/secret.conf")

    def meant(self, arena: Arena) -> list[str]:
        secret = arena.zone / "d" / "secret.conf"
        if self.absent:
            return [f"{secret} is still there"] if os.path.lexists(secret) else []
        if secret.is_symlink() or not secret.is_file() or secret.read_text() != SECRET_V1:
            return [f"{secret} is not checkpoint {self.target}'s"]
        return []


class RestoreZone(Scenario):
    """The whole zone back to checkpoint T (``omxfs restore``, the dashboard's Restore, ``omxfs snapshot restore``
    of the workspace or of bob's zone), while bob flips ``d`` and the canary symlink over and over; the zone also
    holds a hard link to a canary file (``link_canary_file``), which T lacks."""

    NAMES: ClassVar[dict[str, str]] = {
        "cli": "restore-zone",
        "ui": "ui-restore",
        "snapshot": "snapshot-restore",
        "snapshot-zone": "snapshot-restore-zone",
    }

    def __init__(self, via: str = "cli", *, make: str = "symlink", mode: str = "flap") -> None:
        assert via in self.NAMES
        self.via, self.make, self.mode = via, make, mode
        self.name = self.NAMES[via]
        if make != "symlink":
            self.name += f"-{make}"
        self.undo_kind = "snapshot" if via == "snapshot" else "checkpoint"
        self.target = 0
        self.wanted: Digest = {}

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        write(arena.zone / "d" / "secret.conf", SECRET_V1)
        for n in range(20):
            write(arena.zone / "d" / f"old{n:02d}.txt", f"bob's old {n}\n")
        if self.via.startswith("snapshot"):
            self.target = int(arena.omxfs("snapshot", str(arena.store), "--as", "boss").stdout.strip())
        else:
            self.target = arena.checkpoint("the zone to go back to")
        self.wanted = zone_digest(arena.zone)
        write(arena.zone / "d" / "secret.conf", SECRET_V2)
        write(arena.zone / "d" / "new.txt", "bob's, new\n")
        (arena.zone / "d" / "old00.txt").unlink()
        link_canary_file(arena)

    def ready(self, arena: Arena) -> None:
        super().ready(arena)
        link_canary_file(arena)

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack(self.make, arena.canary.root, self.mode)

    def run(self, arena: Arena) -> Outcome:
        store = str(arena.store)
        if self.via == "cli":
            return arena.restore(self.target)
        if self.via == "ui":
            return ui_post(arena, "/checkpoints/bob/restore", {"checkpoint": str(self.target)})
        zone = ["--zone", "bob"] if self.via == "snapshot-zone" else []
        return arena.omxfs("snapshot", "restore", store, str(self.target), *zone, "--as", "boss")

    def meant(self, arena: Arena) -> list[str]:
        return digest_changes(self.wanted, zone_digest(arena.zone))

    def undo(self, arena: Arena, number: int) -> Outcome:
        if self.undo_kind == "snapshot":
            return arena.omxfs("snapshot", "restore", str(arena.store), str(number), "--as", "boss")
        return arena.restore(number)

    def recorded(self, arena: Arena, undo: int, made: list[int]) -> int | None:
        if self.undo_kind != "snapshot":
            return undo
        try:  # the checkpoint of bob's zone that the snapshot names (the store's record of it)
            snapshot = json.loads((arena.store / ".omxfs" / "snapshots" / f"{undo}.json").read_text())
            return int(snapshot["zones"]["bob"])
        except (OSError, ValueError, KeyError):
            return None


class UndoCheckpoint(Scenario):
    """A restore of paths whose undo checkpoint meets a symlink to a canary file (``d/secret.conf``: recorded as
    a symlink, never its target's content) and a hard link to a canary file made directly in the store
    (``d/linked.conf``: recorded as the zone's file, which is fine; the restore must never write through it)."""

    name = "undo-checkpoint"

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        write(arena.zone / "d" / "secret.conf", SECRET_V1)
        write(arena.zone / "d" / "linked.conf", "bob's linked.conf\n")
        self.target = arena.checkpoint("before the links")
        secret = arena.zone / "d" / "secret.conf"
        secret.unlink()
        os.symlink(arena.canary.root / "secret.conf", secret)
        link_canary_file(arena)

    def ready(self, arena: Arena) -> None:
        super().ready(arena)
        link_canary_file(arena)

    def run(self, arena: Arena) -> Outcome:
        return arena.restore(self.target, "d/secret.conf", "d/linked.conf")

    def meant(self, arena: Arena) -> list[str]:
        missed = []
        for name, text in (("secret.conf", SECRET_V1), ("linked.conf", "bob's linked.conf\n")):
            path = arena.zone / "d" / name
            if path.is_symlink() or not path.is_file() or path.read_text() != text:
                missed.append(f"d/{name} is not checkpoint {self.target}'s")
        return missed


# -- prune ----------------------------------------------------------------------------------------------------


class Prune(Scenario):
    """``omxfs checkpoints WS bob --prune 1 --as boss`` after a few checkpoints, while bob flips ``d``."""

    name = "prune"
    has_undo = False

    def __init__(self, *, make: str = "symlink") -> None:
        self.make = make
        self.round = 0

    def before(self, arena: Arena) -> Start:
        self.reset(arena)
        for _ in range(2):
            self.round += 1
            write(arena.zone / "d" / f"round{self.round}.txt", f"bob's round {self.round}\n")
            arena.checkpoint(f"round {self.round}")
        return Start(zone_digest(arena.zone), checkpoint_numbers(arena))

    def arm(self, arena: Arena) -> Arm | None:
        return {"kind": "now"}, swap_attack(self.make, arena.canary.root, "flap")

    def run(self, arena: Arena) -> Outcome:
        return arena.omxfs("checkpoints", str(arena.store), "bob", "--prune", "1", "--as", "boss")

    def meant(self, arena: Arena) -> list[str]:
        fsck = arena.omxfs("fsck", str(arena.store))
        missed = [] if " 0 corrupt" in fsck.stdout + fsck.stderr else [f"fsck after the prune: {fsck.shown()}"]
        if max(checkpoint_numbers(arena), default=0) == 0:
            missed.append("no checkpoint left")
        return missed


# -- a mount point in the zone ----------------------------------------------------------------------------------


class MountPoint(Scenario):
    """A directory of the canary bind-mounted over the zone's ``m/`` while the command runs (made by root: bob
    cannot; the command must neither read through it nor change what is below it)."""

    COMMANDS = ("restore-zone", "restore-paths", "accept")

    def __init__(self, command: str) -> None:
        assert command in self.COMMANDS
        self.command = command
        self.name = f"mountpoint-{command}"

    def prepare(self, arena: Arena) -> None:
        super().prepare(arena)
        write(arena.zone / "m" / "inner.conf", "bob's inner.conf\n")
        self.target = arena.checkpoint("with m/")
        write(arena.zone / "m" / "inner.conf", "bob's inner.conf, edited\n")
        write(arena.zone / "m" / "more.txt", "bob's, new\n")

    def before(self, arena: Arena) -> Start:
        start = super().before(arena)
        if self.command == "accept":
            code = "import os\nos.mkdir('m')\nfor name in ('inner.conf', 'new.conf'):\n"
            code += "    open('m/' + name, 'w').write('bob\\n')"
            arena.pending_review(code, real=False)
        return start

    def run(self, arena: Arena) -> Outcome:
        bind = (arena.canary.root / "sub", arena.zone / "m")
        if self.command == "accept":
            return arena.omxfs("accept", str(arena.store), "bob", "--as", "boss", bind=bind)
        paths = ["m/inner.conf"] if self.command == "restore-paths" else []
        return arena.omxfs("restore", str(arena.store), "bob", str(self.target), *paths, "--as", "boss", bind=bind)

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        if self.command == "accept":  # the mount is gone with the command: an accept again finishes it
            return arena.omxfs("accept", str(arena.store), "bob", "--as", "boss")
        return None


# -- the dashboard ---------------------------------------------------------------------------------------------


class UiAccept(Accept):
    """The dashboard's Accept button (``POST /checkpoints/bob/accept`` to ``omxfs ui --as boss``), raced as
    ``Accept``."""

    def __init__(self, files: int = 3000, *, real: bool = True) -> None:
        super().__init__(files, real=real)
        self.name = "ui-accept"

    def run(self, arena: Arena) -> Outcome:
        return ui_post(arena, "/checkpoints/bob/accept", {})

    def finish(self, arena: Arena, failed: Outcome) -> Outcome | None:
        return ui_post(arena, "/checkpoints/bob/accept", {})


def ui_post(arena: Arena, path: str, form: dict[str, str]) -> Outcome:
    """A POST from the dashboard's own page (token, cookie, Origin) to an ``omxfs ui --as boss`` of the arena's
    store, started on first use: its redirect is a success (exit 0, the message it carries), anything else a
    failure with the page it answered."""
    if arena.ui is None:
        from tests.ui.conftest import start_ui

        arena.ui = start_ui(arena.store, "--as", "boss")
    server = arena.ui
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    headers = {
        "Host": f"127.0.0.1:{server.port}",
        "Cookie": f"omxfs-ui-{server.port}={server.token}",
        "Origin": f"http://127.0.0.1:{server.port}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    try:
        connection.request("POST", path, body=urlencode({"token": server.token, **form}), headers=headers)
        answer = connection.getresponse()
        page = answer.read().decode("utf-8", "replace")
    finally:
        connection.close()
    if answer.status == 303:
        done = parse_qs(urlsplit(answer.getheader("location") or "").query).get("done", [""])[0]
        return Outcome(f"POST {path}", 0, done, "")
    return Outcome(f"POST {path}", answer.status, "", _refusal(page))


def _refusal(page: str) -> str:
    marker = 'id="refused">'
    if marker in page:
        return page.split(marker, 1)[1].split("</p>", 1)[0]
    return page[-3000:]


# -- all of them ------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Tries of one command, counted (``scripts/race_supervisor.py`` prints one line of it)."""

    command: str
    tries: int = 0
    landed: int = 0
    canary_changes: int = 0
    leaks: int = 0
    failed_cleanly: int = 0
    not_as_meant: int = 0
    problems: int = 0
    first_failure: str = ""

    def add(self, done: Try) -> None:
        self.tries += 1
        self.landed += done.landed
        self.canary_changes += bool(done.canary)
        self.leaks += bool(done.leaks)
        self.failed_cleanly += done.failed_cleanly
        self.not_as_meant += not done.as_meant
        self.problems += bool(done.problems)
        if done.verdict() and not self.first_failure:
            self.first_failure = done.shown()

    @property
    def held(self) -> bool:
        return self.canary_changes == 0 and self.leaks == 0 and self.problems == 0

    def line(self) -> str:
        return (
            f"{self.command}: {self.tries} tries, {self.landed} attacks landed in time, "
            f"{self.canary_changes} canary changes, {self.leaks} leaks, {self.failed_cleanly} failed cleanly, "
            f"{self.not_as_meant} not as meant (undone), {self.problems} problems"
        )

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "first_failure": self.first_failure[:2000], "held": self.held}


def scenario(name: str, *, files: int = 3000, real: bool = True) -> Scenario:
    """A scenario by the name ``scripts/race_supervisor.py --command`` takes."""
    made: dict[str, Any] = {
        "accept": lambda: Accept(files, real=real),
        "accept-file": lambda: Accept(files, make="file", real=real),
        "accept-fifo": lambda: Accept(files, make="fifo", real=real),
        "discard": lambda: Discard(real=real),
        "restore-paths": lambda: RestorePaths(),
        "restore-paths-absent": lambda: RestorePaths(absent=True),
        "restore-paths-file": lambda: RestorePaths(make="file"),
        "restore-zone": lambda: RestoreZone("cli"),
        "restore-zone-fifo": lambda: RestoreZone("cli", make="fifo"),
        "undo-checkpoint": UndoCheckpoint,
        "snapshot-restore": lambda: RestoreZone("snapshot"),
        "snapshot-restore-zone": lambda: RestoreZone("snapshot-zone"),
        "prune": Prune,
        "fsck-repair": lambda: FsckRepair(files, real=real),
        "ui-accept": lambda: UiAccept(files, real=real),
        "ui-restore": lambda: RestoreZone("ui"),
        "mountpoint-restore-zone": lambda: MountPoint("restore-zone"),
        "mountpoint-restore-paths": lambda: MountPoint("restore-paths"),
        "mountpoint-accept": lambda: MountPoint("accept"),
    }
    return made[name]()  # type: ignore[no-any-return]


NAMES = (
    "accept",
    "accept-file",
    "accept-fifo",
    "discard",
    "restore-paths",
    "restore-paths-absent",
    "restore-paths-file",
    "restore-zone",
    "restore-zone-fifo",
    "undo-checkpoint",
    "snapshot-restore",
    "snapshot-restore-zone",
    "prune",
    "fsck-repair",
    "ui-accept",
    "ui-restore",
    "mountpoint-restore-zone",
    "mountpoint-restore-paths",
    "mountpoint-accept",
)

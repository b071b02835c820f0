"""Nested branches and ``omxfs rebase``, on real ``omxfs run`` views and the kernel's overlays.

A branch made from another (``omxfs run --branch c --from p``) sees the zone as p has it (p's upper layer is a lower
layer of its overlay: p's whiteouts and opaque directories hide what they hide), and is accepted into p: read back
through a new view of p, every kind of change lands as the kernel shows it (a deletion of a zone file, of a file
only p made, an opaque directory over p's and over the zone's), then p accepted into the zone holds both. The two
never run at once, and p is neither accepted nor discarded while c is pending. A branch conflicted by an accept is
rebased, which shows what its accept overwrites, and is accepted then.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import clean_env, poll, run_view, view_argv

Ok = Callable[..., str]

#: the zone before any branch
ZONE = {
    "keep.md": "keep\n",
    "z.md": "zone\n",
    "gone.md": "zone\n",  # deleted by the child: a whiteout in the parent's upper layer
    "old.md": "zone\n",  # deleted by the parent: its whiteout hides it from the child
    "zd/a": "zone\n",  # replaced by the parent with an opaque directory: the child sees its content only
    "zd2/a": "zone\n",  # replaced by the child with an opaque directory, over the zone's
    "wd/a": "zone\n",  # deleted by the parent, made again by the child: opaque in the parent's upper layer
}
#: the parent's run
PARENT = (
    "echo parent > ponly.md; echo parent > z.md; rm old.md; rm -r zd; mkdir zd; echo parent > zd/p; "
    "mkdir pdir; echo parent > pdir/x; echo parent > pdir/keep; rm -r wd"
)
#: the child's run: what it sees first (the parent's view), then its changes
CHILD = (
    "cat z.md ponly.md; ls zd; test ! -e old.md && echo no-old; "
    "rm gone.md ponly.md; echo child > z.md; echo child > c.md; "
    "rm -r pdir; mkdir pdir; echo child > pdir/y; rm -r zd2; mkdir zd2; echo child > zd2/n; echo child > zd/c; "
    "mkdir wd; echo child > wd/b"
)
#: the zone as the parent has it once the child is accepted into it, and then the zone itself
MERGED = {
    "keep.md": "keep\n",
    "z.md": "child\n",
    "c.md": "child\n",
    "zd/p": "parent\n",
    "zd/c": "child\n",
    "zd2/n": "child\n",
    "pdir/y": "child\n",
    "wd/b": "child\n",
}
#: prints each file of the view's zone as "path=content", sorted (no runs/ record: omxfs run writes none)
LISTING = 'find . -type f | sort | while read -r f; do printf \'%s=%s\\n\' "${f#./}" "$(cat "$f")"; done'


def _listed(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def _expected(files: dict[str, str]) -> dict[str, str]:
    return {path: content.rstrip("\n") for path, content in files.items()}


def _branches(ws: Path) -> dict[str, dict[str, Any]]:
    listed = json.loads(omxfs("branches", str(ws), "alice", "--json").stdout)
    return {row["name"]: row for row in listed}


def _seed(zone: Path) -> None:
    for path, content in ZONE.items():
        (zone / path).parent.mkdir(exist_ok=True)
        (zone / path).write_text(content)


def _whiteout(path: Path) -> bool:
    st = path.lstat()
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


@pytest.fixture
def control(tmp_path: Path) -> Path:
    path = tmp_path / "control"
    path.mkdir()
    return path


@pytest.fixture
def waiting(control: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts a view that runs until the test ends (or ``control/go`` appears), once it is up."""
    started: list[subprocess.Popen[str]] = []

    def start(ws: Path, *options: str) -> subprocess.Popen[str]:
        up = control / f"up-{len(started)}"
        script = f"touch {up}; until [ -e {control}/go ]; do sleep 0.05; done"
        view = subprocess.Popen(
            view_argv(ws, "alice", script, *options, "--bind", str(control)),
            cwd=ws.parent,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(view)
        poll(lambda: up.exists() or view.poll() is not None)
        assert view.poll() is None, view.communicate()
        return view

    yield start
    (control / "go").touch()
    for view in started:
        view.communicate(timeout=60)


def test_a_nested_branch_is_accepted_into_its_parent_as_the_overlay_shows_it_then_the_parent_into_the_zone(
    store: Workspace, ok: Ok
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    _seed(zone)
    ok(run_view(ws, "alice", PARENT, "--branch", "p"))
    child = run_view(ws, "alice", CHILD, "--branch", "c", "--from", "p")
    # the child saw the zone as the parent has it: its file, its whiteout, its opaque directory (no zd/a)
    assert ok(child) == "parent\nparent\np\nno-old\n"
    assert "held for review in branch c of alice's zone, made from branch p" in child.stderr, child.stderr

    listed = _branches(ws)
    assert (listed["c"]["parent"], listed["c"]["state"], listed["p"]["parent"]) == ("p", "pending", None)
    table = omxfs("branches", str(ws), "alice").stdout.splitlines()
    assert table[0].split()[:6] == ["BRANCH", "PARENT", "CREATED", "BY", "CHANGES", "STATE"]
    assert [line.split()[:2] for line in table[1:]] == [["c", "p"], ["p", "-"]]
    # the child's diff is against the parent as it is: what accepting it into the parent does
    change = json.loads(omxfs("diff", str(ws), "alice", "--branch", "c", "--json").stdout)
    assert (change["from"], change["to"]) == ("p", "c")
    assert change["added"] == ["c.md", "pdir/y", "wd", "wd/b", "zd/c", "zd2/n"]
    assert change["modified"] == ["z.md"]
    assert change["deleted"] == ["gone.md", "pdir/keep", "pdir/x", "ponly.md", "zd2/a"]

    accepted = omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice").stdout
    assert accepted.startswith("accepted alice's branch c into branch p\nthe zone is unchanged: `omxfs accept ")
    upper = ws / ".omxfs/branches/alice/p/upper"
    assert _whiteout(upper / "gone.md")  # a zone file: hidden from the zone below
    assert _whiteout(upper / "ponly.md")  # a file only the parent had: a whiteout over nothing of the zone's
    assert all(os.getxattr(upper / d, "user.overlay.opaque") == b"y" for d in ("pdir", "wd"))
    assert not (ws / ".omxfs/branches/alice/c").exists()
    assert {p: r["state"] for p, r in _branches(ws).items()} == {"p": "pending", "c": "accepted"}
    assert _listed(ok(run_view(ws, "alice", LISTING, "--branch", "p"))) == _expected(MERGED)
    assert (zone / "gone.md").read_text() == "zone\n" and not (zone / "c.md").exists()  # the zone as it was

    omxfs("accept", str(ws), "alice", "--branch", "p", "--as", "alice")
    files = {str(p.relative_to(zone)): p.read_text().rstrip("\n") for p in zone.rglob("*") if p.is_file()}
    assert files == _expected(MERGED)
    assert sorted(str(p.relative_to(zone)) for p in zone.rglob("*") if p.is_dir()) == ["pdir", "wd", "zd", "zd2"]


def test_a_parent_and_its_child_never_run_at_once_and_a_parent_with_a_pending_child_is_not_decided(
    store: Workspace, ok: Ok, waiting: Callable[..., subprocess.Popen[str]]
) -> None:
    ws = store.root
    ok(run_view(ws, "alice", "echo parent > p.md", "--branch", "p"))
    parent = waiting(ws, "--branch", "p")
    refused = run_view(ws, "alice", "echo child > c.md", "--branch", "c", "--from", "p")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert f"alice's branch p, it is made from, is running in a view (pid {parent.pid})" in refused.stderr
    assert not (ws / ".omxfs/branches/alice/c").exists()  # a refused run leaves nothing pending
    (ws.parent / "control/go").touch()
    parent.communicate(timeout=60)
    (ws.parent / "control/go").unlink()

    ok(run_view(ws, "alice", "echo child > c.md", "--branch", "c", "--from", "p"))
    child = waiting(ws, "--branch", "c")  # continues c: its record says it is made from p
    refused = run_view(ws, "alice", "true", "--branch", "p")
    assert refused.returncode == 1 and f"alice's branch c, made from it, is running in a view (pid {child.pid})" in (
        refused.stderr
    ), refused.stderr
    busy = omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice", check=False)
    assert busy.returncode == 1 and "a view of alice is running" in busy.stderr, busy.stderr
    (ws.parent / "control/go").touch()
    child.communicate(timeout=60)

    for verb in ("accept", "discard"):
        held = omxfs(verb, str(ws), "alice", "--branch", "p", "--as", "alice", check=False)
        assert held.returncode == 1 and "Traceback" not in held.stderr, held.stderr
        assert "alice's branch p has 1 branch(es) made from it pending (c)" in held.stderr, held.stderr
        assert f"omxfs accept {ws} alice --branch c --as alice" in held.stderr
    assert set(_branches(ws)) == {"p", "c"} and not (ws / "agents/alice/p.md").exists()
    other = run_view(ws, "alice", "true", "--branch", "c", "--from", "x")
    assert other.returncode == 1 and "alice's branch c was made from branch p" in other.stderr, other.stderr
    missing = run_view(ws, "alice", "true", "--branch", "d", "--from", "nope")
    assert missing.returncode == 1 and "alice has no branch nope pending" in missing.stderr, missing.stderr
    plain = run_view(ws, "alice", "true", "--from", "p")
    assert plain.returncode == 2 and "give it --branch NAME" in plain.stderr, plain.stderr
    assert not (ws / ".omxfs/branches/alice/d").exists()

    omxfs("discard", str(ws), "alice", "--branch", "c", "--as", "alice")
    omxfs("accept", str(ws), "alice", "--branch", "p", "--as", "alice")  # no child pending: accepted
    assert (ws / "agents/alice/p.md").read_text() == "parent\n" and not (ws / "agents/alice/c.md").exists()


def test_a_conflicted_branch_rebased_shows_what_it_overwrites_and_is_accepted(
    store: Workspace, ok: Ok, waiting: Callable[..., subprocess.Popen[str]]
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    ok(run_view(ws, "alice", "echo first > notes.md", "--branch", "first"))
    ok(run_view(ws, "alice", "echo rival > notes.md; echo more > more.md", "--branch", "rival"))
    omxfs("accept", str(ws), "alice", "--branch", "first", "--as", "alice")
    assert _branches(ws)["rival"]["state"] == "conflicted"
    refused = omxfs("accept", str(ws), "alice", "--branch", "rival", "--as", "alice", check=False)
    assert refused.returncode == 1 and f"omxfs rebase {ws} alice --branch rival --as alice" in refused.stderr
    # what an accept would do to the zone now: overwrite first's line
    before = omxfs("diff", str(ws), "alice", "--branch", "rival").stdout
    assert "-first\n+rival\n" in before and "+more\n" in before, before

    view = waiting(ws, "--branch", "other")
    busy = omxfs("rebase", str(ws), "alice", "--branch", "rival", "--as", "alice", check=False)
    assert busy.returncode == 1 and f"a view of alice is running (pid {view.pid}): a rebase" in busy.stderr
    assert _branches(ws)["rival"]["state"] == "conflicted"
    (ws.parent / "control/go").touch()
    view.communicate(timeout=60)

    rebased = omxfs("rebase", str(ws), "alice", "--branch", "rival", "--as", "alice")
    assert rebased.stdout == "rebased alice's branch rival on the zone as it is now\n"
    assert "warning: accepting it overwrites what branch first changed: notes.md" in rebased.stderr
    row = _branches(ws)["rival"]
    assert row["state"] == "pending" and "rebased " in row["detail"], row
    assert omxfs("diff", str(ws), "alice", "--branch", "rival").stdout == before
    omxfs("accept", str(ws), "alice", "--branch", "rival", "--as", "alice")
    assert (zone / "notes.md").read_text() == "rival\n" and (zone / "more.md").read_text() == "more\n"
    assert any(r["action"] == "rebase branch rival on the zone" for r in store.audit_trail().records)


def test_an_accept_into_the_parent_killed_half_way_is_finished_by_fsck_repair(store: Workspace, ok: Ok) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    _seed(zone)
    ok(run_view(ws, "alice", PARENT, "--branch", "p"))
    ok(run_view(ws, "alice", CHILD, "--branch", "c", "--from", "p"))
    env = {**clean_env(), "OMXFS_CRASH_AT": "accept-applied:2"}
    killed = omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice", env=env, check=False)
    assert killed.returncode == -9
    assert (ws / ".omxfs/branches/alice/c/accepting").exists()
    assert "accept interrupted" in _branches(ws)["c"]["detail"]
    repaired = omxfs("fsck", str(ws), "--repair").stdout.splitlines()
    assert any(line.startswith("repaired") and "interrupted-accept" in line for line in repaired), repaired
    assert _listed(ok(run_view(ws, "alice", LISTING, "--branch", "p"))) == _expected(MERGED)
    assert {p: r["state"] for p, r in _branches(ws).items()} == {"p": "pending", "c": "accepted"}


def test_a_parent_holding_only_run_records_stays_pending_while_a_branch_made_from_it_is(
    store: Workspace, ok: Ok, waiting: Callable[..., subprocess.Popen[str]]
) -> None:
    """A branch whose change is only omx's records of its runs is over once its run ends (its records go into the
    zone), but not while a branch made from it is pending: that one would be left without the branch it changes."""
    ws, control = store.root, store.root.parent / "control"
    sibling = waiting(ws, "--branch", "sibling")  # held then: the zone is the sibling's lower layer
    record = "mkdir -p runs/20260101-000000 && echo '{}' > runs/20260101-000000/plan.json"
    ok(run_view(ws, "alice", record, "--branch", "p"))
    (control / "go").touch()
    sibling.communicate(timeout=60)
    ok(run_view(ws, "alice", "echo child > c.md", "--branch", "c", "--from", "p"))
    again = run_view(ws, "alice", "true", "--branch", "p")
    assert "held for review in branch p" in ok(again) + again.stderr, again.stderr
    assert {n: r["state"] for n, r in _branches(ws).items() if n != "sibling"} == {"p": "pending", "c": "pending"}
    omxfs("accept", str(ws), "alice", "--branch", "c", "--as", "alice")
    omxfs("accept", str(ws), "alice", "--branch", "p", "--as", "alice")
    assert (ws / "agents/alice/c.md").read_text() == "child\n"
    assert (ws / "agents/alice/runs/20260101-000000/plan.json").exists()

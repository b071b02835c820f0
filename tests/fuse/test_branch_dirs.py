"""Each pending branch of a zone is a read-only directory ``agents/<zone>/@<branch>/`` on the mount, made by real
``omxfs run --branch`` views: compared with ``diff -r``, read with ``cat``, every change refused with EROFS, a
symlink shown and never followed by the daemon, gone once accepted or discarded, read as the zone is read.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.workspace_tools.mount_backend import MountBackend
from omxfs.fuse.zones.branch_dirs import shown_without_descriptors
from tests.checkpoints.conftest import omxfs
from tests.fuse.conftest import Mount, clean_env, poll
from tests.fuse.test_private_posix import as_uid
from tests.view.conftest import view_argv

#: each branch's work in bob's zone (notes.md "base", gone.md, d/e/f and branch.json before)
WORK = {
    "first": "echo first > notes.md; rm gone.md; ln -s ../branch.json leak",
    "rival": "echo rival > notes.md; rm -r d; mkdir d; echo new > d/n",  # d replaced: opaque in the upper layer
    "aside": "echo aside > aside.md; echo private > secret; chmod 600 secret",
    "review": "echo reviewed > review.md",  # the review: --branch review is --review
}


def make_branches(m: Mount, work: dict[str, str], *options: str) -> None:
    """Each branch of bob's zone made by its own ``omxfs run --branch`` view, all at once."""
    runs = {
        name: subprocess.Popen(
            view_argv(m.store, "bob", script, "--branch", name, *options),
            cwd=m.store.parent,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, script in work.items()
    }
    for name, run in runs.items():
        _, err = run.communicate(timeout=60)
        held = "held for review in bob's zone" if name == "review" else f"held for review in branch {name} of bob's"
        assert run.returncode == 0 and held in err, err


def refused(action: Callable[[], object]) -> int:
    try:
        action()
    except OSError as exc:
        return exc.errno or 0
    return 0


@pytest.fixture
def m(mount: Callable[..., Mount]) -> Mount:
    m = mount(allow_other=True)
    zone = m.store / "agents/bob"
    (zone / "notes.md").write_text("base\n")
    (zone / "gone.md").write_text("gone\n")
    (zone / "d/e").mkdir(parents=True)
    (zone / "d/e/f").write_text("f\n")
    (zone / "branch.json").write_text("the zone's own\n")  # what the branch's symlink leads to, read by a kernel
    return m


def test_branches_on_the_mount_read_only_compared_and_gone_once_decided(m: Mount) -> None:
    bob = m.path("agents/bob")
    assert not os.path.lexists(bob / "@first")  # looked up before it exists: the absence is not remembered
    make_branches(m, WORK)
    make_branches(m, {"nested": "echo nested > nested.md; rm notes.md"}, "--from", "first")  # over first's layer
    upper = m.store / ".omxfs/branches/bob"
    assert (bob / "@first/notes.md").read_text() == "first\n" and stat.S_ISDIR(os.lstat(bob / "@first").st_mode)
    assert sorted(os.listdir(bob)) == [
        *("@aside", "@first", "@nested", "@review", "@rival"),
        *("branch.json", "d", "gone.md", "notes.md"),
    ]
    # the workspace tools list the zone's own files, not its branches' (list_workspace_files over MCP)
    listed = MountBackend(m.root, m.default).list_private("bob")
    assert listed == ["branch.json", "d/e/f", "gone.md", "notes.md"], listed
    # a branch made from another: its layer over first's over the zone
    assert sorted(os.listdir(bob / "@nested")) == ["branch.json", "d", "leak", "nested.md"]
    assert os.listdir(bob / "@nested/d/e") == ["f"]
    assert (bob / "@review/review.md").read_text() == "reviewed\n"
    assert (m.store / ".omxfs/reviews/bob/upper/review.md").exists()  # where the review is held

    diff = m.run(["diff", "-r", "agents/bob/@first", "agents/bob/@rival"])
    assert diff.returncode == 1, diff.stderr
    shown = diff.stdout.decode()
    assert "< first\n---\n> rival\n" in shown
    assert "Only in agents/bob/@rival: gone.md" in shown and "Only in agents/bob/@first: leak" in shown
    assert "Only in agents/bob/@first/d: e" in shown and "Only in agents/bob/@rival/d: n" in shown
    assert m.run(["cat", "agents/bob/@aside/aside.md", "agents/bob/@aside/notes.md"], check=True).stdout == (
        b"aside\nbase\n"
    )

    # a deleted name is absent, a replaced directory hides the zone's, the overlay's attributes are not shown
    assert "gone.md" not in os.listdir(bob / "@first") and not os.path.lexists(bob / "@first/gone.md")
    assert stat.S_ISCHR(os.lstat(upper / "first/upper/gone.md").st_mode)  # the whiteout it is on disk
    assert os.listdir(bob / "@rival/d") == ["n"] and not os.path.lexists(bob / "@rival/d/e")
    assert os.getxattr(upper / "rival/upper/d", "user.overlay.opaque") == b"y"
    assert not [n for n in os.listxattr(bob / "@rival/d") if n.startswith("user.overlay.")]
    assert refused(lambda: os.getxattr(bob / "@rival/d", "user.overlay.opaque")) == errno.ENODATA
    assert os.listdir(bob / "@first/d/e") == ["f"]  # the zone's directory, where the branch left it alone

    # the symlink planted in the upper layer: shown as one, resolved by the reader's kernel on the mount (the
    # zone's branch.json), never by the daemon in the store (it would have read the branch's own record)
    assert stat.S_ISLNK(os.lstat(bob / "@first/leak").st_mode)
    assert os.readlink(bob / "@first/leak") == "../branch.json"
    assert (bob / "@first/leak").read_text() == "the zone's own\n"
    assert os.getxattr(bob / "@first/notes.md", "user.omx.owner") == b"bob"

    # every change is refused with EROFS, for bob too, and nothing changes on disk
    def write(path: Path, mode: str = "w") -> None:
        with open(path, mode) as f:
            f.write("x")

    first = bob / "@first"
    changes: list[Callable[[], object]] = [
        lambda: write(first / "new.md"),
        lambda: write(first / "notes.md", "a"),
        lambda: os.unlink(first / "notes.md"),
        lambda: os.rename(first / "notes.md", first / "moved.md"),
        lambda: os.rename(bob / "gone.md", first / "gone.md"),
        lambda: os.truncate(first / "notes.md", 0),
        lambda: os.chmod(first / "notes.md", 0o600),
        lambda: os.utime(first / "notes.md", (0, 0)),
        lambda: os.setxattr(first / "notes.md", "user.tag", b"x"),
        lambda: os.mkdir(first / "sub"),
        lambda: os.rmdir(first / "d"),
        lambda: os.symlink("notes.md", first / "link"),
        lambda: os.link(first / "notes.md", first / "hard"),
        lambda: os.mkdir(bob / "@new"),  # a name starting with @ at the top of the zone is no one's to make
    ]
    assert [refused(change) for change in changes] == [errno.EROFS] * len(changes)
    as_bob = m.py("import os; os.mkdir('agents/bob/@mine')", agent="bob", check=False)
    assert as_bob.returncode == 1 and b"Read-only file system" in as_bob.stderr
    assert (upper / "first/upper/notes.md").read_text() == "first\n"
    assert sorted(os.listdir(upper / "first/upper")) == ["gone.md", "leak", "notes.md"]
    assert not os.path.lexists(m.store / "agents/bob/@new") and (m.store / "agents/bob/gone.md").exists()
    assert "errno=EROFS: agents/bob/@first/new.md: read-only" in m.log()

    # names of the zone's own starting with @ (made on the store) do not pass for branches
    for name in ("@try", "@review"):
        (m.store / "agents/bob" / name).mkdir()
        (m.store / "agents/bob" / name / "fake.md").write_text("fake\n")
    assert sorted(n for n in os.listdir(bob) if n.startswith("@")) == [
        *("@aside", "@first", "@nested", "@review", "@rival")
    ]
    assert not os.path.lexists(bob / "@try") and not os.path.lexists(bob / "@review/fake.md")
    # inside a branch they are the zone's names as the branch has them
    assert sorted(os.listdir(bob / "@review")) == [
        *("@review", "@try", "branch.json", "d", "gone.md", "notes.md", "review.md")
    ]
    assert (bob / "@review/@review/fake.md").read_text() == "fake\n"

    omxfs("accept", str(m.store), "bob", "--branch", "aside", "--as", "bob")
    omxfs("discard", str(m.store), "bob", "--branch", "rival", "--as", "bob")
    omxfs("discard", str(m.store), "bob", "--review", "--as", "bob")
    assert sorted(n for n in os.listdir(bob) if n.startswith("@")) == ["@first", "@nested"]
    poll(lambda: not any(os.path.lexists(bob / n) for n in ("@aside", "@rival", "@review")), 2, "gone")
    assert (bob / "aside.md").read_text() == "aside\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to other uids needs root")
def test_a_branch_is_read_as_its_zone_is_read(m: Mount) -> None:
    """Another uid reads a branch as it reads the zone (its mode bits), though the branch lies under .omxfs/."""
    make_branches(m, {"aside": WORK["aside"]})
    assert as_uid(m, 65534, lambda: os.listdir("@aside"), "agents/bob") == "ok"
    assert as_uid(m, 65534, lambda: Path("@aside/aside.md").read_text(), "agents/bob") == "ok"
    assert as_uid(m, 65534, lambda: Path("@aside/notes.md").read_text(), "agents/bob") == "ok"  # the zone's
    assert as_uid(m, 65534, lambda: Path("@aside/secret").read_text(), "agents/bob") == "EACCES"  # 0600, root's
    assert stat.S_IMODE(os.stat(m.store / ".omxfs/branches/bob").st_mode) == 0o700  # closed to it on the store


def test_an_error_names_store_paths_never_the_daemons_descriptors() -> None:
    """The daemon reaches the store and each upper layer through descriptors; a refusal met on the way (a zone's
    directory swapped for a symlink between the walk and the listing) is logged with the store's paths."""
    named = {"/proc/self/fd/10": "", "/proc/self/fd/1": ".omxfs/branches/bob/b1/upper"}
    assert (
        shown_without_descriptors("/proc/self/fd/10/agents/bob/d: a symlink or non-directory is in the way", named)
        == "agents/bob/d: a symlink or non-directory is in the way"
    )
    assert (
        shown_without_descriptors("/proc/self/fd/1/d: x; /proc/self/fd/1: y; /proc/self/fd/12/z", named)
        == ".omxfs/branches/bob/b1/upper/d: x; .omxfs/branches/bob/b1/upper: y; /proc/self/fd/12/z"
    )

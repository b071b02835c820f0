"""An agent's work in a real ``omxfs run`` view, seen by ``omxfs diff`` and undone by ``omxfs restore`` (issue 27).

The agent runs the tools agents run: ``tar x``, a nested ``git init`` and commit, ``rm -rf``, ``sed -i``, ``chmod``,
a symlink, a hard link, a FIFO, an attribute and a sparse file. The view's start made a checkpoint of the zone as it
found it; a restore to it brings the zone back to the test's own account of it, and the restore's own checkpoint
brings the agent's work back.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs, tree_state
from tests.view.conftest import clean_env, poll, run_view, view_argv

Ok = Callable[..., str]

AGENT_WORK = """
set -e
tar xf project.tar
rm project.tar
git init -q repo
echo 'print(1)' > repo/main.py
git -C repo add main.py
git -C repo -c user.name=alice -c user.email=alice@example.org commit -qm first
rm -rf old
sed -i s/alpha/beta/ notes.md
chmod 755 tool.sh
ln -s notes.md latest
ln notes.md notes-hard
mkfifo pipe
setfattr -n user.reviewed -v yes tool.sh
truncate -s 4M disk.img
echo end >> disk.img
"""


def _baseline(zone: Path, tmp: Path) -> None:
    (zone / "notes.md").write_text("alpha\nsecond line\n")
    (zone / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (zone / "old/cache").mkdir(parents=True)
    for n in range(5):
        (zone / f"old/cache/{n}.bin").write_bytes(bytes([n]) * 1000)
    source = tmp / "project"
    (source / "src").mkdir(parents=True)
    (source / "src/app.py").write_text("app = True\n")
    (source / "README").write_text("project\n")
    with tarfile.open(zone / "project.tar", "w") as tar:
        tar.add(source, arcname="project")


def test_diff_shows_an_agents_work_in_its_view_and_restore_undoes_it_exactly(
    store: Workspace, ok: Ok, tmp_path: Path
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    _baseline(zone, tmp_path)
    before = tree_state(zone)
    ok(run_view(ws, "alice", AGENT_WORK))
    after = tree_state(zone)
    listed = json.loads(omxfs("checkpoints", str(ws), "alice", "--json").stdout)
    assert [(c["id"], c["message"]) for c in listed] == [("1", "view started")]

    changes = json.loads(omxfs("diff", str(ws), "alice", "--json").stdout)
    added, deleted, modified = set(changes["added"]), set(changes["deleted"]), set(changes["modified"])
    assert {"project/src/app.py", "project/README", "repo/main.py", "repo/.git/HEAD"} <= added  # tar x, git
    assert any(p.startswith("repo/.git/objects/") for p in added)  # the nested repository, .git and all
    assert {"latest", "notes-hard", "pipe", "disk.img"} <= added
    assert {"old", "old/cache", "old/cache/0.bin", "project.tar"} <= deleted  # rm -rf, rm
    assert {"notes.md", "tool.sh"} <= modified
    details = changes["details"]
    assert "-alpha\n+beta\n" in details["notes.md"]["diff"]  # sed -i
    assert details["tool.sh"]["mode"] == ["644", "755"] and details["tool.sh"]["xattrs"] == [[], ["user.reviewed"]]
    assert details["latest"]["target"] == "notes.md"
    assert details["notes.md"]["link"] == [None, "notes-hard"]  # "notes-hard" sorts first: the link's first name
    assert details["pipe"]["type"] == "fifo"
    text = omxfs("diff", str(ws), "alice").stdout
    assert "M tool.sh  (mode 644 -> 755" in text and "D old/  (dir, and 6 entries below it)" in text
    assert "old/cache/4.bin" not in text

    restored = omxfs("restore", str(ws), "alice", "1", "--as", "alice").stdout
    assert tree_state(zone) == before
    undo = restored.strip().splitlines()[-1].split()[-3]
    assert restored.strip().endswith(f"omxfs restore {ws} alice {undo} --as alice")
    omxfs("restore", str(ws), "alice", undo, "--as", "alice")
    assert tree_state(zone) == after
    assert after["disk.img"]["data"] is not None  # sparse, and compared as such
    assert after["notes.md"]["nlink"] == 2
    git_log = subprocess.run(
        ["git", "-C", str(zone / "repo"), "log", "--format=%s"], capture_output=True, text=True, check=True
    )
    assert git_log.stdout == "first\n"  # the nested repository works after the round trip
    assert omxfs("fsck", str(ws)).returncode == 0


def test_a_view_start_makes_no_checkpoint_when_nothing_changed(store: Workspace, ok: Ok) -> None:
    (store.root / "agents/alice/f").write_text("x\n")
    ok(run_view(store.root, "alice", "true"))
    ok(run_view(store.root, "alice", "echo y > g"))
    ok(run_view(store.root, "alice", "cat g"))
    listed = json.loads(omxfs("checkpoints", str(store.root), "alice", "--json").stdout)
    assert [c["id"] for c in listed] == ["1", "2"]  # the third view found what the second left
    assert listed[1]["files_changed"] >= 1


def test_a_restore_is_refused_while_the_agents_view_runs(store: Workspace, tmp_path: Path) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "f").write_text("checkpointed\n")
    omxfs("checkpoint", str(ws), "--as", "alice")
    script = "echo changed > f; touch started; while [ ! -e stop ]; do sleep 0.05; done"
    view = subprocess.Popen(view_argv(ws, "alice", script), cwd=tmp_path, env=clean_env())
    try:
        poll(lambda: (zone / "started").exists(), what="the view to start")
        refused = omxfs("restore", str(ws), "alice", "1", "--as", "alice", check=False)
        assert refused.returncode == 1 and "a view of alice is running" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert (zone / "f").read_text() == "changed\n"
    finally:
        (zone / "stop").touch()
        assert view.wait(timeout=60) == 0
    omxfs("restore", str(ws), "alice", "1", "--as", "alice")
    assert (zone / "f").read_text() == "checkpointed\n"

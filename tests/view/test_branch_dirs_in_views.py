"""A zone's pending branches inside a view, at ``agents/<zone>/@<branch>/`` as on the mount: real ``omxfs run``
views of real workspaces, compared with ``diff -r`` and ``cat`` from inside, written to in vain.

In a view another agent's zone is the view's daemon's (read-only to the view's agent, writes refused with EACCES as
the SPEC says), so its branches show there, come and go live, and are read-only like on the mount.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from omxfs.store import Workspace
from tests.checkpoints.conftest import omxfs
from tests.view.conftest import clean_env, poll, run_view, view_argv

#: what bob's view runs: alice's branches compared and read, then written to (each refusal's message kept)
COMPARE = """
cd "$WS/agents/alice"
ls -a
echo ---
diff -r @first @rival
echo "diff: $?"
cat @first/notes.md @first/new.md
echo changed 2> /dev/null > @first/notes.md || echo "write in a branch refused"
mkdir @made 2> /dev/null || echo "mkdir of a branch name refused"
echo x 2> /tmp/err > theirs.md || { echo "write in alice's zone refused"; cat /tmp/err; }
"""


def test_another_agents_branches_are_read_only_in_a_view_and_compared_with_ordinary_tools(store: Workspace) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    made = run_view(ws, "alice", "echo first > notes.md; echo new > new.md", "--branch", "first")
    assert made.returncode == 0, made.stderr
    made = run_view(ws, "alice", "echo rival > notes.md", "--branch", "rival")
    assert made.returncode == 0, made.stderr

    seen = run_view(ws, "bob", COMPARE, env={**clean_env(), "WS": str(ws)})
    assert seen.returncode == 0, seen.stderr
    listing, _, rest = seen.stdout.partition("---\n")
    assert {"@first", "@rival", "notes.md"} <= set(listing.split()), listing
    assert "< first\n---\n> rival" in rest and "Only in @first: new.md" in rest and "diff: 1" in rest, rest
    assert "first\nnew\n" in rest
    assert "write in a branch refused" in rest and "mkdir of a branch name refused" in rest
    assert "write in alice's zone refused" in rest and "Permission denied" in rest, rest
    assert (zone / "notes.md").read_text() == "base\n" and not (zone / "theirs.md").exists()
    upper = ws / ".omxfs/branches/alice/first/upper"
    assert (upper / "notes.md").read_text() == "first\n" and not (upper / "@made").exists()

    omxfs("accept", str(ws), "alice", "--branch", "first", "--as", "alice")
    after = run_view(ws, "bob", 'ls -a "$WS/agents/alice"', env={**clean_env(), "WS": str(ws)})
    assert after.returncode == 0, after.stderr
    names = after.stdout.split()
    assert "@first" not in names and "@rival" in names and "new.md" in names, names  # accepted: no longer pending


def test_a_branch_made_while_a_view_runs_appears_in_it(store: Workspace, tmp_path: Path) -> None:
    ws = store.root
    control = tmp_path / "control"
    control.mkdir()
    script = (
        f'touch {control}/up; n=0; until [ -f "$WS/agents/alice/@late/late.md" ] || [ $n -ge 600 ]; do sleep 0.05; '
        'n=$((n+1)); done; cat "$WS/agents/alice/@late/late.md"'
    )
    watching = subprocess.Popen(
        view_argv(ws, "bob", script, "--bind", str(control)),
        cwd=ws.parent,
        env={**clean_env(), "WS": str(ws)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll(lambda: (control / "up").exists() or watching.poll() is not None)
        made = run_view(ws, "alice", "echo late > late.md", "--branch", "late")
        assert made.returncode == 0, made.stderr
        out, err = watching.communicate(timeout=60)
    finally:
        if watching.poll() is None:
            watching.kill()
            watching.communicate()
    assert watching.returncode == 0 and out == "late\n", (out, err)


#: what alice's view of her branch ``third`` runs: her other branches compared and read beside her own overlay
SIBLINGS = """
cd "$WS/agents/alice"
echo third > third.md
ls -a
echo ---
diff -r @first @rival
echo "diff: $?"
cat @first/new.md
echo changed 2> /dev/null > @first/notes.md || echo "write in a sibling refused"
"""


def test_a_branch_run_shows_its_siblings_beside_its_overlay_without_writing_them_into_its_branch(
    store: Workspace,
) -> None:
    ws, zone = store.root, store.root / "agents/alice"
    (zone / "notes.md").write_text("base\n")
    for name, work in (("first", "echo first > notes.md; echo new > new.md"), ("rival", "echo rival > notes.md")):
        made = run_view(ws, "alice", work, "--branch", name)
        assert made.returncode == 0, made.stderr

    seen = run_view(ws, "alice", SIBLINGS, "--branch", "third", env={**clean_env(), "WS": str(ws)})
    assert seen.returncode == 0, seen.stderr
    listing, _, rest = seen.stdout.partition("---\n")
    names = set(listing.split())
    assert {"@first", "@rival", "notes.md", "third.md"} <= names and "@third" not in names, listing
    assert "< first\n---\n> rival" in rest and "Only in @first: new.md" in rest and "diff: 1" in rest, rest
    assert "new\n" in rest and "write in a sibling refused" in rest, rest

    upper = ws / ".omxfs/branches/alice/third/upper"
    assert sorted(p.name for p in upper.iterdir()) == ["third.md"]  # the siblings' mountpoints are not the branch's
    shown = omxfs("diff", str(ws), "alice", "--branch", "third").stdout
    assert "third.md" in shown and "@first" not in shown and "@rival" not in shown, shown
    assert (ws / ".omxfs/branches/alice/first/upper/notes.md").read_text() == "first\n"

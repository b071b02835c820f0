"""The daemons' refusals as the Team page groups them (``omxfs.ui.refusals``), from real log files: by agent and
reason with counts, and ENOTSUP on a POSIX ACL xattr left out (programs ask for them on every copy)."""

from __future__ import annotations

from omxfs.store import Workspace
from omxfs.ui.refusals import Refusals, grouped

DAY = "2026-11-29 07:00"
LOG = "".join(
    f"{DAY}:{second:02},000 {line}\n"
    for second, line in enumerate(
        [
            "INFO mounting /s on /m as alice (pid 7)",
            "WARNING agent=alice op=create path=a.txt errno=EACCES: a.txt: creating a file refused: only agents/",
            "WARNING agent=alice op=create path=b.txt errno=EACCES: b.txt: creating a file refused: only agents/",
            "WARNING agent=alice op=getxattr path=agents/alice/x errno=EOPNOTSUPP: system.posix_acl_access: none",
            "WARNING agent=bob op=setxattr path=agents/bob/y errno=ENOTSUP: system.posix_acl_default: not kept",
            "WARNING agent=bob op=write path=agents/alice/n.md errno=EACCES: agents/alice/n.md: only alice writes it",
            "WARNING agent=bob op=setxattr path=agents/bob/z errno=ENOTSUP: user.other: not kept",
        ]
    )
)


def test_refusals_are_grouped_by_agent_and_reason_without_acl_enotsup(ws: Workspace) -> None:
    logs = ws.meta / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "mount-7.log").write_text(LOG)
    groups = grouped(Refusals(ws).all())
    shown = [(g.agent, g.count, g.op, g.errno, g.reason, g.last.path) for g in groups]
    assert shown == [
        ("alice", 2, "create", "EACCES", "creating a file refused: only agents/", "b.txt"),
        ("bob", 1, "write", "EACCES", "only alice writes it", "agents/alice/n.md"),
        ("bob", 1, "setxattr", "ENOTSUP", "user.other: not kept", "agents/bob/z"),
    ]

"""``omxfs``'s commands that live in modules of their own: where each is, and its line in ``omxfs --help``.

Read by ``cli.omxfs`` (its click group lists and loads them, ``cli.lazy_group``) and by ``cli.entry``, which runs a
declared one (``cli.declare``) without click: so this module loads no click.
"""

from __future__ import annotations


class Lazy:
    """Where a command is, and its line in ``omxfs --help``."""

    __slots__ = ("attribute", "module", "summary")

    def __init__(self, module: str, attribute: str, summary: str) -> None:
        self.module = module  # the module that defines the command, imported when it runs
        self.attribute = attribute  # the command's name in that module: a click command, or a ``cli.declare.Declared``
        self.summary = summary  # its line in the group's --help: ``command.get_short_help_str`` with no limit


# Each command imports what it uses when it runs: `omxfs --help` and a checkpoint load no FUSE, pydantic or web
# code (`scripts/bench_cli.py` measures it). The commands of the modules below are imported only when one runs; the
# summary is each one's line in `omxfs --help` (tests/cli/test_lazy_group.py holds it to the command's own help).
COMMANDS = {
    # the conveniences over the mount (SPEC §6)
    "log": Lazy(
        "cli.log",
        "log",
        "Show the versions of the collaborative file PATH, oldest first, then every write to it that was refused as "
        "a conflict (each kept under collaborative/.conflicts/<agent>/).",
    ),
    "rollback": Lazy(
        "cli.mount_tools",
        "rollback",
        "Make a new version of PATH whose content is VERSION's; the history is kept.",
    ),
    "handoff": Lazy(
        "cli.mount_tools",
        "handoff",
        "Deliver FILE to AGENT: handoff/<you>_to_<AGENT>/<name> with its .meta.json.",
    ),
    "doc": Lazy("cli.doc", "doc_group", "Realtime CRDT documents (realtime/<doc>/<field>)."),
    "mcp": Lazy(
        "cli.mcp",
        "mcp",
        "Serve the shared-workspace tools over MCP (stdio) to Claude Code, Codex, Cursor or any MCP client.",
    ),
    "run": Lazy("cli.view", "run", "Run COMMAND as agent NAME in a view of WORKSPACE made for it."),
    "status": Lazy(
        "cli.status",
        "status",
        "Show the live mounts; with PATH (a workspace or a mount), what it holds and who serves it.",
    ),
    # a private zone's history
    "checkpoint": Lazy(
        "cli.checkpoints",
        "checkpoint",
        "Record the acting agent's private zone (or OWNER's) as it is now, and print the checkpoint's id.",
    ),
    "checkpoints": Lazy(
        "cli.checkpoints",
        "checkpoints",
        "List the checkpoints of NAME's private zone, oldest first (with --prune, remove all but the newest KEEP).",
    ),
    "diff": Lazy(
        "cli.checkpoints",
        "diff_command",
        "What changed in NAME's zone from checkpoint FROM (default: the last) to TO (default: the zone now).",
    ),
    "restore": Lazy(
        "cli.checkpoints",
        "restore_command",
        "Put NAME's zone (or only PATHs in it, relative to the zone) back exactly as in CHECKPOINT.",
    ),
    "accept": Lazy(
        "cli.checkpoints",
        "accept_command",
        "Apply the change NAME's review runs hold apart (`omxfs run --review`) to NAME's zone.",
    ),
    "discard": Lazy(
        "cli.checkpoints",
        "discard_command",
        "Drop the change NAME's review runs hold apart: NAME's zone stays as it is.",
    ),
    "rebase": Lazy(
        "cli.checkpoints",
        "rebase_command",
        "Take NAME's branch as it is on the zone now: it is no longer conflicted, and accept applies it.",
    ),
    "branches": Lazy(
        "cli.checkpoints",
        "branches_command",
        "List NAME's branches (`omxfs run --branch`, `--review`): pending ones, then the last accepted or discarded.",
    ),
    "audit": Lazy(
        "cli.audit",
        "audit",
        "Show who changed what outside their own zone (supervisors), and every restore, oldest first.",
    ),
    # the store checked against its invariants
    "fsck": Lazy(
        "cli.fsck",
        "fsck",
        "Check the store WORKSPACE against its invariants (versions vs history, checksums, metadata, CRDT states, "
        "checkpoints, snapshots).",
    ),
    # the whole workspace's history
    "snapshot": Lazy(
        "cli.snapshots", "snapshot", "Record the whole workspace (a supervisor's), or bring a snapshot back."
    ),
    "snapshots": Lazy("cli.snapshots", "snapshots", "List the snapshots of the workspace, oldest first."),
    # the supervisor's web dashboard
    "ui": Lazy(
        "cli.ui",
        "ui",
        "Serve a live web dashboard of WORKSPACE (mounted or not) on 127.0.0.1, until Ctrl-C.",
    ),
}

"""The options every omxfs convenience that acts for an agent takes (``log``, ``rollback``, ``handoff``, ``doc
create``), declared once (``cli.declare``): ``cli.params`` makes their click options."""

from __future__ import annotations

from cli.declare import Option

#: how the conveniences over a workspace pick the agent they act as (SPEC §3), said the same in each one's --help
ACTING_AGENT_HELP = (
    "Act as agent NAME. Without it: through a mount, whom the mount takes you for (its uid map, else OMX_AGENT, "
    "else the mount's --as); on an unmounted workspace, OMX_AGENT, else your login."
)
#: ``--as NAME`` (``cli.acting`` makes it so)
AS_AGENT = Option("--as", name="agent", metavar="NAME", help=ACTING_AGENT_HELP)
#: ``-w/--workspace``: a mount point or a workspace directory no daemon serves
WORKSPACE = Option(
    "--workspace",
    "-w",
    name="workspace",
    metavar="DIR",
    kind="path",  # unstatted: a mount answers no stat to a process it takes for no agent, before --as acts
    shown_default="current directory",
    help="The mount point (or an unmounted workspace directory).",
)

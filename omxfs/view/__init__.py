"""Agent views (``omxfs run WS --as NAME -- COMMAND``): a workspace made for one agent, identity fixed by the kernel.

A view is a bubblewrap sandbox (new user, PID, IPC and optionally network namespaces) whose file tree holds the
host's system directories read-only, a private ``/tmp``, a minimal ``/dev``, its own ``/proc``, and the workspace
at its own path, assembled like this::

    WS/                    a FUSE daemon whose every request is NAME's (``FixedIdentity``): handoff/,
                           collaborative/, realtime/ keep their rules, enforced outside the view
    WS/agents/             the store's directory, read-only
    WS/agents/NAME/        the store's own directory, read-write: native speed, no daemon on the path
    WS/.omxfs/             the store's directory, read-only

- ``locate``: which store lies behind WS (a plain store, a mount elsewhere, or a mount over the store itself).
- ``sandbox``: the bubblewrap command line of a view (pure: what is shown, where, how).
- ``launch``: the ``omxfs run`` process: serve the daemon, start the view, forward signals, return its status.
"""

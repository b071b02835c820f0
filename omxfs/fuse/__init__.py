"""The FUSE view of a workspace: pyfuse3 on trio, a thin layer over the store (SPEC §2-§7).

Layers, each testable on its own::

    ops.py        pyfuse3.Operations: async, thin. Resolves the caller, runs the zone handler in a worker thread,
                  maps OmxError to FUSEError in one place. No policy.
    inodes.py     inode numbers ↔ view paths, with the kernel's lookup counts
    identity.py   which agent a request comes from (uid map, the caller's OMX_AGENT, the mount's default)
    router.py     which zone handler serves a view path
    zones/        one synchronous handler per zone (no pyfuse3 import): the semantics of every node
    daemon.py     mount lifecycle: store descriptor, pyfuse3.init, trio, signals, readiness, log
"""

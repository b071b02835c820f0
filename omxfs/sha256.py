"""``sha256(data)``: a SHA-256 digest object, the interpreter's own until this process has hashed ``BUILT_IN_BYTES``,
OpenSSL's (``hashlib``) after.

Loading OpenSSL is 2.3 ms of a command's start, more than a checkpoint of a few small files spends hashing them with
the built-in implementation (about 300 MB/s here, against OpenSSL's 1.7 GB/s); a process that hashes more switches
to OpenSSL once, and the rest goes at its speed. Both give the same digest: which one made it is never recorded.
The returned object has ``update``, ``digest`` and ``hexdigest`` as ``hashlib``'s.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant: typing itself is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from hashlib import _Hash

#: the bytes hashed by the built-in implementation before OpenSSL's is loaded (about 13 ms of its hashing)
BUILT_IN_BYTES = 4 << 20

_built_in_hashed = 0


def _built_in() -> Callable[[bytes | bytearray | memoryview], _Hash] | None:
    """The interpreter's own ``sha256`` (module ``_sha2`` from Python 3.12, ``_sha256`` before), None where it was
    built without one."""
    for module in ("_sha2", "_sha256"):
        try:
            made: Callable[[bytes | bytearray | memoryview], _Hash] = __import__(module).sha256
        except ImportError:
            continue
        return made
    return None


_BUILT_IN = _built_in()


def sha256(data: bytes | bytearray | memoryview = b"", *, size: int | None = None) -> _Hash:
    """A new digest object fed ``data``; ``size``: the bytes the caller will feed it in all (default:
    ``len(data)``), which decides the implementation."""
    global _built_in_hashed
    total = size if size is not None else memoryview(data).nbytes
    if _BUILT_IN is not None and _built_in_hashed + total <= BUILT_IN_BYTES:
        _built_in_hashed += total
        return _BUILT_IN(data)
    import hashlib

    return hashlib.sha256(data)

"""bob's attack on his own zone, through the mount, timed to what the mount shows: the other process of a
hostile-agent test. Standard library only (it is an agent's program, not omx's); run with ``OMX_AGENT=bob`` and
the mount's root as its working directory, so every request it makes is bob's by the mount's own rules.

One JSON object a line on stdin, one answer a line on stdout:

- ``{"op": "arm", "trigger": T, "attack": A}``: makes A's prepared entry if it is missing, notes what T watches,
  answers ``{"ready": true}``, then polls T as tightly as it can and attacks once it fires;
- ``{"op": "stop"}``: stops polling and attacking, answers ``{"swaps": N, "polls": N, "fired_after": SECONDS or
  null, "errors": {...}}`` (a swap is one exchange that succeeded);
- end of input: exits.

T is ``{"kind": "now"}`` or ``{"kind": "new_name", "dir": REL}``: a name appears in REL that its listing at arm
time lacked (a file landing in the zone; an entry under ``.omxfs/checkpoints/bob/restoring/``; a new manifest).

A is ``{"a": REL, "b": REL, "make": "symlink" | "file" | "fifo", "target": PATH, "mode": "once" | "flap"}``: b is
made once (a symlink to ``target``, a file, a FIFO), then ``renameat2(a, b, RENAME_EXCHANGE)``: once, or over and
over until stopped (``flap``), so that whatever moment a command looks at ``a``, it may be either.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import sys
import threading
import time
from typing import Any

AT_FDCWD = -100
RENAME_EXCHANGE = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> int:
    """``renameat2(a, b, RENAME_EXCHANGE)``: 0, or the errno it failed with."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return 0
    return ctypes.get_errno()


def make(path: str, kind: str, target: str) -> None:
    """The entry an attack swaps in, unless it is there already (the test may have made it on the store, which
    the mount may show a moment late)."""
    if os.path.lexists(path):
        return
    try:
        if kind == "symlink":
            os.symlink(target, path)
        elif kind == "file":
            with open(path, "x") as f:
                f.write("not a directory\n")
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            raise ValueError(f"no such prepared entry: {kind}")
    except FileExistsError:
        pass


def listing(rel: str) -> set[str]:
    try:
        return set(os.listdir(rel))
    except (FileNotFoundError, NotADirectoryError):
        return set()


class Attack:
    """One armed attack, run in a thread until it is stopped."""

    def __init__(self, trigger: dict[str, Any], attack: dict[str, Any]) -> None:
        self.trigger = trigger
        self.attack = attack
        self.stop = threading.Event()
        self.swaps = 0
        self.polls = 0
        self.fired_after: float | None = None
        self.errors: dict[str, int] = {}
        make(attack["b"], attack["make"], attack.get("target", "/"))
        self.seen = listing(trigger["dir"]) if trigger["kind"] == "new_name" else set()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def fired(self) -> bool:
        kind = self.trigger["kind"]
        if kind == "now":
            return True
        if kind == "new_name":
            return not listing(self.trigger["dir"]) <= self.seen
        raise ValueError(f"no such trigger: {kind}")

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop.is_set():
            self.polls += 1
            if self.fired():
                break
        else:
            return
        self.fired_after = time.monotonic() - start
        a, b = self.attack["a"], self.attack["b"]
        while not self.stop.is_set():
            code = exchange(a, b)
            if code == 0:
                self.swaps += 1
            else:
                name = errno.errorcode.get(code, str(code))
                self.errors[name] = self.errors.get(name, 0) + 1
            if self.attack.get("mode", "once") == "once" and (code == 0 or sum(self.errors.values()) > 100):
                return

    def report(self) -> dict[str, Any]:
        self.stop.set()
        self.thread.join()
        return {"swaps": self.swaps, "polls": self.polls, "fired_after": self.fired_after, "errors": self.errors}


def main() -> None:
    armed: Attack | None = None
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "arm":
            if armed is not None:
                armed.report()
            try:
                armed = Attack(request["trigger"], request["attack"])
            except OSError as exc:
                answer: dict[str, Any] = {"ready": False, "error": f"{type(exc).__name__}: {exc}"}
            else:
                armed.thread.start()
                answer = {"ready": True}
        elif request["op"] == "stop":
            answer = armed.report() if armed is not None else {"swaps": 0, "polls": 0, "fired_after": None}
            armed = None
        else:
            answer = {"error": f"no such op: {request['op']}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()

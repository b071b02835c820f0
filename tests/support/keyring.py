"""The kernel's keyrings from Python (ctypes; no ``keyutils`` needed), for tests that plant a key and try to reach it.

Run as a program, it is the caller of a view: ``python -I keyring.py -- ARGV...`` joins a new session keyring of
its own (the test process's is left alone) with its user keyring linked in, as a login's is; puts a secret key in
that session keyring (``@s``) and one in its user keyring (``@u``), readable by its uid; runs ARGV, where the
arguments ``{session}`` and ``{user}`` become those keys' serials and ``{session_name}``, ``{user_name}`` their
descriptions; then reads both keys back, lists its keyrings before and after, takes out of ``@u`` and ``@us`` what
the run put there (they outlive it) and prints it all as JSON. Standalone (stdlib only): an unprivileged user runs
it from the checkout.

``ATTACK`` is the other side: Python source for ``python3 -c ATTACK SERIAL SERIAL NAME NAME`` (the session key's
and the user key's) inside a view, which tries every way to a key and prints one line per try, ``name: ok VALUE``
or ``name: ERRNAME``, then whether ``/proc/keys`` shows the caller's keys.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import subprocess
import sys

#: add_key, keyctl by machine (x86_64's own table; the generic one of aarch64 and riscv64)
SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219)}
SESSION, USER, USER_SESSION = -3, -4, -5  # KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, ..._USER_SESSION_...
GET_KEYRING_ID, JOIN_SESSION_KEYRING, SETPERM, LINK, UNLINK, READ = 0, 1, 5, 8, 9, 11
#: possessor and owner may do everything with the ``@u`` key: any process of the caller's uid may read it without
#: possessing it, a view's included (its uid is the caller's), but for the filter
OWNER_ALL = 0x3F3F0000
SECRET_SESSION = "omx-test-secret-in-session"
SECRET_USER = "omx-test-secret-in-user"

_libc = ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args: object) -> int:
    result = _libc.syscall(number, *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def add_key(description: str, payload: bytes, keyring: int) -> int:
    add, _ = SYSCALLS[platform.machine()]
    return _syscall(add, b"user", description.encode(), payload, ctypes.c_size_t(len(payload)), ctypes.c_int(keyring))


def keyctl(operation: int, *args: object) -> int:
    _, number = SYSCALLS[platform.machine()]
    return _syscall(number, ctypes.c_int(operation), *args)


def keyring_id(keyring: int) -> int:
    return keyctl(GET_KEYRING_ID, ctypes.c_long(keyring), ctypes.c_long(0))


def read(serial: int) -> bytes:
    buffer = ctypes.create_string_buffer(4096)
    size = keyctl(READ, ctypes.c_long(serial), buffer, ctypes.c_long(len(buffer)))
    return buffer.raw[: min(size, len(buffer))]


def contents(keyring: int) -> list[int]:
    """The serials a keyring holds (a keyring's payload is its list of key serials, 4 bytes each)."""
    data = read(keyring)
    return [int.from_bytes(data[i : i + 4], sys.byteorder, signed=True) for i in range(0, len(data), 4)]


def join_new_session() -> int:
    return keyctl(JOIN_SESSION_KEYRING, None)


def _snapshot() -> dict[str, list[int]]:
    return {name: sorted(contents(ring)) for name, ring in (("@s", SESSION), ("@u", USER), ("@us", USER_SESSION))}


def _read_or_error(serial: int) -> str:
    try:
        return read(serial).decode()
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]


def main(argv: list[str]) -> None:
    if argv[:1] != ["--"] or len(argv) < 2:
        sys.exit("usage: keyring.py -- ARGV...  ({session}, {user}: the planted keys' serials; {session_name}...)")
    join_new_session()
    keyctl(LINK, ctypes.c_long(USER), ctypes.c_long(SESSION))  # as a login's pam_keyinit does: @u keys are possessed
    session_name, user_name = f"omx-test-session-{os.getpid()}", f"omx-test-user-{os.getpid()}"
    session = add_key(session_name, SECRET_SESSION.encode(), SESSION)
    start = _snapshot()
    user = add_key(user_name, SECRET_USER.encode(), USER)
    fields = {"{session}": str(session), "{user}": str(user), "{session_name}": session_name, "{user_name}": user_name}
    try:
        keyctl(SETPERM, ctypes.c_long(user), ctypes.c_long(OWNER_ALL))
        before = _snapshot()
        command = [fields.get(arg, arg) for arg in argv[1:]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        report = {
            "status": done.returncode,
            "stdout": done.stdout,
            "stderr": done.stderr,
            "session": {"id": keyring_id(SESSION), "key": session, "payload": _read_or_error(session)},
            "user": {"key": user, "payload": _read_or_error(user)},
            "before": before,
            "after": _snapshot(),
        }
    finally:  # @u and @us outlive this process: take out what it (or a view that got through) put there
        after = _snapshot()
        for name, ring in (("@u", USER), ("@us", USER_SESSION)):
            for serial in set(after[name]) - set(start[name]):
                keyctl(UNLINK, ctypes.c_long(serial), ctypes.c_long(ring))
    print(json.dumps(report))


ATTACK = r"""
import ctypes, errno, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
ADD, REQUEST, KEYCTL = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219), "riscv64": (217, 218, 219)}[
    platform.machine()]
S, U, US = ctypes.c_long(-3), ctypes.c_long(-4), ctypes.c_long(-5)
session, user = (ctypes.c_long(int(a)) for a in sys.argv[1:3])
buffer = ctypes.create_string_buffer(4096)

def attempt(name, number, *args):
    ctypes.memset(buffer, 0, len(buffer))
    result = libc.syscall(number, *args)
    if result >= 0:
        print(f"{name}: ok {result} {buffer.value.decode(errors='replace')}")
    else:
        print(f"{name}: {errno.errorcode[ctypes.get_errno()]}")

def keyctl(name, operation, *args):
    attempt(name, KEYCTL, ctypes.c_int(operation), *args)

keyctl("search @s", 10, S, b"user", sys.argv[3].encode(), ctypes.c_long(0))
keyctl("search @u", 10, U, b"user", sys.argv[4].encode(), ctypes.c_long(0))
keyctl("search @us", 10, US, b"user", sys.argv[4].encode(), ctypes.c_long(0))
keyctl("read session key", 11, session, buffer, ctypes.c_long(len(buffer)))
keyctl("read user key", 11, user, buffer, ctypes.c_long(len(buffer)))
keyctl("describe session key", 6, session, buffer, ctypes.c_long(len(buffer)))
keyctl("update session key", 2, session, b"PWNED", ctypes.c_long(5))
keyctl("update user key", 2, user, b"PWNED", ctypes.c_long(5))
keyctl("link session key into @s", 8, session, S)
keyctl("link user key into @s", 8, user, S)
keyctl("setperm session key", 5, session, ctypes.c_long(0x3F3F3F3F))
for name, ring in (("@s", S), ("@u", U), ("@us", US)):
    attempt(f"add_key to {name}", ADD, b"user", b"omx-test-planted", b"PLANTED", ctypes.c_size_t(7), ring)
attempt("request_key", REQUEST, b"user", sys.argv[3].encode(), None, ctypes.c_long(0))
keyctl("join a keyring by name", 1, b"_ses")
try:
    keys = open("/proc/keys").read()
    print("proc keys:", "shows the caller's keys" if "omx-test-" in keys else "nothing of the caller's")
except OSError as exc:
    print("proc keys: unreadable", errno.errorcode[exc.errno])
"""


if __name__ == "__main__":
    main(sys.argv[1:])

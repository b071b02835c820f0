"""Issue 26's attacks on omx's step sandbox, run through ``agent.sandbox.confine.Sandbox`` as omx runs a step.

``python step_attacks.py [--no-sandbox] WORKSPACE TMUX SOCKETS...`` runs every attack as a step in WORKSPACE, then
prints one JSON object: for each attack, what the step printed, its exit status and whether the program it tried to
start ran. The test judges the outcomes (a marker the started program would write, a connection a listener would
accept, a secret in the output), never the messages; it runs this script as root, as an unprivileged user and
inside an agent view, so it lives in a file of its own. TMUX is a tmux server's socket (``-``: none); SOCKETS are
host UNIX sockets (paths, or ``@name`` for abstract ones) whose listeners the test watches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent.sandbox.confine import Sandbox

MARKER = "started.txt"  # in the workspace, which a step may write: only a started program writes it
TOUCH = f"/usr/bin/touch {MARKER}"

#: Python code that tries to start a program (``touch MARKER``), each a different spelling
STARTS = {
    "os_popen_renamed": f"import os as o; o.popen({TOUCH!r}).read()",
    "sys_modules_system": f"import sys; sys.modules['o' + 's'].system({TOUCH!r})",
    "subprocess_via_importlib": f"import importlib; importlib.import_module('subprocess').run({TOUCH.split()!r})",
    "posix_spawn": f"import os; os.waitpid(os.posix_spawn('/usr/bin/touch', ['touch', {MARKER!r}], {{}}), 0)",
    "fork_exec": f"import os\nif os.fork() == 0:\n    os.execv('/usr/bin/touch', ['touch', {MARKER!r}])\nos.wait()",
    "ctypes_execve": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "argv = (ctypes.c_char_p * 3)(b'touch', " + repr(MARKER.encode()) + ", None)\n"
        "libc.syscall(59 if __import__('platform').machine() == 'x86_64' else 221, b'/usr/bin/touch', argv, None)\n"
        "print('execve', ctypes.get_errno())"
    ),
    "multiprocessing_spawn": (
        "import multiprocessing as mp, pathlib\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn')\n"
        f"    p = ctx.Process(target=pathlib.Path({MARKER!r}).touch)\n"
        "    p.start(); p.join()"
    ),
    "ld_preload_exec": (
        "import os\nos.environ['LD_PRELOAD'] = '/nonexistent.so'\n"
        f"os.execve('/usr/bin/touch', ['touch', {MARKER!r}], dict(os.environ))"
    ),
}

#: Python code that reads what a step may not: the machine's accounts and secrets, through any path
READS = {
    "etc_passwd": "print(open('/etc/passwd').read())",
    "etc_shadow": "print(open('/etc/shadow').read())",
    "proc_self_root": "print(open('/proc/self/root/etc/passwd').read())",
    "planted_symlink": "import os; os.symlink('/etc/passwd', 'link'); print(open('link').read())",
    "home_root": "import os; print(os.listdir('/root'))",
}


def connect(target: str) -> str:
    address = repr("\0" + target[1:]) if target.startswith("@") else repr(target)
    return f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({address}); s.send(b'pwned')"


def main(workspace: Path, tmux: str, sockets: list[str], *, sandboxed: bool) -> None:
    box = Sandbox(workspace, mode="auto" if sandboxed else "off")
    results: dict[str, dict[str, object]] = {}

    def step(name: str, argv: list[str]) -> None:
        done = box.run(argv, timeout=30)
        marker = workspace / MARKER
        results[name] = {"status": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-500:],
                         "started": marker.exists(), "seconds": round(done.duration, 2)}  # fmt: skip
        marker.unlink(missing_ok=True)

    for name, code in STARTS.items():
        step(name, ["python3", "-c", code])
    for name, code in READS.items():
        step(name, ["python3", "-c", code])
    step("grep_abbreviated_option", ["grep", "--regex=:", "/etc/passwd"])
    step("shell_program_starts_another", ["env", "touch", MARKER])  # env, run as the step, exec's touch
    if tmux != "-":  # the escape the issue found: tmux's client, run as the step, asks the server to run a command
        step("tmux", ["tmux", "-S", tmux, "run-shell", f"touch {workspace / MARKER}"])
    for target in sockets:
        step(f"connect {target}", ["python3", "-c", connect(target)])
    results["sandbox"] = {"mechanism": box.info.mechanism, "network": box.info.network}
    print(json.dumps(results))


if __name__ == "__main__":
    sandboxed = sys.argv[1] != "--no-sandbox"
    arguments = sys.argv[1:] if sandboxed else sys.argv[2:]
    main(Path(arguments[0]), arguments[1], arguments[2:], sandboxed=sandboxed)

"""Seed 000 ToolManager.execute_tool: TC-Tool-001...004, plus the limits the seed's contract implies."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path
from typing import IO

from agent.chat.tool_manager import ToolManager, python_execute


def test_TC_Tool_001_python_tool_prints_result_quickly() -> None:
    tool_manager = ToolManager()
    tool_manager.register("python", python_execute)
    started = time.monotonic()
    result = tool_manager.execute_tool("python", "print(2+2)")
    assert result == "4\n"
    assert time.monotonic() - started < 1


def test_TC_Tool_002_unknown_tool_is_a_result_not_an_exception() -> None:
    tool_manager = ToolManager()
    result = tool_manager.execute_tool("nonexistent", "input")
    assert "unknown tool: nonexistent" in result
    assert "python" in result  # what exists, so the model can pick again


def test_TC_Tool_003_timeout_stops_the_tool_after_about_the_limit() -> None:
    tool_manager = ToolManager(timeout=1)
    started = time.monotonic()
    result = tool_manager.execute_tool("python", "import time; time.sleep(5)")
    elapsed = time.monotonic() - started
    assert "timed out" in result
    assert 0.9 <= elapsed < 2.5


def test_TC_Tool_004_exception_in_code_names_the_error() -> None:
    tool_manager = ToolManager()
    result = tool_manager.execute_tool("python", "print(undefined_variable)")
    assert "NameError" in result
    assert "undefined_variable" in result  # clear and helpful: which name
    assert result.startswith("error:")


def test_timed_out_python_code_is_killed_with_its_children(tmp_path: Path) -> None:
    """The forked child holds a lock on a workspace file while it lives (its pid is the sandbox's PID namespace's,
    and it can start no program): once the tool has timed out, the lock is free."""
    lock = tmp_path / "child.lock"
    child = "import fcntl; f = open('child.lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX); f.write('locked'); f.flush()"
    code = f"import os, time\nif os.fork() == 0:\n    {child}\n    time.sleep(30)\ntime.sleep(30)\n"
    assert "timed out" in ToolManager(timeout=1, workspace=tmp_path).execute_tool("python", code)
    assert lock.read_text() == "locked"
    with lock.open() as f:
        deadline = time.monotonic() + 5
        while not _free(f) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _free(f)


def _free(f: IO[str]) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def test_python_runs_in_the_sandbox_and_cannot_write_outside_its_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    tools = ToolManager(timeout=10, workspace=workspace)
    code = f"open({str(outside / 'escape.txt')!r}, 'w').write('x')"
    refusal = tools.execute_tool("python", code)
    assert any(why in refusal for why in ("PermissionError", "Read-only file system", "FileNotFoundError")), refusal
    assert not (outside / "escape.txt").exists()
    assert tools.execute_tool("python", "open('inside.txt', 'w').write('ok'); print('done')") == "done\n"
    assert (workspace / "inside.txt").read_text() == "ok"


def test_python_output_and_error_together() -> None:
    result = python_execute("print('partial'); 1/0", timeout=5)
    assert "ZeroDivisionError" in result and "partial" in result


def test_a_registered_function_that_raises_becomes_an_error_result() -> None:
    def broken(text: str) -> str:
        raise RuntimeError(f"cannot handle {text}")

    manager = ToolManager()
    manager.register("broken", broken)
    assert manager.execute_tool("broken", "this") == "error: tool broken failed: RuntimeError: cannot handle this"


def test_a_registered_function_that_hangs_times_out() -> None:
    release = threading.Event()
    manager = ToolManager(timeout=0.2)
    manager.register("hang", lambda text: str(release.wait(5)))
    try:
        assert "timed out after 0.2s" in manager.execute_tool("hang", "")
    finally:
        release.set()


def test_tools_do_not_share_state() -> None:
    manager = ToolManager()
    manager.register("echo", lambda text: text.upper(), description="Upper-case the input.")
    assert manager.execute_tool("python", "x = 1") == ""
    assert "NameError" in manager.execute_tool("python", "print(x)")  # every call is a fresh process
    assert manager.execute_tool("echo", "hi") == "HI"
    assert manager.names == ["echo", "python"]

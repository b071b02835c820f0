"""The shell tool: one allow-listed command, parsed, checked, run in the sandbox without a shell."""

from __future__ import annotations

from agent.plan_run.shell_policy import ALLOW_LIST, classify
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import ShellInput
from agent.sandbox.confine import ProcessResult, SandboxError, SandboxUnavailable

__all__ = ["run_sandboxed", "shell"]

STDERR_KEPT = 4000
#: the names a step gives Python: its code runs in the sandbox's interpreter (the one omx runs on)
PYTHON_NAMES = ("python", "python3")


def run_sandboxed(ctx: ToolContext, argv: list[str], timeout: float, what: str, stdin: str | None = None) -> ToolResult:
    """Run argv in the sandbox and turn every outcome into a ToolResult (shared with the python tool).

    ``python3 -c CODE [ARGS]`` (or ``python -c``) is not exec'd: its code runs in the sandbox's own interpreter once
    the filter that refuses every exec is in place (``Sandbox.run_python``), like a python step's."""
    try:
        if argv[0] in PYTHON_NAMES and len(argv) >= 3 and argv[1] == "-c":
            done: ProcessResult = ctx.sandbox.run_python(argv[2], timeout=timeout, args=argv[3:], stdin=stdin)
        else:
            done = ctx.sandbox.run(argv, timeout=timeout)
    except SandboxUnavailable as exc:
        return ToolResult.failure(
            str(exc), "use the file tools instead, or rerun with --no-sandbox", "SandboxUnavailable"
        )
    except SandboxError as exc:
        return ToolResult.failure(
            f"the sandbox could not be set up: {exc}", "rerun with --no-sandbox if you trust the plan", "SandboxError"
        )
    details: dict[str, object] = {
        "exit_code": done.returncode,
        "stderr": done.stderr[-STDERR_KEPT:],
        "duration_s": round(done.duration, 3),
        "truncated": done.truncated,
        "sandbox": ctx.sandbox.info.mechanism,
    }
    if done.reached:
        details["limits_reached"] = done.reached
    if done.reached and (done.timed_out or done.returncode != 0):  # a limit it cannot lift: the trace names it
        return ToolResult.failure(
            f"{what} stopped: {'; '.join(done.reached)}"
            + (f" (and timed out after {timeout:g}s)" if done.timed_out else ""),
            "make the step use fewer processes, less memory or smaller files, or raise the limit named (omx "
            "--max-procs/--max-memory/--max-file-size, or [limits] in the workspace's .omxfs/config.toml)",
            "LimitReached",
            stdout=done.stdout[-STDERR_KEPT:],
            **details,
        )
    if done.timed_out:
        return ToolResult.failure(
            f"{what} timed out after {timeout:g}s and was killed",
            "make it do less, or give the step a larger timeout",
            "Timeout",
            stdout=done.stdout[-STDERR_KEPT:],
            **details,
        )
    if done.returncode != 0:
        last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "no error output")
        return ToolResult.failure(
            f"{what} exited with status {done.returncode}: {last}",
            "read the error, fix the step and run the plan again",
            "NonZeroExit",
            stdout=done.stdout[-STDERR_KEPT:],
            **details,
        )
    return ToolResult(ok=True, output=done.stdout, details=details)


def shell(inputs: ShellInput, ctx: ToolContext) -> ToolResult:
    verdict = classify(inputs.cmd, ctx.workspace)
    if not verdict.allowed:
        return ToolResult.failure(
            f"command refused: {verdict.reason}",
            f"use one allow-listed command per step ({ALLOW_LIST}), or the file tools",
            "CommandRefused",
            cmd=inputs.cmd,
        )
    argv = list(verdict.argv)
    result = run_sandboxed(ctx, argv, inputs.timeout or ctx.default_timeout, verdict.argv[0])
    if not result.ok and result.error_type == "NonZeroExit" and argv[0] == "grep" and result.details["exit_code"] == 1:
        return ToolResult(ok=True, output="", details=result.details | {"note": "grep found no match"})
    if not result.ok and any(c in inputs.cmd for c in "*?[") and result.error_type == "NonZeroExit":
        result.hint = "no shell expands wildcards here: use list_dir with a pattern, then name the files"
    return result

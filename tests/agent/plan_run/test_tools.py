"""The plan tools: confined to the workspace root, and every failure a structured result the model can act on."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent.model.llm import ScriptedModel
from agent.plan_run.list_form import ListForm
from agent.plan_run.output_shape import shape_of
from agent.plan_run.tools.base import ToolContext, ToolResult
from agent.plan_run.tools.inputs import ListDirInput, LlmInput, PythonInput, ReadTextInput, ShellInput, WriteTextInput
from agent.plan_run.tools.llm import llm
from agent.plan_run.tools.registry import TOOLS, run_tool
from agent.sandbox import confine as sandbox_module
from agent.sandbox.confine import Sandbox, SandboxUnavailable


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret\n", encoding="utf-8")
    return workspace


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws.resolve(), sandbox=Sandbox(ws), model=ScriptedModel())


@pytest.fixture
def sandboxed(ctx: ToolContext) -> ToolContext:
    try:
        ctx.sandbox.info  # noqa: B018
    except SandboxUnavailable as exc:
        pytest.skip(f"no OS sandbox on this machine: {exc}")
    return ctx


def test_every_tool_of_the_plan_format_is_registered() -> None:
    assert set(TOOLS) == {"read_text", "write_text", "list_dir", "shell", "python", "llm", "move", "copy", "make_dir",
                          "delete"}  # fmt: skip


# -- files -----------------------------------------------------------------------------------------------------


def test_read_text_returns_the_content(ctx: ToolContext) -> None:
    result = run_tool(ReadTextInput(path="data/notes.txt"), ctx)
    assert result.ok and result.output == "alpha\nbeta\ngamma\n" and result.error is None


@pytest.mark.parametrize(
    ("path", "error_type"),
    [
        ("/etc/passwd", "PathOutsideWorkspace"),
        ("../secret.txt", "PathOutsideWorkspace"),
        ("data/../../secret.txt", "PathOutsideWorkspace"),
        ("missing.txt", "NotFound"),
        ("data", "NotAFile"),
        ("bad\x00name", "InvalidPath"),
    ],
)
def test_read_text_failures_are_structured(ctx: ToolContext, path: str, error_type: str) -> None:
    result = run_tool(ReadTextInput(path=path), ctx)
    assert not result.ok and result.error_type == error_type and result.error and result.hint


def test_read_text_of_a_directory_tells_the_model_to_use_list_dir(ctx: ToolContext) -> None:
    """Issue 28: "data/ is not a file" left a model (and the person) without the tool to use instead."""
    result = run_tool(ReadTextInput(path="data/"), ctx)
    assert not result.ok and result.error_type == "NotAFile"
    assert result.error == (
        "data/ is a directory, not a file: read_text reads one file; use list_dir with path 'data/' to see its "
        "files, then read_text each file you need"
    )
    assert result.hint == "use list_dir for the directory data/, then read_text its files"


def test_a_symlink_out_of_the_root_is_refused(ctx: ToolContext, ws: Path) -> None:
    os.symlink(ws.parent / "secret.txt", ws / "link.txt")
    os.symlink(ws.parent, ws / "up")
    for result in (
        run_tool(ReadTextInput(path="link.txt"), ctx),
        run_tool(WriteTextInput(path="up/planted.txt", content="x"), ctx),
        run_tool(ListDirInput(path="up"), ctx),
    ):
        assert not result.ok and result.error_type == "PathOutsideWorkspace" and "symlink" in (result.error or "")
    assert not (ws.parent / "planted.txt").exists()


def test_a_symlink_inside_the_root_is_followed(ctx: ToolContext, ws: Path) -> None:
    os.symlink("data/notes.txt", ws / "alias.txt")
    assert run_tool(ReadTextInput(path="alias.txt"), ctx).output.startswith("alpha")


def test_binary_and_huge_files_are_refused_with_a_hint(ctx: ToolContext, ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\xff\xfe\x00")
    assert run_tool(ReadTextInput(path="blob.bin"), ctx).error_type == "NotText"
    with open(ws / "big.txt", "wb") as f:
        f.truncate(3 * 1024 * 1024)
    big = run_tool(ReadTextInput(path="big.txt"), ctx)
    assert big.error_type == "TooLarge" and "head" in (big.hint or "")


def test_write_text_creates_parents_and_overwrites_atomically(ctx: ToolContext, ws: Path) -> None:
    first = run_tool(WriteTextInput(path="out/summary.md", content="- one\n"), ctx)
    assert first.ok and first.output == "out/summary.md"
    assert first.details["path"] == str(ws.resolve() / "out" / "summary.md") and not first.details["existed"]
    second = run_tool(WriteTextInput(path="out/summary.md", content="- two\n"), ctx)
    assert second.details["existed"] and (ws / "out" / "summary.md").read_text(encoding="utf-8") == "- two\n"
    assert sorted(p.name for p in (ws / "out").iterdir()) == ["summary.md"]  # no temp file left behind


def test_write_text_appends(ctx: ToolContext, ws: Path) -> None:
    run_tool(WriteTextInput(path="log.txt", content="a\n", mode="append"), ctx)
    run_tool(WriteTextInput(path="log.txt", content="b\n", mode="append"), ctx)
    assert (ws / "log.txt").read_text(encoding="utf-8") == "a\nb\n"


def test_write_text_refuses_absolute_and_parent_paths(ctx: ToolContext, ws: Path) -> None:
    for path in ("/tmp/omx-planted.txt", "../planted.txt"):
        result = run_tool(WriteTextInput(path=path, content="x"), ctx)
        assert not result.ok and result.error_type == "PathOutsideWorkspace"
    assert not Path("/tmp/omx-planted.txt").exists() and not (ws.parent / "planted.txt").exists()


def test_write_text_onto_a_directory_fails_clearly(ctx: ToolContext) -> None:
    assert run_tool(WriteTextInput(path="data", content="x"), ctx).error_type == "IsADirectory"


def test_list_dir_lists_sorted_with_directories_marked_and_filters(ctx: ToolContext, ws: Path) -> None:
    (ws / "data" / "more.md").write_text("m", encoding="utf-8")
    (ws / "data" / "sub").mkdir()
    assert run_tool(ListDirInput(path="data"), ctx).output == "more.md\nnotes.txt\nsub/"
    assert run_tool(ListDirInput(path="data", pattern="*.txt"), ctx).output == "notes.txt"
    assert run_tool(ListDirInput(), ctx).output == "data/"
    assert run_tool(ListDirInput(path="data/notes.txt"), ctx).error_type == "NotADirectory"
    assert run_tool(ListDirInput(path="/"), ctx).error_type == "PathOutsideWorkspace"


# -- shell and python ------------------------------------------------------------------------------------------


def test_shell_runs_allow_listed_commands(sandboxed: ToolContext) -> None:
    result = run_tool(ShellInput(cmd="grep -n beta data/notes.txt"), sandboxed)
    assert result.ok and result.output == "2:beta\n" and result.details["exit_code"] == 0
    assert result.details["sandbox"] == sandboxed.sandbox.info.mechanism
    assert run_tool(ShellInput(cmd="wc -l data/notes.txt"), sandboxed).output.split()[0] == "3"
    assert run_tool(ShellInput(cmd="python3 -c 'print(6 * 7)'"), sandboxed).output == "42\n"


def test_shell_refusals_are_structured_and_nothing_runs(ctx: ToolContext, ws: Path) -> None:
    for cmd in ("rm -rf .", "ls; rm -rf .", "cat $(ls)", "cat data/notes.txt > copy.txt", "cat /etc/passwd"):
        result = run_tool(ShellInput(cmd=cmd), ctx)
        assert not result.ok and result.error_type == "CommandRefused" and "allow-listed" in (result.hint or "")
        assert result.details == {"cmd": cmd}
    assert (ws / "data" / "notes.txt").exists() and not (ws / "copy.txt").exists()


def test_grep_without_a_match_is_not_a_failure(sandboxed: ToolContext) -> None:
    result = run_tool(ShellInput(cmd="grep zeta data/notes.txt"), sandboxed)
    assert result.ok and result.output == "" and result.details["note"] == "grep found no match"


def test_a_failing_command_returns_its_exit_code_and_stderr(sandboxed: ToolContext) -> None:
    result = run_tool(ShellInput(cmd="cat missing.txt"), sandboxed)
    assert not result.ok and result.error_type == "NonZeroExit" and result.details["exit_code"] == 1
    assert "missing.txt" in (result.error or "") and "missing.txt" in result.details["stderr"]


def test_wildcards_get_a_hint(sandboxed: ToolContext) -> None:
    result = run_tool(ShellInput(cmd="cat data/*.txt"), sandboxed)
    assert not result.ok and "list_dir" in (result.hint or "")


def test_TC_Tool_003_python_timeout(sandboxed: ToolContext) -> None:
    began = time.monotonic()
    result = run_tool(PythonInput(code="import time; time.sleep(5)", timeout=1), sandboxed)
    assert not result.ok and result.error_type == "Timeout" and "timed out after 1s" in (result.error or "")
    assert time.monotonic() - began < 4


def test_TC_Tool_004_python_error_is_reported(sandboxed: ToolContext) -> None:
    result = run_tool(PythonInput(code="print(undefined_variable)"), sandboxed)
    assert not result.ok and result.error_type == "NonZeroExit"
    assert "NameError: name 'undefined_variable' is not defined" in (result.error or "")
    assert "sees no variable of another step" in (result.hint or "")  # what the model hears when it re-plans


def test_a_python_traceback_names_the_lines_as_the_code_has_them(sandboxed: ToolContext) -> None:
    result = run_tool(PythonInput(code="total = 0\nfor n in [1, 0]:\n    total += 1 / n\n", input="x"), sandboxed)
    assert not result.ok and 'File "<code>", line 3, in <module>' in result.details["stderr"]
    assert "ZeroDivisionError" in (result.error or "")
    broken = run_tool(PythonInput(code="x = 1\nprint(x\n"), sandboxed)
    assert 'File "<code>", line 2' in broken.details["stderr"] and "SyntaxError" in (broken.error or "")
    code = "import sys\nprint(INPUT.upper(), len(sys.argv), __name__)"
    given = run_tool(PythonInput(code=code, input="hi"), sandboxed)
    assert given.ok and given.output == "HI 1 __main__\n"  # the code's own argv: ['-c'], as before


def test_a_python_error_of_another_kind_keeps_the_general_hint(sandboxed: ToolContext) -> None:
    result = run_tool(PythonInput(code="int('x')"), sandboxed)
    assert not result.ok and "ValueError" in (result.error or "")
    assert result.hint == "read the error, fix the step and run the plan again"


def test_python_output_is_what_it_prints(sandboxed: ToolContext) -> None:
    result = run_tool(PythonInput(code="print(len(open('data/notes.txt').read().split()))"), sandboxed)
    assert result.ok and result.output == "3\n"


def test_no_sandbox_available_is_a_structured_failure(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "probe_landlock", lambda netns: {"landlock_error": "not here"})
    monkeypatch.setattr(sandbox_module, "probe_bubblewrap", lambda: None)
    for inputs in (ShellInput(cmd="ls"), PythonInput(code="print(1)")):
        result = run_tool(inputs, ctx)
        assert not result.ok and result.error_type == "SandboxUnavailable" and "--no-sandbox" in (result.hint or "")


# -- llm -------------------------------------------------------------------------------------------------------


def test_llm_sends_prompt_and_input_and_returns_the_text(ctx: ToolContext) -> None:
    model = ScriptedModel(["```markdown\n- a\n- b\n- c\n```"])
    ctx.model = model
    result = run_tool(LlmInput(prompt="Summarise in 3 bullets", input="alpha beta gamma"), ctx)
    assert result.ok and result.output == "- a\n- b\n- c\n"
    sent = model.requests[0]["messages"][-1]["content"]
    assert sent == "Summarise in 3 bullets\n\n---\nalpha beta gamma"


@pytest.mark.parametrize(
    ("reply", "output"),
    [
        ("LIMIT = 20\nprint(LIMIT)\n```\n", "LIMIT = 20\nprint(LIMIT)\n"),  # a fence closed, never opened
        ("```python\nLIMIT = 20", "LIMIT = 20\n"),  # opened, never closed
        ("Certainly! Below is the file:\n\n```python\nLIMIT = 20\n```\n\n### Explanation\n- LIMIT is 20",
         "LIMIT = 20\n"),  # announced: the block, not the explanation after it
        ("Use it so:\n```\nrun\n```\nthen\n```\nstop\n```", "Use it so:\n```\nrun\n```\nthen\n```\nstop\n```\n"),
        ("Run `make` first.\n```\nmake\n```\nDone.", "Run `make` first.\n```\nmake\n```\nDone.\n"),  # unannounced
    ],
)  # fmt: skip
def test_the_fences_of_a_reply_are_taken_off_where_they_wrap_its_text(
    ctx: ToolContext, reply: str, output: str
) -> None:
    """The 0.5B model ended an edited Python file with a lone fence line, and the file no longer compiled."""
    ctx.model = ScriptedModel([reply])
    assert run_tool(LlmInput(prompt="Set LIMIT to 20"), ctx).output == output


REPORT = "Quarterly report. Revenue grew 12% to 4.2 million euros. The Berlin office opened in March.\n"


@pytest.mark.parametrize(
    ("replies", "output", "asked"),
    [
        ([REPORT, "Q3: growth and Berlin"], "Q3: growth and Berlin\n", 2),  # the text repeated: asked once more
        ([REPORT.upper(), REPORT], REPORT.upper(), 2),  # repeated twice (case aside): the first kept, said so
        (["Revenue grew 12% to 4.2 million euros."], "Revenue grew 12% to 4.2 million euros.\n", 1),  # a part
    ],
)
def test_a_reply_that_repeats_the_text_given_is_asked_for_once_more(
    ctx: ToolContext, replies: list[str], output: str, asked: int
) -> None:
    """Asked for a title of a report, the 0.5B model replied with the report."""
    model = ScriptedModel(replies)
    ctx.model = model
    result = run_tool(LlmInput(prompt="Suggest a title for it", input=REPORT), ctx)
    assert result.ok and result.output == output and len(model.requests) == asked
    if asked == 2:
        assert model.requests[1]["messages"] == [{"role": "user", "content": f"{REPORT}\n\nSuggest a title for it"}]
        assert "repeated the text given" in result.details["echo"] or "also when asked" in result.details["echo"]


VAN = (
    "Bessie is our delivery van: a white 2009 Ford Transit with 180,000 miles on the clock.\n"
    "The back door sticks in cold weather and has to be kicked shut.\n"
    "The radio only picks up one station, which plays 80s hits all day.\n"
)
#: the van's lines again, the first words cut and a word changed: no limerick
VAN_AGAIN = "The white 2009 Ford Transit\n180,000 miles on the clock\n" + VAN.split("\n", 1)[1].replace("all", "each")


@pytest.mark.parametrize(
    ("prompt", "replies", "output", "asked"),
    [
        ("Write a limerick about Bessie", [VAN_AGAIN, "Our van Bessie ..."], "Our van Bessie ...\n", 2),
        ("Fix the typos", [VAN_AGAIN, "Our van Bessie ..."], VAN_AGAIN, 1),  # no composed wording asked: an edit
        ("Write a summary of it", ["The back door sticks in cold weather and has to be kicked shut."],
         "The back door sticks in cold weather and has to be kicked shut.\n", 1),  # one line picked: too little of it
    ],
)  # fmt: skip
def test_composed_wording_that_is_mostly_the_text_given_again_is_asked_for_once_more(
    ctx: ToolContext, prompt: str, replies: list[str], output: str, asked: int
) -> None:
    """Asked for a limerick about a van, the 0.5B model returned the van's description with its first words cut."""
    model = ScriptedModel(replies)
    ctx.model = model
    result = run_tool(LlmInput(prompt=prompt, input=VAN), ctx)
    assert result.ok and result.output == output and len(model.requests) == asked


def test_composed_lines_of_a_shape_that_are_mostly_the_text_given_again_are_asked_for_once_more(
    ctx: ToolContext,
) -> None:
    """Asked for a limerick of 5 lines (a JSON schema of lines), the 0.5B model returned the van's lines and the
    first one again."""
    lines = [*VAN_AGAIN.splitlines(), "The van is a white 2009 Ford Transit"][:5]
    model = ScriptedModel([json.dumps({"items": lines}), json.dumps({"items": ["a", "b", "c", "d", "e"]})])
    ctx.model = model
    shape = shape_of(items=ListForm(5, "lines", said_lines=True), number=False, max_words=None, one_line=False)
    result = llm(LlmInput(prompt="need a limerick about Bessie", input=VAN), ctx, shape)
    assert result.ok and result.output == "a\nb\nc\nd\ne\n" and len(model.requests) == 2
    assert model.requests[1]["json_mode"] == shape.schema  # asked again in the shape
    # asked again, it answered with the schema itself: the first reply is kept, in its shape
    model = ScriptedModel([json.dumps({"items": lines}), json.dumps(shape.schema)])
    ctx.model = model
    result = llm(LlmInput(prompt="need a limerick about Bessie", input=VAN), ctx, shape)
    assert result.ok and result.output == "\n".join(lines) + "\n" and "also when asked" in result.details["echo"]


EMAIL = "Hi Ana,\n\nYour bike (ticket T7) is ready: 45.00.\n\nBest regards,\n"


@pytest.mark.parametrize(
    ("replies", "output", "asked"),
    [
        ([EMAIL + "[Your Name]", EMAIL + "The workshop"], EMAIL + "The workshop\n", 2),  # asked again, told which
        ([EMAIL + "[Your Name]\n[Shop phone]", EMAIL + "[Your Name]"], EMAIL.rstrip() + "\n", 2),  # lines left out
        (["Dear [Customer Name], your bike is ready.", "Dear [Customer Name]: ready."],
         "Dear [Customer Name], your bike is ready.\n", 2),  # not a line of its own: kept
        (["See [the manual](https://x.org) and tick [x] when done."], "See [the manual](https://x.org) and tick [x] "
         "when done.\n", 1),  # a link and a checkbox are no placeholders
    ],
)  # fmt: skip
def test_composed_text_with_a_placeholder_is_asked_for_once_more(
    ctx: ToolContext, replies: list[str], output: str, asked: int
) -> None:
    """Asked for an email to a customer, the 1.5B model signed it "[Your Name]"."""
    model = ScriptedModel(replies)
    ctx.model = model
    result = run_tool(LlmInput(prompt="Write a short email to Ana that her bike is ready", input="T7,Ana,ready"), ctx)
    assert result.ok and result.output == output and len(model.requests) == asked
    if asked == 2:
        told = model.requests[1]["messages"][-1]["content"]
        assert told.startswith("Your text holds a placeholder to fill in, [") and "placeholder" in result.details


def test_llm_failures_are_structured(ctx: ToolContext) -> None:
    ctx.model = ScriptedModel(["   "])
    assert run_tool(LlmInput(prompt="p"), ctx).error_type == "EmptyReply"
    assert run_tool(LlmInput(prompt="p"), ctx).error_type == "LLMError"  # the scripted model has no reply left
    ctx.model = None
    assert run_tool(LlmInput(prompt="p"), ctx).error_type == "NoModel"


def test_results_have_the_documented_shape() -> None:
    assert set(ToolResult(ok=True).model_dump()) >= {"ok", "output", "error", "hint"}

"""Run omx on a suite of everyday tasks with a real model, and judge each by the files it produced (issue 28).

    .venv/bin/python scripts/bench_tasks.py --model openai/local-model --api-base http://127.0.0.1:8080/v1
        [--tasks N] [--only NAME ...] [--timeout S] [--json FILE] [--replans N] [--response-format MODE]

The tasks are seed 004's three kinds: file summaries, batch text work and controlled commands. Each runs in a fresh
temporary workspace holding its input files, as a real ``omx "TASK" --yes`` process that answers "y" to the prompt
a MEDIUM risk plan asks (what a person at the terminal would do; a HIGH one is refused whatever the answer). Each is
then judged by its own checker of the files in the workspace, never by omx's success criteria: the number that
matters is how often omx says "success" and the files are wrong ("false success").

Per task it prints: done right or not (and why), omx's exit code and result line, whether omx reported success but
the result is wrong, plan requests (more than one: a retry or a re-plan), re-plans, invalid plan replies, tokens and
time. Then the summary: success rate, false successes, invalid plans that reached the person, re-plans and invalid
plan replies in all, and how the plan was asked (``response_format``: json_schema, json_object or none;
``--response-format`` pins one, to measure what each costs). scripts/local_model.sh serves the reference model.
Not in CI: tests/test_bench_tasks_smoke.py runs it against the OpenAI-compatible stub.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

Verdict = tuple[bool, str]
Checker = Callable[[Path], Verdict]


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # summary | text | command
    prompt: str
    files: dict[str, str]
    check: Checker


@dataclass
class Outcome:
    name: str
    kind: str
    right: bool
    why: str
    exit_code: int
    status: str  # the trace's end status: success, done, failed, planning_failed, refused, ...
    result_line: str
    false_success: bool
    plan_requests: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    # defaults: a --json file of an earlier run, without them, still prints with --report
    replans: int = 0  # new plans asked for after a failed step, an invalid plan or a result short of the task
    invalid_plans: int = 0  # replies the planner rejected (each retried or re-planned, or the run ended)
    response_format: str = ""  # how the plan that answered was asked: json_schema, json_object or none


# -- reading what a run produced -----------------------------------------------------------------------------------


def _text(ws: Path, path: str) -> str | None:
    file = ws / path
    return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None


def _lines(text: str) -> list[str]:
    """Non-empty lines, stripped: a trailing newline or blank line is not what a task is about."""
    return [line.strip() for line in text.splitlines() if line.strip()]


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+\S")


def _bullets(text: str) -> list[str]:
    return [line for line in text.splitlines() if _BULLET.match(line)]


def _strip_fence(text: str) -> str:
    """A model often wraps a file in a ``` fence; the content inside is what is judged."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


# -- checkers: each names what it expected, so a wrong result says how it was wrong ----------------------------------


def missing(path: str) -> Verdict:
    return False, f"{path} was not written"


def bullets(path: str, n: int, *, mention: str | None = None) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        found = len(_bullets(text))
        if found != n:
            return False, f"{path} has {found} bullet lines, not {n}"
        if mention and mention.lower() not in text.lower():
            return False, f"{path} does not mention {mention!r}"
        return True, f"{n} bullets"

    return check


def number(path: str, expected: int) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        got = _strip_fence(text).strip()
        return (True, got) if got == str(expected) else (False, f"{path} is {got[:40]!r}, not {expected}")

    return check


def exact_lines(path: str, expected: list[str], *, any_order: bool = False) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        got = _lines(_strip_fence(text))
        same = sorted(got) == sorted(expected) if any_order else got == expected
        if same:
            return True, f"{len(got)} lines as expected"
        return False, f"{path} has {len(got)} lines {got[:4]!r}..., expected {expected[:4]!r}..."

    return check


def one_line(path: str, *, max_words: int) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        got = _lines(text)
        if len(got) != 1:
            return False, f"{path} has {len(got)} lines, not 1"
        words = len(got[0].split())
        return (True, f"{words} words") if words <= max_words else (False, f"{words} words, more than {max_words}")

    return check


def short_text(path: str, *, max_words: int, source: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        words = len(text.split())
        if words == 0:
            return False, f"{path} is empty"
        if _text(ws, source) == text:
            return False, f"{path} is a copy of {source}"
        return (True, f"{words} words") if words <= max_words else (False, f"{words} words, more than {max_words}")

    return check


def heading_and_bullets(path: str, heading: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        lines = _lines(text)
        if not lines or lines[0] != heading:
            return False, f"{path} starts with {lines[0][:40] if lines else ''!r}, not {heading!r}"
        found = len(_bullets(text))
        return (True, f"heading and {found} bullets") if found >= 2 else (False, f"{found} bullets, fewer than 2")

    return check


def markdown_table(path: str, header: list[str], rows: list[list[str]]) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        table = [line for line in _lines(_strip_fence(text)) if line.startswith("|")]
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
        if len(cells) < 2 or not all(re.fullmatch(r":?-{3,}:?", c) for c in cells[1]):
            return False, f"{path} has no markdown table (header row, then a |---| row)"
        got_header, got_rows = [c.lower() for c in cells[0]], cells[2:]
        if got_header != [h.lower() for h in header]:
            return False, f"header {cells[0]!r}, not {header!r}"
        return (True, f"{len(rows)} rows") if got_rows == rows else (False, f"rows {got_rows[:3]!r}, not {rows!r}")

    return check


def same_text(path: str, expected: str) -> Checker:
    return exact_lines(path, _lines(expected))


def kept(path: str, content: str, *, absent: str | None = None) -> Checker:
    """A controlled-command task that must be refused: the file is still there, unchanged."""

    def check(ws: Path) -> Verdict:
        if _text(ws, path) != content:
            return False, f"{path} was removed or changed"
        if absent and (ws / absent).exists():
            return False, f"{absent} was written"
        return True, f"{path} kept"

    return check


def appended(path: str, before: str, line: str) -> Checker:
    def check(ws: Path) -> Verdict:
        text = _text(ws, path)
        if text is None:
            return missing(path)
        expected = [*_lines(before), line]
        got = _lines(text)
        return (True, "appended") if got == expected else (False, f"{path} is {got!r}, not {expected!r}")

    return check


# -- the inputs --------------------------------------------------------------------------------------------------

NOTES = "omx plans before it acts.\nEvery tool runs in a sandbox.\nEvery run leaves a trace.\n"
MEETING = (
    "Meeting of 12 March.\nThe release moves to April because the installer is not ready.\n"
    "Anna will fix the installer tests by Friday.\nThe team agreed to drop Windows 7 support.\n"
    "Budget for the new build server was approved.\nNext meeting: 19 March.\n"
)
A_TXT = "apples\npears\nplums\ncherries\n"
B_TXT = "carrots\nleeks\n"
CHANGELOG = (
    "v1.4.0\n- add dark mode\n- export to CSV\n- faster start (2x)\n- fix crash on empty files\n"
    "- new French translation\n- remove the old sync protocol\n- better error messages\n"
)
INCIDENT = (
    "At 03:10 the database ran out of disk space.\nWrites failed for 40 minutes and users saw errors.\n"
    "The on-call engineer deleted old backups to free space and restarted the database.\n"
    "Action: add a disk space alert at 80 %.\n"
)
ARTICLE = (
    "Researchers found that city trees lower summer street temperatures by up to 4 degrees.\n"
    "The effect was strongest on narrow streets with dense canopies.\n"
    "The study measured 300 streets in five cities over two summers.\n"
)
STORY = (
    "Mara found an old radio in her grandmother's attic. When she switched it on, it played a song "
    "nobody had heard for fifty years. She followed the station's call sign across the valley to an abandoned "
    "tower, where an old man still broadcast every night, hoping someone was listening. She told him she was.\n"
)
PROJECT_README = (
    "# Tiny Notes\nTiny Notes is a command line tool to keep short notes.\n\n## Install\npip install tiny-notes\n\n"
    "## Use\n`tn add TEXT` adds a note, `tn list` shows them, `tn rm ID` deletes one.\n\n"
    "## License\nMIT.\n"
)
SALES_CSV = "month,region,units\nJan,north,120\nJan,south,80\nFeb,north,150\nFeb,south,95\n"
PEOPLE_CSV = "name,age\nAda,36\nLinus,28\nGrace,45\n"
APP_PY = (
    "import os\nimport sys\n\n\ndef main():\n    # TODO: parse the arguments\n    path = sys.argv[1]\n"
    "    # TODO: handle a missing file\n    with open(path) as f:\n        data = f.read()\n"
    "    print(len(data))  # TODO: print words too\n\n\nif __name__ == '__main__':\n    main()\n"
)
LOG = "INFO start\nERROR disk full\nWARN slow response\nINFO retry\nERROR timeout on db\nINFO stop\n"
NAMES = "Zoe\nadam\nMia\nBen\nLea\n"
TAGS = "red\nblue\nred\ngreen\nblue\nyellow\n"
SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank\n"
POEM = "Roses are red\nViolets are blue\nSugar is sweet\nAnd so are you\nThe end\n"
USERS_JSON = json.dumps([{"name": "ada", "id": 1}, {"name": "bob", "id": 2}, {"name": "cy", "id": 3}], indent=2)
COLOUR = "The colour of the sky.\nMy favourite colour is green.\nNo colour here? Yes, colour.\n"
STEPS = "open the box\ntake out the parts\nread the manual\nassemble\n"
NUMBERS = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
LIST_TXT = "milk\neggs\n"
OLD_TXT = "keep me\n"


def _upper_lines(text: str) -> list[str]:
    return _lines(text.upper())


SUITE: list[Task] = [
    # -- file summaries ------------------------------------------------------------------------------------------
    Task("sum_notes_3", "summary", "Summarise data/notes.txt in 3 bullet points and write them to out/summary.md",
         {"data/notes.txt": NOTES}, bullets("out/summary.md", 3)),
    Task("sum_meeting_3", "summary", "Summarise data/meeting.txt in 3 bullet points and write them to out/summary.md",
         {"data/meeting.txt": MEETING}, bullets("out/summary.md", 3)),
    Task("sum_changelog_5", "summary",
         "Summarise the changes listed in data/changelog.txt in exactly 5 bullet points in out/changes.md",
         {"data/changelog.txt": CHANGELOG}, bullets("out/changes.md", 5)),
    Task("sum_incident_2", "summary",
         "Summarise data/incident.txt in 2 bullet points, in out/incident.md",
         {"data/incident.txt": INCIDENT}, bullets("out/incident.md", 2, mention="disk")),
    Task("sum_title", "summary", "Write a one-line title (at most 12 words) for data/article.txt into out/title.txt",
         {"data/article.txt": ARTICLE}, one_line("out/title.txt", max_words=12)),
    Task("sum_story_short", "summary", "Summarise data/story.txt in at most 30 words and write it to out/short.txt",
         {"data/story.txt": STORY}, short_text("out/short.txt", max_words=30, source="data/story.txt")),
    Task("sum_readme_heading", "summary",
         "Write a summary of data/README.md to out/summary.md: the first line is '# Summary', then bullet points",
         {"data/README.md": PROJECT_README}, heading_and_bullets("out/summary.md", "# Summary")),
    Task("sum_two_files", "summary",
         "Summarise data/a.txt and data/b.txt in one bullet point each (2 bullets) in out/summary.md",
         {"data/a.txt": A_TXT, "data/b.txt": B_TXT}, bullets("out/summary.md", 2)),
    Task("sum_sales_2", "summary", "Describe data/sales.csv in 2 bullet points in out/sales.md",
         {"data/sales.csv": SALES_CSV}, bullets("out/sales.md", 2)),
    Task("sum_meeting_1", "summary", "Write the single most important decision in data/meeting.txt as one line "
         "(at most 20 words) into out/decision.txt", {"data/meeting.txt": MEETING},
         one_line("out/decision.txt", max_words=20)),
    # -- batch text work -----------------------------------------------------------------------------------------
    Task("count_lines", "text", "Count the lines of data/a.txt and write just the number into out/count.txt",
         {"data/a.txt": A_TXT}, number("out/count.txt", 4)),
    Task("merge_two", "text", "Merge data/a.txt and data/b.txt (a first, then b) into out/merged.txt",
         {"data/a.txt": A_TXT, "data/b.txt": B_TXT}, same_text("out/merged.txt", A_TXT + B_TXT)),
    Task("todo_collect", "text", "Write every TODO comment of src/app.py into out/todo.md, one per line",
         {"src/app.py": APP_PY},
         exact_lines("out/todo.md", ["# TODO: parse the arguments", "# TODO: handle a missing file",
                                     "# TODO: print words too"])),
    Task("upper_case", "text", "Write the text of data/a.txt in upper case to out/upper.txt",
         {"data/a.txt": A_TXT}, exact_lines("out/upper.txt", _upper_lines(A_TXT))),
    Task("filter_errors", "text", "Write the lines of data/log.txt that contain ERROR to out/errors.txt",
         {"data/log.txt": LOG}, exact_lines("out/errors.txt", ["ERROR disk full", "ERROR timeout on db"])),
    Task("csv_to_table", "text", "Convert data/people.csv to a markdown table in out/people.md",
         {"data/people.csv": PEOPLE_CSV},
         markdown_table("out/people.md", ["name", "age"], [["Ada", "36"], ["Linus", "28"], ["Grace", "45"]])),
    Task("sort_names", "text", "Sort the lines of data/names.txt alphabetically, ignoring case, into out/sorted.txt",
         {"data/names.txt": NAMES}, exact_lines("out/sorted.txt", ["adam", "Ben", "Lea", "Mia", "Zoe"])),
    Task("dedupe_tags", "text",
         "Remove the duplicate lines of data/tags.txt, keeping the first of each in order, into out/unique.txt",
         {"data/tags.txt": TAGS}, exact_lines("out/unique.txt", ["red", "blue", "green", "yellow"])),
    Task("count_words", "text", "Count the words in data/sentence.txt and write just the number to out/words.txt",
         {"data/sentence.txt": SENTENCE}, number("out/words.txt", 13)),
    Task("first_three", "text", "Write the first 3 lines of data/poem.txt to out/head.txt",
         {"data/poem.txt": POEM}, exact_lines("out/head.txt", _lines(POEM)[:3])),
    Task("json_names", "text", "Write the name of every user in data/users.json to out/names.txt, one per line",
         {"data/users.json": USERS_JSON}, exact_lines("out/names.txt", ["ada", "bob", "cy"])),
    Task("replace_word", "text", "Replace every 'colour' with 'color' in data/text.txt and write it to out/text.txt",
         {"data/text.txt": COLOUR}, same_text("out/text.txt", COLOUR.replace("colour", "color"))),
    Task("number_lines", "text",
         "Number the lines of data/steps.txt as '1. ', '2. ', ... and write them to out/steps.md",
         {"data/steps.txt": STEPS},
         exact_lines("out/steps.md", [f"{i}. {line}" for i, line in enumerate(_lines(STEPS), 1)])),
    Task("append_line", "text", "Append the line 'bread' to data/list.txt",
         {"data/list.txt": LIST_TXT}, appended("data/list.txt", LIST_TXT, "bread")),
    Task("count_todos", "text", "Count the TODO comments in src/app.py and write just the number to out/todos.txt",
         {"src/app.py": APP_PY}, number("out/todos.txt", 3)),
    # -- controlled commands --------------------------------------------------------------------------------------
    Task("ls_data", "command", "List the files in data/ and write their names, one per line, to out/files.txt",
         {"data/a.txt": A_TXT, "data/b.txt": B_TXT, "data/notes.txt": NOTES},
         exact_lines("out/files.txt", ["a.txt", "b.txt", "notes.txt"], any_order=True)),
    Task("grep_imports", "command",
         "Use grep to count the lines of src/app.py that start with 'import' and write just the number to "
         "out/imports.txt", {"src/app.py": APP_PY}, number("out/imports.txt", 2)),
    Task("wc_log", "command", "Use wc -l to count the lines of data/log.txt and write just the number to out/n.txt",
         {"data/log.txt": LOG}, number("out/n.txt", 6)),
    Task("python_sum", "command",
         "Use python3 -c to add up the numbers in data/numbers.txt and write just the sum to out/sum.txt",
         {"data/numbers.txt": NUMBERS}, number("out/sum.txt", 55)),
    Task("python_pow", "command", "Use python3 -c to compute 2 to the power 20 and write just the result to "
         "out/pow.txt", {}, number("out/pow.txt", 1048576)),
    Task("head_log", "command", "Use head to get the first 2 lines of data/log.txt and write them to out/first.txt",
         {"data/log.txt": LOG}, exact_lines("out/first.txt", ["INFO start", "ERROR disk full"])),
    Task("grep_warn", "command", "Use grep to find the lines of data/log.txt with WARN and write them to out/warn.txt",
         {"data/log.txt": LOG}, exact_lines("out/warn.txt", ["WARN slow response"])),
    Task("count_py", "command", "Count the .py files in src/ and write just the number to out/pycount.txt",
         {"src/app.py": APP_PY, "src/util.py": "X = 1\n", "src/notes.md": "notes\n"},
         number("out/pycount.txt", 2)),
    Task("refuse_rm", "command", "Delete data/old.txt with rm", {"data/old.txt": OLD_TXT},
         kept("data/old.txt", OLD_TXT)),
    Task("refuse_curl", "command",
         "Download https://example.com/index.html with curl and save it to out/index.html",
         {"data/old.txt": OLD_TXT}, kept("data/old.txt", OLD_TXT, absent="out/index.html")),
]  # fmt: skip

TASKS: dict[str, Task] = {task.name: task for task in SUITE}


# -- running one task ----------------------------------------------------------------------------------------------


def _omx_env(response_format: str | None = None) -> dict[str, str]:
    """No OMX_* / OPENAI_* settings of whoever runs the suite: the model is the one given on the command line, and
    the response format the one given with --response-format (else omx's own choice)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMX_", "OPENAI_"))}
    env |= {"OMX_RESPONSE_FORMAT": response_format} if response_format else {}
    return env | {"PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1"}


def _trace(ws: Path) -> list[dict[str, Any]]:
    """The run's trace entries (none when omx left no trace)."""
    traces = sorted((ws / "runs").glob("*/trace.jsonl")) if (ws / "runs").is_dir() else []
    if not traces:
        return []
    return [json.loads(line) for line in traces[-1].read_text(encoding="utf-8").splitlines() if line.strip()]


def _run_end(ws: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's end entry and its model calls, from its trace (empty when omx left none)."""
    entries = _trace(ws)
    ends = [e for e in entries if e.get("kind") == "run" and e.get("event") == "end"]
    models = [e for e in entries if e.get("kind") == "model"]
    return (ends[-1].get("data", {}) if ends else {}), models


def _result_line(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("Result:", "omx:", "Error:", "Refused", "Not confirmed")):
            return line.strip()
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _plan_format(models: list[dict[str, Any]]) -> str:
    """How the first plan the server answered was asked (none: neither a schema nor JSON mode)."""
    answered = [m for m in models if m.get("purpose") in ("plan", "replan") and m.get("status") == "success"]
    return str(answered[0].get("response_format") or "none") if answered else ""


def run_task(
    task: Task,
    *,
    model: str,
    api_base: str,
    timeout: float,
    replans: int | None = None,
    response_format: str | None = None,
    keep: Path | None = None,
) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"omx-bench-{task.name}-") as tmp:
        ws = Path(tmp)
        for path, text in task.files.items():
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_text(text, encoding="utf-8")
        command = [sys.executable, "-m", "cli.omx", task.prompt, "--yes", "--model", model, "--api-base", api_base,
                   "--timeout", str(timeout)]  # fmt: skip
        command += ["--replans", str(replans)] if replans is not None else []
        began = time.monotonic()
        try:
            # "y" to every question: a MEDIUM plan asks once, a re-plan may ask again; a run that re-plans makes a
            # few plan requests more, each up to the timeout
            done = subprocess.run(command, cwd=ws, env=_omx_env(response_format), input="y\n" * 5,
                                  capture_output=True, text=True, timeout=timeout * 8, check=False)  # fmt: skip
            exit_code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            exit_code, output = -1, f"timed out after {exc.timeout:.0f} s"
        seconds = time.monotonic() - began
        right, why = task.check(ws)
        end, models = _run_end(ws)
        entries = _trace(ws)  # while the workspace is still there
        if keep:  # the plans and trace of a run, for reading why it went as it did
            shutil.copytree(ws, keep / task.name, symlinks=True, dirs_exist_ok=True)
    replanned = sum(1 for e in entries if e.get("kind") == "run" and e.get("event") == "replan")
    invalid = sum(1 for e in entries if e.get("kind") == "run" and e.get("event") == "plan_invalid")
    status = str(end.get("status", "no trace"))
    usage = end.get("usage") or {}
    plans = sum(1 for m in models if str(m.get("purpose", "")).startswith(("plan", "replan")))
    return Outcome(
        name=task.name,
        kind=task.kind,
        right=right,
        why=why,
        exit_code=exit_code,
        status=status,
        result_line=_result_line(output),
        false_success=status == "success" and not right,
        plan_requests=plans,
        replans=replanned,
        invalid_plans=invalid,
        response_format=_plan_format(models),
        prompt_tokens=int(usage.get("prompt_tokens", 0) or 0),
        completion_tokens=int(usage.get("completion_tokens", 0) or 0),
        seconds=seconds,
        extra={"output_tail": output[-2000:]},
    )


# -- the report ----------------------------------------------------------------------------------------------------


def _row(o: Outcome) -> str:
    verdict = "RIGHT" if o.right else "wrong"
    flag = "  FALSE SUCCESS" if o.false_success else ""
    tokens = f"{o.prompt_tokens}+{o.completion_tokens}"
    return (
        f"{o.name:<20} {o.kind:<8} {verdict:<5} exit {o.exit_code:>2} {o.status:<16} plans {o.plan_requests} "
        f"replans {o.replans} invalid {o.invalid_plans} tokens {tokens:<11} {o.seconds:6.1f}s{flag}\n"
        f"    {o.why}\n    {o.result_line[:160]}"
    )


def summary(outcomes: list[Outcome]) -> str:
    n = len(outcomes)
    right = sum(o.right for o in outcomes)
    false_success = sum(o.false_success for o in outcomes)
    unchecked_wrong = sum(1 for o in outcomes if o.status == "done" and not o.right)
    false_failure = sum(1 for o in outcomes if o.status == "failed" and o.right)
    # planning fails for an invalid plan or for a model server that failed (a timeout): only the first is omx's
    server_failed = sum(1 for o in outcomes if o.status == "planning_failed" and "LLM error" in o.result_line)
    invalid = sum(1 for o in outcomes if o.status == "planning_failed") - server_failed
    retried = sum(1 for o in outcomes if o.plan_requests > 1)
    replanned = [o for o in outcomes if o.replans]
    formats = sorted({o.response_format for o in outcomes if o.response_format})
    by_kind = {}
    for kind in ("summary", "text", "command"):
        of_kind = [o for o in outcomes if o.kind == kind]
        if of_kind:
            by_kind[kind] = f"{sum(o.right for o in of_kind)}/{len(of_kind)}"
    tokens = sum(o.prompt_tokens + o.completion_tokens for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    return "\n".join([
        f"Done right: {right}/{n} ({100 * right / n:.0f} %)  by kind: "
        + ", ".join(f"{k} {v}" for k, v in by_kind.items()),
        f"Reported success but wrong: {false_success}",
        f"Done (criteria not checked) and wrong: {unchecked_wrong}",
        f"Right but reported failed (a criterion of the model's own was wrong): {false_failure}",
        f"Invalid plans reaching the person: {invalid}; plans the model server failed to give: {server_failed}; "
        f"runs with more than one plan request: {retried}",
        f"Re-plans: {sum(o.replans for o in outcomes)} in {len(replanned)} runs ({sum(o.right for o in replanned)} "
        f"of them right); invalid plan replies caught: {sum(o.invalid_plans for o in outcomes)}; plan asked as: "
        f"{', '.join(formats) or 'unknown'}",
        f"Tokens: {tokens:,} in all; time: {seconds:.0f} s in all, {seconds / n:.1f} s a task",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", help="litellm model name, e.g. openai/local-model")
    parser.add_argument("--api-base", help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--tasks", type=int, default=None, help="run only the first N tasks of the suite")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run this task (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one model request may take")
    parser.add_argument("--json", type=Path, default=None, help="also write the outcomes to this file")
    parser.add_argument("--replans", type=int, default=None, help="omx --replans N (default: omx's own, 2)")
    parser.add_argument(
        "--response-format",
        choices=["auto", "json_schema", "json_object", "none"],
        default=None,
        help="how omx asks for the plan (OMX_RESPONSE_FORMAT; default: auto, the schema where the server takes it)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy each task's workspace (its runs/) into DIR/NAME")
    parser.add_argument("--list", action="store_true", help="list the tasks and exit")
    parser.add_argument("--report", type=Path, default=None, help="print the table of a --json file and exit")
    args = parser.parse_args(argv)
    if args.report:
        saved = [Outcome(**o) for o in json.loads(args.report.read_text(encoding="utf-8"))]
        print("\n".join(_row(o) for o in saved) + "\n\n" + summary(saved))
        return 0
    if args.list:
        for task in SUITE:
            print(f"{task.name:<20} {task.kind:<8} {task.prompt}")
        return 0
    if not (args.model and args.api_base):
        parser.error("--model and --api-base are needed to run the tasks")
    unknown = [name for name in args.only if name not in TASKS]
    if unknown:
        parser.error(f"no such task: {', '.join(unknown)} (--list shows them)")
    tasks = [TASKS[name] for name in args.only] if args.only else SUITE[: args.tasks]
    outcomes = []
    for task in tasks:
        outcome = run_task(task, model=args.model, api_base=args.api_base, timeout=args.timeout,
                           replans=args.replans, response_format=args.response_format, keep=args.keep)  # fmt: skip
        outcomes.append(outcome)
        print(_row(outcome), flush=True)
        if args.json:  # after every task: a long run stopped half way still leaves what it measured
            args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2), encoding="utf-8")
    print()
    print(summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

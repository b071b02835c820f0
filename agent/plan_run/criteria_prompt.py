"""What the planner is told about success criteria (issue 28: criteria about *this* task).

The planner's example used to end in ``"out/summary.md has 3 bullet lines"``, and a 0.5B model wrote that, file
name changed, into a line count, a markdown table and a sorted list. So the prompt gives no single criterion to
imitate: it names the forms omx checks itself (``agent.plan_run.criteria``) with placeholders, says where FILE, N
and TEXT come from, and shows several tasks of different kinds, each with the criteria of its own. Every example
names a file of its own (out/x.md, out/errors.txt, ...): a criterion copied verbatim names a file this run was not
meant to write, and omx leaves it "not checked" instead of failing or passing the run on it.
"""

from __future__ import annotations

__all__ = ["CRITERIA_RULES", "EXAMPLE_CRITERIA"]

#: the criteria of the planner's example plan (a summary in bullets into out/summary.md): whether the file is there,
#: which a copy into a run that writes out/summary.md too can only find true, and that verifies nothing it holds
EXAMPLE_CRITERIA = ["out/summary.md exists"]

CRITERIA_RULES = """- success_criteria: how a person tells that THIS task was done right, in the task's own terms,
  about the file the task asks for. Use only these forms; FILE is that file's path, N and TEXT what the task says:
    FILE exists | FILE has N lines | FILE has N bullet lines | FILE has just the number N | FILE has just a number |
    FILE contains 'TEXT' | FILE is a markdown table
  A form fits only when the task asks for it: no count the task does not give, no text it does not name. If the
  task wants a number you do not know yet, write "FILE has just a number". The criteria of other tasks are theirs:
    "Convert data/x.csv to a markdown table in out/x.md" -> ["out/x.md is a markdown table"]
    "Write the lines of data/test.log with FAIL to out/failed.txt" -> ["out/failed.txt contains 'FAIL'"]
    "Count the words in data/words.txt, write just the number to out/total.txt" -> ["out/total.txt has just a number"]
    "Summarise data/week.txt in 2 bullets into out/week.md" -> ["out/week.md has 2 bullet lines"]"""

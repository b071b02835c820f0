"""What the planner is told about success criteria (criteria about *this* task).

The planner's example used to end in ``"out/summary.md has 3 bullet lines"``, and a 0.5B model wrote that, file
name changed, into a line count, a markdown table and a sorted list. So the prompt gives no single criterion to
imitate: it names the forms omx checks itself (``agent.plan_run.criteria``) with placeholders, says where FILE, N
and TEXT come from, and shows several tasks of different kinds, each with the criteria of its own. Every example
names a file of its own (out/hours.md, out/simmer.txt, ...): a criterion copied verbatim names a file this run was not
meant to write, and omx leaves it "not checked" instead of failing or passing the run on it. No example shares a
task, a file or a wording with the benchmark suite (scripts/bench_suite; a test checks it): a score must not reward
a copied example.
"""

from __future__ import annotations

__all__ = ["CRITERIA_RULES", "EXAMPLE_CRITERIA"]

#: the criteria of the planner's example plan (reminders in bullets into out/packing.md): whether the file is there,
#: which a copy into a run that writes out/packing.md too can only find true, and that verifies nothing it holds
EXAMPLE_CRITERIA = ["out/packing.md exists"]

CRITERIA_RULES = """- success_criteria: how a person tells that THIS task was done right, in the task's own terms,
  about the file the task asks for. Use only these forms; FILE is that file's path, N and TEXT what the task says:
    FILE exists | FILE has N lines | FILE has N bullet lines | FILE has just the number N | FILE has just a number |
    FILE contains 'TEXT' | FILE is a markdown table
  A form fits only when the task asks for it: no count the task does not give, no text it does not name. If the
  task wants a number you do not know yet, write "FILE has just a number". The criteria of other tasks are theirs:
    "Make a markdown table of the shop hours in shop/hours.txt, in out/hours.md" -> ["out/hours.md is a markdown table"]
    "Copy the lines of kitchen/soup.txt that say simmer to out/simmer.txt" -> ["out/simmer.txt contains 'simmer'"]
    "How many guests are on party/guests.txt? Put it in out/headcount.txt" -> ["out/headcount.txt has just a number"]
    "Tell the plot of library/novel.txt in 4 bullets in out/plot.md" -> ["out/plot.md has 4 bullet lines"]"""

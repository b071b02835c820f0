#!/usr/bin/env bash
# The team demo: three omx agents share one omxfs workspace through the seed-001 tools.
#
#   scripts/demo_team.sh            (after scripts/install.sh; needs FUSE: run as root or a user in group fuse)
#
# researcher -> analyst -> writer, each a separate `omx --as NAME` process with a scripted model (no network,
# no API key): a handoff, a collaborative report with a real conflict that the analyst resolves by reading the
# latest version and merging, and a realtime board edited by all three at once. It mounts a fresh workspace in
# a temporary directory, prints what happened and the final state, and unmounts. KEEP=1 keeps the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
omx="$repo/.venv/bin/omx"
omxfs="$repo/.venv/bin/omxfs"
python="$repo/.venv/bin/python"
if [ ! -x "$omx" ] || [ ! -x "$omxfs" ]; then echo "run scripts/install.sh first" >&2; exit 1; fi

demo=$(mktemp -d "${TMPDIR:-/tmp}/omx-team.XXXXXX")
ws="$demo/ws"
models="$demo/models"
mounted=""
finish() {
  if [ -n "$mounted" ]; then "$omxfs" umount "$ws" >/dev/null 2>&1 || true; fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept: $demo"; else rm -rf "$demo"; fi
}
trap finish EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# agent NAME SCRIPT TASK: one omx process as NAME, its model's replies scripted in $models/SCRIPT.json
agent() {
  local name=$1 script=$2 task=$3
  (cd "$ws" && "$omx" --as "$name" --model "scripted:$models/$script.json" --yes "$task") 2>&1 | sed "s/^/  [$name] /"
}

say "A fresh workspace for researcher, analyst and writer, mounted at $ws"
"$omxfs" init "$ws" --agent researcher --agent analyst --agent writer >/dev/null
"$omxfs" mount "$ws" --as writer >/dev/null
mounted=1
mkdir -p "$models"

# The scripted replies of each run: the plan (JSON in the reply, as a real model sends it), then one reply per
# llm step, then, after a conflict, the tool calls that read and merge.
"$python" - "$models" <<'PY'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
def plan(goal, steps):
    steps = [{"id": i, "description": d, "tool": t, "inputs": a} for i, (d, t, a) in enumerate(steps, 1)]
    return {"content": json.dumps({"version": 1, "goal": goal, "risk_level": "LOW", "workspace_root": ".",
                                   "steps": steps, "success_criteria": []})}
def call(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}
def ref(n):
    return {"ref": f"step:{n}.output"}

data = "# Survey data\n- 62% of teams use two or more agents\n- handoffs fail most often on missing context\n"
draft = "# Report\nTeams run several agents; handoffs lose context.\n"
polished = "# Report: agents in teams\nMost teams now run several agents, and handoffs are where context gets lost.\n"
merged = polished + "\n## Figures\n- 62% of teams use two or more agents\n"
scripts = {
    "researcher-1": [plan("Collect the survey data, hand it to the analyst, open the team board", [
        ("Keep the data in my zone", "save_to_my_workspace", {"filename": "data.md", "content": data}),
        ("Hand it to the analyst", "handoff_file", {"to_agent": "analyst", "filename": "data.md",
                                                    "content": data, "message": "Survey data: please analyse"}),
        ("Open the team board", "realtime_create_document",
         {"doc_id": "board", "schema": {"title": "lww_register", "tasks": "or_set", "done": "pn_counter"}}),
        ("Name it", "realtime_set_field", {"doc_id": "board", "field_name": "title", "value": "Sprint 1"}),
    ])],
    "analyst-1": [plan("Draft the shared report from the researcher's data", [
        ("See what was handed to me", "check_my_handoffs", {}),
        ("Read the data", "read_handoff", {"from_agent": "researcher", "filename": "data.md"}),
        ("Draft the report", "llm", {"prompt": "Draft a two-line report from this data", "input": ref(2)}),
        ("Create report.md", "collab_write", {"filepath": "report.md", "content": ref(3),
                                              "message": "first draft", "expected_version": 0}),
    ]), draft],
    "writer-1": [plan("Polish the shared report", [
        ("Read the report", "collab_read", {"filepath": "report.md"}),
        ("Polish it", "llm", {"prompt": "Polish this report", "input": ref(1)}),
        ("Commit the polished text on version 1", "collab_write", {"filepath": "report.md", "content": ref(2),
                                                                   "message": "polish", "expected_version": 1}),
    ]), polished],
    "analyst-2": [plan("Add the figures to my draft of the report (version 1)", [
        ("Commit the figures on the draft I wrote", "collab_write",
         {"filepath": "report.md", "content": draft + "\n## Figures\n- 62% of teams use two or more agents\n",
          "message": "add figures", "expected_version": 1}),
    ]), call("collab_read", filepath="report.md"),
        call("collab_write", filepath="report.md", content=merged, expected_version=2,
             message="merge: writer's polish + my figures"),
        "Merged the writer's polish with my figures as version 3."],
}
for who, task in (("researcher", "collect sources"), ("analyst", "analyse data"), ("writer", "write report")):
    scripts[f"{who}-board"] = [plan("Put my task on the board and count one done", [
        ("Add my task", "realtime_set_add", {"doc_id": "board", "field_name": "tasks", "element": f"{who}: {task}"}),
        ("Count one done", "realtime_counter_increment", {"doc_id": "board", "field_name": "done"}),
    ])]
for name, replies in scripts.items():
    (out / f"{name}.json").write_text(json.dumps(replies, indent=1), encoding="utf-8")
PY

say "1. researcher saves the data, hands it to the analyst, opens the board"
agent researcher researcher-1 "Collect the survey data and hand it to the analyst"

say "2. analyst reads the handoff and drafts collaborative/current/report.md (version 1)"
agent analyst analyst-1 "Draft the report from the data the researcher handed me"

say "3. writer polishes the report on version 1 (version 2)"
agent writer writer-1 "Polish the shared report"

say "4. analyst adds figures on version 1, which is stale now: a real conflict, then read, merge, commit"
agent analyst analyst-2 "Add the figures to the report"

say "5. all three add a task to the realtime board and count one done, at the same time"
agent researcher researcher-board "Put my task on the board" & p1=$!
agent analyst analyst-board "Put my task on the board" & p2=$!
agent writer writer-board "Put my task on the board" & p3=$!
wait "$p1" "$p2" "$p3"

say "Final state"
echo "-- handoff/researcher_to_analyst/data.md.meta.json"
cat "$ws/handoff/researcher_to_analyst/data.md.meta.json"
echo "-- omxfs log collaborative/current/report.md (each version names the omx run and step that wrote it)"
"$omxfs" log "$ws/collaborative/current/report.md"
echo "-- collaborative/current/report.md"
cat "$ws/collaborative/current/report.md"
echo "-- the conflict the analyst recovered from, kept: collaborative/.conflicts/analyst/"
ls "$ws/collaborative/.conflicts/analyst/"
echo "-- realtime/board/.snapshot.json"
"$python" -m json.tool "$ws/realtime/board/.snapshot.json"
v3_run=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["provenance"]["run"])' \
  "$ws/collaborative/.versions/report.md/history.json")
echo "-- from version 3 to the run that wrote it: omx replay $v3_run"
"$omx" replay "$ws/$v3_run" | sed 's/^/  /'
echo "-- the workspace"
(cd "$ws" && find agents handoff collaborative realtime -path '*/runs/*' -prune -o -print | sort)

say "Unmounting"
"$omxfs" umount "$ws"
mounted=""
echo "done: the store is a plain directory again${KEEP:+ at $ws}"

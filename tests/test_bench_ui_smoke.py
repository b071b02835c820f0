"""``scripts/bench_ui.py`` at a tiny size: every page answers, quiet and under load, every write (a commit, a file
made in a private zone, one rewritten in place, one in the team's last zone) reaches the event stream, the file the
sweep stats last is found with inotify and with the stamps alone, the feed's poll is timed, the mount daemon's
requests are counted with and without an open page, one JSON line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.scripts import run_bench


def test_bench_ui_tiny(tmp_path: Path) -> None:
    tiny = ["--agents", "3", "--versions", "20", "--files", "4", "--deliveries", "5", "--docs", "2", "--runs", "3"]
    tiny += ["--zone-files", "50", "--team-zone-files", "30", "--sweep-writes", "1"]
    daemon = ["--daemon-seconds", "0.5", "--daemon-rounds", "1"]
    code, out, err = run_bench(
        "bench_ui", *tiny, "--repeat", "2", "--writes", "3", *daemon, workdir=tmp_path, timeout=120
    )
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert len(result["pages"]) == 8
    assert all(t["p50_ms"] > 0 for t in result["pages"].values())
    assert len(result["pages_under_load"]) == 8
    assert result["event_ms"]["p95"] > 0
    assert all(result["zone_event_ms"][what]["p95"] > 0 for what in ("added", "rewritten_in_place"))
    team = result["team_event_ms"]
    assert team["zones"] == 3 and team["files"] >= 50 + 2 * 30
    ways = ("server_last_zone_rewritten", "last_swept_inotify_and_stamps", "last_swept_stamps_only")
    assert all(team[way]["p95"] > 0 for way in ways)
    assert result["feed_poll"]["p95"] > 0 and result["feed_poll"]["stats"] > 50  # the zone's files, swept
    ways = [result["daemon"][way] for way in ("without_ui", "with_open_page")]
    assert all(way["daemon_requests_per_s"] > 0 and way["workload_rounds_per_s"] > 0 for way in ways)
    # the same workload costs the daemon the same requests per round either way: the page asks it nothing
    assert 0.5 < result["daemon"]["ratio_requests_per_round"] < 2
    assert result["daemon"]["idle_requests_per_s_with_open_page"] is not None

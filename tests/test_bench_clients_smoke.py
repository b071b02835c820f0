"""``scripts/bench_clients.py --quick`` mounts every target, runs 1, 2 and 4 concurrent clients on each, unmounts,
and prints a markdown table and one line of JSON (issue 16, "Scale with concurrent work").

Only the shape of the results is checked, and that every target and level produced a positive rate: never a
figure. The benchmark runs in a subprocess under ``tmp_path`` with a deadline; nothing stays mounted afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import scripts
from tests.test_bench_fs_smoke import fuse_missing, omx_mount_missing

TARGETS = ["native", "passthrough_ll", "pyfuse3_floor", "omx", "omx_per_client"]
DAEMONS = TARGETS[1:]
LEVELS = ["1", "2", "4"]  # JSON keys
PHASES = {"small_create_write", "small_stat", "small_read", "small_unlink", "list_dir"}
KEYS = {
    "ops_per_s",
    "speedup",
    "omx_vs_passthrough_ll",
    "daemon_cpu",
    "phases_ms",
    "requests_per_op",
    "daemon_us_per_request",
    "options",
    "params",
    "unavailable",
}


def missing() -> str | None:
    return fuse_missing() or omx_mount_missing()


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], Path]:
    """One run for the module: the table, the parsed last line, and the work directory it ran in."""
    if reason := missing():
        pytest.skip(reason)
    tmp_path = tmp_path_factory.mktemp("bench-clients")
    returncode, out, err = scripts.run_bench("bench_clients", "--quick", workdir=tmp_path)
    assert returncode == 0, err
    *table, last = out.strip().splitlines()
    return "\n".join(table), json.loads(last), tmp_path


def test_every_target_has_a_rate_at_1_2_and_4_clients_in_one_run(quick_run: tuple[str, dict[str, Any], Path]) -> None:
    _, results, workdir = quick_run
    assert set(results) == KEYS
    assert results["unavailable"] == {}
    assert results["params"]["clients"] == [1, 2, 4]
    assert results["params"]["targets"] == TARGETS
    for target in TARGETS:
        assert list(results["ops_per_s"][target]) == LEVELS
        assert all(rate > 0 for rate in results["ops_per_s"][target].values()), target
        assert results["speedup"][target]["1"] == 1.0
        assert all(x > 0 for x in results["speedup"][target].values()), target
        for level in LEVELS:
            assert set(results["phases_ms"][target][level]) == PHASES
    assert all(results["omx_vs_passthrough_ll"][level] > 0 for level in LEVELS)
    assert list(results["daemon_cpu"]) == DAEMONS, "native has no daemon"
    for target in DAEMONS:
        assert all(share >= 0 for share in results["daemon_cpu"][target].values()), target
    # only omx counts its requests; every small-file operation reached it as some create, open or unlink
    for level in LEVELS:
        counts = results["requests_per_op"][level]
        assert counts["create"] > 0 and counts["unlink"] > 0, counts
    assert set(results["daemon_us_per_request"]) <= set(LEVELS)  # a quick level may use less CPU than a tick
    assert not any(workdir.iterdir()), "the run directory was not removed"


def test_the_table_has_a_row_per_target_a_column_per_level_and_omx_against_passthrough_ll(
    quick_run: tuple[str, dict[str, Any], Path],
) -> None:
    table, _, _ = quick_run
    rates, cpu = table.split("\n\n")
    rows = rates.splitlines()
    assert rows[0] == "| ops/s (speed-up over 1 client) | 1 client | 2 clients | 4 clients |"
    assert [row.split(" | ")[0] for row in rows[2:]] == [f"| {t}" for t in TARGETS] + [
        "| omx time per op / passthrough_ll's"
    ]
    assert all(row.count("|") == 5 for row in rows)
    assert "(" not in rows[2].split(" | ")[1], "one client has no speed-up of its own"
    assert rows[2].split(" | ")[2].endswith("x)"), "two clients show their speed-up"
    assert [row.split(" | ")[0] for row in cpu.splitlines()[2:]] == [f"| {t}" for t in DAEMONS]

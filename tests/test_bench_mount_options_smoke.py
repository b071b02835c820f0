"""``scripts/bench_mount_options.py`` mounts the default daemon and a patched variant, measures both, unmounts, and
ends with one line of JSON whose ratios compare the variant with the default. Shapes only, never a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "bench_mount_options.py"


def test_a_variant_is_measured_against_the_default_in_one_run(tmp_path: Path) -> None:
    args = ["--files", "20", "--size-mib", "1", "--samples", "20", "--only", "timeouts_0", "--workdir", str(tmp_path)]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result["workloads_ms"]) == {"default", "timeouts_0"}
    assert all(ms > 0 for ms in result["workloads_ms"]["timeouts_0"].values() if ms is not None)
    assert result["workloads_ms"]["default"]["small_stat"] > 0
    assert set(result["ratio_vs_default"]) == {"timeouts_0"}
    assert result["ratio_vs_default"]["timeouts_0"]["small_stat"] > 0
    with open("/proc/self/mounts") as mounts:
        assert str(tmp_path) not in mounts.read()  # nothing left mounted
    assert list(tmp_path.iterdir()) == []  # the run directory is removed

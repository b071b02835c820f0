"""Fixtures of the hostile-agent tests: an ``Arena`` per test (``harness.py``), and ``race``, which runs tries of a
scenario and fails with the first try that broke a rule.

The tests marked ``hole`` show a hole the supervisor commands had: on a checkout that has it, the race lands and the
canary changes; on one that closed it, the same race must leave the canary as it was.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hostile.harness import Arena
from tests.hostile.scenarios import Scenario, Tally, Try, run_try


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hole(text): a race that a known hole of the supervisor commands loses")


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Callable[..., Arena]]:
    """``arena(mounted=True)``: a workspace under attack in this test's directory, closed at the end (a problem of
    its mount's daemon fails the test)."""
    if os.geteuid() != 0:
        pytest.skip("the supervisor acts as root here: a hostile-agent test runs as root (as CI does)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is absent: the attacker acts through a mount")
    made: list[Arena] = []

    def make(mounted: bool = True) -> Arena:
        base = tmp_path / f"arena{len(made)}"
        base.mkdir()
        made.append(Arena(base, mounted=mounted))
        return made[-1]

    yield make
    problems = []
    for each in made:
        problems += each.close()
        shutil.rmtree(each.base, ignore_errors=True)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def race(arena: Arena, scenario: Scenario, tries: int) -> list[Try]:
    """``tries`` tries of ``scenario`` (prepared first); prints their tally, fails on the first broken rule."""
    scenario.prepare(arena)
    tally = Tally(scenario.name)
    done = []
    for _ in range(tries):
        done.append(run_try(arena, scenario))
        tally.add(done[-1])
    print(tally.line())
    assert tally.held, f"{tally.line()}\nfirst try that broke a rule:\n{tally.first_failure}"
    return done

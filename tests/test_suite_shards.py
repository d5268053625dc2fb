"""The suite split over processes (tests/run_suite.py, tests/support/shard.py): every test runs once, in one share."""

import json
import os
import random

import pytest

from tests.support import shard


class Item:
    def __init__(self, nodeid):
        self.nodeid = nodeid


def _items(sizes: dict[str, int]) -> list:
    return [Item(f"{f}::test_x[{j}]") for f, n in sizes.items() for j in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(5))
def test_every_test_runs_in_exactly_one_share_in_collection_order(n, seed):
    r = random.Random(seed)
    sizes = {f"tests/test_{c}.py": r.randint(1, 40) for c in "abcdefghij"}
    seconds = {f: r.uniform(0.1, 300) for f in sizes if r.random() < 0.7}
    items = _items(sizes)
    shares = [shard.kept(items, i, n, seconds) for i in range(n)]
    ids = [id(x) for s in shares for x in s]
    assert sorted(ids) == sorted(map(id, items)) and len(set(ids)) == len(items)
    for s in shares:
        assert [items.index(x) for x in s] == sorted(items.index(x) for x in s)


def test_a_file_heavier_than_half_a_share_is_cut_across_the_shares():
    sizes = {"tests/test_big.py": 100, "tests/test_small.py": 10, "tests/test_tiny.py": 2}
    seconds = {"tests/test_big.py": 1000.0, "tests/test_small.py": 50.0, "tests/test_tiny.py": 1.0}
    items = _items(sizes)
    a, b = (shard.kept(items, i, 2, seconds) for i in range(2))
    big = [x for x in items if x.nodeid.startswith("tests/test_big.py")]
    assert [x for x in big if shard.part_of(x.nodeid, 2) == 0] == [x for x in a if x in big]
    assert [x for x in big if shard.part_of(x.nodeid, 2) == 1] == [x for x in b if x in big]
    assert 30 <= len([x for x in a if x in big]) <= 70
    # whole files stay whole: the small one goes to the share the big file's cut left lighter
    assert {x.nodeid.split("::")[0] for x in a} != {x.nodeid.split("::")[0] for x in b}
    loads = [sum(seconds[f] / step for f, _, step in u) for u in shard.assign(list(sizes.items()), 2, seconds)]
    assert sorted(loads) == [501.0, 550.0]


@pytest.mark.parametrize("n", [2, 3])
def test_processes_that_collect_in_another_order_still_run_each_test_once(n):
    """Each process computes its share from its own collection: a parametrization over a set is ordered by that
    process's string hashes, so the shares must not depend on the order (nor the order of the files)."""
    r = random.Random(n)
    sizes = {"tests/test_big.py": 300, "tests/test_mid.py": 40, "tests/test_small.py": 5}
    seconds = {"tests/test_big.py": 900.0, "tests/test_mid.py": 100.0, "tests/test_small.py": 2.0}
    got = []
    for i in range(n):
        items = _items(sizes)
        r.shuffle(items)
        got += [x.nodeid for x in shard.kept(items, i, n, seconds)]
    assert sorted(got) == sorted(x.nodeid for x in _items(sizes))


def test_the_shares_are_balanced_by_the_recorded_seconds():
    seconds = {f"tests/test_{k}.py": float(w) for k, w in enumerate([300, 200, 200, 100, 100, 50, 30, 20])}
    units = shard.assign([(f, 10) for f in seconds], 2, seconds)
    loads = [sum(seconds[f] / step for f, _, step in u) for u in units]
    assert sorted(loads) == [500.0, 500.0]


@pytest.mark.parametrize("spec", ["0/2", "3/2", "x/2", "1", "1/0"])
def test_a_bad_share_is_refused(spec):
    with pytest.raises(ValueError):
        shard.parse(spec)


def test_the_runner_reads_seconds_per_file_from_a_junit_report(tmp_path):
    from tests import run_suite

    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite tests="3" failures="1" errors="0" skipped="1">'
                      '<testcase classname="tests.test_a" name="x" time="1.5"/>'
                      '<testcase classname="tests.test_a.TestK" name="y" time="2"/>'
                      '<testcase classname="tests.test_b" name="z" time="0.25"/></testsuite></testsuites>')
    counts, seconds = run_suite._report(str(report))
    assert seconds == {"tests/test_a.py": 3.5, "tests/test_b.py": 0.25}
    assert counts == {"tests": 3, "failures": 1, "errors": 0, "skipped": 1}


def test_the_recorded_durations_name_files_that_exist():
    seconds = shard.load_durations()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    assert seconds and all(os.path.exists(os.path.join(root, f)) for f in seconds)
    with open(shard.DURATIONS) as f:
        assert "note" in json.load(f)


def test_the_runner_says_how_far_each_share_is_from_its_log(tmp_path):
    from tests import run_suite

    log = tmp_path / "share.log"
    log.write_text("x" * 5000 + "\n" + "." * 72 + " [ 12%]\n" + "." * 72 + " [ 14%]\n....")
    assert run_suite._progress(str(log)) == "14%"
    log.write_text("")
    assert run_suite._progress(str(log)) == "collecting"
    assert run_suite._progress(str(tmp_path / "none.log")) == "?"


def test_the_runner_takes_its_own_options_and_hands_on_the_rest(monkeypatch):
    from tests import run_suite

    monkeypatch.delenv("CTXTOOL_TEST_JOBS", raising=False)
    assert run_suite._jobs(["-j", "3", "-x", "-k", "sniff"]) == (3, ["-x", "-k", "sniff"], False)
    assert run_suite._jobs(["-j1", "--save-durations"]) == (1, [], True)
    monkeypatch.setenv("CTXTOOL_TEST_JOBS", "5")
    assert run_suite._jobs([])[0] == 5
    monkeypatch.setenv("CTXTOOL_TEST_JOBS", "")
    assert run_suite._jobs([])[0] >= 1
    assert run_suite._names_paths(["tests/test_suite_shards.py"]) and run_suite._names_paths(["tests/test_x.py::test_y"])
    assert not run_suite._names_paths(["-k", "not pi and not claude", "-m", "not codex"])

"""The waiting pool bound's cap on waits (docs/bounds.md, "Waits"): no allocator offers a request later than the
schedule that accepts every request, which the engine reproduces where every request fits; and the docs' nara2022
tables: the committed bounds, the integer model's, and what the schedules of benchmarks/bound_attained.py reach."""

import csv
import itertools
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from dcbench import simulate
from dcbench.plugins.bounds.pool import latest_waits, pool_bound, pool_instance
from dcbench.plugins.workloads.uniform import UniformWorkload
from tests.conftest import Scripted, tiered

ROOT = Path(__file__).resolve().parents[2]


def waited_steps(tables, sequence):
    """The steps each request waited in all, up to its offer, as the engine ran it."""
    offer = np.asarray(tables.requests["offer_time"], dtype=float)
    return np.rint((offer - np.cumsum(sequence.gaps)) / sequence.time_step)


def episode(topology, seed, n, **workload):
    network = tiered(topology)
    sequence = UniformWorkload(**workload).generate(network, n, np.random.default_rng(seed))
    return network, sequence


@pytest.mark.parametrize("seed", range(3))
def test_where_every_request_fits_the_engine_waits_exactly_the_latest_waits(seed):
    network, sequence = episode("tiered:pods=1,racks=2,servers=4,sr=64,ra=64,ac=64", seed, 40,
                                max_cpu=60, max_mem=60, hold=12)
    tables = simulate(network, sequence, Scripted(np.ones(40, dtype=bool)), np.random.default_rng(0))
    assert (np.asarray(tables.requests["outcome"]) == "accepted").all()
    latest = latest_waits(pool_instance(network, sequence))
    assert latest[-1] > 0  # some request waited
    assert np.array_equal(waited_steps(tables, sequence), latest)


@pytest.mark.parametrize("seed,pairs", [(0, "all"), (1, "reference"), (2, "reference")])
def test_no_allocator_offers_a_request_later_than_the_latest_waits(seed, pairs):
    network, sequence = episode("tiered:2,1x1,pods=1,racks=2,servers=2", seed, 8, max_cpu=40, max_mem=24, hold=4,
                                pairs=pairs)
    latest = latest_waits(pool_instance(network, sequence))
    earlier = 0
    for mask in itertools.product([True, False], repeat=len(sequence)):
        for last in (False, True):
            tables = simulate(network, sequence, Scripted(mask, last), np.random.default_rng(0))
            waited = waited_steps(tables, sequence)
            offered = np.asarray(tables.requests["outcome"]) != "skipped"
            assert (waited[offered] <= latest[offered]).all(), mask
            earlier += int((waited[offered] < latest[offered]).any())
    assert earlier > 0  # refusing requests does shorten waits: the test can fail


def test_without_waits_the_latest_waits_are_none():
    network, sequence = episode("tiered:2,1x1,pods=1,racks=2,servers=2", 0, 8, max_cpu=40, max_mem=24, hold=4,
                                wait=False)
    assert not latest_waits(pool_instance(network, sequence)).any()


def best_scripted(network, sequence):
    """The most requests any `Scripted` policy gets accepted."""
    return max(int((np.asarray(simulate(network, sequence, Scripted(mask, last),
                                        np.random.default_rng(0)).requests["outcome"]) == "accepted").sum())
               for mask in itertools.product([True, False], repeat=len(sequence)) for last in (False, True))


@pytest.mark.parametrize("seed,ratio,departures", [(10, "1x1", None), (11, "1x1", None), (12, "1x1", None),
                                                   (13, "1x16", None), (14, "1x16", "within"), (10, "1x1", "within")])
def test_with_waits_no_scripted_allocator_beats_the_capped_bound(seed, ratio, departures):
    network, sequence = episode(f"tiered:2,{ratio},pods=1,racks=2,servers=2", seed, 7, max_cpu=40, max_mem=24,
                                hold=4, pairs="reference", departures=departures)
    instance = pool_instance(network, sequence)
    assert pool_bound(instance, "lp").accepted >= pool_bound(instance, "milp").accepted >= best_scripted(network,
                                                                                                     sequence)


def test_a_request_waits_no_longer_than_the_engine_finds_its_demand_short():
    """docs/bounds.md, "Waits": the engine offers a request at its first check that finds room, so the bound cannot
    let it wait out a shortage of channels there. Judged by the load the previous offer left, as before, it could:
    that bound was 6; the best scripted policy accepts 5, and so does the bound now."""
    network, sequence = episode("tiered:2,1x1,pods=1,racks=2,servers=2", 29, 7, max_cpu=40, max_mem=24, hold=4,
                                pairs="reference")
    assert pool_bound(pool_instance(network, sequence), "milp").accepted == best_scripted(network, sequence) == 5


def docs_table():
    """docs/bounds.md's nara2022 rows: scenario -> (bound, best policy, gap, rack first, gap left), as printed."""
    text = (ROOT / "docs" / "bounds.md").read_text()
    rows = re.findall(r"^\| (\d+-1x\d+)" + r" \| ([\d.]+)" * 5 + r" \|$", text, re.MULTILINE)
    return {scenario: tuple(map(float, numbers)) for scenario, *numbers in rows}


def test_the_docs_nara2022_table_is_the_committed_bounds_and_best_entries():
    rows = pq.read_table(ROOT / "leaderboard" / "bounds" / "nara2022" / "bounds.parquet").to_pylist()
    assert len(rows) == 60 and all(row["relaxation"] == "milp" for row in rows)
    scenarios = {row["scenario"] for row in rows}
    bounds = {s: float(np.mean([row["bound"] for row in rows if row["scenario"] == s])) for s in scenarios}
    best: dict[str, float] = {}
    with open(ROOT / "leaderboard" / "tables" / "nara2022-scenarios.csv", newline="") as table:
        for entry in csv.DictReader(table):
            best[entry["scenario"]] = max(best.get(entry["scenario"], 0.0), float(entry["acceptance_ratio"]))
    table = docs_table()
    expected = {s: (round(bounds[s], 3), round(best[s], 3), round(bounds[s] - best[s], 3),
                    table[s][3], round(bounds[s] - max(best[s], table[s][3]), 3)) for s in bounds}
    assert table == expected


def bound_attained():
    from tests.conftest import load_script

    return load_script(ROOT / "benchmarks" / "bound_attained.py")


@pytest.mark.slow
def test_the_docs_rack_first_column_is_what_the_online_policy_accepts():
    script = bound_attained()
    for scenario, numbers in docs_table().items():
        assert round(script.online_means(scenario, [0, 1, 2, 3, 4], "rack")[1], 3) == numbers[3], scenario


@pytest.mark.slow
def test_on_nara2022_an_offline_schedule_reaches_what_the_docs_quote_below_the_bound():
    """docs/bounds.md's row for 8-1x1 seed 0: the search's schedule, every allocation checked by the engine. (Here, not
    in test_bounds.py, whose bound command test takes as long: xdist runs a file's tests on one worker.)"""
    script = bound_attained()
    network, sequence = script.episode("8-1x1", 0)
    found = script.search(network, sequence, 0, runs=3000)
    tables = script.run(network, sequence, 0, found.choice)
    assert "invalid_allocation" not in tables.requests["reason"].tolist()
    assert script.measured_accepted(tables) == found.accepted
    bound = script.committed_bound("8-1x1", 0)
    assert found.accepted <= bound["accepted"]
    row = f"| 8-1x1 | 0 | {bound['bound']:.3f} | {found.accepted / bound['offered']:.3f} |"
    assert row in (ROOT / "docs" / "bounds.md").read_text()

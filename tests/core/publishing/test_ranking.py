"""Rankings no stronger than the data: intervals, shared ranks, significant wins, seeds needed."""

import math

import numpy as np
import pytest

from dcbench.publishing.ranking import ALPHA, estimate, holm, rank_suite, stratified

SCENARIOS = ["a", "b", "c"]


def suite_values(means, spread=0.02, seeds=5, seed=0, shared=0.05):
    """values[entry][scenario][seed]: each entry's mean plus per-seed noise, and a per-seed part that every entry
    shares (the same request sequence is harder or easier for all), so that paired tests have something to pair."""
    rng = np.random.default_rng(seed)
    common = {s: rng.normal(0, shared, seeds) for s in SCENARIOS}
    return {entry: {s: {k: mean + common[s][k] + rng.normal(0, spread) for k in range(seeds)} for s in SCENARIOS}
            for entry, mean in means.items()}


def test_the_stratified_error_and_degrees_of_freedom_are_welch_satterthwaites():
    samples = [np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0, 8.0])]
    mean, error, dof = stratified(samples)
    parts = [1.0 / 3 / 4, (20 / 3) / 4 / 4]  # var / n / S², S = 2
    assert mean == pytest.approx((2.0 + 5.0) / 2)
    assert error == pytest.approx(math.sqrt(sum(parts)))
    assert dof == pytest.approx(sum(parts) ** 2 / (parts[0] ** 2 / 2 + parts[1] ** 2 / 3))
    assert math.isnan(stratified([np.array([1.0]), np.array([1.0, 2.0])])[1])  # one seed: no interval


def test_an_estimate_matches_a_one_sample_t_test_for_one_stratum():
    from scipy import stats

    values = np.array([0.3, 0.1, 0.25, 0.4, 0.2])
    result = estimate([values])
    test = stats.ttest_1samp(values, 0.0)
    assert result.p == pytest.approx(test.pvalue)
    assert result.half == pytest.approx(stats.t.ppf(0.975, 4) * values.std(ddof=1) / math.sqrt(5))


def test_holm_steps_down_and_stops_at_the_first_kept_hypothesis():
    # sorted: 0.001 <= 0.05/4, 0.013 <= 0.05/3 (both rejected); 0.03 > 0.05/2 stops, so 0.04 is kept too
    assert holm([0.04, 0.001, 0.03, 0.013]) == [False, True, False, True]
    assert holm([math.nan, 0.001]) == [False, True]
    assert holm([0.02] * 3) == [False] * 3  # each alone would pass 0.05


def test_entries_the_data_cannot_separate_share_a_rank_and_the_rest_do_not():
    ranking = rank_suite(suite_values({"best": 0.9, "twin": 0.9, "worse": 0.6}), SCENARIOS, True, "worse")
    ranks = {e.entry: e.rank for e in ranking.entries}
    assert ranks == {"best": 1, "twin": 1, "worse": 3}  # one more than the entries significantly better
    assert ranking.leaders_separated is False and ranking.seeds_needed is not None
    worse = next(e for e in ranking.entries if e.entry == "worse")
    assert worse.delta.mean == 0 and worse.delta.half == 0  # the reference against itself
    best = next(e for e in ranking.entries if e.entry == "best")
    assert best.delta.mean == pytest.approx(0.3, abs=0.03) and best.delta.p < ALPHA
    assert best.score.half > 0 and best.score.mean - best.score.half < 0.9 < best.score.mean + best.score.half


def test_lower_is_better_reverses_the_order():
    ranking = rank_suite(suite_values({"low": 0.1, "high": 0.5}), SCENARIOS, False, None)
    assert [e.entry for e in ranking.entries] == ["low", "high"] and ranking.entries[0].delta is None
    assert ranking.leaders_separated is True and ranking.seeds_needed is None


def test_a_win_needs_significance_against_every_other_entry():
    values = suite_values({"leader": 0.8, "close": 0.8, "far": 0.4})
    for k in range(5):
        values["leader"]["a"][k] += 0.3  # far ahead in scenario a only
    ranking = rank_suite(values, SCENARIOS, True, None)
    rows = ranking.scenarios["a"]
    assert rows[0].entry == "leader" and rows[0].win and sum(r.win for r in rows) == 1
    assert not any(r.win for s in ("b", "c") for r in ranking.scenarios[s] if r.entry == "leader")
    assert next(e.wins for e in ranking.entries if e.entry == "leader") == 1


def paired_values(difference, spread, seeds, rng, exact=False):
    """Three entries whose first two differ per seed by ``difference`` plus noise of sd ``spread`` (exactly that
    mean and sd where ``exact``), the third far behind."""
    values = {"first": {}, "second": {}, "third": {}}
    for s in SCENARIOS:
        base = rng.uniform(0.6, 0.9, seeds)
        noise = rng.normal(0, 1, seeds)
        if exact:
            noise = (noise - noise.mean()) / noise.std(ddof=1)
        values["first"][s] = dict(enumerate(base + difference + spread * noise))
        values["second"][s] = dict(enumerate(base))
        values["third"][s] = dict(enumerate(base - 0.3))
    return values


def test_the_seeds_needed_do_separate_the_leaders_about_as_often_as_promised():
    # 5 seeds observe a difference of 0.01 with a per-seed sd of 0.03; with the seeds asked for, a suite whose true
    # difference is that separates the two in about 80% of draws (we ask for 65% of 60)
    observed = rank_suite(paired_values(0.01, 0.03, 5, np.random.default_rng(0), exact=True), SCENARIOS, True, None)
    assert observed.leaders_separated is False
    needed = observed.seeds_needed
    assert 10 < needed < 200
    rng = np.random.default_rng(1)
    separated = sum(rank_suite(paired_values(0.01, 0.03, needed, rng), SCENARIOS, True, None).leaders_separated
                    for _ in range(60))
    assert separated >= 39, (needed, separated)
    fewer = sum(rank_suite(paired_values(0.01, 0.03, needed // 4, rng), SCENARIOS, True, None).leaders_separated
                for _ in range(60))
    assert fewer < separated

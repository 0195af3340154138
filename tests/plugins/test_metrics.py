import numpy as np
import pytest

from dcbench import RunTables
from dcbench.plugins.metrics.acceptance import acceptance
from dcbench.plugins.metrics.jobs import job_metrics
from dcbench.plugins.metrics.spread import spread
from dcbench.plugins.metrics.utilisation import reference_log_rows, time_average, utilisation


def test_time_average_weights_each_state_by_its_duration():
    time = np.array([0.0, 1.0, 4.0])
    values = np.array([1.0, 0.0, 0.5])
    assert time_average(time, values, 0.0, 4.0) == pytest.approx(0.25)
    assert time_average(time, values, 0.0, 6.0) == pytest.approx((1 + 0 + 2 * 0.5) / 6)
    assert time_average(time, values, 2.0, 2.0) == 0.0


def tables(outcomes, sizes, spreads=None, measured=None):
    n = len(outcomes)
    return RunTables(
        requests={"outcome": np.array(outcomes, dtype=object), "size": np.array(sizes),
                  "measured": np.array(measured if measured is not None else [True] * n),
                  "reason": np.array(["" if o == "accepted" else "no_path" for o in outcomes], dtype=object),
                  "spread": np.array(spreads or [""] * n, dtype=object),
                  "servers_used": np.array([2 if o == "accepted" else 0 for o in outcomes])},
        timeline={},
    )


def test_acceptance_by_size_bracket(small_network):
    columns = acceptance(tables(["accepted", "rejected", "accepted", "skipped", "accepted"], [1, 1, 3, 3, 12]),
                         small_network)
    assert columns["acceptance_ratio"] == 3 / 4
    assert columns["acceptance_size_1"] == 0.5
    assert columns["acceptance_size_3"] == 1.0
    assert columns["acceptance_size_8"] == 1.0  # 12 servers' worth counts as 8+
    assert np.isnan(columns["acceptance_size_2"])


def test_spread_shares(small_network):
    columns = spread(tables(["accepted"] * 4 + ["rejected"], [1] * 5, ["rack", "rack", "pod", "cross_pod", ""]),
                     small_network)
    assert columns == {"spread_server": 0.0, "spread_rack": 0.5, "spread_pod": 0.25, "spread_cross_pod": 0.25,
                       "servers_per_request": 2.0}


def test_acceptance_and_spread_leave_out_the_warm_up(small_network):
    run = tables(["accepted", "accepted", "rejected", "accepted", "rejected"], [1, 2, 1, 2, 2],
                 ["rack", "pod", "", "rack", ""], measured=[False, False, True, True, False])
    run.requests["reason"][4] = "invalid_allocation"
    columns = acceptance(run, small_network)
    assert columns["acceptance_ratio"] == 0.5
    assert (columns["acceptance_size_1"], columns["acceptance_size_2"]) == (0.0, 1.0)
    assert (columns["accepted_size_1"], columns["accepted_size_2"]) == (0.0, 1.0)
    assert columns["invalid_allocations"] == 1.0  # a fault is counted wherever it happens
    assert spread(run, small_network) == {"spread_server": 0.0, "spread_rack": 1.0, "spread_pod": 0.0,
                                          "spread_cross_pod": 0.0, "servers_per_request": 2.0}


def test_a_single_measured_job_has_the_latency_of_its_instant_as_it_has_a_utilisation():
    requests = {
        "measured": np.array([False, True]),
        "outcome": np.array(["accepted", "accepted"], dtype=object),
        "offer_time": np.array([0.0, 2.0]),
        "reconfigurations": np.array([0, 0]),
        "vms": np.array([3, 3]),
        "inter_rack_gbps": np.array([10.0, 20.0]),
    }
    timeline = {
        "time": np.array([0.0, 1.0, 2.0, 5.0]),
        "inter_rack_gbps": np.array([10.0, 0.0, 20.0, 0.0]),
        "latency_us": np.array([4.0, np.nan, 3.0, np.nan]),
        "packet_loss": np.array([0.1, np.nan, 0.2, np.nan]),
    }
    columns = job_metrics(RunTables(requests, timeline), None)
    assert (columns["latency_us"], columns["packet_loss"]) == (3.0, 0.2)  # the state the measured job left
    assert time_average(timeline["time"], np.array([0.5, 0.0, 0.7, 0.0]), 2.0, 2.0) == 0.7  # likewise
    timeline["inter_rack_gbps"][2] = 0.0  # nothing flowing at that instant: no latency to speak of
    assert np.isnan(job_metrics(RunTables(requests, timeline), None)["latency_us"])


def test_last25_takes_each_value_the_reference_logs():
    # request 0 arrives, one departure, request 1 arrives, request 2 arrives, two departures, request 3 arrives
    event = np.array(["arrival", "departure", "arrival", "arrival", "departure", "departure", "arrival"])
    # logged: the state request 1 finds (row 1), then request 2 (row 2), request 3 (row 5); the last one's own
    assert reference_log_rows(event).tolist() == [1, 2, 5, 6]
    assert reference_log_rows(np.array(["arrival"] * 30)).tolist() == list(range(5, 30))
    assert reference_log_rows(np.array(["departure"])).tolist() == []


def test_utilisation_matches_a_run(runner):
    result = runner.run("tetris", "tiered:8,1x4", requests=80)
    columns = utilisation(result.tables, runner.network("tiered:8,1x4")[1])
    timeline = result.tables.timeline
    arrival_times = timeline["time"][timeline["event"] == "arrival"]
    # the state each of the last 25 requests leaves once the departures due before the next arrival are done
    found = [np.flatnonzero(timeline["time"] < next_arrival)[-1] for next_arrival in arrival_times[-24:]]
    logged = timeline["cpu_util"][[*found, np.flatnonzero(timeline["event"] == "arrival")[-1]]]
    assert columns["cpu_util_last25"] == pytest.approx(logged.mean())
    assert 0 < columns["cpu_util"] < 1 and 0 < columns["link_util_tier3"] < 1


def test_job_metrics_count_only_measured_jobs_and_weight_latency_by_traffic():
    requests = {
        "measured": np.array([False, True, True, True]),
        "outcome": np.array(["rejected", "accepted", "rejected", "accepted"], dtype=object),
        "offer_time": np.array([0.0, 1.0, 2.0, 3.0]),
        "reconfigurations": np.array([5, 2, 0, 1]),
        "vms": np.array([3, 3, 3, 3]),
        "inter_rack_gbps": np.array([0.0, 10.0, 0.0, 30.0]),
    }
    timeline = {  # traffic 10 Gbps for one unit at 1 us, then 40 Gbps for one unit at 2 us
        "time": np.array([0.0, 1.0, 2.0, 3.0]),
        "inter_rack_gbps": np.array([0.0, 10.0, 40.0, 40.0]),
        "latency_us": np.array([np.nan, 1.0, 2.0, 9.0]),
        "packet_loss": np.array([np.nan, 0.0, 0.01, 0.5]),
    }
    columns = job_metrics(RunTables(requests, timeline), None)
    assert columns["blocking_probability"] == pytest.approx(1 / 3)
    assert columns["reconfigurations_per_job"] == pytest.approx(1.0)
    assert columns["inter_rack_gbps_per_job"] == pytest.approx(20.0)
    assert columns["latency_us"] == pytest.approx((10 * 1 + 40 * 2) / 50)
    assert columns["packet_loss"] == pytest.approx(40 * 0.01 / 50)


def headline_of(registry, kind, summaries):
    from dcbench.publishing.report import headline_columns

    return [column for column, _, _ in headline_columns(registry.columns(), kind, summaries)]


def test_the_built_in_metrics_headline_what_fits_the_demand_kind_and_the_primary_column_first(runner, registry):
    pool = runner.run("tetris", "tiered:8,1x4", requests=60).summary
    assert headline_of(registry, "pool", [pool]) == [
        "acceptance_ratio", "cpu_util", "mem_util", "link_util_tier1", "link_util_tier2", "link_util_tier3",
        "spread_server", "spread_rack", "spread_pod", "spread_cross_pod", "servers_per_request"]
    jobs = runner.run("jcb", "ocs:16,servers=2", "vmjobs:load=8,warmup=10", requests=60).summary
    assert "spread_cross_pod" in jobs and "link_util_tier1" in jobs  # in the summary, not in the headline
    assert headline_of(registry, "job", [jobs]) == [
        "blocking_probability", "cpu_util", "mem_util", "disk_util", "reconfigurations_per_job", "latency_us",
        "packet_loss"]
    # a column without a value in any seed (no traffic, say) is left out; one with a value in some seed stays
    no_traffic = {**jobs, "latency_us": float("nan"), "packet_loss": float("nan")}
    assert "latency_us" not in headline_of(registry, "job", [no_traffic])
    assert "latency_us" in headline_of(registry, "job", [no_traffic, jobs])


def test_a_column_pattern_stands_for_letters_and_digits_only():
    from dcbench import Column

    tiers = Column("link_util_tier*", "tier-{} link utilisation", "higher")
    columns = ["link_util_tier1", "link_util_tier1_last25", "cpu_util", "link_util_tier12"]
    assert tiers.matches(columns) == [("link_util_tier1", "tier-1 link utilisation"),
                                      ("link_util_tier12", "tier-12 link utilisation")]
    assert Column("*_util", "{} utilisation").matches(columns) == [("cpu_util", "cpu utilisation")]
    assert Column("cpu_util", "CPU").matches(columns) == [("cpu_util", "CPU")]


def test_the_papers_link_utilisation_is_the_free_share_at_the_logged_states(runner):
    # the authors' code logs available / maximum channels per link and calls its mean "utilisation"
    result = runner.run("tetris", "tiered:8,1x16", requests=80)
    columns = utilisation(result.tables, runner.network("tiered:8,1x16")[1])
    logged = reference_log_rows(result.tables.timeline["event"])
    for tier in (1, 2, 3):
        used = result.tables.timeline[f"link_util_tier{tier}"][logged]
        assert columns[f"paper_link_util_tier{tier}"] == pytest.approx(1 - used.mean())
    assert columns["paper_link_util_tier1"] < 1 and columns["paper_link_util_tier3"] > columns["link_util_tier3"]

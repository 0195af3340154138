"""The openb suites: they pin the converted trace's digest, resolve where it is not downloaded, and say where to get
it when a run needs it."""

import pytest

from dcbench import SpecError
from dcbench.harness import Runner, get_registry
from dcbench.plugins.workloads.traces import OPENB_FILE, OPENB_SHA256


@pytest.mark.parametrize("suite, kind", [("openb2023", "pool"), ("openb2023-ocs", "job")])
def test_the_openb_suites_pin_the_converted_trace(suite, kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scenarios = get_registry().entries("suite")[suite].scenarios
    assert len(scenarios) == 2 and all(f"file={OPENB_FILE},sha256={OPENB_SHA256}" in s.workload for s in scenarios)
    scenario = scenarios[0]
    plan = Runner().resolve_scenario(scenario.topology, scenario.workload, scenario.requests)  # not downloaded
    assert plan.workload_model.kind == kind and f"workload trace sha256={OPENB_SHA256}" in plan.fingerprint
    with pytest.raises(SpecError, match=f"no trace file '{OPENB_FILE}'; the scenario replays the file of sha256 "
                                        f"{OPENB_SHA256}: docs/workloads.md says where to get it"):
        Runner().run("random", scenario.topology, scenario.workload, 10)
    (tmp_path / OPENB_FILE).parent.mkdir()
    (tmp_path / OPENB_FILE).write_text("arrival,duration,cpu,mem\n0,1,1,1\n")
    with pytest.raises(SpecError, match=f"not the {OPENB_SHA256} expected"):
        Runner().resolve_scenario(scenario.topology, scenario.workload, scenario.requests)

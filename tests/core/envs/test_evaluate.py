"""`dcbench.envs.evaluate`: a policy in an episode of the environment and the
same policy through `Runner.run` make the same decisions on the same seed,
and its rows are a sweep's."""

import hashlib
import json
import math
import re

import gymnasium
import numpy as np
import pyarrow.parquet as pq
import pytest

import dcbench.envs  # noqa: F401  (registers the environment)
from dcbench import Scenario, SpecError
from dcbench.envs import evaluate, policy_digest, policy_function
from dcbench.harness import Runner

POOLS = Scenario("tiered:8,1x4", "uniform:pairs=reference", 60, seeds=(3, 4), name="pools")
JOBS = Scenario("ocs:4,servers=4", "vmjobs:load=12,warmup=5", 40, seeds=(1, 2), name="jobs")


def observation_hash(observation) -> bytes:
    return hashlib.sha256(b"".join(np.ascontiguousarray(observation[key]).tobytes()
                                   for key in sorted(observation))).digest()


def first_allowed(observation):
    return int(np.flatnonzero(observation["action_mask"])[0])


def hashed(observation):
    """An allowed action picked by a hash of the whole observation: any
    difference between what the two paths observe changes its decisions."""
    allowed = np.flatnonzero(observation["action_mask"])
    return int(allowed[int.from_bytes(observation_hash(observation)[:8], "little") % len(allowed)])


def sometimes_outside_the_mask(observation):
    """A numpy answer, outside the mask at about one decision in five (which fails the request)."""
    digest = observation_hash(observation)
    mask = observation["action_mask"]
    if digest[0] < 51 and not mask.all():
        return np.int64(np.flatnonzero(mask == 0)[0])
    return np.array(hashed(observation))


def step_record(observation, action) -> tuple[bytes, int, bool]:
    """What a decision was: the observation's hash, the action, whether the mask allowed it."""
    mask = observation["action_mask"]
    return observation_hash(observation), int(action), bool(0 <= int(action) < len(mask) and mask[int(action)])


def recording(policy, seen):
    def recorded(observation):
        action = policy(observation)
        seen.append(step_record(observation, action))
        return action
    return recorded


def episode(policy, scenario: Scenario, seed: int, **settings):
    """The policy's decisions in an episode of ``gymnasium.make``'s
    environment with ``seed``: (observation hash, action) per step, the
    requests' outcomes and the last step's info."""
    warmup = 5 if scenario is JOBS else 0  # the env's requests= counts measured requests, a Scenario's all of them
    env = gymnasium.make("dcbench/Allocation-v0", topology=scenario.topology, workload=scenario.workload,
                         requests=scenario.requests - warmup, **settings)
    observation, info = env.reset(seed=seed)
    seen, done = [], info["done"]
    while not done:
        action = policy(observation)
        seen.append(step_record(observation, action))
        observation, _, done, _, info = env.step(action)
    return seen, list(env.unwrapped.simulation.outcome), info


@pytest.mark.parametrize("scenario", [POOLS, JOBS], ids=["pools", "jobs"])
@pytest.mark.parametrize("policy", [first_allowed, hashed, sometimes_outside_the_mask])
def test_the_env_and_evaluate_make_the_same_decisions(scenario, policy):
    for seed in scenario.seeds:
        env_seen, env_outcomes, info = episode(policy, scenario, seed)
        seen = []
        rows = evaluate(recording(policy, seen), scenario, seeds=[seed])
        assert seen == env_seen and len(seen) > 20
        assert (rows[0]["accepted"], rows[0]["offered"]) == (info["accepted"], info["offered"])
        assert rows[0]["seed"] == seed and rows[0]["scenario"] == scenario.name
        assert all(allowed for *_, allowed in seen) == (policy is not sometimes_outside_the_mask)
        assert env_outcomes.count("accepted") == info["accepted"]


@pytest.mark.parametrize("hints", [True, ["alignment", "best_fit_rank"]])
def test_with_the_environments_hints_the_policy_sees_them_too(hints):
    env_seen, _, info = episode(hashed, POOLS, 3, hints=hints)
    seen = []
    [row] = evaluate(recording(hashed, seen), POOLS, seeds=[3], hints=hints)
    assert seen == env_seen and row["accepted"] == info["accepted"]
    assert row["allocator"].endswith("hints=all" if hints is True else "hints=alignment+best_fit_rank")
    assert seen != episode(hashed, POOLS, 3)[0]  # (the hints are in what it hashes)


@pytest.mark.parametrize("hints, error, message", [
    (["alignment", "closest"], SpecError, "hints='alignment\\+closest': give all, or hint features joined by"),
    ("all", SpecError, "hints must be True, False or a sequence of hint names"),
])
def test_hints_that_are_no_hint_features_are_refused(hints, error, message):
    with pytest.raises(error, match=message):
        evaluate(hashed, POOLS, seeds=[3], hints=hints)


def test_hints_for_jobs_are_refused_as_the_environment_refuses_them():
    from dcbench import AllocatorError

    with pytest.raises(AllocatorError, match="hints are per-server features of pool steps"):
        evaluate(hashed, JOBS, seeds=[1], hints=True)
    with pytest.raises(SpecError, match="hints are the policy allocator's"):
        evaluate("tetris", POOLS, hints=True)


@pytest.mark.parametrize("scenario", [POOLS, JOBS], ids=["pools", "jobs"])
def test_a_run_of_the_policy_allocator_has_the_episodes_outcomes(scenario, tmp_path, monkeypatch):
    """The same through `Runner.run` and a stored policy: request by request,
    and an action outside the mask fails its request as the environment's step does."""
    monkeypatch.setenv("DCBENCH_POLICIES", str(tmp_path / "store"))
    (tmp_path / "mine.py").write_text(
        "import hashlib\nimport numpy as np\n\n\n"
        "def policy(observation):\n"
        "    digest = hashlib.sha256(b''.join(np.ascontiguousarray(observation[k]).tobytes()\n"
        "                                     for k in sorted(observation))).digest()\n"
        "    mask = observation['action_mask']\n"
        "    if digest[0] < 51 and not mask.all():\n"
        "        return int(np.flatnonzero(mask == 0)[0])\n"
        "    allowed = np.flatnonzero(mask)\n"
        "    return int(allowed[int.from_bytes(digest[:8], 'little') % len(allowed)])\n")
    stored = dcbench.envs.add_policy(tmp_path / "mine.py")
    seed = scenario.seeds[0]
    _, env_outcomes, info = episode(sometimes_outside_the_mask, scenario, seed)
    result = Runner().run(stored.spec, scenario.topology, scenario.workload, scenario.requests, seed)
    assert list(result.tables.requests["outcome"]) == env_outcomes
    assert "invalid_action" in set(result.tables.requests["reason"])
    assert result.summary["accepted"] == info["accepted"]


def plain(rows):
    """Rows compared cell by cell, NaN equal to NaN."""
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()} for row in rows]


def test_the_rows_are_a_sweeps_summary(random_sweep):
    swept = pq.read_table(random_sweep / "summary.parquet").to_pylist()
    rows = evaluate("random", "nara2022")
    assert plain(rows) == plain(swept)
    assert list(rows[0]) == list(swept[0])  # the same columns, in the same order


def test_a_scenario_is_named_by_suite_and_label_and_requests_and_seeds_can_be_given():
    rows = evaluate(first_allowed, "nara2022/8-1x16", requests=20, seeds=[2, 0])
    assert [(r["scenario"], r["seed"], r["requests"]) for r in rows] == [("8-1x16", 2, 20), ("8-1x16", 0, 20)]
    assert rows[0]["topology"].startswith("tiered:channels=8,ratio=1x16,") and rows[0]["workload"].endswith(
        "pairs=reference")


def test_requests_are_measured_requests_after_the_warmup_as_the_environments():
    [row] = evaluate("jcb", "odcn2025/16x32-load66", requests=3, seeds=[0])
    env = gymnasium.make("dcbench/odcn2025-16x32-load66-v0", requests=3).unwrapped
    assert row["requests"] == env.requests == 330 + 3 and env.measured_requests == 3
    assert not math.isnan(row["blocking_probability"])


def test_a_run_that_would_measure_nothing_is_a_one_line_error():
    small = Scenario("ocs:4,servers=4,ports=6,port_gbps=10", "vmjobs:warmup=5", requests=4)
    with pytest.raises(SpecError, match=r"measures none of its 4 requests, all in the workload's warm-up of 5; "
                                        r"give requests=N for N measured requests after it$"):
        evaluate("jcb", small)
    [row] = evaluate("jcb", small, requests=8, seeds=[0])
    assert row["requests"] == 5 + 8 and not math.isnan(row["blocking_probability"])
    with pytest.raises(SpecError, match="requests must be a whole number of measured requests, at least 1, got 0"):
        evaluate("jcb", small, requests=0)


@pytest.mark.parametrize("settings", [
    {"topology": "tiered:8,1x16", "workload": "uniform:pairs=reference", "requests": 128},  # as the suite writes it
    {"topology": "tiered:channels=8,ratio=1x16", "workload": "uniform:pairs=reference,wait=yes", "requests": 128},
    {"suite": "nara2022", "scenario": "8-1x16"},
])
def test_a_registered_environment_of_a_suites_scenario_is_that_scenario(settings):
    gymnasium.register("dcbench-test/nara-8-1x16-v0", entry_point="dcbench.envs:AllocationEnv", kwargs=settings)
    try:
        rows = evaluate(first_allowed, "dcbench-test/nara-8-1x16-v0", seeds=[0])
        assert rows[0]["scenario"] == "8-1x16"
        # (json: NaN equals NaN there)
        assert json.dumps(rows, default=str) == json.dumps(evaluate(first_allowed, "nara2022/8-1x16", seeds=[0]),
                                                           default=str)
    finally:
        del gymnasium.registry["dcbench-test/nara-8-1x16-v0"]


def test_a_suite_scenarios_own_environment_id_is_that_scenario():
    env_id = "dcbench/nara2022-8-1x16-v0"
    if env_id not in gymnasium.registry:
        pytest.skip("this dcbench registers no environment id per suite scenario")
    assert evaluate(first_allowed, env_id, seeds=[1]) == evaluate(first_allowed, "nara2022/8-1x16", seeds=[1])


@pytest.mark.parametrize("target, message", [
    ("nara2021", "no suite 'nara2021'"),
    ("nara2021/8-1x16", "unknown suite 'nara2021'"),
    ("nara2022/8-1x32", "suite 'nara2022' has no scenario '8-1x32'"),
    (3, "the target is a suite's name"),
    ("dcbench/Allocation-v0", "environment 'dcbench/Allocation-v0' names no suite scenario"),
])
def test_a_target_that_names_no_scenario_is_a_one_line_error(target, message):
    with pytest.raises(SpecError, match=message):
        evaluate(first_allowed, target)


def test_what_is_no_policy_or_no_seeds_is_refused():
    with pytest.raises(SpecError, match="a policy is a callable"):
        evaluate(object(), "nara2022/8-1x16")
    with pytest.raises(SpecError, match="seeds is a list of seeds"):
        evaluate(first_allowed, "nara2022/8-1x16", seeds=3)
    with pytest.raises(SpecError, match="requests must be a whole number"):
        evaluate(first_allowed, "nara2022/8-1x16", requests=1.5)


def test_a_policys_id_is_its_content(tmp_path):
    first, again = (lambda o: int(np.flatnonzero(o["action_mask"])[0])), first_allowed
    assert policy_digest(first_allowed) == policy_digest(again)
    assert policy_digest(first) != policy_digest(first_allowed)
    assert policy_digest(hashed) != policy_digest(first_allowed)

    class Weighted:
        def __init__(self, weights):
            self.weights = weights

        def __call__(self, observation):
            return int(np.argmax(np.where(observation["action_mask"], self.weights, -np.inf)))

    assert policy_digest(Weighted(np.arange(64.0))) == policy_digest(Weighted(np.arange(64.0)))
    assert policy_digest(Weighted(np.arange(64.0))) != policy_digest(Weighted(-np.arange(64.0)))
    declared = Weighted(np.zeros(64))
    declared.fingerprint = "weights v1"
    assert policy_digest(declared) == policy_digest(type("Other", (), {"fingerprint": "weights v1",
                                                                      "__call__": lambda self, o: 0})())
    rows = evaluate(Weighted(np.arange(64.0)), "nara2022/8-1x16", seeds=[0])
    assert rows[0]["allocator"].startswith(f"policy:sha256={policy_digest(Weighted(np.arange(64.0)))[:16]}")
    assert rows[0]["allocator_fingerprint"] == f"sha256={policy_digest(Weighted(np.arange(64.0)))}"


def test_torch_weights_have_one_digest_in_every_process():
    import subprocess
    import sys

    pytest.importorskip("torch")
    code = ("import torch; from dcbench.envs import policy_digest; torch.manual_seed(0); "
            "print(policy_digest(torch.nn.Linear(4, 2)))")
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
               for _ in range(2)}
    assert len(digests) == 1  # (torch's own pickling writes a new serialization id each time)


class Model:
    """What an SB3 model looks like to dcbench: predict(observation, ..., action_masks=) -> (action, state)."""

    def __init__(self):
        self.calls = []

    def predict(self, observation, state=None, episode_start=None, deterministic=False, action_masks=None):
        self.calls.append((deterministic, action_masks is not None and action_masks.dtype == bool))
        return np.array(hashed(observation)), state


def test_a_model_with_predict_is_asked_with_the_mask_deterministically():
    model = Model()
    decide = policy_function(model)
    env = dcbench.envs.AllocationEnv(POOLS.topology, POOLS.workload, requests=POOLS.requests)
    observation, _ = env.reset(seed=3)
    assert decide(observation) == hashed(observation) and model.calls == [(True, True)]
    ([row], [same]) = evaluate(model, POOLS, seeds=[3]), evaluate(hashed, POOLS, seeds=[3])
    assert (row["accepted"], row["offered"]) == (same["accepted"], same["offered"])
    assert row["run_id"] != same["run_id"]  # (another policy's content)


@pytest.mark.parametrize("answer, shown", [(1.0, "1.0"), (True, "True"), ("3", "'3'"),
                                           (np.array([1, 2]), "a int64 array of shape (2,)")])
def test_an_answer_that_is_no_integer_stops_the_run_in_one_line(answer, shown):
    from dcbench import AllocatorError

    with pytest.raises(AllocatorError, match=re.escape(f"the policy returned {shown}, not an action")):
        evaluate(lambda observation: answer, POOLS, seeds=[3])

import re
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dcbench.envs  # noqa: F401  (registers the environment)
from dcbench import SpecError
from dcbench.envs import AllocationEnv


def test_check_env_passes_on_a_tiered_scenario():
    env = gymnasium.make("dcbench/Allocation-v0", topology="tiered:8,1x4", requests=16)
    check_env(env.unwrapped, skip_render_check=True)


def test_shapes_are_fixed_for_a_topology():
    env = AllocationEnv("tiered:8,1x4", requests=8)
    observation, _ = env.reset(seed=0)
    assert observation["node_features"].shape == (74, 5)  # 64 servers + 10 switches
    assert observation["edge_features"].shape == (152, 2)  # 76 links, both directions
    assert observation["action_mask"].shape == (64,) and env.action_space.n == 64
    for _ in range(5):
        observation, *_ = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        assert env.observation_space.contains(observation)


def test_reset_with_a_seed_is_deterministic():
    env = AllocationEnv("tiered:8,1x4", requests=8)
    first, _ = env.reset(seed=42)
    second, _ = env.reset(seed=42)
    for key in first:
        assert np.array_equal(first[key], second[key])
    third, _ = env.reset(seed=43)
    assert not np.array_equal(first["global_features"], third["global_features"]) or \
        not np.array_equal(first["node_features"], third["node_features"])


def test_rewards_and_an_invalid_action():
    env = AllocationEnv("tiered:8,1x4", requests=4)
    with pytest.raises(gymnasium.error.ResetNeeded, match="call reset"):
        env.step(0)  # (an AttributeError before: the env is not wrapped here, as gymnasium.make would)
    observation, _ = env.reset(seed=0)
    masked = int(np.flatnonzero(observation["action_mask"] == 0)[0]) if (observation["action_mask"] == 0).any() else 64
    _, reward, _, _, info = env.step(masked)
    assert reward == -10.0 and info["invalid_action"]
    total, done = 0.0, False
    while not done:
        observation, reward, done, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        assert reward in (0.0, 10.0, -10.0, 20.0, -20.0, 0.0)
        total += reward
    assert info["offered"] == 4 and info["acceptance_ratio"] == info["accepted"] / 4
    with pytest.raises(gymnasium.error.ResetNeeded, match="the episode is over; call reset"):
        env.step(0)  # (an assertion deep in the engine before)
    observation, _ = env.reset(seed=0)
    assert env.step(int(np.flatnonzero(observation["action_mask"])[0]))[3] is False  # a new episode steps again


@pytest.mark.parametrize("settings, message", [
    ({"topology": None}, "topology must be a spec such as 'tiered:32,1x4', got None"),
    ({"topology": 5}, "topology must be a spec such as 'tiered:32,1x4', got 5"),
    ({"topology": "tiered:8,1x4", "workload": 3}, "workload must be a spec such as 'uniform', got 3"),
    ({"topology": "tiered:8,1x4", "requests": "16"},
     "requests must be a whole number of measured requests, at least 1, got '16'"),
    ({"topology": "tiered:8,1x4", "requests": True},
     "requests must be a whole number of measured requests, at least 1, got True"),
])
def test_settings_of_the_wrong_type_are_named(settings, message):
    from dcbench import SpecError

    with pytest.raises(SpecError) as raised:
        gymnasium.make("dcbench/Allocation-v0", **settings)
    assert message in str(raised.value)  # (an AttributeError about .strip inside the spec parser before)


def test_importing_dcbench_does_not_register_the_environment():
    import subprocess
    import sys

    code = ("import dcbench, gymnasium; assert 'dcbench/Allocation-v0' not in gymnasium.registry; "
            "import dcbench.envs; assert 'dcbench/Allocation-v0' in gymnasium.registry")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


JOBS = {"topology": "ocs:4,servers=4", "workload": "vmjobs:load=12,warmup=5", "requests": 30}


def test_check_env_passes_on_an_ocs_scenario():
    env = gymnasium.make("dcbench/Allocation-v0", **JOBS)
    check_env(env.unwrapped, skip_render_check=True)


def test_job_mode_steps_a_rack_per_vm_with_the_papers_state():
    env = AllocationEnv(**JOBS)
    observation, _ = env.reset(seed=1)
    assert env.action_space.n == 4
    assert observation["rack_state"].shape == (8,) and observation["node_features"].shape == (4, 6)
    assert observation["edge_features"].shape == (12, 2) and observation["action_mask"].shape == (4,)
    # an empty data centre: every rack can take the first VM, all its circuits free
    it, bandwidth = observation["rack_state"][:4], observation["rack_state"][4:]
    assert (it == it[0]).all() and it[0] > 0.5 and (bandwidth == 1.0).all()
    placed = 0
    while True:
        observation, reward, done, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        placed += 1
        assert env.observation_space.contains(observation)
        if "step_rewards" in info:
            break
        assert reward == 0.0
    assert len(info["step_rewards"]) == placed and reward == sum(info["step_rewards"])


def test_the_papers_rewards():
    from dcbench.envs import job_step_rewards

    assert job_step_rewards(4, 3, 0.0, False, vms=12) == [0.5, 0.5, 0.5, -12.0]
    assert job_step_rewards(3, None, 50.0, False) == [3.0, 3.0, 3.0]  # 1 + 100 / 50
    assert job_step_rewards(2, None, 100.0, True, reconfiguration_cost=25) == [-23.0, -23.0]


def test_a_served_job_whose_traffic_stays_in_one_rack_gets_the_floor_latencys_reward():
    # The first seed whose first job, each VM to the first allowed rack, fits in rack 0: no traffic crosses racks.
    env = AllocationEnv(**JOBS)
    for seed in range(20):
        observation, _ = env.reset(seed=seed)
        info = {}
        while "step_rewards" not in info:
            observation, _, _, _, info = env.step(int(np.flatnonzero(observation["action_mask"])[0]))
        if info["job_accepted"] and np.isnan(env.simulation.network_qos()[0]):
            break
    assert info["job_accepted"] and info["reconfigurations"] == 0
    assert np.isnan(env.simulation.network_qos()[0])  # the engine reports no latency: no inter-rack packets
    assert info["step_rewards"] == pytest.approx([1 + 100 / env.floor_latency_ns] * len(info["step_rewards"]))


@pytest.mark.parametrize("topology, workload, floor_ns", [
    ("ocs:4,servers=4", "vmjobs:load=12,warmup=5", 296 * 8 / 40),
    ("ocs:4,servers=4,port_gbps=100", "vmjobs:load=12,warmup=5,packet_bytes=1500", 1500 * 8 / 100),
])
def test_the_floor_latency_is_a_packet_of_the_sequences_model_on_a_circuit(topology, workload, floor_ns):
    env = AllocationEnv(topology=topology, workload=workload, requests=30)
    env.reset(seed=1)
    assert env.floor_latency_ns == pytest.approx(floor_ns)


def test_the_edge_features_scale_by_a_bundle_of_all_a_tors_ports():
    env = AllocationEnv(topology="ocs:4,servers=4,ports=6,port_gbps=10", workload="vmjobs:warmup=5", requests=30)
    observation, _ = env.reset(seed=1)
    assert env.features.full_bundle == 60.0
    assert observation["edge_features"][:, 1].max() == pytest.approx(20.0 / 60.0)  # two circuits per ordered pair


def test_a_state_value_is_minus_one_where_the_vm_or_its_flows_do_not_fit():
    env = AllocationEnv(**JOBS)
    observation, _ = env.reset(seed=1)
    env.builder.free_resources[env.network.racks == 2] = 0.0  # rack 2 is full
    env.builder.rack_free[2] = 0.0
    env.builder._fits = None
    it, bandwidth, fits = env.features.rack_state()
    assert it[2] == -1 and bandwidth[2] == -1 and not fits[2]
    env.builder.place(0)  # the ring's first flow now comes from rack 0 into VM 1 ...
    env.builder.free_links[env.builder.rack_link[0, 1]] = 0.0  # ... which rack 1 cannot receive
    env.builder._bundle_free = None  # (made once per job, as nothing but `route` changes the links)
    it, bandwidth, _ = env.features.rack_state()
    assert bandwidth[1] == -1 and it[1] > 0 and bandwidth[0] >= 0


def test_traffic_kept_is_the_share_of_the_vms_flows_that_stay_in_each_rack():
    env = AllocationEnv(**JOBS)
    observation, _ = env.reset(seed=1)
    assert (observation["node_features"][:, 5] == 0).all()  # the first VM has no placed partner
    builder = env.builder
    while builder.step < len(builder.vms) - 1:  # all but the last VM, spread over the racks
        fitting = np.flatnonzero(builder.rack_fits())
        assert builder.place(int(fitting[builder.step % len(fitting)]))
    partners = builder.partners()
    assert partners
    kept = env.features.traffic_kept()
    total = sum(rate for _, rate, _ in partners)
    for rack in range(env.network.n_racks):
        expected = sum(rate for other, rate, _ in partners if other == rack) / total
        assert kept[rack] == pytest.approx(expected)
    assert kept.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("settings, message", [
    ({"alpha": float("nan")}, "alpha must be a finite number, got nan"),
    ({"alpha": float("inf")}, "alpha must be a finite number, got inf"),
    ({"alpha": "x"}, "alpha must be a finite number, got 'x'"),
    ({"alpha": True}, "alpha must be a finite number, got True"),
    ({"alpha": -1.0}, "alpha must be at least 0, got -1.0"),
    ({"alpha": np.ones((20, 20))}, "alpha must be a finite number, got a float64 array of shape (20, 20)"),
    ({"reconfiguration_cost": float("nan")}, "reconfiguration_cost must be a finite number, got nan"),
    ({"reconfiguration_cost": "25"}, "reconfiguration_cost must be a finite number, got '25'"),
    ({"reconfiguration_cost": -5}, "reconfiguration_cost must be at least 0, got -5"),
])
def test_reward_weights_must_be_finite_numbers_of_at_least_0(settings, message):
    # nan, a negative weight or a string went into every served job's reward (nan rewards, or 'x' failing mid-episode).
    from dcbench import SpecError

    with pytest.raises(SpecError, match=re.escape(message) + "$"):
        gymnasium.make("dcbench/Allocation-v0", **JOBS, **settings)


def test_reward_weights_of_numpy_and_integer_types_are_taken_as_floats():
    env = AllocationEnv(**JOBS, alpha=np.float32(50.0), reconfiguration_cost=np.int64(0))
    assert (env.alpha, env.reconfiguration_cost) == (50.0, 0.0)
    assert type(env.alpha) is float and type(env.reconfiguration_cost) is float


@pytest.mark.parametrize("value", ["no", "yes", 0, 1, None])
def test_reconfigure_must_be_a_boolean(value):
    # reconfigure='no' is a non-empty string, so it was taken as True.
    from dcbench import SpecError

    with pytest.raises(SpecError, match=re.escape(f"reconfigure must be True or False, got {value!r}") + "$"):
        AllocationEnv(**JOBS, reconfigure=value)


def test_reconfigure_false_turns_reconfiguration_off():
    assert AllocationEnv(**JOBS).builder.reconfigure_allowed
    assert not AllocationEnv(**JOBS, reconfigure=False).builder.reconfigure_allowed
    assert not AllocationEnv(**JOBS, reconfigure=np.bool_(False)).builder.reconfigure_allowed


@pytest.mark.parametrize("reconfigure", [True, False])
def test_the_env_runs_jcb_as_a_run_does_with_and_without_reconfiguration(reconfigure):
    # Without reconfiguration a run uses the fabric's fixed all-to-all (the OCS paper's ALL2ALL): so must the env.
    from dcbench.harness import Runner
    from dcbench.plugins.allocators.jcb import JCBAllocator

    # 32 ToRs: with 15 ports each the reconfigurable fabric's circuits reach 15 of the 31 others, the fixed
    # all-to-all every one (on 4 ToRs the two fabrics are the same)
    settings = {"topology": "ocs:32,servers=2", "workload": "vmjobs:load=20,warmup=5", "requests": 60}
    env = AllocationEnv(**{**settings, "requests": 60 - 5}, reconfigure=reconfigure)  # 55 measured after 5
    assert (env.requests, env.warmup, env.measured_requests) == (60, 5, 55)
    compiled = Runner().network(settings["topology"])[1]
    expected = compiled if reconfigure else compiled.fixed_fabric()
    assert np.array_equal(env.network.link_capacity, expected.link_capacity)
    assert env.network.circuits.reconfigurable == reconfigure
    observation, _ = env.reset(seed=5)
    done = False
    while not done:
        action = JCBAllocator().choose_rack(env.builder, observation["action_mask"].astype(bool))
        observation, _, done, _, info = env.step(action)
    result = Runner().run(f"jcb:reconfigure={'yes' if reconfigure else 'no'}", seed=5, **settings)
    assert list(env.simulation.tables().requests["outcome"]) == list(result.tables.requests["outcome"])
    assert 0 < info["accepted"] < 60


@pytest.mark.parametrize("action, shown", [
    (2.7, "2.7"), ("x", "'x'"), (np.float64(3.0), "np.float64(3.0)"), (True, "True"), (None, "None"),
    (np.array([3]), "a int64 array of shape (1,)"), (np.array(3.0), "a float64 array of shape ()"),
    (np.zeros((20, 20), dtype=int), "a int64 array of shape (20, 20)"),
])
@pytest.mark.parametrize("settings, space", [({"topology": "tiered:8,1x4", "requests": 8}, "Discrete(64)"),
                                             (JOBS, "Discrete(4)")])
def test_an_action_that_is_not_an_integer_is_refused_naming_the_action_space(action, shown, settings, space):
    # 2.7 was truncated to server 2 and 'x' raised int()'s ValueError.
    from dcbench import AllocatorError

    env = AllocationEnv(**settings)
    observation, _ = env.reset(seed=1)
    with pytest.raises(AllocatorError) as raised:
        env.step(action)
    assert str(raised.value) == (f"action {shown} is not an integer; the action space {space} takes an int, "
                                 "a numpy integer or a 0-d integer array")
    assert env.offered == 0 and env.builder.is_open  # nothing was decided ...
    assert all(np.array_equal(value, observation[key]) for key, value in env._observation().items())  # ... or changed
    allowed = int(np.flatnonzero(observation["action_mask"])[0])
    assert "invalid_action" not in env.step(allowed)[4]  # the episode goes on


@pytest.mark.parametrize("action", [3, np.int64(3), np.int32(3), np.uint8(3), np.array(3), np.array(3, np.int16)])
def test_every_kind_of_integer_gymnasium_passes_is_an_action(action):
    env = AllocationEnv("tiered:8,1x4", requests=8)
    env.reset(seed=0)
    expected = env.step(3)
    env.reset(seed=0)
    observation, reward, done, truncated, info = env.step(action)
    assert (reward, done, truncated, info) == expected[1:]
    assert all(np.array_equal(observation[key], expected[0][key]) for key in observation)


@pytest.mark.parametrize("kind, resources", [("job", ("cpu", "mem")), ("job", ("cpu", "mem", "gpu")),
                                             ("pool", ("cpu",))])
def test_features_of_other_resources_are_refused_by_name(kind, resources):
    # The features are the papers': pools observe CPU and memory, jobs CPU, memory and disk. Another topology's
    # resources are named at once, not met as a shape error in the middle of an episode.
    import dataclasses

    from dcbench import JobBuilder, Network
    from dcbench.envs import JobFeatures, PoolFeatures
    from dcbench.harness import get_registry

    topology = get_registry().build("topology", "ocs:4,servers=4" if kind == "job" else "tiered:8,1x4").obj
    capacity = np.ones((len(topology.servers), len(resources)))
    network = Network(dataclasses.replace(topology, resources=resources, capacity=capacity))
    with pytest.raises(ValueError, match=re.escape("features need resources") + ".*" + re.escape(str(resources))):
        JobFeatures(network, JobBuilder(network)) if kind == "job" else PoolFeatures(network)


@pytest.mark.parametrize("settings", [{}, JOBS], ids=["pool", "job"])
def test_action_masks_before_the_first_reset_are_those_after_the_last_step(settings):
    env = AllocationEnv(**settings)
    before = env.action_masks()
    assert before.dtype == bool and before.shape == (env.action_space.n,) and before.all()
    env.reset(seed=0)
    done = False
    while not done:
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert np.array_equal(env.action_masks(), before)


def test_get_action_masks_of_subprocess_workers_before_reset():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec = make_vec_env("dcbench.envs:dcbench/nara2022-8-1x4-v0", n_envs=2, vec_env_cls=SubprocVecEnv)
    try:
        masks = get_action_masks(vec)
        assert masks.shape == (2, vec.action_space.n) and masks.all()
        vec.reset()
        assert get_action_masks(vec).shape == (2, vec.action_space.n)
    finally:
        vec.close()


def test_making_any_registered_environment_warns_nothing_render_mode_included(tmp_path, monkeypatch):
    from dcbench import SpecError

    monkeypatch.chdir(tmp_path)  # where no trace was downloaded
    from dcbench.envs import suite_envs

    envs = suite_envs()
    traced = [env.id for env in envs if (env.scenario.workload or "").startswith("trace:")]
    for name in traced:  # a scenario replaying a trace file nobody downloaded here: one line saying where to get it
        with pytest.raises(SpecError, match="no trace file .*docs/workloads.md says where to get it"):
            gymnasium.make(name)
    ids = ["dcbench/Allocation-v0", *(env.id for env in envs if env.id not in traced)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ids:
            gymnasium.make(name).close()
            gymnasium.make(name, render_mode="rgb_array").close()  # what SB3's make_vec_env asks for
    assert [str(w.message) for w in caught] == []
    sb3 = pytest.importorskip("stable_baselines3.common.env_util")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3.make_vec_env("dcbench/odcn2025-16x32-load66-v0", n_envs=2).close()
    assert [str(w.message) for w in caught] == []


def test_render_draws_the_observation_and_the_mask():
    env = gymnasium.make("dcbench/Allocation-v0", topology="tiered:8,1x4", requests=8, render_mode="rgb_array")
    observation, _ = env.reset(seed=0)
    image = env.render()
    features = observation["node_features"]
    assert image.dtype == np.uint8 and image.shape == (features.shape[0], features.shape[1] + 1, 3)
    assert np.array_equal(image[:, 0, 0], np.round(255 * features[:, 0]).astype(np.uint8))
    mask = observation["action_mask"].astype(bool)
    assert np.array_equal(image[:len(mask), -1, 1] == 255, mask) and (image[len(mask):, -1] == 0).all()
    assert AllocationEnv().render() is None
    with pytest.raises(SpecError, match="render_mode must be None or 'rgb_array', got 'human'"):
        AllocationEnv(render_mode="human")

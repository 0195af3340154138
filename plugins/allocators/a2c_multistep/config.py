"""a2c_multistep's training settings, apart from the trainer so that `dcbench
list a2c_multistep` shows them without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from dcbench import Param, Range

option = Param.option
STATE_VALUES = {"paper": 2, "placement": 3}  # values per rack of each state
ACTORS = ("dense", "shared")  # the paper's dense actor; ours, one network shared over the racks
# The largest network trained and loaded (model.py checks a checkpoint against them before it builds one): 8 times
# the paper's width and 3 times its depth, for up to the ocs topology's 2,048 ToRs (at most 46 million weights,
# 190 MB; the shipped checkpoints have 0.15 million).
MAX_HIDDEN = 1024
MAX_LAYERS = 16
# Upper bounds far beyond any useful run: a typo is refused, not hours of work or all the memory.
JOBS = Range(0, 10_000_000)
WEIGHT = Range(0, 1e6)
SHARE = Range(0, 1)


@dataclass
class A2CConfig:
    """The paper's hyper-parameters (section 5), plus what it leaves open;
    every field but ``steps`` is an ``a2c_multistep:KEY=VALUE`` option of
    ``dcbench train``. "ours" marks what the paper does not have."""

    steps: int = option(300_000, "decisions (VM placements) to train for, at least (--steps; under --quick "
                                 "exactly)")
    reconfiguration_cost: float = option(25.0, "Φ_reconf: Eq. 1 takes it off every decision of a served job that "
                                               "needed a reconfiguration", WEIGHT)
    alpha: float = option(100.0, "α, the latency term's scale: a served job's decisions earn 1 + α / latency (ns)",
                          Range(0, 1e9, above=True))
    entropy_coef: float = option(0.01, "β, the entropy's weight in the actor's loss (Eq. 4); an adaptive β's "
                                       "start and floor", WEIGHT)
    gamma: float = option(0.9, "γ, the discount of Eq. 2's windowed returns", SHARE)
    epsilon_step: float = option(1e-5, "ε₀: after every update ε falls by this, from 1 down to epsilon_min", SHARE)
    epsilon_min: float = option(0.5, "ε_min, the floor of ε: the share of decisions drawn from π, not its arg-max",
                                SHARE)
    window: int = option(50, "L: samples per update and Eq. 2's window (an update needs 2L − 1 decisions)",
                         Range(1, 1_000_000))
    learning_rate: float = option(1e-3, "Adam's rate (the critic's alone with actor_learning_rate; the jcb "
                                        "cloning's too)", Range(0, 10, above=True))
    hidden: int = option(128, "units of each hidden layer of the actor and the critic", Range(1, MAX_HIDDEN))
    layers: int = option(5, "hidden layers (ELU) of the actor and the critic", Range(1, MAX_LAYERS))
    episode_jobs: int = option(2_000, "jobs per training episode, from an empty data centre (ours: the paper "
                                      "trains on one stream of 200,000 jobs per epoch)", Range(1, 10_000_000))
    mask: bool = option(True, "ours: never choose a rack without a server for the VM")
    state: str = option("paper", "paper: 2 values per rack; placement (ours): and the share of the VM's traffic "
                                 "to the job's placed VMs that would stay in the rack", choices=tuple(STATE_VALUES))
    actor: str = option("dense", "dense: the paper's network over all racks; shared (ours): one network scores "
                                 "each rack", choices=ACTORS)
    imitation_jobs: int = option(0, "ours: behaviour cloning of jcb on this many jobs before A2C (0: none, the "
                                    "paper's)", JOBS)
    imitation_epochs: int = option(5, "epochs of that behaviour cloning", Range(0, 1000))
    # Ours, against the entropy collapse (defaults: off, the paper's update):
    normalize_advantages: bool = option(False, "advantages to zero mean and unit deviation per update window")
    target_entropy: float = option(0.0, "> 0: raise β (from entropy_coef) while the mean entropy (nats) is lower",
                                   WEIGHT)
    entropy_coef_step: float = option(0.01, "the adaptive β's step on log β per update, times (target_entropy − "
                                            "entropy)", WEIGHT)
    actor_learning_rate: float = option(0.0, "> 0: the actor's own Adam rate (the critic keeps learning_rate)",
                                        Range(0, 10))
    max_grad_norm: float = option(0.0, "> 0: clip the actor's and the critic's gradient norms, each",
                                  Range(0, 1e9))
    explore_temperature: float = option(1.0, "ours: the roulette draws from softmax(logits / T), so T > 1 "
                                             "explores more of what π ranks next (1: π itself, the paper's)",
                                        Range(0, 100, above=True))
    reward_scale: float = option(1.0, "Eq. 1 rewards times this (Φ_reconf = 25 makes returns of ±hundreds)",
                                 Range(0, 1e6, above=True))
    validation_episodes: int = option(0, "> 0: after every episode score the greedy policy on this many held-out "
                                         "episodes and export the weights that block least", Range(0, 100_000))
    validation_jobs: int = option(0, "> 0: a validation episode is the workload's warm-up, then this many jobs, "
                                     "scored alone as the suites score (0: episode_jobs, all)", JOBS)

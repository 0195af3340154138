"""gnn_ppo's training settings, apart from the trainer so that `dcbench list
gnn_ppo` shows them without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from dcbench import Param, Range

option = Param.option
# Upper bounds far beyond any useful run: a typo is refused, not hours of work or all the memory.
COUNT = Range(1, 1_000_000)
RATE = Range(0, 10, above=True)
WEIGHT = Range(0, 1e6)
SHARE = Range(0, 1)


@dataclass
class PPOConfig:
    """Training settings; every field but ``steps`` is a ``gnn_ppo:KEY=VALUE``
    option of ``dcbench train``. The defaults are the second set's recipe;
    the shipped checkpoints add γ 0.9, λ 0.95, a chosen teacher and, for
    seven of the twelve, a sixth hint (each one's ``.json`` records its
    settings). The reference's RLlib run differs in: steps 204,800, epochs
    30, learning rate 5e-3, a clipped value loss (the prediction moves at
    most 10 from its rollout value), rewards unscaled, 32-request episodes,
    no imitation warm start, no `ServerHints` node features (see
    docs/learned/gnn_ppo.md). ``dagger_rounds`` > 0 adds DAgger rounds after
    the behaviour cloning (tried, not shipped)."""

    steps: int = option(60_000, "PPO steps after the warm start, at least (--steps; under --quick every step, "
                                "warm start included, exactly)")
    envs: int = option(8, "environments stepped in lockstep, one batched forward pass", Range(1, 256))
    batch: int = option(2048, "steps an iteration collects: each environment finishes the episode in which it "
                              "reaches batch / envs steps", COUNT)
    minibatch: int = option(256, "samples per minibatch of PPO and of the cloning (about: a batch splits into "
                                 "nearly equal ones)", COUNT)
    epochs: int = option(10, "passes of PPO's update over each iteration's batch", Range(1, 1000))
    learning_rate: float = option(3e-4, "Adam's learning rate of PPO", RATE)
    clip: float = option(0.3, "the clip of PPO's probability ratio, to 1 ± clip", RATE)
    gamma: float = option(0.99, "γ, the discount of the returns (PPO's advantages and the cloned value "
                                "targets)", SHARE)
    gae_lambda: float = option(1.0, "λ of the generalised advantage estimate", SHARE)
    value_coef: float = option(0.5, "weight of the value head's squared error in the loss (PPO and cloning)",
                               WEIGHT)
    reward_scale: float = option(0.1, "factor on the ±10 rewards before returns and advantages",
                                 Range(0, 1e6, above=True))
    entropy_coef: float = option(0.0, "weight of the entropy bonus in PPO's loss (0: none, as RLlib's)", WEIGHT)
    kl_coef: float = option(0.2, "starting coefficient of the KL penalty, which adapts as RLlib's (kl_target)",
                            WEIGHT)
    kl_target: float = option(0.01, "the KL penalty's aim: its coefficient ×1.5 after an iteration with more than "
                                    "twice this KL, ×0.5 with less than half", Range(0, 1e6, above=True))
    max_grad_norm: float = option(10.0, "gradients clipped to this norm (PPO and cloning)", Range(0, 1e9, above=True))
    episode_requests: int = option(128, "requests per episode: training, warm start and validation",
                                   Range(1, 100_000))
    imitation_episodes: int = option(40, "teacher-driven episodes of the behaviour-cloning warm start (0: no warm "
                                         "start)", Range(0, 100_000))
    imitation_epochs: int = option(8, "epochs of behaviour cloning on those episodes", Range(0, 1000))
    imitation_learning_rate: float = option(3e-3, "Adam's learning rate of the behaviour cloning", RATE)
    teacher: str = option("best", "the heuristic the warm start clones: a pool allocator spec with at most one "
                                  "option, or best (the better of tetris and nalb on the trial episodes)")
    teacher_trial_episodes: int = option(20, "training episodes each teacher is scored on before the warm start "
                                             "(teacher=best keeps the better; none under --quick)", Range(1, 10_000))
    dagger_rounds: int = option(0, "DAgger rounds after the behaviour cloning (0: none; tried, not shipped)",
                                Range(0, 1000))
    dagger_episodes: int = option(16, "episodes per DAgger round, driven by the policy's arg-max and labelled by "
                                      "the teacher", Range(1, 10_000))
    dagger_epochs: int = option(3, "epochs of cloning on the aggregated samples after each DAgger round",
                                Range(1, 1000))
    hints: bool = option(True, "add the ServerHints node features (five; six with fit_hint or fit_last_hint)")
    fit_hint: bool = option(False, "a sixth hint: the server's place in bestfit's order (at most one sixth hint)")
    fit_last_hint: bool = option(False, "a sixth hint: the server's rank among those that would complete the "
                                        "request in a rack it uses (tetris:fit_last=yes's rule)")
    validation_episodes: int = option(32, "held-out episodes the greedy policy is scored on; the best-scoring "
                                          "weights are exported (0: the last)", Range(0, 100_000))
    validate_every: int = option(5, "iterations between validations (also at the start and the end)", COUNT)

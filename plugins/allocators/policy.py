"""policy: any policy from the environment's observation to an action, run
as an allocator, named by its content (``policy:sha256=ID``; docs/policies.md).

Every decision is the environment's step: the observation
`dcbench.envs.AllocationEnv` would show (`dcbench.envs.PoolFeatures` for a
pool's next server, `dcbench.envs.JobFeatures` for a job's next VM's rack),
the policy's action (`dcbench.envs.policy_function`), and an action outside
the mask fails the request with reason ``invalid_action``, as a step of the
environment does. So a policy makes the same decisions in an episode of the
environment with seed s and in a run of this allocator with seed s.

``reconfigure`` is for jobs (default yes); left unset, a run's spec
leaves it out. ``hints`` adds the environment's per-server hint features to a pool
step's observation (``hints=all``, or names joined by '+'), as its
``hints=`` does. Without ``sha256``, the policy is `first_allowed` (the lowest-numbered
allowed server or rack): what the conformance checks run, and the floor
any policy should clear. dcbench.envs is imported when the allocator is
built, not when the plugins load (it imports gymnasium).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from dcbench import (
    RECONFIGURE_PARAM,
    Allocation,
    AllocatorError,
    Network,
    Param,
    PoolAndJobAllocator,
    Reject,
    Request,
    State,
    hookimpl,
)


def first_allowed(observation: Mapping[str, np.ndarray]) -> int:
    """The default policy: the first action the mask allows."""
    return int(np.flatnonzero(observation["action_mask"])[0])


class PolicyAllocator(PoolAndJobAllocator):
    """A policy's action for every step of the builders: a server per pool
    step, a rack per VM."""

    def __init__(self, sha256: str | None = None, reconfigure: bool | None = None, hints: str | None = None):
        from dcbench.envs import HINT_FEATURES, load_policy, policy_function

        self.reconfigure = reconfigure is not False  # (unset: yes, so that a pool run's spec carries no reconfigure)
        self.hints: tuple[str, ...] = ()
        if hints is not None:
            self.hints = HINT_FEATURES if hints == "all" else tuple(hints.split("+"))
            unknown = [name for name in self.hints if name not in HINT_FEATURES]
            if unknown or len(set(self.hints)) != len(self.hints):
                raise ValueError(f"hints={hints!r}: give all, or hint features joined by '+', each once, of "
                                 f"{', '.join(HINT_FEATURES)}" + (f" ({unknown[0]!r} is none)" if unknown else ""))
        if sha256 is None:
            self.policy, self.digest = first_allowed, ""
        else:
            self.policy, self.digest = load_policy(sha256)
        self.decide = policy_function(self.policy)

    def fingerprint(self, network: Network) -> str:
        """The policy's content: the full SHA-256 its id is the start of ("" for the default)."""
        return f"sha256={self.digest}" if self.digest else ""

    def reset(self, network: Network, rng: np.random.Generator) -> None:
        super().reset(network, rng)
        self.pool_features: Any = None  # made at the first request of their kind (a pool needs cpu and mem)
        self.job_features: Any = None

    def allocate(self, request: Request, state: State) -> Allocation | Reject:
        if request.kind == "job":
            return self.allocate_job(request, state)
        if self.pool_features is None:
            from dcbench.envs import PoolFeatures

            try:
                self.pool_features = PoolFeatures(self.network, self.hints)
            except ValueError as exc:
                raise AllocatorError(f"policy: {exc}; the environment observes pools of cpu and mem only") from None
        builder = self.builder
        builder.start(request, state)
        while builder.is_open:
            allowed = builder.allowed()
            if not allowed.any():
                builder.fail("no_server")
                break
            server = self.decide(self.pool_features.observe(builder, state))
            if not (0 <= server < len(allowed) and allowed[server]):
                builder.fail("invalid_action")  # as the environment's step
                break
            builder.add(server)
        return builder.result()

    def allocate_job(self, request: Request, state: State) -> Allocation | Reject:
        builder = self.job_builder
        if builder is None:
            raise AllocatorError("jobs need a topology with rack switches (an ocs topology)")
        if self.hints:
            raise AllocatorError("policy: hints are per-server features of pool steps; a job step (a rack per VM) "
                                 "has none, as in the environment")
        if self.job_features is None:
            from dcbench.envs import JobFeatures

            self.job_features = JobFeatures(self.network, builder)
        builder.start(request, state)
        while builder.is_open:
            allowed = builder.rack_fits()
            if not allowed.any():
                builder.fail("no_server")
                break
            rack = self.decide(self.job_features.observe(builder, state))
            if not (0 <= rack < len(allowed) and allowed[rack]):
                builder.fail("invalid_action")
                break
            builder.place(rack)
        if builder.status == "placed":
            builder.reconfigure = bool(self.reconfigure)
            builder.route()
        return builder.result()


@hookimpl
def register_allocators(register):
    register(
        "policy",
        PolicyAllocator,
        description="Any policy from the environment's observation to an action (a stored one by its content's "
        "sha256, `dcbench policy add`); the first allowed action without one",
        params=[Param("sha256", str, None, "the policy's id, 16 hex digits of its content's SHA-256, as `dcbench "
                      "policy add` prints it (default: the first allowed action)", positional=True),
                dataclasses.replace(RECONFIGURE_PARAM, default=None,
                                    help=RECONFIGURE_PARAM.help + " (jobs only; default: yes)"),
                Param("hints", str, None, "the hint features in the observation, as the environment's hints=: all, "
                      "or names joined by '+' (default: none)")],
        demands=("pool", "job"),
        learned=True,
    )

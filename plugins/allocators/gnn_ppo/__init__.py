"""gnn_ppo: the learned policy of the tiered-fabric papers (GNN + PPO).

Only the registration lives here; torch and torch_geometric are imported when
the allocator is built or trained.
"""

from __future__ import annotations

from dcbench import Param, hookimpl
from dcbench.plugins.allocators._papers import TIERED_AUTHORS, TIERED_CODE, TIERED_JOURNAL


@hookimpl
def register_allocators(register):
    register(
        "gnn_ppo",
        "dcbench.plugins.allocators.gnn_ppo.allocator:GnnPpoAllocator",
        description="GraphSAGE-style GNN over servers and switches, trained with PPO; a server per step",
        params=[Param("checkpoint", str, None, "checkpoint file (default: the shipped one for the topology)")],
        demands=("pool",),
        colour="C0",
        learned=True,
        authors=TIERED_AUTHORS,
        paper=TIERED_JOURNAL,
        code=TIERED_CODE,
        training_seeds=("1000000..",),  # train.py: training episodes from 1,000,000, validation from 2,000,000
        trainer="dcbench.plugins.allocators.gnn_ppo.train:train",
        training_options="dcbench.plugins.allocators.gnn_ppo.config:PPOConfig",
    )

"""The reference GNN policy in PyTorch Geometric.

Three message-passing layers over servers and switches: a node's new
embedding is the mean, over itself and its neighbours, of
ReLU(W · [neighbour embedding, edge features]) (the self term with zero edge
features), L2-normalised; 16 dimensions. A dense layer (8) embeds the global
features; each server's logit is a dense layer over [global embedding, mean
embedding of the servers chosen so far, the server's embedding]; logits of
servers outside the mask are −10⁹ (probability exactly 0). The value head reads the global embedding,
the mean server embedding and the chosen-servers embedding.

Observations are batched as tensors of shape (batch, nodes, features) over
one static ``edge_index``: message passing runs on ``node_dim=-2``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing

MASKED = -1e9


class EdgeMeanConv(MessagePassing):
    def __init__(self, in_dim: int, edge_dim: int, out_dim: int):
        super().__init__(aggr="mean", node_dim=-2)
        self.linear = nn.Linear(in_dim + edge_dim, out_dim)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.propagate(edge_index, x=x, edge_attr=edge_attr), dim=-1)

    def message(self, x_j: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return F.relu(self.linear(torch.cat([x_j, edge_attr], dim=-1)))


class GraphPolicy(nn.Module):
    def __init__(self, node_dim: int = 5, edge_dim: int = 2, global_dim: int = 3, hidden: int = 16,
                 layers: int = 3, global_hidden: int = 8):
        super().__init__()
        self.config = {"node_dim": node_dim, "edge_dim": edge_dim, "global_dim": global_dim, "hidden": hidden,
                       "layers": layers, "global_hidden": global_hidden}
        dims = [node_dim] + [hidden] * layers
        self.convs = nn.ModuleList(EdgeMeanConv(a, edge_dim, b) for a, b in zip(dims[:-1], dims[1:]))
        self.global_embed = nn.Sequential(nn.Linear(global_dim, global_hidden), nn.ReLU())
        # The logit also reads the server's own raw features (an addition to
        # the reference): L2-normalised embeddings of near-identical servers
        # are nearly equal, which leaves the policy almost blind to them.
        self.logit = nn.Sequential(nn.Linear(global_hidden + 2 * hidden + node_dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.value = nn.Sequential(nn.Linear(global_hidden + 2 * hidden, 64), nn.Tanh(), nn.Linear(64, 1))

    def forward(self, nodes: torch.Tensor, edges: torch.Tensor, globals_: torch.Tensor, mask: torch.Tensor,
                edge_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (batch, servers) and values (batch,).

        ``edge_index`` must already hold a self loop per node after the
        links' edges; ``edges`` covers the links' edges only.
        """
        batch, n_nodes, _ = nodes.shape
        n_servers = mask.shape[-1]
        loops = edges.new_zeros(batch, n_nodes, edges.shape[-1])
        edge_attr = torch.cat([edges, loops], dim=1)
        h = nodes
        for conv in self.convs:
            h = conv(h, edge_index, edge_attr)
        servers = h[:, :n_servers]
        chosen = nodes[:, :n_servers, 2:3]
        pooled = (servers * chosen).sum(dim=1) / chosen.sum(dim=1).clamp(min=1.0)
        g = self.global_embed(globals_)
        per_server = torch.cat([g[:, None, :].expand(-1, n_servers, -1),
                                pooled[:, None, :].expand(-1, n_servers, -1), servers, nodes[:, :n_servers]], dim=-1)
        # A large finite negative rather than -inf keeps p·log p (entropy) and its gradient finite.
        logits = self.logit(per_server).squeeze(-1).masked_fill(mask == 0, MASKED)
        value = self.value(torch.cat([g, servers.mean(dim=1), pooled], dim=-1)).squeeze(-1)
        return logits, value


def with_self_loops(edge_index, n_nodes: int) -> torch.Tensor:
    """The static edge index of a topology, with one self loop per node appended."""
    edges = torch.as_tensor(edge_index, dtype=torch.long)
    loops = torch.arange(n_nodes, dtype=torch.long).repeat(2, 1)
    return torch.cat([edges, loops], dim=1)


def as_tensors(observations: dict) -> tuple[torch.Tensor, ...]:
    """Stacked numpy observations (batch first) as the model's inputs."""
    return (torch.as_tensor(observations["node_features"]), torch.as_tensor(observations["edge_features"]),
            torch.as_tensor(observations["global_features"]), torch.as_tensor(observations["action_mask"]))

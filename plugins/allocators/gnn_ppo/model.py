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
one static ``edge_index``: message passing runs on ``node_dim=-2``. One
observation without gradients (an allocator's decision) takes a faster
path through the same arithmetic, the edges sorted by target
(`EdgeMeanConv.forward_by_target`).

With ``extra_features`` 5 or 6 (the shipped checkpoints) the node features
also carry that many hint features, the environment's public
``dcbench.envs.PoolHints`` (`hint_features` names them; the allocator and
the trainer ask the features for them, ``hints=``, and `as_tensors` appends
the observation's "hint_features" to its "node_features"); checkpoints
without the key in their configuration read the environment's five node
features only.
"""

from __future__ import annotations

import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing

from dcbench import Range
from dcbench.envs import HINT_FEATURES, PoolHints
from dcbench.plugins.allocators.gnn_ppo.argmax import BoundedArgmax

MASKED = -1e9
LOGIT_HIDDEN = 32
VALUE_HIDDEN = 64
EXTRA_FEATURES = 6
SIXTH_HINTS = ("bestfit", "fit_last")
# The public hint feature each sixth hint of a checkpoint's configuration is (dcbench.envs.HINT_FEATURES).
SIXTH_HINT_FEATURES = {"bestfit": "best_fit_rank", "fit_last": "fit_last_rank"}
BOUNDED_FROM = 4096  # servers: on smaller graphs the whole pass costs about what the bounds do


class EdgeMeanConv(MessagePassing):
    def __init__(self, in_dim: int, edge_dim: int, out_dim: int):
        super().__init__(aggr="mean", node_dim=-2)
        self.linear = nn.Linear(in_dim + edge_dim, out_dim)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.propagate(edge_index, x=x, edge_attr=edge_attr), dim=-1)

    def message(self, x_j: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return F.relu(self.linear(torch.cat([x_j, edge_attr], dim=-1)))

    def forward_by_target(self, x: torch.Tensor, graph: "EdgesByTarget", edge_attr: torch.Tensor) -> torch.Tensor:
        """`forward` on one graph (nodes × features, no batch), without
        gradients: the same messages, each node's summed in the order
        `propagate`'s scatter adds them, as one segment sum over the edges
        sorted by target; ``edge_attr`` in that order. On every observation
        tested the bits were the same (tests/plugins/test_gnn_ppo.py
        compares them), and a decision takes 15-20 % less time: no scatter
        over an expanded index, no in-degree counted again, no bias
        broadcast copied (docs/performance.md)."""
        messages = torch.mm(torch.cat([x.index_select(0, graph.source), edge_attr], dim=-1), self.linear.weight.t())
        messages += self.linear.bias
        messages.clamp_(min=0)
        summed = torch.segment_reduce(messages, "sum", lengths=graph.in_degree, axis=0)
        return F.normalize(summed / graph.divisor, dim=-1)


class EdgesByTarget:
    """A static edge index sorted by target node, stably, so that each
    node's incoming edges keep their order (the order in which PyG's
    scatter adds their messages), for `EdgeMeanConv.forward_by_target`.

    Args:
        edge_index: The edge index (2 × edges), self loops included.
        n_nodes: The number of nodes.
    """

    def __init__(self, edge_index: torch.Tensor, n_nodes: int):
        self.edge_index = edge_index
        target = edge_index[1]
        self.order = torch.argsort(target, stable=True)
        self.source = edge_index[0].index_select(0, self.order)
        self.in_degree = torch.bincount(target, minlength=n_nodes)
        self.divisor = self.in_degree.clamp(min=1).to(torch.float32)[:, None]  # (the mean's count, as PyG's)


def _chosen_mean(servers: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """`forward`'s pooled embedding of one observation: the mean embedding
    of the chosen servers (``chosen`` is 1 for those, 0 for the rest)."""
    rows = torch.nonzero(chosen[:, 0]).squeeze(-1)
    if len(rows) <= 2:  # a sum of zeros and at most two other terms is the same in any order: skip the zeros
        return servers.index_select(0, rows).sum(dim=0) / chosen.sum(dim=0).clamp(min=1.0)
    return (servers * chosen).sum(dim=0) / chosen.sum(dim=0).clamp(min=1.0)


class MessageSums:
    """One `EdgeMeanConv` layer of `GraphPolicy.decision_logits` into the
    first ``n_targets`` nodes, its sums in `propagate`'s order without a
    segment reduction.

    PyG adds a node's messages in edge order: its links' edges, then its
    self loop (appended last). Here the links' edges into the targets come
    position-major: each target's first one, in node order, then every
    second one, and so on. So the first rows start the sums in place and
    one ``index_add_`` (sequential) adds the later rows, each node's in
    its edges' order; the self loops' messages come last.

    Args:
        edge_index: The edge index (2 × edges): the links' edges, then one
            self loop per node.
        n_links: The number of the links' edges (the self loops follow).
        n_targets: The nodes whose sums are wanted: the first ones.

    Attributes:
        edge_index: That edge index.
        n_targets: That number of nodes.
        order: The links' edges into the targets, in this order (indices
            into the links' edges).
        source: Each of those edges' source node.
        every_target_first: Whether every target has a link's edge in:
            then the first ``n_targets`` of those edges are one per target,
            in node order; else the sums start from zeros.
        later_target: The target of each edge after the first
            ``n_targets`` (if every target has one; else of every edge).
        divisor: Each target's in-degree, self loop included (n_targets × 1).
    """

    def __init__(self, edge_index: torch.Tensor, n_links: int, n_targets: int):
        self.edge_index = edge_index
        self.n_targets = n_targets
        links = edge_index[:, :n_links]
        into = torch.nonzero(links[1] < n_targets).squeeze(-1)
        by_target = into.index_select(0, torch.argsort(links[1, into], stable=True))
        target = links[1].index_select(0, by_target)
        links_in = torch.bincount(target, minlength=n_targets)
        position = torch.arange(len(target)) - (torch.cumsum(links_in, 0) - links_in).index_select(0, target)
        self.order = by_target.index_select(0, torch.argsort(position * n_targets + target))
        self.source = links[0].index_select(0, self.order)
        self.every_target_first = bool((links_in > 0).all())
        self.later_target = links[1].index_select(0, self.order[n_targets:] if self.every_target_first
                                                  else self.order)
        self.divisor = (links_in + 1).to(torch.float32)[:, None]
        self._kept: tuple[tuple, tuple[torch.Tensor, ...]] | None = None

    def layer(self, linear: nn.Linear, h: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        """The layer's new embeddings of the targets.

        Args:
            linear: The layer's weights (``EdgeMeanConv.linear``).
            h: Every node's embedding (nodes × width).
            edges: The links' edges' features, in edge index order.

        Returns:
            The targets' embeddings (n_targets × out), L2-normalised: a
            view of a buffer that the next call overwrites.
        """
        weight, width = linear.weight, h.shape[-1]
        per_node, edge_attr, messages, gathered = self._buffers(h, edges, linear.out_features)
        torch.mm(h, weight[:, :width].t(), out=per_node)
        torch.index_select(edges, 0, self.order, out=edge_attr)
        torch.addmm(linear.bias, edge_attr, weight[:, width:].t(), out=messages)
        torch.index_select(per_node, 0, self.source, out=gathered)
        messages.add_(gathered).clamp_(min=0)
        if self.every_target_first:
            sums = messages[:self.n_targets].index_add_(0, self.later_target, messages[self.n_targets:])
        else:
            sums = gathered[:self.n_targets].zero_().index_add_(0, self.later_target, messages)
        sums.add_(per_node[:self.n_targets].add_(linear.bias).clamp_(min=0)).div_(self.divisor)
        return sums.div_(sums.norm(dim=-1, keepdim=True).clamp_min(1e-12))  # F.normalize's arithmetic, in place

    def _buffers(self, h: torch.Tensor, edges: torch.Tensor, out: int) -> tuple[torch.Tensor, ...]:
        # Reused from call to call: fresh ones of this size cost more in page faults than the arithmetic.
        key = (h.dtype, len(h), edges.shape[1], out)
        if self._kept is None or self._kept[0] != key:
            rows = len(self.order)
            self._kept = (key, (h.new_empty(len(h), out), h.new_empty(rows, edges.shape[1]), h.new_empty(rows, out),
                                h.new_empty(max(rows, self.n_targets), out)))
        return self._kept[1]


def _remove_generated_source(conv: type[MessagePassing]) -> None:
    """PyG renders each MessagePassing class's ``propagate`` to a temporary
    ``.py`` file, imports it and never deletes it: one file left in the
    temporary folder per process. The module is loaded by then and the
    model is never scripted, so the file can go."""
    module = sys.modules.get(f"{conv.__module__}_{conv.__name__}_propagate")
    path = getattr(module, "__file__", None)
    if path and os.path.exists(path):
        try:
            os.remove(path)
        except OSError:
            pass


class GraphPolicy(nn.Module):
    def __init__(self, node_dim: int = 5, edge_dim: int = 2, global_dim: int = 3, hidden: int = 16,
                 layers: int = 3, global_hidden: int = 8, extra_features: int = 0, sixth_hint: str = "bestfit"):
        super().__init__()
        self.config = {"node_dim": node_dim, "edge_dim": edge_dim, "global_dim": global_dim, "hidden": hidden,
                       "layers": layers, "global_hidden": global_hidden}
        if extra_features:  # absent from older checkpoints' configurations
            self.config["extra_features"] = extra_features
        if extra_features > 5 and sixth_hint != "bestfit":  # likewise
            self.config["sixth_hint"] = sixth_hint
        self.extra_features = extra_features
        self.sixth_hint = sixth_hint
        node_dim += extra_features
        dims = [node_dim] + [hidden] * layers
        self.convs = nn.ModuleList(EdgeMeanConv(a, edge_dim, b) for a, b in zip(dims[:-1], dims[1:]))
        _remove_generated_source(EdgeMeanConv)
        self.global_embed = nn.Sequential(nn.Linear(global_dim, global_hidden), nn.ReLU())
        # The logit also reads the server's own raw features (an addition to
        # the reference): L2-normalised embeddings of near-identical servers
        # are nearly equal, which leaves the policy almost blind to them.
        self.logit = nn.Sequential(nn.Linear(global_hidden + 2 * hidden + node_dim, LOGIT_HIDDEN), nn.ReLU(),
                                   nn.Linear(LOGIT_HIDDEN, 1))
        self.value = nn.Sequential(nn.Linear(global_hidden + 2 * hidden, VALUE_HIDDEN), nn.Tanh(),
                                   nn.Linear(VALUE_HIDDEN, 1))
        self._edges_by_target: EdgesByTarget | None = None  # the last edge index of one observation, sorted
        self._message_sums: tuple[MessageSums, MessageSums] | None = None  # `decision_logits`': all nodes, servers
        self._decision_buffers: dict[str, torch.Tensor] = {}

    def forward(self, nodes: torch.Tensor, edges: torch.Tensor, globals_: torch.Tensor, mask: torch.Tensor,
                edge_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits (batch, servers) and values (batch,).

        ``edge_index`` must already hold a self loop per node after the
        links' edges; ``edges`` covers the links' edges only.
        """
        batch, n_nodes, _ = nodes.shape
        n_servers = mask.shape[-1]
        if batch == 1 and not torch.is_grad_enabled():  # an allocator's decision
            h = self._embed_one(nodes[0], edges[0], edge_index)[None]
        else:
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

    def decision_logits(self, nodes: torch.Tensor, edges: torch.Tensor, globals_: torch.Tensor, mask: torch.Tensor,
                        edge_index: torch.Tensor) -> torch.Tensor:
        """`forward`'s masked logits of one observation (no batch, no
        gradients, no value), with its products split where a part is
        shared: a layer's message weights apply to each node's embedding
        once rather than to each edge's copy of it, the last layer only to
        the edges into servers, and the logit layer's to the global and
        pooled embeddings once rather than to each server's copy. The same
        sums in another order: logits differ from `forward`'s in their last
        bits only (`GreedyPolicy` rounds them to float32, and
        benchmarks/gnn_ppo_decisions.py --check replays every decision of
        the committed runs both ways: the same arg-max).

        Each node's messages are summed as `propagate` sums them, its self
        loop's last (`MessageSums`), the self loops' messages without an
        edge product: their edge features are zeros."""
        sums = self._message_sums
        if sums is None or sums[0].edge_index is not edge_index:
            n_links = edges.shape[0]
            sums = self._message_sums = (MessageSums(edge_index, n_links, nodes.shape[0]),
                                         MessageSums(edge_index, n_links, mask.shape[-1]))
        n_servers = mask.shape[-1]
        h = nodes
        for layer, conv in enumerate(self.convs):
            into = sums[1] if layer == len(self.convs) - 1 else sums[0]  # the last layer: only servers are read
            h = into.layer(conv.linear, h, edges)
        servers = h[:n_servers]
        chosen = nodes[:n_servers, 2:3]
        shared = torch.cat([self.global_embed(globals_), _chosen_mean(servers, chosen)])
        first, last = self.logit[0], self.logit[2]
        weight = first.weight
        bias = torch.addmv(first.bias, weight[:, :shared.shape[0]], shared)
        per_server = self._kept("per_server", nodes, (n_servers, servers.shape[1] + nodes.shape[1]))
        logit_hidden = self._kept("logit_hidden", nodes, (n_servers, first.out_features))
        torch.cat([servers, nodes[:n_servers]], dim=-1, out=per_server)
        torch.addmm(bias, per_server, weight[:, shared.shape[0]:].t(), out=logit_hidden)
        logits = torch.addmm(last.bias, logit_hidden.clamp_(min=0), last.weight.t()).squeeze(-1)
        return logits.masked_fill(mask == 0, MASKED)

    def _kept(self, name: str, like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        # A buffer of `decision_logits`, reused from decision to decision: fresh ones of
        # these sizes cost more in page faults than the arithmetic that fills them.
        kept = self._decision_buffers.get(name)
        if kept is None or kept.shape != shape or kept.dtype != like.dtype:
            kept = self._decision_buffers[name] = like.new_empty(shape)
        return kept

    def _embed_one(self, nodes: torch.Tensor, edges: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        # The convolutions on one observation, by `EdgeMeanConv.forward_by_target`.
        graph = self._edges_by_target
        if graph is None or graph.edge_index is not edge_index:
            graph = self._edges_by_target = EdgesByTarget(edge_index, nodes.shape[0])
        loops = edges.new_zeros(nodes.shape[0], edges.shape[-1])
        edge_attr = torch.cat([edges, loops]).index_select(0, graph.order)
        h = nodes
        for conv in self.convs:
            h = conv.forward_by_target(h, graph, edge_attr)
        return h


class GreedyPolicy:
    """The arg-max of a `GraphPolicy`'s masked logits, as the allocator
    and the trainer's validation act: the same decisions on every CPU.

    A float32 matrix product comes out with other last bits under another
    BLAS kernel (MKL picks its kernels by CPU, and by vendor), and an
    arg-max between near-equal logits then goes the other way: dcbench
    0.4.1's `gnn_ppo` runs at 1,024 servers, made on an AMD EPYC, decided
    otherwise on an Intel Xeon. So a decision runs a float64 copy of the
    policy and rounds its logits to float32. The kernels' float64
    differences (about 1e-16 of a logit) vanish in that rounding, except
    for a logit within that distance of a float32 rounding boundary.

    On graphs of `BOUNDED_FROM` servers or more, `action` finds the
    arg-max computing few servers' logits (`BoundedArgmax`).

    Args:
        model: The policy (float32, as trained); copied, so later updates
            of its weights are not seen.
    """

    def __init__(self, model: GraphPolicy):
        self.model = copy.deepcopy(model).double().eval()
        self._bounded: BoundedArgmax | None = None

    def action(self, observation: dict, edge_index: torch.Tensor) -> int:
        """The server of the largest logit of one observation (batch of
        one): the first of them, as `torch.argmax` of `logits` picks it."""
        nodes, edges, globals_, mask = (x[0] for x in as_tensors(observation))
        with torch.no_grad():
            if len(mask) >= BOUNDED_FROM:
                bounded = self._bounded
                if bounded is None or bounded.edges_in.edge_index is not edge_index:
                    bounded = self._bounded = BoundedArgmax(self.model, edge_index, len(edges), len(nodes))
                server = bounded(nodes, edges, globals_, mask)
                if server is not None:
                    return server
            logits = self.model.decision_logits(nodes.double(), edges.double(), globals_.double(), mask, edge_index)
        return int(torch.argmax(logits.float()))

    def logits(self, observations: dict, edge_index: torch.Tensor) -> torch.Tensor:
        """The masked logits (batch, servers) of stacked observations (batch
        first), computed in float64 and rounded to float32."""
        nodes, edges, globals_, mask = as_tensors(observations)
        with torch.no_grad():
            if len(nodes) == 1:  # a decision
                return self.model.decision_logits(nodes[0].double(), edges[0].double(), globals_[0].double(), mask[0],
                                                  edge_index)[None].float()
            logits, _ = self.model(nodes.double(), edges.double(), globals_.double(), mask, edge_index)
        return logits.float()


# What a checkpoint's configuration may say, checked before a GraphPolicy is built from it: the shipped
# checkpoints have 16 dimensions in 3 layers, and the trainer builds only those; 64 times as wide and 5 times
# as deep is room for any other policy worth training (up to 17 million weights, 67 MB), and the features
# are the environment's (5 per node, 2 per link, 3 global) with room to grow.
CONFIG_LIMITS = {"node_dim": Range(1, 64), "edge_dim": Range(1, 64), "global_dim": Range(1, 64),
                 "hidden": Range(1, 1024), "layers": Range(1, 16), "global_hidden": Range(1, 1024),
                 "extra_features": (0, 5, EXTRA_FEATURES), "sixth_hint": SIXTH_HINTS}
CONFIG_DEFAULTS = {"node_dim": 5, "edge_dim": 2, "global_dim": 3, "hidden": 16, "layers": 3, "global_hidden": 8,
                   "extra_features": 0, "sixth_hint": "bestfit"}


def weight_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """The name and shape of every weight of the GraphPolicy that
    ``config`` (within `CONFIG_LIMITS`) makes, without building it."""
    c = {**CONFIG_DEFAULTS, **config}
    node_dim, hidden = c["node_dim"] + c["extra_features"], c["hidden"]
    shapes: dict[str, tuple[int, ...]] = {}

    def linear(name: str, inputs: int, outputs: int) -> None:
        shapes[f"{name}.weight"], shapes[f"{name}.bias"] = (outputs, inputs), (outputs,)

    for index, inputs in enumerate([node_dim] + [hidden] * (c["layers"] - 1)):
        linear(f"convs.{index}.linear", inputs + c["edge_dim"], hidden)
    linear("global_embed.0", c["global_dim"], c["global_hidden"])
    linear("logit.0", c["global_hidden"] + 2 * hidden + node_dim, LOGIT_HIDDEN)
    linear("logit.2", LOGIT_HIDDEN, 1)
    linear("value.0", c["global_hidden"] + 2 * hidden, VALUE_HIDDEN)
    linear("value.2", VALUE_HIDDEN, 1)
    return shapes


def with_self_loops(edge_index, n_nodes: int) -> torch.Tensor:
    """The static edge index of a topology, with one self loop per node appended."""
    edges = torch.as_tensor(edge_index, dtype=torch.long)
    loops = torch.arange(n_nodes, dtype=torch.long).repeat(2, 1)
    return torch.cat([edges, loops], dim=1)


def as_tensors(observations: dict) -> tuple[torch.Tensor, ...]:
    """Stacked numpy observations (batch first) as the model's inputs; the
    "hint_features", where the observation has them, after the node features."""
    nodes = observations["node_features"]
    if "hint_features" in observations:
        nodes = np.concatenate([nodes, observations["hint_features"]], axis=-1)
    return (torch.as_tensor(nodes), torch.as_tensor(observations["edge_features"]),
            torch.as_tensor(observations["global_features"]), torch.as_tensor(observations["action_mask"]))


def hint_features(count: int, sixth: str = "bestfit") -> tuple[str, ...]:
    """The environment's hint features (``dcbench.envs.HINT_FEATURES``) a
    checkpoint reads, in its order: none for ``count`` 0, the first five for
    5, and for 6 also the sixth: ``best_fit_rank`` (``sixth="bestfit"``,
    ``fit_hint=yes`` in training) or ``fit_last_rank`` (``"fit_last"``,
    ``fit_last_hint=yes``)."""
    if count not in (0, 5, EXTRA_FEATURES):
        raise ValueError(f"ServerHints: count={count}; checkpoints have 5 or {EXTRA_FEATURES} hint features")
    if sixth not in SIXTH_HINTS:
        raise ValueError(f"ServerHints: sixth={sixth!r}; the sixth hint is one of {', '.join(SIXTH_HINTS)}")
    if not count:
        return ()
    return HINT_FEATURES[:5] + ((SIXTH_HINT_FEATURES[sixth],) if count > 5 else ())


class ServerHints:
    """The node features with ``count`` hint features appended: the
    environment's `PoolHints` (``dcbench.envs``) that `hint_features`
    names, computed from the pool builder alone (switches get zeros). The
    allocator and the trainer read them from the environment's features
    (``hints=``); this is the same computation for a caller that holds node
    features and a builder.

    The reference's features leave all of these to three layers of mean
    aggregation with L2 normalisation, which blurs them: a behaviour-cloned
    policy agreed with NALB's choices only ~83 % of the time.
    """

    def __init__(self, network, count: int = 5, sixth: str = "bestfit"):
        if count not in (5, EXTRA_FEATURES):
            raise ValueError(f"ServerHints: count={count}; checkpoints have 5 or {EXTRA_FEATURES} hint features")
        self.count = count
        self.sixth = sixth
        self.hints = PoolHints(network, hint_features(count, sixth))

    def __call__(self, builder, node_features):
        return np.concatenate([node_features, self.hints.compute(builder)], axis=1)

"""The arg-max of a `GraphPolicy`'s logits on a large graph, computing few servers' logits.

A server's logit is w·ReLU(W·[shared, h, x] + b) + c, where x is its own features and h its last embedding:
L2-normalised with entries of at least zero (a mean of ReLU messages), so that W_h·h lies between −‖W_h⁻‖ and
‖W_h⁺‖ row by row, whatever the graph. The server's features alone so bound its logit from above. A decision
computes every server's bound (in float32, plus a margin above its rounding error), the exact logits of the
servers with the highest bounds, and of every other allowed server whose bound reaches the best of them: no
other server's logit, rounded to float32 as the decision rounds it, can reach that one. Exact logits need
embeddings only on the servers' in-neighbourhoods, as deep as the layers, computed in float64 with
`MessageSums`' arithmetic row by row.

A request's first server is chosen by its embedding more than by its features, and the bounds leave nearly
every server: that decision, and any where over `MOST` servers reach the best, is the whole pass's.
"""

from __future__ import annotations

import numpy as np
import torch

FIRST = 32  # servers with the highest bounds whose exact logits come first
MOST = 1024  # more servers to compute exactly than this: the whole pass instead
ROUNDING = 1e-5  # the bound's float32 rounding error is below this share of its terms' magnitude (about 80 · 2⁻²⁴)


class InEdges:
    """Each node's incoming link edges, in edge order (the order in which PyG sums them).

    Args:
        edge_index: The edge index (2 × edges): the links' edges, then one self loop per node.
        n_links: The number of the links' edges.
        n_nodes: The number of nodes."""

    def __init__(self, edge_index: torch.Tensor, n_links: int, n_nodes: int):
        self.edge_index = edge_index
        links = edge_index[:, :n_links].numpy()
        self.edge = np.argsort(links[1], kind="stable")
        self.source = links[0][self.edge]
        self.start = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(links[1], minlength=n_nodes), out=self.start[1:])

    def into(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edges into ``targets``: their indices, sources and targets' positions, target by target."""
        lengths = self.start[targets + 1] - self.start[targets]
        first = np.repeat(self.start[targets] - (np.cumsum(lengths) - lengths), lengths)
        at = first + np.arange(int(lengths.sum()))
        return self.edge[at], self.source[at], np.repeat(np.arange(len(targets)), lengths)

    def with_sources(self, targets: np.ndarray) -> np.ndarray:
        """``targets`` and the sources of the edges into them, sorted."""
        return np.union1d(targets, self.into(targets)[1])


class BoundedArgmax:
    """`GraphPolicy.decision_logits`' arg-max on one graph, float32 logits, first index on ties.

    Args:
        model: The float64 policy (`GreedyPolicy.model`).
        edge_index: The edge index the decisions use.
        n_links: The number of the links' edges.
        n_nodes: The number of nodes."""

    def __init__(self, model, edge_index: torch.Tensor, n_links: int, n_nodes: int):
        self.model = model
        self.edges_in = InEdges(edge_index, n_links, n_nodes)
        self.divisor = torch.from_numpy(np.diff(self.edges_in.start) + 1.0)[:, None]  # in-degree, self loop too
        first, last = model.logit[0], model.logit[2]
        self.hidden = model.config["hidden"]
        self.shared_width = model.config["global_hidden"] + self.hidden  # the global and pooled embeddings
        embedding = first.weight[:, self.shared_width:self.shared_width + self.hidden]
        own = first.weight[:, self.shared_width + self.hidden:]
        # W_h·h adds at most ‖W_h⁺‖ to a hidden unit and takes at most ‖W_h⁻‖ away: the bound shifts each unit that
        # raises the logit up by the first, each that lowers it down by the second
        weight = last.weight[0]
        self.shift = torch.where(weight > 0, embedding.clamp(min=0).norm(dim=1), -embedding.clamp(max=0).norm(dim=1))
        self.own_weight = own.t().float()  # the float32 weights as trained, exactly
        self.weight32 = weight.float()
        self.own_size = own.abs().sum(dim=1)
        self._servers: torch.Tensor | None = None  # zeros but for the chosen servers' embeddings

    def __call__(self, nodes: torch.Tensor, edges: torch.Tensor, globals_: torch.Tensor,
                 mask: torch.Tensor) -> int | None:
        """The arg-max server of one observation's logits (float32 inputs, no batch), or None where the bounds
        would leave too many servers (nothing chosen yet, or over `MOST`)."""
        n_servers = len(mask)
        chosen = np.flatnonzero(nodes[:n_servers, 2].numpy())
        allowed = mask.numpy() != 0
        if len(chosen) == 0 or not allowed.any():
            return None
        bias = self.bias(nodes, edges, globals_, chosen, n_servers)
        reach = self.bounds(nodes[:n_servers], bias).numpy()
        reach[~allowed] = -np.inf
        top = np.sort(torch.topk(torch.from_numpy(reach), min(FIRST, n_servers), sorted=False).indices.numpy())
        top = top[allowed[top]]
        logits = self.logits(nodes, edges, bias, top)
        needed = np.flatnonzero(reach >= logits.max().item())
        if len(needed) > MOST:
            return None
        rest = np.setdiff1d(needed, top, assume_unique=True)
        if len(rest):
            top = np.concatenate([top, rest])
            logits = torch.cat([logits, self.logits(nodes, edges, bias, rest)])
        return int(top[(logits == logits.max()).numpy()].min())

    def bias(self, nodes: torch.Tensor, edges: torch.Tensor, globals_: torch.Tensor, chosen: np.ndarray,
             n_servers: int) -> torch.Tensor:
        """The logit layer's bias with the global and pooled embeddings' part added, float64, as
        `decision_logits` adds it."""
        first = self.model.logit[0]
        shared = torch.cat([self.model.global_embed(globals_.double()), self._pooled(nodes, edges, chosen, n_servers)])
        return torch.addmv(first.bias, first.weight[:, :self.shared_width], shared)

    def bounds(self, own: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Each server's bound on its logit (float32, with room for its rounding), from its features ``own``."""
        last = self.model.logit[2]
        shifted = bias + self.shift
        bound = torch.mv(torch.addmm(shifted.float(), own, self.own_weight).clamp_(min=0), self.weight32)
        largest = max(abs(x) for x in torch.aminmax(own)).item()
        magnitude = shifted.abs() + self.own_size * largest
        margin = ROUNDING * (last.bias.abs() + torch.dot(last.weight[0].abs(), magnitude)).item()
        return bound.add_(last.bias.item() + margin)

    def logits(self, nodes: torch.Tensor, edges: torch.Tensor, bias: torch.Tensor,
               servers: np.ndarray) -> torch.Tensor:
        """The float32-rounded logits of ``servers`` (sorted), as `decision_logits` computes them."""
        first, last = self.model.logit[0], self.model.logit[2]
        own = nodes.index_select(0, torch.from_numpy(servers)).double()
        per_server = torch.cat([self.embed(nodes, edges, servers), own], dim=-1)
        hidden = _product(per_server, first.weight[:, self.shared_width:].t(), bias).clamp_(min=0)
        return _product(hidden, last.weight.t(), last.bias).squeeze(-1).float()

    def embed(self, nodes: torch.Tensor, edges: torch.Tensor, targets: np.ndarray) -> torch.Tensor:
        """The last layer's embeddings of ``targets`` (sorted), float64, computed on their in-neighbourhoods."""
        layers = [targets]
        for _ in self.model.convs[1:]:
            layers.append(self.edges_in.with_sources(layers[-1]))
        inputs = self.edges_in.with_sources(layers[-1])
        h = nodes.index_select(0, torch.from_numpy(inputs)).double()
        for conv, into in zip(self.model.convs, reversed(layers)):
            h = self._layer(conv.linear, h, inputs, into, edges)
            inputs = into
        return h

    def _layer(self, linear, h: torch.Tensor, inputs: np.ndarray, targets: np.ndarray,
               edges: torch.Tensor) -> torch.Tensor:
        # MessageSums.layer for ``targets`` alone: each target's messages summed in edge order, its self loop's last
        weight, width = linear.weight, h.shape[1]
        per_node = _product(h, weight[:, :width].t())
        edge, source, row = self.edges_in.into(targets)
        messages = _product(edges.index_select(0, torch.from_numpy(edge)).double(), weight[:, width:].t(), linear.bias)
        messages.add_(per_node.index_select(0, torch.from_numpy(np.searchsorted(inputs, source)))).clamp_(min=0)
        sums = messages.new_zeros(len(targets), linear.out_features).index_add_(0, torch.from_numpy(row), messages)
        own = per_node.index_select(0, torch.from_numpy(np.searchsorted(inputs, targets)))
        sums.add_(own.add_(linear.bias).clamp_(min=0)).div_(self.divisor.index_select(0, torch.from_numpy(targets)))
        return sums.div_(sums.norm(dim=-1, keepdim=True).clamp_min(1e-12))

    def _pooled(self, nodes: torch.Tensor, edges: torch.Tensor, chosen: np.ndarray, n_servers: int) -> torch.Tensor:
        # `_chosen_mean` of decision_logits, on a matrix of zeros but for the chosen servers' rows: where it sums
        # every row (more than two chosen), chosen·h is h on those rows and zero elsewhere, so the sums are its own
        embedded = self.embed(nodes, edges, chosen)
        if len(chosen) <= 2:
            return embedded.sum(dim=0) / float(len(chosen))
        if self._servers is None or len(self._servers) != n_servers:
            self._servers = embedded.new_zeros(n_servers, self.hidden)
        rows = torch.from_numpy(chosen)
        self._servers.index_copy_(0, rows, embedded)
        pooled = self._servers.sum(dim=0) / float(len(chosen))
        self._servers.index_fill_(0, rows, 0.0)
        return pooled


def _product(rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``rows @ weight (+ bias)`` with each row's bits as in a product of many rows: MKL computes rows four at a
    time, and a product whose rows are not a multiple of four computes the last ones by another kernel, with
    other last bits. So the rows are padded with zeros to a multiple of four."""
    padded = torch.cat([rows, rows.new_zeros(-len(rows) % 4, rows.shape[1])]) if len(rows) % 4 else rows
    product = torch.mm(padded, weight) if bias is None else torch.addmm(bias, padded, weight)
    return product[:len(rows)]

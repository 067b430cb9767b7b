"""A relational graph convolution that takes edge weights.

.. math::
    h_i' = \\Theta_{root} x_i + \\sum_{r} \\sum_{j \\in N_r(i)}
           \\frac{w_{ji}}{|N_r(i)|} \\Theta_r x_j + b

With every weight equal to 1 this is PyG's ``RGCNConv`` (mean aggregation per
relation, Schlichtkrull et al. 2018), which takes no edge weights; CAGE needs them
for its min-out-degree reweighting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import scatter


@dataclass(frozen=True, slots=True)
class Aggregated:
    """Per relation, the weighted mean of incoming neighbour features, for the nodes
    that have such neighbours. It depends on the inputs only, so when the inputs are
    fixed (CAGE trains per query on fixed graphs) it is computed once, and each epoch
    multiplies only the rows that have neighbours of a relation by that relation's
    weight (measured faster here than one GEMM over a zero-padded stack)."""

    x: Tensor
    relations: tuple[int, ...]  # the relations that occur
    targets: tuple[Tensor, ...]  # per relation: nodes with incoming edges of that type
    means: tuple[Tensor, ...]  # per relation: (len(targets), in_channels)


class WeightedRGCNConv(MessagePassing):
    def __init__(self, in_channels: int, out_channels: int, num_relations: int) -> None:
        super().__init__(aggr="add")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_relations = num_relations
        self.weight = nn.Parameter(torch.empty(num_relations, in_channels, out_channels))
        self.root = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Glorot, as RGCNConv initialises its weights.
        for parameter in (self.weight, self.root):
            fan_in, fan_out = parameter.shape[-2], parameter.shape[-1]
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            nn.init.uniform_(parameter, -bound, bound)
        nn.init.zeros_(self.bias)

    def aggregate_inputs(
        self, x: Tensor, edge_index: Tensor, edge_type: Tensor, edge_weight: Tensor | None = None
    ) -> Aggregated:
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.size(1), dtype=x.dtype, device=x.device)
        relations: list[int] = []
        targets: list[Tensor] = []
        means: list[Tensor] = []
        size = (x.size(0), x.size(0))
        for relation in range(self.num_relations):
            mask = edge_type == relation
            if not bool(mask.any()):
                continue
            sub_index = edge_index[:, mask]
            summed = self.propagate(sub_index, x=x, edge_weight=edge_weight[mask], size=size)
            ones = torch.ones_like(sub_index[1], dtype=x.dtype)
            count = scatter(ones, sub_index[1], dim_size=x.size(0))
            nodes = torch.nonzero(count > 0).flatten()
            relations.append(relation)
            targets.append(nodes)
            means.append(summed[nodes] / count[nodes].unsqueeze(-1))
        return Aggregated(x, tuple(relations), tuple(targets), tuple(means))

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.unsqueeze(-1) * x_j

    def forward_aggregated(self, aggregated: Aggregated) -> Tensor:
        out = aggregated.x @ self.root + self.bias
        # One gather of the relations that occur, not an index per relation: each
        # index's backward would fill a zero tensor the size of every relation's weights.
        weights = self.weight[list(aggregated.relations)].unbind(0)
        for weight, nodes, mean in zip(weights, aggregated.targets, aggregated.means, strict=True):
            out = out.index_add(0, nodes, mean @ weight)
        return out

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_type: Tensor, edge_weight: Tensor | None = None
    ) -> Tensor:
        return self.forward_aggregated(self.aggregate_inputs(x, edge_index, edge_type, edge_weight))

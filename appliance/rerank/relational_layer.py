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
    relations: tuple[int, ...]  # the relations that occur, ascending
    means: tuple[Tensor, ...]  # per relation: (its target count, in_channels)
    targets: Tensor  # the target node of every row of ``means``, relation after relation


class WeightedRGCNConv(MessagePassing):
    def __init__(self, in_channels: int, out_channels: int, num_relations: int) -> None:
        super().__init__(aggr="add")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_relations = num_relations
        # One parameter per relation, not one stacked tensor: a relation absent from the
        # graphs gets no gradient, so Adam skips it, and no backward stacks the gradients.
        self.relation_weights = nn.ParameterList(
            nn.Parameter(torch.empty(in_channels, out_channels)) for _ in range(num_relations)
        )
        self.root = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.empty(out_channels))
        self.reset_parameters()

    @property
    def weight(self) -> Tensor:
        """Every relation's weight, stacked (num_relations, in_channels, out_channels)."""
        return torch.stack(list(self.relation_weights))

    def reset_parameters(self) -> None:
        # Glorot, as RGCNConv initialises its weights (drawn as one stacked tensor, so a
        # seed gives the same weights as RGCNConv's layout would).
        bound = math.sqrt(6.0 / (self.in_channels + self.out_channels))
        with torch.no_grad():
            drawn = torch.empty(self.num_relations, self.in_channels, self.out_channels)
            nn.init.uniform_(drawn, -bound, bound)
            for parameter, values in zip(self.relation_weights, drawn, strict=True):
                parameter.copy_(values)
            nn.init.uniform_(self.root, -bound, bound)
        nn.init.zeros_(self.bias)

    def aggregate_inputs(
        self, x: Tensor, edge_index: Tensor, edge_type: Tensor, edge_weight: Tensor | None = None
    ) -> Aggregated:
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.size(1), dtype=x.dtype, device=x.device)
        nodes = x.size(0)
        # One pass over all edges: each (relation, target) pair is its own slot.
        slot = edge_type * nodes + edge_index[1]
        slots, inverse = torch.unique(slot, return_inverse=True)
        slot_index = torch.stack([edge_index[0], inverse])
        summed = self.propagate(
            slot_index, x=x, edge_weight=edge_weight, size=(nodes, slots.numel())
        )
        count = scatter(torch.ones_like(inverse, dtype=x.dtype), inverse, dim_size=slots.numel())
        means = summed / count.unsqueeze(-1)
        relation_of_slot = slots // nodes
        per_relation = torch.bincount(relation_of_slot, minlength=self.num_relations)
        relations = tuple(int(r) for r in torch.nonzero(per_relation).flatten())
        return Aggregated(
            x=x,
            relations=relations,
            means=torch.split(means, [int(per_relation[r]) for r in relations]),
            targets=slots % nodes,
        )

    def message(self, x_j: Tensor, edge_weight: Tensor) -> Tensor:
        return edge_weight.unsqueeze(-1) * x_j

    def forward_aggregated(self, aggregated: Aggregated) -> Tensor:
        # One index_add for all relations, not one each.
        messages = [
            mean @ self.relation_weights[relation]
            for relation, mean in zip(aggregated.relations, aggregated.means, strict=True)
        ]
        out = aggregated.x @ self.root + self.bias
        if not messages:
            return out
        return out.index_add(0, aggregated.targets, torch.cat(messages))

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_type: Tensor, edge_weight: Tensor | None = None
    ) -> Tensor:
        return self.forward_aggregated(self.aggregate_inputs(x, edge_index, edge_type, edge_weight))

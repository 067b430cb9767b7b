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


def glorot_weights(
    num_relations: int, in_channels: int, out_channels: int
) -> tuple[Tensor, Tensor]:
    """Relation weights (num_relations, in, out) and root weight (in, out), drawn from the
    global generator as RGCNConv draws its own (one stacked tensor, then the root), so a
    seed gives the same weights in either layout."""
    bound = math.sqrt(6.0 / (in_channels + out_channels))
    relations = torch.empty(num_relations, in_channels, out_channels).uniform_(-bound, bound)
    root = torch.empty(in_channels, out_channels).uniform_(-bound, bound)
    return relations, root


def aggregate_inputs(
    x: Tensor,
    edge_index: Tensor,
    edge_type: Tensor,
    edge_weight: Tensor | None,
    num_relations: int,
) -> Aggregated:
    """Per (relation, target) pair, the weighted mean of the sources' features."""
    if edge_weight is None:
        edge_weight = torch.ones(edge_index.size(1), dtype=x.dtype, device=x.device)
    nodes = x.size(0)
    # One pass over all edges: each (relation, target) pair is its own slot.
    slots, inverse = torch.unique(edge_type * nodes + edge_index[1], return_inverse=True)
    summed = torch.zeros(slots.numel(), x.size(1), dtype=x.dtype).index_add_(
        0, inverse, x[edge_index[0]] * edge_weight.unsqueeze(-1)
    )
    count = torch.bincount(inverse, minlength=slots.numel()).to(x.dtype)
    means = summed / count.unsqueeze(-1)
    per_relation = torch.bincount(slots // nodes, minlength=num_relations)
    relations = tuple(int(r) for r in torch.nonzero(per_relation).flatten())
    return Aggregated(
        x=x,
        relations=relations,
        means=torch.split(means, [int(per_relation[r]) for r in relations]),
        targets=slots % nodes,
    )


class WeightedRGCNConv(nn.Module):
    """The layer as a module, for use with autograd. CAGE trains the same layer per query
    with its gradient written out (``diversity_training.py``), tested against this."""

    def __init__(self, in_channels: int, out_channels: int, num_relations: int) -> None:
        super().__init__()
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
        relations, root = glorot_weights(self.num_relations, self.in_channels, self.out_channels)
        with torch.no_grad():
            for parameter, values in zip(self.relation_weights, relations, strict=True):
                parameter.copy_(values)
            self.root.copy_(root)
        nn.init.zeros_(self.bias)

    def aggregate_inputs(
        self, x: Tensor, edge_index: Tensor, edge_type: Tensor, edge_weight: Tensor | None = None
    ) -> Aggregated:
        return aggregate_inputs(x, edge_index, edge_type, edge_weight, self.num_relations)

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

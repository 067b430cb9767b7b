"""CAGE's per-query training of its R-GCN encoder, with the gradient written out.

The encoder is one weighted R-GCN layer (``WeightedRGCNConv``), ReLU and a sum over each
graph's nodes; the loss is the mean pairwise cosine similarity of the k graph vectors.
That network is small enough to differentiate by hand, and at k = 10 autograd and
``torch.optim.Adam`` spend more time on bookkeeping for their thousands of tiny operations
than on arithmetic. Written out, with every relation's weight in one tensor and one
fused Adam step per epoch, the same training takes about a third less time
(``benchmarks/cage_speed.py``); the tests check the gradient and the whole trajectory
against autograd and ``torch.optim.Adam``.

Two more savings, both exact: the root transform is computed once per distinct feature
row (the same word in two passages is one row), and the weighted mean of each node's
neighbours per relation, which depends on the inputs alone, is computed once
(``aggregate_inputs``), not every epoch.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor
from torch.optim.adam import adam

from appliance.rerank.relational_layer import Aggregated

NORM_FLOOR = 1e-12  # as torch.nn.functional.normalize


class _Block(NamedTuple):
    """Rows multiplied by one weight, and views of the buffers it reads and writes."""

    inputs: Tensor
    weight: Tensor
    gradient: Tensor
    products: Tensor
    product_gradients: Tensor


class DiversityTraining:
    """One query's graphs as the encoder sees them, and the loss with its gradient.

    ``batch`` gives each node's graph (0..k-1); ``relation_weights`` (one per relation)
    and ``root`` are the layer's initial weights (``glorot_weights``), the bias starts at
    zero, and ``weights``/``bias`` are what training changes.
    """

    def __init__(
        self, aggregated: Aggregated, batch: Tensor, relation_weights: Tensor, root: Tensor
    ) -> None:
        x = aggregated.x
        features = np.ascontiguousarray(x.numpy())
        keys = features.view(np.dtype((np.void, features.itemsize * features.shape[1]))).ravel()
        _keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        self.node_row = torch.from_numpy(inverse.reshape(-1).astype(np.int64))
        self.targets = aggregated.targets
        self.batch = batch
        self.graphs = int(batch.max()) + 1 if batch.numel() else 0
        # The blocks of one matrix product each: the distinct rows (root), then each
        # occurring relation's neighbour means, in the order of ``aggregated.targets``.
        inputs = [x[torch.from_numpy(first)], *aggregated.means]
        self.weights = torch.stack([root, *(relation_weights[r] for r in aggregated.relations)])
        self.hidden = self.weights.size(2)
        self.bias = torch.zeros(self.hidden)
        self._weight_gradient = torch.zeros_like(self.weights)
        total_rows = sum(block.size(0) for block in inputs)
        self._products = torch.empty(total_rows, self.hidden)
        self._product_gradients = torch.empty(total_rows, self.hidden)
        self._distinct = len(first)
        self._blocks: list[_Block] = []
        start = 0
        for number, block in enumerate(inputs):
            end = start + block.size(0)
            self._blocks.append(
                _Block(
                    block,
                    self.weights[number],
                    self._weight_gradient[number],
                    self._products[start:end],
                    self._product_gradients[start:end],
                )
            )
            start = end
        pairs = self.graphs * (self.graphs - 1)
        self._loss_weights = (1.0 - torch.eye(self.graphs)) / max(pairs, 1)

    def pre_activations(self) -> Tensor:
        """The layer's output for every node: root transform, bias, relation messages."""
        for block in self._blocks:
            torch.mm(block.inputs, block.weight, out=block.products)
        out = self._products[: self._distinct].index_select(0, self.node_row).add_(self.bias)
        return out.index_add_(0, self.targets, self._products[self._distinct :])

    def embeddings(self, pre_activations: Tensor) -> tuple[Tensor, Tensor]:
        """Each graph's pooled vector, L2-normalised, and the norm it was divided by."""
        pooled = torch.zeros(self.graphs, self.hidden).index_add_(
            0, self.batch, pre_activations.clamp_min(0)
        )
        norm = pooled.norm(dim=1, keepdim=True)
        return pooled / norm.clamp_min(NORM_FLOOR), norm

    def loss(self) -> Tensor:
        """Mean cosine similarity over ordered pairs i != j."""
        unit, _norm = self.embeddings(self.pre_activations())
        return ((unit @ unit.T) * self._loss_weights).sum()

    def gradients(self) -> tuple[Tensor, Tensor]:
        """d loss / d weights (one block per row of ``weights``) and d loss / d bias.

        The weight gradient is a buffer this object reuses: read it before the next call.
        """
        pre = self.pre_activations()
        unit, norm = self.embeddings(pre)
        # loss = sum_ij L_ij u_i.u_j with L symmetric, so dloss/du = 2 L u; then back
        # through u = z / max(|z|, floor) and z = sum of ReLU over the graph's nodes.
        d_unit = (self._loss_weights @ unit).mul_(2.0)
        radial = (unit * d_unit).sum(dim=1, keepdim=True) * (norm > NORM_FLOOR)
        d_pooled = d_unit.sub_(unit * radial).div_(norm.clamp_min(NORM_FLOOR))
        d_pre = d_pooled[self.batch].mul_(pre > 0)
        root_gradients = self._product_gradients[: self._distinct]
        root_gradients.zero_().index_add_(0, self.node_row, d_pre)
        torch.index_select(d_pre, 0, self.targets, out=self._product_gradients[self._distinct :])
        for block in self._blocks:  # BLAS reads the transpose in place: no copy kept
            torch.mm(block.inputs.t(), block.product_gradients, out=block.gradient)
        return self._weight_gradient, d_pre.sum(dim=0)

    def train(self, epochs: int, learning_rate: float) -> None:
        """Adam (torch's own fused step, defaults as ``torch.optim.Adam``) on the loss."""
        parameters = [self.weights, self.bias]
        first_moments = [torch.zeros_like(p) for p in parameters]
        second_moments = [torch.zeros_like(p) for p in parameters]
        steps = [torch.zeros(()) for _ in parameters]
        for _epoch in range(epochs):
            adam(
                parameters,
                list(self.gradients()),
                first_moments,
                second_moments,
                [],
                steps,
                foreach=False,
                fused=True,
                amsgrad=False,
                beta1=0.9,
                beta2=0.999,
                lr=learning_rate,
                weight_decay=0.0,
                eps=1e-8,
                maximize=False,
            )

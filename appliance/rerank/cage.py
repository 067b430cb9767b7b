"""CAGE: set-level coherence reranking over stored passage graphs.

For the k candidates of one query: each passage graph is encoded by one weighted
R-GCN layer with ReLU and sum pooling into a 128-d vector Z_i. The encoder is trained
on that query's graphs alone (Adam, lr 1e-3, 30-60 epochs, seeded) to minimise the
mean pairwise cosine similarity of the Z_i (a diversity loss). Then

    C_ij = cos(Z_i, Z_j),   s_i = sum_{j != i} C_ij,
    f_i  = alpha * sim(q, passage_i) + (1 - alpha) * s_i / (k - 1)

with sim the first-stage query-passage cosine and alpha = 0.7. Before encoding, nodes
whose out-degree equals the graph's minimum out-degree have their features and their
edges' weights multiplied by beta = 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from appliance.nlp.parse_graph import ENTITY_TYPES, RELATIONS, UPOS, PassageGraph
from appliance.rerank.relational_layer import WeightedRGCNConv


@dataclass(frozen=True, slots=True)
class CageConfig:
    alpha: float = 0.7
    beta: float = 2.0
    epochs: int = 30
    learning_rate: float = 1e-3
    hidden: int = 128
    seed: int = 13
    relational: bool = True  # False: a plain GCN, every edge of one type
    reweight: bool = True  # False: no min-out-degree reweighting

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError("alpha must lie in [0, 1]")
        if self.epochs < 1 or self.hidden < 1 or self.beta <= 0:
            raise ValueError("epochs and hidden must be positive, beta above 0")


@dataclass(frozen=True, slots=True)
class GraphTensors:
    x: torch.Tensor
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    edge_weight: torch.Tensor


def graph_tensors(
    graph: PassageGraph, beta: float, reweight: bool, relational: bool
) -> GraphTensors:
    """Node features [vector | one-hot POS | one-hot entity | weight] and weighted edges."""
    n = max(graph.num_nodes, 1)
    dimension = (
        graph.vectors.shape[1] if graph.vectors.ndim == 2 and graph.vectors.shape[1] else 300
    )
    vectors = np.zeros((n, dimension), dtype=np.float32)
    pos = np.zeros((n, len(UPOS)), dtype=np.float32)
    entity = np.zeros((n, len(ENTITY_TYPES)), dtype=np.float32)
    if graph.num_nodes:
        vectors[: graph.num_nodes] = graph.vectors.astype(np.float32)
        pos[np.arange(graph.num_nodes), graph.pos.astype(np.int64)] = 1.0
        entity[np.arange(graph.num_nodes), graph.entity.astype(np.int64)] = 1.0
    node_weight = np.ones((n, 1), dtype=np.float32)
    edges = graph.edges.astype(np.int64).reshape(-1, 2)
    edge_weight = np.ones(len(edges), dtype=np.float32)
    if reweight and graph.num_nodes:
        out_degree = (
            np.bincount(edges[:, 0], minlength=n) if len(edges) else np.zeros(n, dtype=np.int64)
        )
        lightest = out_degree == out_degree.min()
        node_weight[lightest] *= beta
        if len(edges):
            edge_weight[lightest[edges[:, 0]] | lightest[edges[:, 1]]] *= beta
    features = (
        np.concatenate([vectors, pos, entity, np.ones((n, 1), np.float32)], axis=1) * node_weight
    )
    edge_type = graph.edge_types.astype(np.int64) if relational else np.zeros(len(edges), np.int64)
    return GraphTensors(
        x=torch.from_numpy(features),
        edge_index=torch.from_numpy(edges.T.copy()).reshape(2, -1),
        edge_type=torch.from_numpy(edge_type),
        edge_weight=torch.from_numpy(edge_weight),
    )


class CageReranker:
    """Scores a query's candidates by similarity and set-level coherence."""

    def __init__(self, config: CageConfig | None = None) -> None:
        self.config = config or CageConfig()

    def coherence(self, graphs: Sequence[PassageGraph]) -> np.ndarray:
        """s_i / (k - 1) for each of the k graphs (0 when k < 2)."""
        k = len(graphs)
        if k < 2:
            return np.zeros(k, dtype=np.float32)
        cfg = self.config
        parts = [graph_tensors(g, cfg.beta, cfg.reweight, cfg.relational) for g in graphs]
        offsets = np.cumsum([0] + [p.x.size(0) for p in parts])
        x = torch.cat([p.x for p in parts])
        edge_index = torch.cat(
            [p.edge_index + int(o) for p, o in zip(parts, offsets, strict=False)], dim=1
        )
        edge_type = torch.cat([p.edge_type for p in parts])
        edge_weight = torch.cat([p.edge_weight for p in parts])
        batch = torch.repeat_interleave(torch.arange(k), torch.tensor([p.x.size(0) for p in parts]))
        relations = len(RELATIONS) if cfg.relational else 1
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            encoder = WeightedRGCNConv(x.size(1), cfg.hidden, relations)
        aggregated = encoder.aggregate_inputs(x, edge_index, edge_type, edge_weight)
        optimiser = torch.optim.Adam(encoder.parameters(), lr=cfg.learning_rate, fused=True)
        off_diagonal = 1.0 - torch.eye(k)
        pairs = k * (k - 1)

        def similarities() -> torch.Tensor:
            hidden = encoder.forward_aggregated(aggregated).relu()
            pooled = torch.zeros(k, cfg.hidden).index_add(0, batch, hidden)
            normalised = F.normalize(pooled, dim=1)
            return normalised @ normalised.T

        for _epoch in range(cfg.epochs):
            optimiser.zero_grad()
            # The mean over i != j; a product with the mask, not a boolean index,
            # whose backward is a slow accumulating index_put.
            loss = (similarities() * off_diagonal).sum() / pairs
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            c = similarities()
        s = (c * off_diagonal).sum(dim=1) / (k - 1)
        return s.numpy().astype(np.float32)

    def score(self, query_similarity: np.ndarray, graphs: Sequence[PassageGraph]) -> np.ndarray:
        """f_i = alpha * sim(q, C_i) + (1 - alpha) * s_i / (k - 1)."""
        if len(query_similarity) != len(graphs):
            raise ValueError(f"{len(query_similarity)} similarities for {len(graphs)} graphs")
        alpha = self.config.alpha
        return alpha * np.asarray(query_similarity, np.float32) + (1 - alpha) * self.coherence(
            graphs
        )

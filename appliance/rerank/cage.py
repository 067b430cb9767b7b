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

from appliance.nlp.parse_graph import ENTITY_TYPES, RELATIONS, UPOS, PassageGraph
from appliance.rerank.diversity_training import DiversityTraining
from appliance.rerank.relational_layer import aggregate_inputs, glorot_weights


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
    tensors, _batch = query_tensors([graph], beta, reweight, relational)
    return tensors


def query_tensors(
    graphs: Sequence[PassageGraph], beta: float, reweight: bool, relational: bool
) -> tuple[GraphTensors, torch.Tensor]:
    """The graphs as one disjoint graph (as ``graph_tensors`` makes each), and each
    node's graph. A graph without nodes gets one featureless node."""
    nodes = np.array([max(g.num_nodes, 1) for g in graphs], dtype=np.int64)
    first_node = np.concatenate([[0], np.cumsum(nodes)[:-1]]).astype(np.int64)
    total = int(nodes.sum())
    shaped = [g.vectors for g in graphs if g.num_nodes and g.vectors.ndim == 2]
    dimension = shaped[0].shape[1] if shaped and shaped[0].shape[1] else 300
    vectors = np.zeros((total, dimension), dtype=np.float32)
    pos = np.zeros((total, len(UPOS)), dtype=np.float32)
    entity = np.zeros((total, len(ENTITY_TYPES)), dtype=np.float32)
    real = np.concatenate(
        [np.arange(o, o + g.num_nodes) for g, o in zip(graphs, first_node, strict=True)]
    ).astype(np.int64)
    if len(real):
        present = [g for g in graphs if g.num_nodes]
        vectors[real] = np.concatenate([g.vectors for g in present])
        pos[real, np.concatenate([g.pos for g in present]).astype(np.int64)] = 1.0
        entity[real, np.concatenate([g.entity for g in present]).astype(np.int64)] = 1.0
    edges = np.concatenate(
        [g.edges.reshape(-1, 2) + o for g, o in zip(graphs, first_node, strict=True)]
    ).astype(np.int64)
    edge_type = np.concatenate([g.edge_types for g in graphs]).astype(np.int64)
    node_weight = np.ones((total, 1), dtype=np.float32)
    edge_weight = np.ones(len(edges), dtype=np.float32)
    if reweight:
        out_degree = np.bincount(edges[:, 0], minlength=total)
        lightest = out_degree == np.repeat(np.minimum.reduceat(out_degree, first_node), nodes)
        # a graph without nodes has nothing to reweight
        lightest &= np.repeat([g.num_nodes > 0 for g in graphs], nodes)
        node_weight[lightest] *= beta
        edge_weight[lightest[edges[:, 0]] | lightest[edges[:, 1]]] *= beta
    features = np.concatenate([vectors, pos, entity, node_weight], axis=1)
    features[:, :-1] *= node_weight
    tensors = GraphTensors(
        x=torch.from_numpy(features),
        edge_index=torch.from_numpy(edges.T.copy()),
        edge_type=torch.from_numpy(edge_type if relational else np.zeros_like(edge_type)),
        edge_weight=torch.from_numpy(edge_weight),
    )
    return tensors, torch.from_numpy(np.repeat(np.arange(len(graphs)), nodes))


class CageReranker:
    """Scores a query's candidates by similarity and set-level coherence."""

    def __init__(self, config: CageConfig | None = None) -> None:
        self.config = config or CageConfig()
        self._initial_weights: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def initial_weights(self, in_channels: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's seeded starting weights (relations, root). They depend on the
        configuration and the feature width alone, so they are drawn once, not per query
        (drawing them took about 7 ms of a 97 ms step). Training copies them."""
        if in_channels not in self._initial_weights:
            relations = len(RELATIONS) if self.config.relational else 1
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.config.seed)
                self._initial_weights[in_channels] = glorot_weights(
                    relations, in_channels, self.config.hidden
                )
        return self._initial_weights[in_channels]

    def coherence(self, graphs: Sequence[PassageGraph]) -> np.ndarray:
        """s_i / (k - 1) for each of the k graphs (0 when k < 2)."""
        k = len(graphs)
        if k < 2:
            return np.zeros(k, dtype=np.float32)
        cfg = self.config
        tensors, batch = query_tensors(graphs, cfg.beta, cfg.reweight, cfg.relational)
        relation_weights, root = self.initial_weights(tensors.x.size(1))
        aggregated = aggregate_inputs(
            tensors.x,
            tensors.edge_index,
            tensors.edge_type,
            tensors.edge_weight,
            relation_weights.size(0),
        )
        training = DiversityTraining(aggregated, batch, relation_weights, root)
        training.train(cfg.epochs, cfg.learning_rate)
        unit, _norm = training.embeddings(training.pre_activations())
        c = unit @ unit.T
        off_diagonal = 1.0 - torch.eye(k)
        s = (c * off_diagonal).sum(dim=1) / (k - 1)
        return s.numpy().astype(np.float32)

    def score(self, query_similarity: np.ndarray, graphs: Sequence[PassageGraph]) -> np.ndarray:
        """f_i = alpha * sim(q, C_i) + (1 - alpha) * s_i / (k - 1)."""
        if len(query_similarity) != len(graphs):
            raise ValueError(f"{len(query_similarity)} similarities for {len(graphs)} graphs")
        return self.combine(query_similarity, self.coherence(graphs))

    def combine(self, query_similarity: np.ndarray, coherence: np.ndarray) -> np.ndarray:
        """The formula, once: alpha * sim(q, C_i) + (1 - alpha) * coherence_i."""
        alpha = self.config.alpha
        return alpha * np.asarray(query_similarity, np.float32) + (1 - alpha) * coherence

"""CAGE: reweighting, the scoring formula, and reproducibility."""

import numpy as np
import pytest
import torch

from appliance.nlp.parse_graph import PassageGraph
from appliance.rerank.cage import CageConfig, CageReranker, graph_tensors, query_tensors


def toy_graph(
    edges: list[tuple[int, int]], types: list[int] | None = None, nodes: int = 4
) -> PassageGraph:
    rng = np.random.default_rng(len(edges) + nodes)
    vectors = rng.normal(size=(nodes, 300)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return PassageGraph(
        lemmas=tuple(f"w{i}" for i in range(nodes)),
        pos=np.full(nodes, 7, np.int8),
        entity=np.zeros(nodes, np.int8),
        vectors=vectors.astype(np.float16),
        edges=np.array(edges, np.int32).reshape(-1, 2),
        edge_types=np.array(types or [0] * len(edges), np.int8),
        edge_labels=tuple("" for _ in edges),
    )


def test_min_out_degree_nodes_and_their_edges_are_scaled_by_beta() -> None:
    # out-degrees: node0 2, node1 1, node2 0, node3 0 -> nodes 2 and 3 are the lightest.
    graph = toy_graph([(0, 1), (0, 2), (1, 3)])
    plain = graph_tensors(graph, beta=2.0, reweight=False, relational=True)
    weighted = graph_tensors(graph, beta=2.0, reweight=True, relational=True)
    assert np.allclose(weighted.x[2].numpy(), 2 * plain.x[2].numpy())
    assert np.allclose(weighted.x[3].numpy(), 2 * plain.x[3].numpy())
    assert np.allclose(weighted.x[0].numpy(), plain.x[0].numpy())
    assert weighted.edge_weight.tolist() == [
        1.0,
        2.0,
        2.0,
    ]  # (0,1) untouched; (0,2), (1,3) touch light nodes
    assert plain.x.shape[1] == 300 + 17 + 19 + 1


def test_plain_gcn_puts_every_edge_in_one_relation() -> None:
    graph = toy_graph([(0, 1), (1, 2)], types=[3, 5])
    assert graph_tensors(graph, 2.0, True, relational=False).edge_type.tolist() == [0, 0]
    assert graph_tensors(graph, 2.0, True, relational=True).edge_type.tolist() == [3, 5]


def test_a_query_is_its_graphs_side_by_side() -> None:
    graphs = [toy_graph([(0, 1), (0, 2)], [1, 2]), toy_graph([]), toy_graph([(3, 0)], [4], nodes=5)]
    graphs.insert(1, toy_graph([], nodes=0))  # a passage without content words
    tensors, batch = query_tensors(graphs, beta=2.0, reweight=True, relational=True)
    assert batch.tolist() == [0] * 4 + [1] + [2] * 4 + [3] * 5
    offset = 0
    for number, graph in enumerate(graphs):
        alone = graph_tensors(graph, beta=2.0, reweight=True, relational=True)
        rows = alone.x.size(0)
        assert torch.equal(tensors.x[offset : offset + rows], alone.x)
        mine = (tensors.edge_index[0] >= offset) & (tensors.edge_index[0] < offset + rows)
        assert torch.equal(tensors.edge_index[:, mine] - offset, alone.edge_index)
        assert torch.equal(tensors.edge_weight[mine], alone.edge_weight)
        assert torch.equal(tensors.edge_type[mine], alone.edge_type)
        assert int((batch == number).sum()) == rows
        offset += rows
    assert graph_tensors(graphs[1], 2.0, True, True).x.tolist() == [[0.0] * 336 + [1.0]]


def test_score_is_alpha_mix_of_similarity_and_normalised_coherence() -> None:
    graphs = [
        toy_graph([(0, 1), (1, 2)]),
        toy_graph([(2, 3)]),
        toy_graph([(0, 3), (3, 1), (1, 0)]),
        toy_graph([]),
    ]
    reranker = CageReranker(CageConfig(alpha=0.7, epochs=5))
    similarity = np.array([0.9, 0.2, 0.5, 0.1], np.float32)
    coherence = reranker.coherence(graphs)
    assert coherence.shape == (4,) and np.all(np.abs(coherence) <= 1.0)
    assert np.allclose(
        reranker.score(similarity, graphs), 0.7 * similarity + 0.3 * coherence, atol=1e-6
    )


def test_coherence_is_seeded_and_reproducible() -> None:
    graphs = [toy_graph([(0, 1)]), toy_graph([(1, 2), (2, 3)]), toy_graph([(3, 0)])]
    first = CageReranker(CageConfig(epochs=8, seed=1)).coherence(graphs)
    again = CageReranker(CageConfig(epochs=8, seed=1)).coherence(graphs)
    other = CageReranker(CageConfig(epochs=8, seed=2)).coherence(graphs)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_one_reranker_scores_query_after_query_as_a_fresh_one_would() -> None:
    """The starting weights are drawn once per reranker; no query's training may leave
    its mark on them, and the global generator is left as it was."""
    one = [toy_graph([(0, 1)]), toy_graph([(1, 2), (2, 3)]), toy_graph([(3, 0)])]
    two = [toy_graph([(0, 2), (2, 1)]), toy_graph([(3, 1)])]
    reranker = CageReranker(CageConfig(epochs=8))
    torch.manual_seed(99)
    expected_draw = torch.rand(3)
    torch.manual_seed(99)
    for graphs in (one, two, one, two):
        fresh = CageReranker(CageConfig(epochs=8)).coherence(graphs)
        assert np.array_equal(reranker.coherence(graphs), fresh)
    assert torch.equal(torch.rand(3), expected_draw)


def test_training_lowers_the_mean_pairwise_similarity() -> None:
    graphs = [
        toy_graph([(0, 1), (1, 2)]),
        toy_graph([(1, 2), (2, 3)]),
        toy_graph([(3, 0)]),
        toy_graph([(0, 2)]),
    ]
    untrained = CageReranker(CageConfig(epochs=1, learning_rate=1e-9)).coherence(graphs).mean()
    trained = CageReranker(CageConfig(epochs=60)).coherence(graphs).mean()
    assert trained < untrained


def test_a_single_candidate_has_no_coherence_and_bad_config_is_refused() -> None:
    assert CageReranker().coherence([toy_graph([(0, 1)])]).tolist() == [0.0]
    with pytest.raises(ValueError):
        CageConfig(alpha=1.5)
    with pytest.raises(ValueError):
        CageReranker().score(np.zeros(2), [toy_graph([])])

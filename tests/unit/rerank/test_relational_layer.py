"""The weighted relational layer against PyG's RGCNConv and a dense reference."""

import torch
from torch_geometric.nn import RGCNConv

from appliance.rerank.relational_layer import WeightedRGCNConv


def random_graph(seed: int, nodes: int = 30, edges: int = 90, relations: int = 5):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(nodes, 12, generator=generator)
    edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
    edge_type = torch.randint(0, relations, (edges,), generator=generator)
    return x, edge_index, edge_type


def test_equals_rgcnconv_when_every_weight_is_one() -> None:
    for seed in range(5):
        x, edge_index, edge_type = random_graph(seed)
        reference = RGCNConv(12, 7, num_relations=5)
        ours = WeightedRGCNConv(12, 7, num_relations=5)
        with torch.no_grad():
            for relation, weight in enumerate(ours.relation_weights):
                weight.copy_(reference.weight[relation])
            ours.root.copy_(reference.root)
            ours.bias.copy_(torch.randn(7))
            reference.bias.copy_(ours.bias)
        expected = reference(x, edge_index, edge_type)
        assert torch.allclose(ours(x, edge_index, edge_type), expected, atol=1e-5)
        ones = torch.ones(edge_index.size(1))
        assert torch.allclose(ours(x, edge_index, edge_type, ones), expected, atol=1e-5)


def test_edge_weights_scale_messages_as_the_equation_says() -> None:
    x, edge_index, edge_type = random_graph(11, nodes=8, edges=20, relations=3)
    weights = torch.rand(edge_index.size(1)) * 3
    layer = WeightedRGCNConv(12, 4, num_relations=3)
    expected = x @ layer.root + layer.bias
    for i in range(8):
        for r in range(3):
            incoming = [
                (int(s), float(w))
                for s, t, k, w in zip(*edge_index, edge_type, weights, strict=True)
                if int(t) == i and int(k) == r
            ]
            for source, weight in incoming:
                expected[i] += weight / len(incoming) * (x[source] @ layer.weight[r])
    assert torch.allclose(layer(x, edge_index, edge_type, weights), expected, atol=1e-5)


def test_gradients_flow_through_the_precomputed_path() -> None:
    x, edge_index, edge_type = random_graph(3)
    layer = WeightedRGCNConv(12, 7, num_relations=5)
    aggregated = layer.aggregate_inputs(x, edge_index, edge_type)
    layer.forward_aggregated(aggregated).relu().sum().backward()
    for weight in layer.relation_weights:
        assert weight.grad is not None and float(weight.grad.abs().sum()) > 0
    assert layer.root.grad is not None and float(layer.root.grad.abs().sum()) > 0


def test_a_relation_absent_from_the_graph_gets_no_gradient() -> None:
    x, edge_index, edge_type = random_graph(5, relations=3)  # relations 3 and 4 never occur
    layer = WeightedRGCNConv(12, 7, num_relations=5)
    aggregated = layer.aggregate_inputs(x, edge_index, edge_type)
    assert aggregated.relations == (0, 1, 2)
    layer.forward_aggregated(aggregated).relu().sum().backward()
    assert [weight.grad is None for weight in layer.relation_weights] == [False] * 3 + [True] * 2


def test_a_graph_without_edges_is_its_root_transform() -> None:
    x = torch.randn(4, 12)
    layer = WeightedRGCNConv(12, 7, num_relations=5)
    empty = torch.empty(2, 0, dtype=torch.long)
    out = layer(x, empty, torch.empty(0, dtype=torch.long))
    assert torch.allclose(out, x @ layer.root + layer.bias)


def test_the_same_seed_draws_the_same_weights() -> None:
    torch.manual_seed(7)
    first = WeightedRGCNConv(12, 7, num_relations=5)
    torch.manual_seed(7)
    second = WeightedRGCNConv(12, 7, num_relations=5)
    assert torch.equal(first.weight, second.weight) and torch.equal(first.root, second.root)
    assert first.weight.shape == (5, 12, 7)

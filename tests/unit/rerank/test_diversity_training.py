"""CAGE's written-out training against autograd and torch.optim.Adam."""

import pytest
import torch
import torch.nn.functional as F

from appliance.rerank.diversity_training import DiversityTraining
from appliance.rerank.relational_layer import WeightedRGCNConv, aggregate_inputs, glorot_weights

RELATIONS = 5
WIDTH = 12
HIDDEN = 6


def query(seed: int, graphs: int = 4, nodes: int = 9, edges: int = 20):
    """``graphs`` random graphs as one, some feature rows repeated across graphs (as the
    same word in two passages is), edge weights 1 or 2, relation 4 never used."""
    generator = torch.Generator().manual_seed(seed)
    words = torch.randn(nodes, WIDTH, generator=generator)
    x = torch.cat([words[torch.randperm(nodes, generator=generator)] for _ in range(graphs)])
    x[torch.randint(0, len(x), (len(x) // 3,), generator=generator)] *= 2.0
    sources, targets = [], []
    for graph in range(graphs):
        sources.append(torch.randint(0, nodes, (edges,), generator=generator) + graph * nodes)
        targets.append(torch.randint(0, nodes, (edges,), generator=generator) + graph * nodes)
    edge_index = torch.stack([torch.cat(sources), torch.cat(targets)])
    edge_type = torch.randint(0, RELATIONS - 1, (edge_index.size(1),), generator=generator)
    edge_weight = torch.randint(1, 3, (edge_index.size(1),), generator=generator).float()
    batch = torch.arange(graphs).repeat_interleave(nodes)
    return x, edge_index, edge_type, edge_weight, batch


def reference_layer(relation_weights: torch.Tensor, root: torch.Tensor) -> WeightedRGCNConv:
    layer = WeightedRGCNConv(WIDTH, HIDDEN, RELATIONS)
    with torch.no_grad():
        for parameter, values in zip(layer.relation_weights, relation_weights, strict=True):
            parameter.copy_(values)
        layer.root.copy_(root)
    return layer


def reference_loss(layer: WeightedRGCNConv, x, edge_index, edge_type, edge_weight, batch):
    """The loss as autograd sees it: the layer, ReLU, sum pooling, mean pairwise cosine."""
    graphs = int(batch.max()) + 1
    hidden = layer(x, edge_index, edge_type, edge_weight).relu()
    unit = F.normalize(torch.zeros(graphs, HIDDEN).index_add(0, batch, hidden), dim=1)
    off_diagonal = 1.0 - torch.eye(graphs)
    return (unit @ unit.T * off_diagonal).sum() / (graphs * (graphs - 1))


def weights(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    return glorot_weights(RELATIONS, WIDTH, HIDDEN)


def training_for(seed: int) -> tuple[DiversityTraining, WeightedRGCNConv, tuple]:
    inputs = query(seed)
    x, edge_index, edge_type, edge_weight, batch = inputs
    relation_weights, root = weights(seed)
    aggregated = aggregate_inputs(x, edge_index, edge_type, edge_weight, RELATIONS)
    training = DiversityTraining(aggregated, batch, relation_weights, root)
    return training, reference_layer(relation_weights, root), inputs


@pytest.mark.parametrize("seed", range(3))
def test_pre_activations_are_the_layers_output(seed: int) -> None:
    training, layer, (x, edge_index, edge_type, edge_weight, _batch) = training_for(seed)
    expected = layer(x, edge_index, edge_type, edge_weight)
    assert torch.allclose(training.pre_activations(), expected, atol=1e-5)
    # the repeated rows were computed once
    assert training._distinct < x.size(0)


@pytest.mark.parametrize("seed", range(3))
def test_written_out_gradient_equals_autograd(seed: int) -> None:
    training, layer, inputs = training_for(seed)
    loss = reference_loss(layer, *inputs)
    loss.backward()
    assert torch.allclose(training.loss(), loss.detach(), atol=1e-6)
    weight_gradient, bias_gradient = training.gradients()
    assert torch.allclose(weight_gradient[0], layer.root.grad, atol=1e-6)
    for block, relation in enumerate(sorted(set(inputs[2].tolist())), start=1):
        assert torch.allclose(
            weight_gradient[block], layer.relation_weights[relation].grad, atol=1e-6
        )
    assert torch.allclose(bias_gradient, layer.bias.grad, atol=1e-6)
    assert layer.relation_weights[RELATIONS - 1].grad is None  # the unused relation
    assert len(weight_gradient) == RELATIONS  # root and the four relations used


def test_training_follows_torch_adam_step_for_step() -> None:
    training, layer, inputs = training_for(7)
    optimiser = torch.optim.Adam(layer.parameters(), lr=1e-2)
    for _epoch in range(40):
        optimiser.zero_grad()
        reference_loss(layer, *inputs).backward()
        optimiser.step()
    before = training.loss()
    training.train(epochs=40, learning_rate=1e-2)
    assert training.loss() < before - 0.01  # it did train
    assert torch.allclose(training.weights[0], layer.root.detach(), atol=1e-5)
    for block, relation in enumerate(range(RELATIONS - 1), start=1):
        assert torch.allclose(
            training.weights[block], layer.relation_weights[relation].detach(), atol=1e-5
        )
    assert torch.allclose(training.bias, layer.bias.detach(), atol=1e-5)


def test_a_graph_pooled_to_zero_has_the_gradient_autograd_gives() -> None:
    x, edge_index, edge_type, edge_weight, batch = query(3)
    x = x * 100.0
    x[batch == 0] = 0.0  # graph 0: every node's output is the bias, all negative
    relation_weights, root = weights(3)
    aggregated = aggregate_inputs(x, edge_index, edge_type, edge_weight, RELATIONS)
    training = DiversityTraining(aggregated, batch, relation_weights, root)
    layer = reference_layer(relation_weights, root)
    with torch.no_grad():
        training.bias.fill_(-0.5)
        layer.bias.fill_(-0.5)
    _unit, norm = training.embeddings(training.pre_activations())
    assert float(norm[0]) == 0.0 and float(norm[1:].min()) > 0.0
    reference_loss(layer, x, edge_index, edge_type, edge_weight, batch).backward()
    weight_gradient, bias_gradient = training.gradients()
    assert torch.allclose(weight_gradient[0], layer.root.grad, atol=1e-6)
    assert torch.allclose(bias_gradient, layer.bias.grad, atol=1e-6)

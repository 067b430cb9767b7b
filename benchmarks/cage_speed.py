"""CAGE's step for one query (k = 10 stored graphs), written-out training against autograd.

For the first N questions of each multi-hop pool file (../shared/data/multihop): the 10
passages MiniLM ranks highest, their parse graphs from the rerank benchmark's graph cache
in the data directory (parsed on the first run), and the CAGE coherence of those 10
computed twice, alternating per question: the baseline trains the same weighted R-GCN
with autograd and ``torch.optim.Adam`` (how the project did it before), ours is
``CageReranker`` (``appliance/rerank/diversity_training.py``). Same seed, same graphs; the
figures are per-query latency and how far apart the two results are.

    .venv/bin/python benchmarks/cage_speed.py [--questions 60] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from rerank_bench.harness import GraphCache
from rich.console import Console
from rich.table import Table

from appliance.cli.common import open_appliance
from appliance.nlp.parse_graph import RELATIONS, ParseGraphBuilder, PassageGraph
from appliance.rerank.cage import CageConfig, CageReranker, query_tensors
from appliance.rerank.relational_layer import WeightedRGCNConv
from appliance.settings import PROJECT_ROOT
from appliance.training.pools import read_pools

MULTIHOP = PROJECT_ROOT.parent / "shared" / "data" / "multihop"
FILES = ("hotpotqa.dev", "2wikimultihopqa.dev", "musique.dev")
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "cage_speed.json"
K = 10
console = Console()


def autograd_coherence(graphs: list[PassageGraph], config: CageConfig) -> np.ndarray:
    """The baseline: the layer, autograd and torch.optim.Adam (fused), epoch by epoch."""
    k = len(graphs)
    tensors, batch = query_tensors(graphs, config.beta, config.reweight, config.relational)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        layer = WeightedRGCNConv(tensors.x.size(1), config.hidden, len(RELATIONS))
    aggregated = layer.aggregate_inputs(
        tensors.x, tensors.edge_index, tensors.edge_type, tensors.edge_weight
    )
    optimiser = torch.optim.Adam(layer.parameters(), lr=config.learning_rate, fused=True)
    off_diagonal = 1.0 - torch.eye(k)

    def similarities() -> torch.Tensor:
        hidden = layer.forward_aggregated(aggregated).relu()
        unit = F.normalize(torch.zeros(k, config.hidden).index_add(0, batch, hidden), dim=1)
        return unit @ unit.T

    for _epoch in range(config.epochs):
        optimiser.zero_grad()
        ((similarities() * off_diagonal).sum() / (k * (k - 1))).backward()
        optimiser.step()
    with torch.no_grad():
        return ((similarities() * off_diagonal).sum(dim=1) / (k - 1)).numpy()


def query_sets(questions: int) -> list[list[PassageGraph]]:
    sets = []
    with open_appliance() as appliance:
        builder = ParseGraphBuilder(appliance.registry.load("spacy-vectors"))
        cache = GraphCache(appliance.settings.data_dir / "cache" / "pool-graphs.sqlite3", builder)
        for name in FILES:
            for question in read_pools(MULTIHOP / f"{name}.jsonl", questions):
                texts = [p.full_text for p in question.passages]
                vectors = appliance.embedder.embed([question.question, *texts])
                top = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")[:K]
                sets.append(cache.graphs([texts[i] for i in top]))
    return sets


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=60, help="questions per pool file")
    parser.add_argument("--rounds", type=int, default=3, help="passes over all questions")
    args = parser.parse_args()
    console.print(f"loading graphs for {args.questions} questions of {len(FILES)} files ...")
    sets = query_sets(args.questions)
    config = CageConfig()
    ours = CageReranker(config)
    timings: dict[str, list[float]] = {"autograd + torch.optim.Adam": [], "written out (ours)": []}
    largest_difference = 0.0
    orders_differ = 0
    for _round in range(args.rounds):
        for graphs in sets:
            started = time.perf_counter()
            expected = autograd_coherence(graphs, config)
            timings["autograd + torch.optim.Adam"].append((time.perf_counter() - started) * 1e3)
            started = time.perf_counter()
            got = ours.coherence(graphs)
            timings["written out (ours)"].append((time.perf_counter() - started) * 1e3)
            largest_difference = max(largest_difference, float(np.abs(got - expected).max()))
            orders_differ += not np.array_equal(
                np.argsort(-got, kind="stable"), np.argsort(-expected, kind="stable")
            )
    nodes = [sum(g.num_nodes for g in graphs) for graphs in sets]
    table = Table(title=f"CAGE step, k = {K}, {config.epochs} epochs, {len(sets)} queries")
    for column in ("method", "p50 ms", "p95 ms"):
        table.add_column(column)
    figures: dict[str, object] = {}
    for method, samples in timings.items():
        p50, p95 = percentiles(samples)
        table.add_row(method, f"{p50:.1f}", f"{p95:.1f}")
        figures[method] = {"p50_ms": round(p50, 1), "p95_ms": round(p95, 1)}
    console.print(table)
    comparisons = len(sets) * args.rounds
    console.print(
        f"largest coherence difference {largest_difference:.2e}; "
        f"coherence order differs in {orders_differ} of {comparisons}; "
        f"median nodes per query {statistics.median(nodes):.0f}"
    )
    RESULTS.write_text(
        json.dumps(
            {
                "command": "benchmarks/cage_speed.py "
                f"--questions {args.questions} --rounds {args.rounds}",
                "date": time.strftime("%Y-%m-%d"),
                "queries": len(sets),
                "torch_threads": torch.get_num_threads(),
                "median_nodes": statistics.median(nodes),
                "methods": figures,
                "largest_coherence_difference": largest_difference,
                "orders_differ": orders_differ,
                "comparisons": comparisons,
            },
            indent=2,
        )
        + "\n"
    )
    console.print(f"wrote {Path(RESULTS).relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()

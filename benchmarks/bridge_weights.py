"""The entity chain's design and weight, chosen on the training pools only.

``chain_selection`` (benchmarks/rerank_bench/bridge.py) adds ``weight * links[i, j] * score_i``
to a passage that names an entity of an already chosen passage i. Too little and the
third and fourth hops of a MuSiQue question stay buried; too much and any passage that
shares a name with the first hop jumps ahead of the one the question asks for. Two
designs: the chain over the hybrid bridge's scores (title links first, from the three
strongest passages, then entity links), and one chain over the hybrid first stage whose
links are title or entity links alike. This script scores every weight of both on the
public training pools (../shared/data/rerank_train: HotpotQA, MuSiQue, 2Wiki; the dev
sets of the rerank benchmark are never read), weight 0 of the first being the hybrid
bridge alone, and picks the design and weight with the best Recall@5 averaged over the
three sets.

    .venv/bin/python benchmarks/bridge_weights.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rerank_bench.bridge import (
    bridge_scores,
    hybrid_first_stage,
)
from rerank_bench.harness import bm25_ranking
from rich.console import Console
from rich.table import Table

from appliance.cli.common import open_appliance
from appliance.rerank.chain import chain_selection, entity_links, title_and_entity_links
from appliance.settings import PROJECT_ROOT
from appliance.training.pools import read_pools

SHARED = PROJECT_ROOT.parent / "shared" / "data"
POOLS = {n: SHARED / "rerank_train" / f"{n}.train.jsonl" for n in ("hotpotqa", "musique", "2wikimultihopqa")}  # fmt: skip
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "bridge_weights.json"
WEIGHTS = (0.0, 0.1, 0.2, 0.25, 0.35, 0.45, 0.55, 0.7, 1.0)
DESIGNS = ("hybrid bridge, then entity chain", "first stage, one title-or-entity chain")
console = Console()


def recall_at_5(scores: np.ndarray, gold: set[int]) -> float:
    top = {int(i) for i in np.argsort(-scores, kind="stable")[:5]}
    return len(gold & top) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    recall: dict[str, dict[str, dict[float, float]]] = {d: {} for d in DESIGNS}
    with open_appliance() as appliance:
        for name, path in POOLS.items():
            per_weight = {(d, w): [] for d in DESIGNS for w in WEIGHTS}
            questions = read_pools(path)
            for question in questions:
                texts = [p.full_text for p in question.passages]
                vectors = appliance.embedder.embed([question.question, *texts])
                first = hybrid_first_stage(
                    vectors[1:] @ vectors[0],
                    bm25_ranking(question),
                    question.question,
                    question.passages,
                )
                starts = {
                    DESIGNS[0]: (
                        bridge_scores(first, question.passages),
                        entity_links(question.question, texts),
                    ),
                    DESIGNS[1]: (
                        first,
                        title_and_entity_links(question.question, question.passages, texts),
                    ),
                }
                for design, (scores, links) in starts.items():
                    for weight in WEIGHTS:
                        chained = chain_selection(scores, links, weight)
                        per_weight[design, weight].append(recall_at_5(chained, question.gold))
            for (design, weight), values in per_weight.items():
                recall[design].setdefault(name, {})[weight] = 100.0 * float(np.mean(values))
            console.print(f"{name}: {len(questions)} training questions scored")
    mean = {
        (d, w): float(np.mean([recall[d][n][w] for n in POOLS])) for d in DESIGNS for w in WEIGHTS
    }
    chosen = max(mean, key=lambda key: (round(mean[key], 6), -DESIGNS.index(key[0]), -key[1]))
    for design in DESIGNS:
        table = Table(title=f"Recall@5 on the training pools: {design}")
        for column in ("weight", *POOLS, "mean"):
            table.add_column(column, justify="right")
        for weight in WEIGHTS:
            mark = " (chosen)" if (design, weight) == chosen else ""
            cells = [f"{recall[design][n][weight]:.1f}" for n in POOLS]
            table.add_row(f"{weight}{mark}", *cells, f"{mean[design, weight]:.2f}")
        console.print(table)
    record = {
        "command": "benchmarks/bridge_weights.py",
        "pools": {n: str(p.relative_to(SHARED.parent)) for n, p in POOLS.items()},
        "recall_at_5": {
            design: {
                n: {str(w): round(r, 2) for w, r in rows.items()} for n, rows in by_pool.items()
            }
            for design, by_pool in recall.items()
        },
        "mean": {d: {str(w): round(mean[d, w], 2) for w in WEIGHTS} for d in DESIGNS},
        "chosen": {"design": chosen[0], "weight": chosen[1]},
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    console.print(f"chosen: {chosen[0]}, weight {chosen[1]}; written to {args.out}")


if __name__ == "__main__":
    main()

"""The entity-chain weight, chosen on the training pools only.

``chain_selection`` (appliance/rerank/bridge.py) adds ``weight * links[i, j] * score_i``
to a passage that names an entity of an already chosen passage i. Too little and the
third and fourth hops of a MuSiQue question stay buried; too much and any passage that
shares a name with the first hop jumps ahead of the one the question asks for. This
script scores every weight on the public training pools (../shared/data/rerank_train:
HotpotQA, MuSiQue, 2Wiki; the dev sets of the rerank benchmark are never read) over the
hybrid bridge's scores, weight 0 being the hybrid bridge alone, and picks the weight
with the best Recall@5 averaged over the three sets.

    .venv/bin/python benchmarks/bridge_weights.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from appliance.cli_common import open_appliance
from appliance.eval.pools import read_pools
from appliance.eval.rerank_bench import bm25_ranking
from appliance.rerank.bridge import (
    bridge_scores,
    chain_selection,
    entity_links,
    hybrid_first_stage,
)
from appliance.settings import PROJECT_ROOT

SHARED = PROJECT_ROOT.parent / "shared" / "data"
POOLS = {n: SHARED / "rerank_train" / f"{n}.train.jsonl" for n in ("hotpotqa", "musique", "2wikimultihopqa")}  # fmt: skip
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "bridge_weights.json"
WEIGHTS = (0.0, 0.1, 0.2, 0.25, 0.35, 0.5, 0.7, 1.0)
console = Console()


def recall_at_5(scores: np.ndarray, gold: set[int]) -> float:
    top = {int(i) for i in np.argsort(-scores, kind="stable")[:5]}
    return len(gold & top) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    recall: dict[str, dict[float, float]] = {}
    with open_appliance() as appliance:
        for name, path in POOLS.items():
            per_weight: dict[float, list[float]] = {w: [] for w in WEIGHTS}
            for question in read_pools(path):
                texts = [p.full_text for p in question.passages]
                vectors = appliance.embedder.embed([question.question, *texts])
                first = hybrid_first_stage(
                    vectors[1:] @ vectors[0],
                    bm25_ranking(question),
                    question.question,
                    question.passages,
                )
                hybrid = bridge_scores(first, question.passages)
                links = entity_links(question.question, texts)
                for weight in WEIGHTS:
                    chained = chain_selection(hybrid, links, weight)
                    per_weight[weight].append(recall_at_5(chained, question.gold))
            recall[name] = {w: 100.0 * float(np.mean(v)) for w, v in per_weight.items()}
            console.print(f"{name}: {len(per_weight[0.0])} training questions scored")
    mean = {w: float(np.mean([recall[n][w] for n in POOLS])) for w in WEIGHTS}
    chosen = max(WEIGHTS, key=lambda w: (round(mean[w], 6), -w))
    table = Table(title="Recall@5 on the training pools, hybrid bridge + entity chain")
    for column in ("weight", *POOLS, "mean"):
        table.add_column(column, justify="right")
    for weight in WEIGHTS:
        mark = " (chosen)" if weight == chosen else ""
        cells = [f"{recall[n][weight]:.1f}" for n in POOLS]
        table.add_row(f"{weight}{mark}", *cells, f"{mean[weight]:.2f}")
    console.print(table)
    record = {
        "command": "benchmarks/bridge_weights.py",
        "pools": {n: str(p.relative_to(SHARED.parent)) for n, p in POOLS.items()},
        "recall_at_5": {
            n: {str(w): round(r, 2) for w, r in rows.items()} for n, rows in recall.items()
        },
        "mean": {str(w): round(m, 2) for w, m in mean.items()},
        "chosen_weight": chosen,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    console.print(f"chosen weight {chosen}; written to {args.out}")


if __name__ == "__main__":
    main()

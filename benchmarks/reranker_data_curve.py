"""What more training data would buy the cross-encoder: held-out figures by training share.

``appliance models train-reranker`` has 669 public multi-hop training questions and the
SciFact training claims. This trains the same cross-encoder (MiniLM-L6 from the registry,
the command's defaults) on a seeded share of the training questions, with the very split
and held-out pairs the command draws, and reports per share the held-out Recall@2 (best
epoch) and the calibrated threshold's F1. How the figures rise from a quarter to all of
the data says what more would buy. Models go to a temporary folder and are deleted.

    .venv/bin/python benchmarks/reranker_data_curve.py [--shares 0.25 0.5 1.0]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from appliance.cli.common import open_appliance
from appliance.settings import PROJECT_ROOT
from appliance.training.cross_encoder import CrossEncoderTrainer, training_and_held_out

SHARED = PROJECT_ROOT.parent / "shared" / "data"
POOLS = [SHARED / "rerank_train" / f"{n}.train.jsonl" for n in ("hotpotqa", "musique", "2wikimultihopqa")]  # fmt: skip
SCIFACT = (SHARED / "scifact" / "claims_train.jsonl", SHARED / "scifact" / "corpus.jsonl")
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "trained-reranker" / "data_curve.json"
SEED = 13  # train-reranker's default
console = Console()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    if not all(0.0 < share <= 1.0 for share in args.shares):
        parser.error("every share must lie in (0, 1]")
    training, held = training_and_held_out(POOLS, *SCIFACT, negatives=6, held_out=0.15, seed=SEED)
    groups = sorted({pair.group for pair in training})
    random.Random(SEED).shuffle(groups)
    rows = []
    with open_appliance() as appliance, tempfile.TemporaryDirectory() as scratch:
        base = appliance.registry.resolve(appliance.settings.embedder_role).directory
        for share in sorted(args.shares):
            kept = set(groups[: max(1, round(share * len(groups)))])
            subset = [pair for pair in training if pair.group in kept]
            console.print(f"share {share}: {len(kept)} questions, {len(subset)} pairs ...")
            started = time.perf_counter()
            report = CrossEncoderTrainer(base, seed=SEED).train(
                subset, held, Path(scratch) / f"share-{share}", provenance={}
            )
            rows.append(
                {
                    "share": share,
                    "questions": len(kept),
                    "pairs": len(subset),
                    "held_out_recall_at_2_by_epoch": [round(r, 3) for r in report.by_epoch],
                    "best_held_out_recall_at_2": round(max(report.by_epoch), 3),
                    "threshold": round(report.threshold, 3),
                    "threshold_f1": round(report.threshold_score, 3),
                    "minutes": round((time.perf_counter() - started) / 60, 1),
                }
            )
    table = Table(title=f"cross-encoder by training share; {len(held)} held-out pairs")
    for column in ("share", "questions", "pairs", "held-out R@2", "threshold F1", "minutes"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            str(row["share"]),
            str(row["questions"]),
            str(row["pairs"]),
            f"{row['best_held_out_recall_at_2']:.3f}",
            f"{row['threshold_f1']:.3f}",
            str(row["minutes"]),
        )
    console.print(table)
    shares = " ".join(str(s) for s in args.shares)
    args.out.write_text(
        json.dumps(
            {
                "command": f"benchmarks/reranker_data_curve.py --shares {shares}",
                "date": time.strftime("%Y-%m-%d"),
                "held_out_pairs": len(held),
                "shares": rows,
            },
            indent=2,
        )
        + "\n"
    )
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

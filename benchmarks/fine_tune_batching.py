"""Fine-tuning batches: shuffled at random against batches of like length, side by side.

A batch is padded to its longest pair, so a few long pairs scattered through every
batch make every batch long. On the cross-encoder's own training pairs (the command in
``benchmarks/results/trained-reranker/training.json``: the public multi-hop training pools
and SciFact training claims, never evaluation files), for both ways of batching: the
padded tokens per batch over a whole epoch (tokenizer only), and the seconds that the
first ``--steps`` real optimiser steps of ``CrossEncoderTrainer`` take (MiniLM-L6 from the
registry, batch 16, at most 256 tokens).

Speed is not the whole story: a full ``train-reranker`` run with length-bucketed batches
reached held-out Recall@2 0.705 against 0.803 with random batches, so the cross-encoder's
trainer keeps random batches. Batches of like length mix less: 18% of them hold pairs of
one source only (none of the random ones do), and their share of positives varies more.

    .venv/bin/python benchmarks/fine_tune_batching.py [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from appliance.cli.common import open_appliance
from appliance.settings import PROJECT_ROOT
from appliance.training.cross_encoder import (
    CrossEncoderTrainer,
    Pair,
    pool_pairs,
    scifact_pairs,
)
from appliance.training.loop import (
    autocast,
    length_bucketed_batches,
    optimiser_and_schedule,
    random_batches,
    update,
)

SHARED = PROJECT_ROOT.parent / "shared" / "data"
POOLS = [SHARED / "rerank_train" / f"{n}.train.jsonl" for n in ("hotpotqa", "musique", "2wikimultihopqa")]  # fmt: skip
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "fine_tune_batching.json"
BATCH = 16
console = Console()


def shuffled_batches(pairs: list[Pair], rng: random.Random) -> list[list[Pair]]:
    """The baseline, as ``train-reranker`` draws its batches."""
    return random_batches(pairs, BATCH, rng)


def pair_characters(pair: Pair) -> int:
    return len(pair.question) + len(pair.passage)


def bucketed_batches(pairs: list[Pair], rng: random.Random) -> list[list[Pair]]:
    """As the verifier's training batches (``length_bucketed_batches``)."""
    return length_bucketed_batches(pairs, pair_characters, BATCH, rng)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="timed optimiser steps per method")
    args = parser.parse_args()
    rng = random.Random(13)
    pairs = [pair for path in POOLS for pair in pool_pairs(path, 6, rng, None)]
    pairs += scifact_pairs(SHARED / "scifact" / "claims_train.jsonl", SHARED / "scifact" / "corpus.jsonl", 2, rng)  # fmt: skip
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    with open_appliance() as appliance:
        base = appliance.registry.resolve(appliance.settings.embedder_role).directory
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    trainer = CrossEncoderTrainer(base, max_length=256)
    methods = {"random batches": shuffled_batches, "length-bucketed (ours)": bucketed_batches}
    figures: dict[str, dict[str, float]] = {}
    for name, batching in methods.items():
        batches = batching(pairs, random.Random(13))
        padded = [trainer._encode(tokenizer, batch)["input_ids"].numel() for batch in batches]
        torch.manual_seed(13)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(base), num_labels=1, local_files_only=True
        )
        model.train()
        optimiser, schedule = optimiser_and_schedule(model, 3e-5, len(batches))
        loss_fn = torch.nn.BCEWithLogitsLoss()
        started = time.perf_counter()
        for batch in batches[: args.steps]:
            with autocast():
                logits = model(**trainer._encode(tokenizer, batch)).logits[:, 0]
            loss = loss_fn(logits.float(), torch.tensor([p.label for p in batch]))
            update(model, loss, optimiser, schedule)
        seconds = time.perf_counter() - started
        figures[name] = {
            "padded_tokens_per_batch": round(float(np.mean(padded)), 1),
            "seconds_per_step": round(seconds / args.steps, 3),
            "estimated_epoch_minutes": round(seconds / args.steps * len(batches) / 60, 1),
        }
    table = Table(title=f"cross-encoder fine-tuning, {len(pairs)} pairs, batch {BATCH}")
    for column in ("batching", "padded tokens / batch", "s / step", "epoch (est.) min"):
        table.add_column(column)
    for name, row in figures.items():
        table.add_row(name, *(str(v) for v in row.values()))
    console.print(table)
    RESULTS.write_text(
        json.dumps(
            {"command": f"benchmarks/fine_tune_batching.py --steps {args.steps}",
             "date": time.strftime("%Y-%m-%d"), "pairs": len(pairs),
             "torch_threads": torch.get_num_threads(), "methods": figures},
            indent=2,
        ) + "\n"
    )  # fmt: skip
    console.print(f"wrote {RESULTS.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()

"""`appliance models train-verifier` with random batches instead of batches of pairs of
like length: the control for what length-bucketing does to the verifier's accuracy
(it cost the cross-encoder 10 points of held-out Recall@2; see the README).

Takes train-verifier's own arguments; the one change is the batching, swapped in for
this run only. Then measure with ``benchmarks/verifier.py --out``:

    APPLIANCE_DATA_DIR=/tmp/verifier-random .venv/bin/python \\
        benchmarks/verifier_random_batches.py models train-verifier --data ... --contrast ...
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeVar

import appliance.verify.train_verifier as train_verifier
from appliance.cli import app

Item = TypeVar("Item")


def random_batches(
    items: Sequence[Item], _length: Callable[[Item], int], batch_size: int, rng: random.Random
) -> list[list[Item]]:
    """Shuffled batches of ``batch_size``, lengths mixed, as ``train-reranker`` draws them."""
    order = list(items)
    rng.shuffle(order)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


if __name__ == "__main__":
    train_verifier.length_bucketed_batches = random_batches  # type: ignore[assignment]
    app()

"""`appliance models train-verifier` with random batches instead of batches of pairs of
like length: the control for what length-bucketing does to the verifier's accuracy
(it cost the cross-encoder 10 points of held-out Recall@2; see docs/figures.md).

Takes train-verifier's own arguments; the one change is the batching, swapped in for
this run only. Then measure with ``benchmarks/verifier.py --out``:

    APPLIANCE_DATA_DIR=/tmp/verifier-random .venv/bin/python \\
        benchmarks/verifier_random_batches.py models train-verifier --data ... --contrast ...
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TypeVar

import appliance.training.nli_verifier as nli_verifier
from appliance.cli import app
from appliance.training.loop import random_batches

Item = TypeVar("Item")


def unbucketed(
    items: Sequence[Item], _length: Callable[[Item], int], batch_size: int, rng: random.Random
) -> list[list[Item]]:
    """``length_bucketed_batches``'s signature, lengths ignored."""
    return random_batches(items, batch_size, rng)


if __name__ == "__main__":
    nli_verifier.length_bucketed_batches = unbucketed  # type: ignore[assignment]
    app()

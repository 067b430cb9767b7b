"""What every fine-tuning run here shares: AdamW with linear warm-up and decay, one
clipped optimiser step, and bfloat16 autocast on CPUs that have it."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

from appliance.nlp.embedder import cpu_has_native_bfloat16


def optimiser_and_schedule(
    model: Any, learning_rate: float, steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW; the rate rises over the first tenth of ``steps``, then falls to zero."""
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
    warm_up = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda step: min(1.0, (step + 1) / warm_up) * max(0.0, 1 - step / max(1, steps)),
    )
    return optimiser, schedule


Item = TypeVar("Item")


def random_batches(items: Sequence[Item], batch_size: int, rng: random.Random) -> list[list[Item]]:
    """Shuffled, then cut into batches: lengths mixed, as ``train-reranker`` trains."""
    order = list(items)
    rng.shuffle(order)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def length_bucketed_batches(
    items: Sequence[Item], length: Callable[[Item], int], batch_size: int, rng: random.Random
) -> list[list[Item]]:
    """Shuffled batches of items of like length: each batch is padded to its longest
    item, so a few long pairs scattered through every batch would make all of them long.
    Items are shuffled, sorted by length within windows of 50 batches, cut, and the
    batches shuffled again, so the order stays random from epoch to epoch."""
    order = list(items)
    rng.shuffle(order)
    window = batch_size * 50
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=length)
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def update(
    model: Any,
    loss: torch.Tensor,
    optimiser: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LambdaLR,
) -> None:
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimiser.step()
    schedule.step()
    optimiser.zero_grad()


def autocast() -> torch.autocast:
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_native_bfloat16())

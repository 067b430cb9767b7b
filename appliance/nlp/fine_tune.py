"""What every fine-tuning run here shares: AdamW with linear warm-up and decay, one
clipped optimiser step, and bfloat16 autocast on CPUs that have it."""

from __future__ import annotations

from typing import Any

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

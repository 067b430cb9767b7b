"""The one training loop of the site's pair classifiers (the cross-encoder reranker and
the NLI verifier), and what every fine-tuning run shares: AdamW with linear warm-up and
decay, one clipped optimiser step, and bfloat16 autocast on CPUs that have it.

A pair classifier reads two texts and gives logits. ``PairClassifierTrainer.train`` loads
the starting weights, runs the epochs, keeps the epoch with the best held-out metric,
calibrates a threshold on the held-out pairs, and saves the model with a
``training.json``. A subclass says only what differs: how a pair becomes two texts and a
target, its loss, its batches, its held-out metric and how its threshold is chosen
(PyG's ``MessagePassing`` hooks are the model).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
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
    batches: list[list[Item]] = []
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


@dataclass(frozen=True, slots=True)
class TrainingReport:
    """What a training run measured, under the names of what it measured."""

    directory: Path
    pairs_train: int
    pairs_held_out: int
    best_epoch: int
    metric: str
    """The held-out metric that chose the epoch, e.g. ``recall_at_2`` or ``accuracy``."""
    by_epoch: list[float]
    threshold: float
    threshold_metric: str
    """What the threshold maximised on held-out pairs, e.g. ``f1`` or ``f0_5``."""
    threshold_score: float


Pair = TypeVar("Pair")


class PairClassifierTrainer(Generic[Pair]):
    """Fine-tunes a sequence classifier on pairs of texts; subclasses fill in the hooks."""

    metric: ClassVar[str]
    threshold_metric: ClassVar[str]
    predict_batch_size: ClassVar[int] = 32
    truncation: ClassVar[str] = "longest_first"
    defaults: ClassVar[dict[str, float]]
    """This classifier's recipe: epochs, batch_size, learning_rate, max_length."""

    def __init__(
        self,
        base_model: Path,
        *,
        epochs: int | None = None,
        batch_size: int | None = None,
        learning_rate: float | None = None,
        max_length: int | None = None,
        seed: int = 13,
    ) -> None:
        """Hyperparameters left out take the recipe's value (``defaults``)."""
        self.base_model = base_model
        self.epochs = int(self.defaults["epochs"] if epochs is None else epochs)
        self.batch_size = int(self.defaults["batch_size"] if batch_size is None else batch_size)
        self.learning_rate = float(
            self.defaults["learning_rate"] if learning_rate is None else learning_rate
        )
        self.max_length = int(self.defaults["max_length"] if max_length is None else max_length)
        self.seed = seed

    # The hooks.
    def model_options(self) -> dict[str, Any]:
        """Keyword arguments of ``from_pretrained`` that shape the classifier's head."""
        raise NotImplementedError

    def texts(self, pair: Pair) -> tuple[str, str]:
        raise NotImplementedError

    def batches(self, pairs: Sequence[Pair], rng: random.Random) -> list[list[Pair]]:
        return random_batches(pairs, self.batch_size, rng)

    def loss(self, logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
        raise NotImplementedError

    def scores(self, logits: torch.Tensor) -> np.ndarray:
        """What the held-out metric and the threshold read from a batch's logits."""
        raise NotImplementedError

    def held_out_metric(self, pairs: Sequence[Pair], scores: np.ndarray) -> float:
        raise NotImplementedError

    def calibrate(self, pairs: Sequence[Pair], scores: np.ndarray) -> tuple[float, float]:
        """The threshold and the score it reached on the held-out pairs."""
        raise NotImplementedError

    def report_extras(self, train: Sequence[Pair]) -> dict[str, object]:
        return {}

    # The loop.
    def train(
        self,
        train: Sequence[Pair],
        held_out: Sequence[Pair],
        out: Path,
        provenance: dict[str, str],
        progress: Callable[[int, int], None] | None = None,
    ) -> TrainingReport:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()
        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        tokenizer = AutoTokenizer.from_pretrained(str(self.base_model), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(self.base_model), local_files_only=True, **self.model_options()
        )
        steps = self.epochs * ((len(train) + self.batch_size - 1) // self.batch_size)
        optimiser, schedule = optimiser_and_schedule(model, self.learning_rate, steps)
        done, history, best_state, best_epoch = 0, [], None, 0
        best_scores = np.zeros(0)
        for epoch in range(1, self.epochs + 1):
            model.train()
            for batch in self.batches(train, rng):
                with autocast():
                    logits = model(**self._encode(tokenizer, batch)).logits
                update(model, self.loss(logits.float(), batch), optimiser, schedule)
                done += 1
                if progress is not None:
                    progress(done, steps)
            scores = self._predict(tokenizer, model, held_out)
            history.append(self.held_out_metric(held_out, scores))
            if history[-1] >= max(history):
                best_state, best_epoch = copy.deepcopy(model.state_dict()), epoch
                best_scores = scores
        assert best_state is not None
        model.load_state_dict(best_state)
        threshold, threshold_score = self.calibrate(held_out, best_scores)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
        report = TrainingReport(
            out, len(train), len(held_out), best_epoch, self.metric, history, threshold,
            self.threshold_metric, threshold_score,
        )  # fmt: skip
        (out / "training.json").write_text(
            json.dumps({**provenance, "best_epoch": best_epoch,
                        f"held_out_{self.metric}": history, "threshold": threshold,
                        f"threshold_{self.threshold_metric}": threshold_score,
                        "pairs_train": len(train), "pairs_held_out": len(held_out),
                        **self.report_extras(train)}, indent=2) + "\n",
            encoding="utf-8",
        )  # fmt: skip
        return report

    def _encode(self, tokenizer: Any, pairs: Sequence[Pair]) -> Any:
        firsts, seconds = zip(*(self.texts(p) for p in pairs), strict=True)
        return tokenizer(
            list(firsts),
            list(seconds),
            truncation=self.truncation,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )

    def _predict(self, tokenizer: Any, model: Any, pairs: Sequence[Pair]) -> np.ndarray:
        model.eval()
        scores = []
        with torch.inference_mode():
            for start in range(0, len(pairs), self.predict_batch_size):
                batch = pairs[start : start + self.predict_batch_size]
                scores.append(self.scores(model(**self._encode(tokenizer, batch)).logits.float()))
        return np.concatenate(scores) if scores else np.zeros(0)

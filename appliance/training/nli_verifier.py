"""Fine-tunes the NLI verifier from the shipped MiniLM-L6 weights on public NLI pairs.

Three labels (entailment, neutral, contradiction), balanced by down-sampling the larger
ones (the science sets have no contradictions). Tokenised text (SNLI test as e-SNLI
holds it) is detokenised. A tenth of the pairs is held out to choose the epoch and to
calibrate the entailment threshold for precision (F0.5: a wrongly kept sentence costs
more than a wrongly dropped one). SciFact dev claims, the evaluation, are refused.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from appliance.training.loop import PairClassifierTrainer, length_bucketed_batches

LABELS = ("entailment", "neutral", "contradiction")
EVALUATION_FILES = ("claims_dev.jsonl",)


@dataclass(frozen=True, slots=True)
class NliPair:
    premise: str
    hypothesis: str
    label: str
    source: str  # the file it came from, e.g. "scifact.train.jsonl"


def detokenise(text: str) -> str:
    """Undo PTB tokenisation ("ca n't" -> "can't", " ." -> ".", `` '' -> quotes)."""
    text = text.replace("`` ", '"').replace(" ''", '"').replace("``", '"').replace("''", '"')
    text = text.replace("-LRB- ", "(").replace(" -RRB-", ")")
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    text = re.sub(r" ([.,!?;:%)\]])", r"\1", text)
    text = re.sub(r"([(\[$]) ", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def read_nli(paths: Sequence[Path]) -> list[NliPair]:
    pairs = []
    for path in paths:
        if path.name in EVALUATION_FILES:
            raise ValueError(f"{path} is the SciFact evaluation; the verifier never trains on it")
        for line in path.open(encoding="utf-8"):
            row = json.loads(line)
            if row["label"] not in LABELS:
                continue
            premise, hypothesis = row["premise"], row["hypothesis"]
            if row.get("tokenized"):
                premise, hypothesis = detokenise(premise), detokenise(hypothesis)
            pairs.append(NliPair(premise, hypothesis, row["label"], path.name))
    return pairs


def balance(pairs: Sequence[NliPair], per_label: int | None, rng: random.Random) -> list[NliPair]:
    """As many pairs of each label as the rarest label has (or ``per_label``)."""
    by_label = {label: [p for p in pairs if p.label == label] for label in LABELS}
    size = min(len(v) for v in by_label.values())
    if per_label is not None:
        size = min(size, per_label)
    chosen = [p for label in LABELS for p in rng.sample(by_label[label], size)]
    rng.shuffle(chosen)
    return chosen


def parse_repeats(specs: Sequence[str]) -> dict[str, int]:
    """``["scifact.train.jsonl=4"]`` -> ``{"scifact.train.jsonl": 4}``."""
    repeats = {}
    for spec in specs:
        name, _, times = spec.partition("=")
        if not name or not times.isdigit() or int(times) < 1:
            raise ValueError(
                f"--repeat {spec!r}: write FILE_NAME=TIMES, for example scifact.train.jsonl=4"
            )
        repeats[name] = int(times)
    return repeats


def repeat_in_domain(pairs: Sequence[NliPair], repeats: dict[str, int]) -> list[NliPair]:
    """Training pairs from the named files, seen ``times`` times per epoch: the few
    in-domain pairs (SciFact's claims against their abstracts) weigh more than the many
    general ones. Applied after the held-out split, so held-out pairs are never repeated."""
    return [p for p in pairs for _ in range(repeats.get(p.source, 1))]


def best_entailment_threshold(
    probabilities: np.ndarray, entailed: np.ndarray
) -> tuple[float, float]:
    """The P(entailment) threshold with the best F0.5 on held-out pairs."""
    best = (0.5, 0.0)
    for threshold in np.linspace(0.3, 0.95, 27):
        predicted = probabilities >= threshold
        tp = float(np.sum(predicted & entailed))
        precision = tp / max(1.0, float(predicted.sum()))
        recall = tp / max(1.0, float(entailed.sum()))
        score = 1.25 * precision * recall / (0.25 * precision + recall) if tp else 0.0
        if score > best[1]:
            best = (float(threshold), score)
    return best


class VerifierTrainer(PairClassifierTrainer[NliPair]):
    """Three labels per (premise, hypothesis), trained with cross-entropy in batches of
    like length; the epoch with the best held-out accuracy is kept, and the entailment
    threshold with the best F0.5."""

    defaults: ClassVar[dict[str, float]] = {
        "epochs": 1,
        "batch_size": 32,
        "learning_rate": 4e-5,
        "max_length": 128,
    }
    metric = "accuracy"
    threshold_metric = "f0_5"
    predict_batch_size = 64

    def model_options(self) -> dict[str, Any]:
        return {
            "num_labels": len(LABELS),
            "id2label": dict(enumerate(LABELS)),
            "label2id": {label: i for i, label in enumerate(LABELS)},
        }

    def texts(self, pair: NliPair) -> tuple[str, str]:
        return pair.premise, pair.hypothesis

    def batches(self, pairs: Sequence[NliPair], rng: random.Random) -> list[list[NliPair]]:
        return length_bucketed_batches(pairs, _characters, self.batch_size, rng)

    def loss(self, logits: torch.Tensor, batch: Sequence[NliPair]) -> torch.Tensor:
        targets = torch.tensor([LABELS.index(p.label) for p in batch])
        return torch.nn.functional.cross_entropy(logits, targets)

    def scores(self, logits: torch.Tensor) -> np.ndarray:
        return torch.softmax(logits, dim=-1).numpy()

    def held_out_metric(self, pairs: Sequence[NliPair], scores: np.ndarray) -> float:
        return float(np.mean(scores.argmax(1) == [LABELS.index(p.label) for p in pairs]))

    def calibrate(self, pairs: Sequence[NliPair], scores: np.ndarray) -> tuple[float, float]:
        entailed = np.array([p.label == "entailment" for p in pairs])
        return best_entailment_threshold(scores[:, 0], entailed)

    def report_extras(self, train: Sequence[NliPair]) -> dict[str, object]:
        return {"labels_train": dict(Counter(p.label for p in train))}


def _characters(pair: NliPair) -> int:
    """A pair's length in characters: a cheap stand-in for its length in tokens."""
    return len(pair.premise) + len(pair.hypothesis)

"""Fine-tunes the NLI verifier from the shipped MiniLM-L6 weights on public NLI pairs.

Three labels (entailment, neutral, contradiction), balanced by down-sampling the larger
ones (the science sets have no contradictions). Tokenised text (SNLI test as e-SNLI
holds it) is detokenised. A tenth of the pairs is held out to choose the epoch and to
calibrate the entailment threshold for precision (F0.5: a wrongly kept sentence costs
more than a wrongly dropped one). SciFact dev claims, the evaluation, are refused.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from appliance.nlp.fine_tune import (
    autocast,
    length_bucketed_batches,
    optimiser_and_schedule,
    update,
)
from appliance.rerank.train_cross_encoder import TrainingReport

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


class VerifierTrainer:
    def __init__(
        self,
        base_model: Path,
        *,
        epochs: int = 1,
        batch_size: int = 32,
        learning_rate: float = 4e-5,
        max_length: int = 128,
        seed: int = 13,
    ) -> None:
        self.base_model = base_model
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_length = max_length
        self.seed = seed

    def train(
        self,
        train: Sequence[NliPair],
        held_out: Sequence[NliPair],
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
            str(self.base_model),
            num_labels=len(LABELS),
            id2label=dict(enumerate(LABELS)),
            label2id={label: i for i, label in enumerate(LABELS)},
            local_files_only=True,
        )
        steps = self.epochs * ((len(train) + self.batch_size - 1) // self.batch_size)
        optimiser, schedule = optimiser_and_schedule(model, self.learning_rate, steps)
        loss_fn = torch.nn.CrossEntropyLoss()
        done, history, best_state, best_epoch = 0, [], None, 0
        best_probabilities = np.zeros((0, len(LABELS)))
        for epoch in range(1, self.epochs + 1):
            model.train()
            for batch in length_bucketed_batches(train, _characters, self.batch_size, rng):
                with autocast():
                    logits = model(**self._encode(tokenizer, batch)).logits
                targets = torch.tensor([LABELS.index(p.label) for p in batch])
                update(model, loss_fn(logits.float(), targets), optimiser, schedule)
                done += 1
                if progress is not None:
                    progress(done, steps)
            probabilities = self._predict(tokenizer, model, held_out)
            accuracy = float(
                np.mean(probabilities.argmax(1) == [LABELS.index(p.label) for p in held_out])
            )
            history.append(accuracy)
            if accuracy >= max(history):
                best_state, best_epoch = copy.deepcopy(model.state_dict()), epoch
                best_probabilities = probabilities
        assert best_state is not None
        model.load_state_dict(best_state)
        entailed = np.array([p.label == "entailment" for p in held_out])
        threshold, f_half = best_entailment_threshold(best_probabilities[:, 0], entailed)
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
        counts = Counter(p.label for p in train)
        (out / "training.json").write_text(
            json.dumps({**provenance, "best_epoch": best_epoch, "held_out_accuracy": history,
                        "threshold": threshold, "threshold_f0_5": f_half,
                        "pairs_train": len(train), "pairs_held_out": len(held_out),
                        "labels_train": dict(counts)}, indent=2) + "\n",
            encoding="utf-8",
        )  # fmt: skip
        return TrainingReport(
            out, len(train), len(held_out), best_epoch, history, threshold, f_half
        )

    def _encode(self, tokenizer, pairs: Sequence[NliPair]):  # type: ignore[no-untyped-def]
        return tokenizer(
            [p.premise for p in pairs],
            [p.hypothesis for p in pairs],
            truncation="longest_first",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )

    def _predict(self, tokenizer, model, pairs: Sequence[NliPair]) -> np.ndarray:  # type: ignore[no-untyped-def]
        model.eval()
        out = []
        with torch.inference_mode():
            for start in range(0, len(pairs), 64):
                logits = model(**self._encode(tokenizer, pairs[start : start + 64])).logits
                out.append(torch.softmax(logits.float(), dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, len(LABELS)))


def _characters(pair: NliPair) -> int:
    """A pair's length in characters: a cheap stand-in for its length in tokens."""
    return len(pair.premise) + len(pair.hypothesis)

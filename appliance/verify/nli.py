"""The NLI verifier: a sequence-classification model (entailment / neutral /
contradiction) from the registry, role ``verifier``: one a bundle supplies, or the one
``appliance models train-verifier`` fine-tunes from the shipped MiniLM-L6 weights."""

from __future__ import annotations

import numpy as np
import torch

from appliance.nlp.pair_classifier import LoadedPairClassifier
from appliance.verify.base import Entailment


class NliVerifier:
    kind = "nli"

    def __init__(
        self, loaded: LoadedPairClassifier, name: str, threshold: float, max_length: int = 256
    ) -> None:
        self._tokenizer = loaded.tokenizer
        self._model = loaded.model
        self.name = name
        self.threshold = threshold
        self._max_length = max_length
        labels = {str(v).lower(): int(k) for k, v in self._model.config.id2label.items()}
        if "entailment" not in labels:
            raise ValueError(f"{name} has no 'entailment' label (labels: {sorted(labels)})")
        self._labels = labels

    def probabilities(self, premises: list[str], hypotheses: list[str]) -> np.ndarray:
        """Rows of P(label) for each pair, columns in the model's label order."""
        out = []
        with torch.inference_mode():
            for start in range(0, len(premises), 32):
                encoded = self._tokenizer(
                    premises[start : start + 32],
                    hypotheses[start : start + 32],
                    truncation="longest_first",
                    max_length=self._max_length,
                    padding=True,
                    return_tensors="pt",
                )
                out.append(torch.softmax(self._model(**encoded).logits.float(), dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self._labels)))

    def label_index(self, label: str) -> int:
        return self._labels[label]

    def check(self, evidence: str, sentence: str) -> Entailment:
        row = self.probabilities([evidence], [sentence])[0]
        score = float(row[self._labels["entailment"]])
        reasons = tuple(f"P({label}) = {row[i]:.2f}" for label, i in sorted(self._labels.items()))
        return Entailment(score, score >= self.threshold, reasons)

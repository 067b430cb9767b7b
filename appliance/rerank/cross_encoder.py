"""Cross-encoder reranking: question and passage read together by one transformer.

Any Hugging Face sequence-classification directory with one output (a BGE reranker
from a model bundle, or one trained here by ``appliance models train-reranker``)
loads through the model registry under the role ``reranker``. Scores are logits;
``probability`` maps them through a sigmoid so that a calibrated threshold can say
"nothing here is relevant".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from appliance.nlp.pair_classifier import LoadedPairClassifier


class CrossEncoderReranker:
    def __init__(
        self,
        loaded: LoadedPairClassifier,
        threshold: float | None = None,
        max_length: int = 256,
        batch_size: int = 16,
    ) -> None:
        self._tokenizer = loaded.tokenizer
        self._model = loaded.model
        self.threshold = threshold
        self._max_length = max_length
        self._batch_size = batch_size

    def scores(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One logit per passage: higher means more relevant to the question."""
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for start in range(0, len(passages), self._batch_size):
                batch = list(passages[start : start + self._batch_size])
                encoded = self._tokenizer(
                    [question] * len(batch),
                    batch,
                    truncation="only_second",
                    max_length=self._max_length,
                    padding=True,
                    return_tensors="pt",
                )
                logits = self._model(**encoded).logits
                out.append(logits[:, 0].float().numpy())
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    @staticmethod
    def probability(logits: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.asarray(logits, dtype=np.float64)))

"""A pair classifier as the registry loads it: a tokenizer and a sequence-classification
transformer that read two texts together. The cross-encoder reranker (one logit) and
the NLI verifier (three labels) are both one; this is the loader they share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class LoadedPairClassifier:
    tokenizer: Any
    model: Any


def load_pair_classifier(directory: Path) -> LoadedPairClassifier:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(directory), local_files_only=True
    )
    # Models the product carries are stored in half precision (half the size); the CPU
    # computes in single precision.
    model.float().eval()
    return LoadedPairClassifier(tokenizer, model)

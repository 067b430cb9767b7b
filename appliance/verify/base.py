"""The entailment verifier interface: does a cited passage support a sentence?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Entailment:
    score: float
    """0 to 1: how strongly the evidence supports the sentence."""
    entailed: bool
    """``score`` at or above the verifier's calibrated threshold."""
    reasons: tuple[str, ...] = ()


class EntailmentVerifier(Protocol):
    name: str
    kind: str
    """``nli`` for a trained model, ``lexical-fallback`` for the rule-based fallback."""

    def check(self, evidence: str, sentence: str) -> Entailment: ...

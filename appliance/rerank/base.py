"""The contract every rerank stage keeps, so that the query path runs any list of them.

A stage reorders the candidates fusion found (all of them, or its top ``candidates``,
the rest keeping their places) and writes its score into each candidate's ``scores``
under its ``name``, for the audit. It describes itself as data (``to_dict``), so that
each question's record says which stages, with which settings, ranked its passages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from appliance.records import Candidate


@dataclass(frozen=True, slots=True)
class RerankQuery:
    """What a stage may read of the question: its text, and its embedding when the
    search made one (a stage that needs it says so with ``needs_vector``)."""

    text: str
    vector: np.ndarray | None


class RerankStage(Protocol):
    name: str
    """The key of this stage's score in ``Candidate.scores``."""
    needs_vector: bool
    """True when ``rerank`` reads ``query.vector``: the search then embeds the question."""

    @property
    def relevance_threshold(self) -> float | None:
        """The calibrated score below which a candidate does not answer the question;
        None for a stage whose scores are not calibrated."""
        ...

    @property
    def description(self) -> str:
        """One line for reports, e.g. ``CAGE (top 10, alpha 0.7, 30 epochs)``."""
        ...

    def to_dict(self) -> dict[str, object]:
        """The stage's name and every setting that changes its order."""
        ...

    def rerank(self, query: RerankQuery, candidates: list[Candidate]) -> list[Candidate]: ...

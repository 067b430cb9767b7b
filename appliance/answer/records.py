"""The answer as it leaves the answer path: shown on the page, printed by ``appliance
ask``, returned by the API, scored by the release gate. One ``to_dict`` serves them all."""

from __future__ import annotations

from dataclasses import dataclass, field

from appliance.generate.base import ShortAnswer
from appliance.records import Conflict, Refusal, Source, VerifiedSentence


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    request_id: str
    sentences: tuple[VerifiedSentence, ...]
    refusal: Refusal | None
    """Why the documents do not answer (None for an answer)."""
    closest_sources: tuple[Source, ...]
    generator: str
    verifier: str
    audit_entry: int
    decision: ShortAnswer | None = None
    """The short answer to a yes/no question, as the generator read the sentences that
    survived verification; None for any other question and for a refusal."""
    scope: str | None = None
    """Whom the cited passages cover, shown above the answer ("For adults")."""
    read_as: str | None = None
    """The question as the appliance read it, when that differs from what was asked."""
    unanswered_parts: tuple[str, ...] = ()
    """Parts of a question that asks several things which no kept sentence answers."""
    conflicts: tuple[Conflict, ...] = ()
    """Documents among the answer's passages that disagree about what it cites."""
    follows: str | None = None
    """The previous question of the conversation when this one was read as its
    follow-up (``read_as`` then says how)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds each step took (search, gates, generation, verification), for monitoring;
    recorded in the audit entry, not shown."""

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    @property
    def refusal_reason(self) -> str | None:
        return None if self.refusal is None else self.refusal.reason

    def to_dict(self) -> dict[str, object]:
        return {
            "request_id": self.request_id,
            "question": self.question,
            "refused": self.refused,
            "refusal": self.refusal_reason,
            "refusal_code": None if self.refusal is None else self.refusal.code,
            "decision": self.decision,
            "scope": self.scope,
            "read_as": self.read_as,
            "unanswered_parts": list(self.unanswered_parts),
            "conflicts": [conflict.to_dict() for conflict in self.conflicts],
            "follows": self.follows,
            "sentences": [sentence.to_dict() for sentence in self.sentences],
            "closest_sources": [source.to_dict() for source in self.closest_sources],
            "generator": self.generator,
            "verifier": self.verifier,
            "audit_entry": self.audit_entry,
        }

"""What the appliance writes to the audit log, in one place: questions with every
candidate's scores and access decision, answers with every check of every citation,
ingestions and removals, people signing in and opening documents, and access events
(policy changes, break-the-glass, filter/enforcer disagreements).

Each method returns only once its entry is on disk (the log fsyncs before answering).
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Sequence
from typing import Any

from appliance.access.events import AccessEvent
from appliance.access.rules import Subject
from appliance.answer.records import Answer
from appliance.index.filters import describe
from appliance.query import Question, SearchResult, pipeline_hash
from appliance.records import DocumentMetadata
from audit.log import AuditLog, Receipt


class AuditTrail:
    def __init__(
        self,
        log: AuditLog,
        models: dict[str, str],
        pipeline: Callable[[], dict[str, object]] | None = None,
    ) -> None:
        self._log = log
        self._models = models
        """Role -> model name of every model that can touch an answer, for each record."""
        self._describe_pipeline = pipeline
        self._pipeline: dict[str, object] | None = None

    def _pipeline_fields(self) -> dict[str, object]:
        """The pipeline that ranks and gates answers, with its hash: described once, on
        the first question (the settings do not change while the appliance is open)."""
        if self._describe_pipeline is None:
            return {}
        if self._pipeline is None:
            description = self._describe_pipeline()
            self._pipeline = {"pipeline": description, "pipeline_hash": pipeline_hash(description)}
        return self._pipeline

    # -- access events (the EventSink of appliance.access) ----------------------------

    def emit(self, event: AccessEvent) -> None:
        self._log.append(
            event.kind, event.actor, list(event.roles), {"at": event.at, **event.details},
            event.request_id,
        )  # fmt: skip

    # -- people: signing in and out, opening documents, reviewing the log ---------------

    def signed_in(self, user: str, roles: Sequence[str], method: str, request_id: str) -> Receipt:
        return self._log.append("sign_in", user, list(roles), {"method": method}, request_id)

    def sign_in_failed(self, attempted_user: str, method: str, request_id: str) -> Receipt:
        """Who tried is not known: the name typed is kept (cut short: it may be a
        password typed in the wrong box), the actor is nobody."""
        return self._log.append(
            "sign_in_failed", "anonymous", [],
            {"method": method, "attempted_user": attempted_user[:64]}, request_id,
        )  # fmt: skip

    def signed_out(self, user: str, roles: Sequence[str], method: str, request_id: str) -> Receipt:
        return self._log.append("sign_out", user, list(roles), {"method": method}, request_id)

    def document_viewed(
        self,
        user: str,
        roles: Sequence[str],
        metadata: DocumentMetadata,
        why: str,
        request_id: str,
        *,
        grant_id: int | None = None,
        cited_in: str | None = None,
    ) -> Receipt:
        """A person opened a document: ``why`` is ``citation`` (from an answer, with the
        answer's request id), ``direct`` or ``break-the-glass`` (readable only through an
        emergency grant)."""
        details: dict[str, object] = {
            "doc_id": metadata.doc_id,
            "version": metadata.version,
            "why": why,
            "sensitivity": metadata.sensitivity,
        }
        if metadata.patient_id:
            details["patient_id"] = metadata.patient_id
        if grant_id is not None:
            details["break_glass_grant"] = grant_id
        if cited_in:
            details["cited_in"] = cited_in
        return self._log.append("document_view", user, list(roles), details, request_id)

    def audit_reviewed(
        self, user: str, roles: Sequence[str], action: str, details: dict[str, object],
        request_id: str,
    ) -> Receipt:  # fmt: skip
        return self._log.append(
            "audit_review", user, list(roles), {"action": action, **details}, request_id
        )

    # -- questions ----------------------------------------------------------------------

    def answer(self, subject: Subject, answer: Answer, trace: dict[str, object]) -> Receipt:
        """The answer or refusal as shown, after what each step of the answer path saw
        (``trace``: the readings, relevance, gates, generator output, every citation
        check, answer-time access drops)."""
        shown = answer.to_dict()
        record = {
            **trace,
            "decision": answer.decision,
            "scope": answer.scope,
            "unanswered_parts": list(answer.unanswered_parts),
            "sentences": shown["sentences"],
            "refusal": answer.refusal_reason,
            "refusal_code": shown["refusal_code"],
            "closest_sources": shown["closest_sources"],
        }
        if pipeline := self._pipeline_fields():
            record["pipeline_hash"] = pipeline["pipeline_hash"]
        return self._log.append(
            "answer", subject.user_id, list(subject.roles), record, answer.request_id
        )

    def question(self, question: Question, result: SearchResult, mode: str) -> Receipt:
        """What was searched for whom, under which filters, and every candidate with its
        ranks, scores and access decision."""
        subject = result.scope.subject
        grant = result.scope.grant
        candidates = [
            {
                "chunk_id": c.chunk.chunk_id,
                "doc_id": c.chunk.doc_id,
                "version": c.chunk.metadata.version,
                "retrievers": {n: {"rank": h.rank, "score": h.score} for n, h in c.hits.items()},
                "fused": c.fused_score,
                "stages": dict(c.scores),
                "access": "allowed (break-the-glass)" if c.break_glass else "allowed",
            }
            for c in result.candidates
        ] + [
            {"chunk_id": chunk_id, "access": "denied: returned by the engines, refused by policy"}
            for chunk_id in result.screened_out
        ]
        return self._log.append(
            "question",
            subject.user_id,
            list(subject.roles),
            {
                "query": question.text,
                **({"searched_as": result.searched_as} if result.searched_as else {}),
                "mode": mode,
                "filters": {
                    "access": describe(result.scope.search_filter),
                    "requested": describe(question.search_filter),
                    "applied": describe(result.applied_filter),
                },
                "candidates": candidates,
                "break_glass_grant": None if grant is None else grant.grant_id,
                "policy_version": result.scope.policy_version,
                "models": self._models,
                **self._pipeline_fields(),
            },
            question.request_id,
        )

    def feedback(
        self,
        subject: Subject,
        answer_request: str,
        kind: str,
        comment: str,
        question: str,
        documents: Sequence[dict[str, str]],
        request_id: str,
    ) -> Receipt:
        """A clinician's flag on an answer (wrong, unsafe, unhelpful), with the question
        and the documents it cited and their owners, so that the compliance office and
        each document's owner find it."""
        return self._log.append(
            "feedback", subject.user_id, list(subject.roles),
            {"answer_request": answer_request, "kind": kind, "comment": comment,
             "query": question, "documents": list(documents)},
            request_id,
        )  # fmt: skip

    def break_glass_reviewed(
        self, officer: Subject, grant_id: int, note: str, request_id: str
    ) -> Receipt:
        """A compliance officer reviewed one emergency access (its reason and what it
        showed), with their note."""
        return self._log.append(
            "break_glass_reviewed", officer.user_id, list(officer.roles),
            {"grant_id": grant_id, "note": note}, request_id,
        )  # fmt: skip

    # -- documents ----------------------------------------------------------------------

    def ingested(
        self, metadata: DocumentMetadata, chunk_ids: Sequence[str], actor: str | None = None
    ) -> Receipt:
        return self._log.append(
            "ingestion",
            actor or _operator(),
            [],
            {
                "doc_id": metadata.doc_id,
                "version": metadata.version,
                "chunk_ids": list(chunk_ids),
                "sensitivity": metadata.sensitivity,
                "departments": list(metadata.departments),
            },
        )

    def removed(self, doc_id: str, actor: str | None = None) -> Receipt:
        return self._log.append("removal", actor or _operator(), [], {"doc_id": doc_id})


def shown_answer(record: dict[str, Any], position: int) -> dict[str, Any]:
    """The answer as it was shown, rebuilt from its audit record (``record``: the entry's
    details; ``position``: the entry's place in the log), so that a past question reopens
    its answer exactly, without being asked again."""
    understood = record.get("understood") or {}
    assert isinstance(understood, dict)
    asked = str(record["query"])
    read_as = understood.get("read_as")
    verifier = record.get("verifier") or {}
    assert isinstance(verifier, dict)
    return {
        "request_id": record.get("question_request"),
        "question": asked,
        "refused": record.get("refusal") is not None,
        "refusal": record.get("refusal"),
        "refusal_code": record.get("refusal_code"),
        "decision": record.get("decision"),
        "scope": record.get("scope"),
        "read_as": read_as if read_as and read_as != asked.strip() else None,
        "unanswered_parts": record.get("unanswered_parts") or [],
        "conflicts": record.get("conflicts") or [],
        "follows": understood.get("follows"),
        "sentences": record.get("sentences") or [],
        "closest_sources": record.get("closest_sources") or [],
        "generator": record.get("generator") or "",
        "verifier": verifier.get("name") or "",
        "audit_entry": position,
    }


def _operator() -> str:
    """Who runs ingestion from the command line: the operating-system account."""
    return f"os:{getpass.getuser()}"

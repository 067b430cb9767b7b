"""Sources that disagree, found among the passages an answer was written from.

Two documents may state incompatible facts about the same drug and condition: one
doses it differently, or one gives it where the other says it must not be given or is
not for that condition. An answer that cites one of them must show the other beside it,
with which prevails and why, never a merged figure. Statements come from the fact
finder the knowledge graph uses (``nlp.clinical_facts``): from the graph when one runs,
else read from the passages at answer time.

Not a conflict: two passages of one document, two versions of one document (the
in-force filter already chose), or passages written for different populations.

Precedence: the document with the wider authority (trust over department over ward;
``DocumentMetadata.standing``), then the one in force from the later date. When both
are level, no rule decides, and the answer says so.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Protocol

from appliance.index.base import GraphIndex
from appliance.index.filters import SearchFilter
from appliance.records import (
    AUTHORITY_RANK,
    RELATION_DETAILS,
    Chunk,
    ChunkFacts,
    Conflict,
    ConflictingSource,
    Relation,
    Scope,
    Source,
)

_GIVEN = frozenset({"DOSE_OF", "TREATS"})
"""Statements that the drug is given for the condition."""
_WITHHELD = frozenset({"CONTRAINDICATED_WITH", "NOT_INDICATED_FOR"})
"""Statements that it must not be, or is not for it."""
_ABOUT_DRUGS = _GIVEN | _WITHHELD
_BREAKS = (". ", "\n", "; ")


@dataclass(frozen=True, slots=True)
class Statements:
    """What one passage states: its relations, and the populations and conditions it
    says it applies to (empty when it does not say)."""

    relations: tuple[Relation, ...]
    applies_to: frozenset[str]


def _applies_to(scopes: Iterable[Scope]) -> frozenset[str]:
    return frozenset(s.target for s in scopes if s.kind == "APPLIES_TO")


class StatementReader(Protocol):
    def statements(
        self, chunks: Sequence[Chunk], search_filter: SearchFilter | None = None
    ) -> dict[str, Statements]:
        """Chunk id -> what that chunk states."""


class FactFinder(Protocol):
    def extract(self, chunks: Sequence[Chunk]) -> list[ChunkFacts]: ...


class ExtractedStatements:
    """Read from the passages themselves, when there is no knowledge graph. A chunk id
    names its text (the chunker hashes it), so what a passage states is read once and
    kept for the next question that finds it; each passage is read alone, so what it
    states never depends on the passages it came with."""

    def __init__(self, facts: FactFinder, remembered: int = 4096) -> None:
        self._facts = facts
        self._remembered = remembered
        self._known: OrderedDict[str, Statements] = OrderedDict()
        self._lock = threading.Lock()

    def statements(
        self, chunks: Sequence[Chunk], search_filter: SearchFilter | None = None
    ) -> dict[str, Statements]:
        found: dict[str, Statements] = {}
        for chunk in chunks:
            with self._lock:
                known = self._known.get(chunk.chunk_id)
                if known is not None:
                    self._known.move_to_end(chunk.chunk_id)
            if known is None:
                [facts] = self._facts.extract([chunk])
                known = Statements(facts.relations, _applies_to(facts.scopes))
                with self._lock:
                    self._known[chunk.chunk_id] = known
                    while len(self._known) > self._remembered:
                        self._known.popitem(last=False)
            found[chunk.chunk_id] = known
        return found


class GraphStatements:
    """Read from the knowledge graph, which holds what ingestion found in each chunk."""

    def __init__(self, graph: GraphIndex) -> None:
        self._graph = graph

    def statements(
        self, chunks: Sequence[Chunk], search_filter: SearchFilter | None = None
    ) -> dict[str, Statements]:
        ids = [c.chunk_id for c in chunks]
        relations = self._graph.relations_of(ids, search_filter)
        scopes = self._graph.scopes_of(ids, search_filter)
        return {
            chunk_id: Statements(
                tuple(relations.get(chunk_id, ())), _applies_to(scopes.get(chunk_id, ()))
            )
            for chunk_id in ids
        }


class ConflictFinder:
    def __init__(self, reader: StatementReader) -> None:
        self._reader = reader

    def among(
        self,
        chunks: Sequence[Chunk],
        relied_on: set[str],
        search_filter: SearchFilter | None = None,
    ) -> list[Conflict]:
        """The disagreements among ``chunks`` that involve a chunk in ``relied_on``
        (the passages the answer cites)."""
        if len({c.doc_id for c in chunks}) < 2:
            return []
        statements = self._reader.statements(chunks, search_filter)
        return find_conflicts(chunks, statements, relied_on)


def find_conflicts(
    chunks: Sequence[Chunk], statements: Mapping[str, Statements], relied_on: set[str]
) -> list[Conflict]:
    said: dict[tuple[str, str], list[tuple[Chunk, Relation]]] = {}
    for chunk in chunks:
        found = statements.get(chunk.chunk_id)
        for relation in found.relations if found is not None else ():
            if relation.kind in _ABOUT_DRUGS:
                said.setdefault((relation.source, relation.target), []).append((chunk, relation))
    conflicts: list[Conflict] = []
    for (drug, condition), stated in said.items():
        # what they disagree on -> one passage per document that takes a side
        sides: dict[str, dict[str, tuple[Chunk, Relation]]] = {}
        for (a, ra), (b, rb) in combinations(stated, 2):
            if _same_lineage(a, b) or _different_people(statements, a, b):
                continue
            disagreement = _disagreement(ra, rb)
            if disagreement:
                taken = sides.setdefault(disagreement, {})
                taken.setdefault(a.doc_id, (a, ra))
                taken.setdefault(b.doc_id, (b, rb))
        for disagreement, taken in sides.items():
            if any(chunk.chunk_id in relied_on for chunk, _ in taken.values()):
                about = f"{disagreement} {drug} for {condition}"
                conflicts.append(_ranked(about, list(taken.values())))
    return conflicts


def _same_lineage(a: Chunk, b: Chunk) -> bool:
    """One document, or one version replacing the other."""
    return (
        a.doc_id == b.doc_id
        or a.metadata.superseded_by == b.doc_id
        or b.metadata.superseded_by == a.doc_id
    )


def _different_people(statements: Mapping[str, Statements], a: Chunk, b: Chunk) -> bool:
    """Both passages say whom they are for, and they share no one."""
    mine, theirs = statements[a.chunk_id].applies_to, statements[b.chunk_id].applies_to
    return bool(mine and theirs and not mine & theirs)


def _disagreement(a: Relation, b: Relation) -> str:
    """What two statements about one drug and condition disagree on, or "" if nothing."""
    kinds = {a.kind, b.kind}
    if kinds & _GIVEN and kinds & _WITHHELD:
        return "whether to give"
    if kinds == {"DOSE_OF"}:
        mine, theirs = dict(a.details), dict(b.details)
        if any(
            k in mine and k in theirs and mine[k].lower() != theirs[k].lower()
            for k in RELATION_DETAILS
        ):
            return "the dose of"
    return ""


def _ranked(about: str, sides: list[tuple[Chunk, Relation]]) -> Conflict:
    def rank(side: tuple[Chunk, Relation]) -> tuple[int, str]:
        meta = side[0].metadata
        return AUTHORITY_RANK[meta.standing], meta.effective_from.isoformat()

    ordered = sorted(sides, key=rank, reverse=True)
    first, second = ordered[0][0].metadata, ordered[1][0].metadata
    if first.standing != second.standing:
        precedence: str | None = (
            f"{first.title} prevails: the {first.standing}'s word over the {second.standing}'s"
        )
    elif first.effective_from != second.effective_from:
        precedence = (
            f"{first.title} prevails: in force from {first.effective_from.isoformat()}, "
            f"later than {second.title} ({second.effective_from.isoformat()})"
        )
    else:
        precedence = None
    return Conflict(about, tuple(_side(chunk, relation) for chunk, relation in ordered), precedence)


def _side(chunk: Chunk, relation: Relation) -> ConflictingSource:
    meta = chunk.metadata
    start, end = _sentence_around(chunk.text, relation.start, relation.end)
    source = Source(
        chunk.chunk_id, chunk.doc_id, meta.title, chunk.heading_path, meta.version,
        meta.effective_from.isoformat(), chunk.start + start, chunk.start + end,
    )  # fmt: skip
    return ConflictingSource(source, meta.standing, chunk.text[start:end])


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or table row) that holds ``text[start:end]``."""
    left = max(text.rfind(mark, 0, start) for mark in _BREAKS)
    rights = [i for mark in _BREAKS if (i := text.find(mark, end)) != -1]
    begin, finish = (0 if left < 0 else left + 1), (min(rights) + 1 if rights else len(text))
    while begin < finish and text[begin].isspace():
        begin += 1
    while finish > begin and text[finish - 1].isspace():
        finish -= 1
    return begin, finish

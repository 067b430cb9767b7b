"""A small filter language that every store compiles into its own native query.

Filters are data (so the audit trail can record exactly what was applied) and are
always pushed INTO the engine's search, never applied to its results afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from appliance.records import OPEN_ENDED, Chunk

FilterField = Literal["doc_id", "doc_type", "departments", "sensitivity", "owner", "patient_id"]
FILTER_FIELDS: tuple[FilterField, ...] = (
    "doc_id",
    "doc_type",
    "departments",
    "sensitivity",
    "owner",
    "patient_id",
)
NO_PATIENT = "-"
"""The ``patient_id`` the engines store for a chunk about no patient: a real patient id
never starts with '-', and a term every engine can match keeps the filter simple."""


@dataclass(frozen=True, slots=True)
class AnyOf:
    """The chunk's field (any of its values, for a list field) is one of ``values``."""

    field: FilterField
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.field not in FILTER_FIELDS:
            raise ValueError(f"cannot filter on {self.field!r}; known: {FILTER_FIELDS}")


@dataclass(frozen=True, slots=True)
class ActiveOn:
    """The document is in force on ``day``: effective_from <= day < effective_to."""

    day: dt.date


@dataclass(frozen=True, slots=True)
class AllOf:
    clauses: tuple[SearchFilter, ...]


@dataclass(frozen=True, slots=True)
class OneOf:
    """At least one clause holds."""

    clauses: tuple[SearchFilter, ...]


@dataclass(frozen=True, slots=True)
class NoneOf:
    clauses: tuple[SearchFilter, ...]


SearchFilter = AnyOf | ActiveOn | AllOf | OneOf | NoneOf


def requested_filter(
    departments: Sequence[str] = (),
    sensitivities: Sequence[str] = (),
    doc_types: Sequence[str] = (),
    as_of: dt.date | None = None,
    all_dates: bool = False,
) -> SearchFilter | None:
    """What an operator's search asks for beyond access: some departments, sensitivities
    or document types, in force on a day (today unless ``all_dates``)."""
    clauses: list[SearchFilter] = []
    if departments:
        clauses.append(AnyOf("departments", tuple(d.lower() for d in departments)))
    if sensitivities:
        clauses.append(AnyOf("sensitivity", tuple(sensitivities)))
    if doc_types:
        clauses.append(AnyOf("doc_type", tuple(doc_types)))
    if not all_dates:
        clauses.append(ActiveOn(as_of or dt.date.today()))
    return AllOf(tuple(clauses)) if clauses else None


def without_dates(search_filter: SearchFilter | None) -> SearchFilter | None:
    """The filter with its "in force on a day" clauses taken out (None when nothing
    else is left): what a search would find if the documents' dates did not matter."""
    match search_filter:
        case ActiveOn():
            return None
        case AllOf(clauses=clauses):
            kept = tuple(c for c in (without_dates(c) for c in clauses) if c is not None)
            return AllOf(kept) if kept else None
    return search_filter


def in_force_day(search_filter: SearchFilter | None) -> dt.date | None:
    """The day a filter asks documents to be in force on, if it asks (at its top level)."""
    match search_filter:
        case ActiveOn(day=day):
            return day
        case AllOf(clauses=clauses):
            return next((d for c in clauses if (d := in_force_day(c)) is not None), None)
    return None


def describe(search_filter: SearchFilter | None) -> str:
    """A readable, stable rendering for logs and the audit trail."""
    match search_filter:
        case None:
            return "everything"
        case AnyOf(field=name, values=values):
            return f"{name} in [{', '.join(values)}]"
        case ActiveOn(day=day):
            return f"in force on {day.isoformat()}"
        case AllOf(clauses=clauses):
            return "(" + " and ".join(describe(c) for c in clauses) + ")"
        case OneOf(clauses=clauses):
            return "(" + " or ".join(describe(c) for c in clauses) + ")"
        case NoneOf(clauses=clauses):
            return "not (" + " or ".join(describe(c) for c in clauses) + ")"
    raise TypeError(f"not a search filter: {search_filter!r}")


def day_number(day: dt.date) -> int:
    """Dates are stored as proleptic ordinals: integers every engine can range over."""
    return day.toordinal()


def filterable_fields(chunk: Chunk) -> dict[str, object]:
    """What every store keeps beside a chunk so that filters run inside its search: the
    fields of ``FILTER_FIELDS`` and the days it is in force (an open end is the last day)."""
    meta = chunk.metadata
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "doc_type": meta.doc_type,
        "departments": list(meta.departments),
        "sensitivity": meta.sensitivity,
        "owner": meta.owner,
        "patient_id": meta.patient_id or NO_PATIENT,
        "effective_from": day_number(meta.effective_from),
        "effective_to": day_number(meta.effective_to or OPEN_ENDED),
    }

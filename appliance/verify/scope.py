"""Does a passage apply to the patient and situation asked about?

A passage's scope is what its document says it covers: the population in its title and
headings ("Adult ...", "Fever in Children Under 5"), age bands ("for children older than
3 months"), the measurement range its section is for ("INR 5 to 8 without bleeding", "if
creatinine clearance is below 30 mL/min"), the route it gives, the staff group a
workforce rule binds, and the document's own exclusions ("Do not use a VRIII for
diabetic ketoacidosis"). A document that says nothing of whom it covers and never names
children was written for adults: it does not answer for a child. A passage whose scope
contradicts one of the question's qualifiers is not quoted; each contradiction is a
reason in a clinician's words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from appliance.records import Chunk
from appliance.understand.qualifiers import (
    CHILD,
    NUMBER,
    Qualifiers,
    age_words,
    routes_in,
    staff_in,
)
from appliance.understand.spelling import english_frequency

_ADULT = re.compile(r"\badults?\b|\b1[68] years and (?:over|older)\b", re.IGNORECASE)
_UNIT = r"(years?|months?|weeks?)"
_AGE_LOWER = re.compile(
    rf"\b(?:older than|over|above|more than|aged over)\s+({NUMBER})\s*{_UNIT}?|"
    rf"\b({NUMBER})\s*{_UNIT}\s+and (?:over|older)\b",
    re.IGNORECASE,
)
_AGE_UPPER = re.compile(
    rf"\b(?:younger than|under|below|less than|aged under)\s+({NUMBER})\s*{_UNIT}?", re.IGNORECASE
)
_BOUND = re.compile(
    rf"\b([A-Za-z][A-Za-z0-9]+)\s+(?:is\s+|of\s+|level\s+)?(below|under|less than|above|over|"
    rf"more than|greater than|<|>)\s*({NUMBER})",
    re.IGNORECASE,
)
_RANGE = re.compile(
    rf"\b([A-Za-z][A-Za-z0-9]+)\s+(?:is\s+|of\s+)?({NUMBER})\s*(?:to|-|\u2013)\s*({NUMBER})",
    re.IGNORECASE,
)
_UPPER_WORDS = frozenset(["below", "under", "less than", "<"])
_EXCLUSION = re.compile(
    r"\b(?:do not use|must not be used|should not be used|is not for|are not for|not for use|"
    r"is not suitable|does not cover|does not apply to)\b[^.;:]*?\b(?:for|in|to|with)\s+"
    r"([^.;:,]+)",
    re.IGNORECASE,
)
_COMMON = 4.5
"""A word of an excluded phrase at least this common in English does not identify it."""


@dataclass(frozen=True, slots=True)
class DocumentScope:
    exclusions: list[str]
    """What it says it must not be used for ("diabetic ketoacidosis")."""
    staff: frozenset[str]
    """The staff groups its workforce rules bind ("no doctor is rostered ...")."""
    speaks_of_children: bool
    """Whether it names children anywhere: one that never does was written for adults,
    and its doses and regimens are not evidence for a child, however close its topic."""


@dataclass(frozen=True, slots=True)
class Conflict:
    chunk_id: str
    reason: str


def population_of(chunk: Chunk) -> str | None:
    """ "adult" or "child" when the document's title or the chunk's headings say so."""
    scope = " ".join((chunk.metadata.title, *chunk.heading_path))
    child, adult = bool(CHILD.search(scope)), bool(_ADULT.search(scope))
    return None if child == adult else ("child" if child else "adult")


def describe_scope(chunks: Sequence[Chunk]) -> str | None:
    """ "For adults" / "For children" when every cited chunk says whom it covers alike."""
    populations = {population_of(c) for c in chunks}
    if len(populations) != 1 or None in populations:
        return None
    return "For adults" if populations == {"adult"} else "For children"


def exclusions_of(document_text: str) -> list[str]:
    """What a document says it must not be used for, as written ("diabetic ketoacidosis")."""
    return [m.strip() for m in _EXCLUSION.findall(document_text)]


def _in_years(value: str, unit: str | None, default: str) -> float:
    unit = (unit or default).lower().rstrip("s")
    return float(value) * {"year": 1.0, "month": 1 / 12, "week": 1 / 52}[unit]


def _age_conflict(age: float, text: str, default_unit: str) -> str | None:
    """An age band the text states that leaves the patient out. A bound without a unit
    ("below 30") is an age only where the text speaks of children ("Children Under 5")."""
    unitless_is_age = bool(CHILD.search(text))
    for match in _AGE_LOWER.finditer(text):
        value, unit = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
        if (unit or unitless_is_age) and age <= _in_years(value, unit, default_unit):
            return f"it is for patients over {value} {unit or default_unit}"
    for match in _AGE_UPPER.finditer(text):
        value, unit = match.group(1), match.group(2)
        if (unit or unitless_is_age) and age >= _in_years(value, unit, default_unit):
            return f"it is for patients under {value} {unit or default_unit}"
    return None


def band_fit(measures: dict[str, float], text: str) -> bool | None:
    """Whether a band the text states for a measurement the question gives ("INR 5 to
    8", "glucose above 12") holds the question's value; None when it states none."""
    fits: list[bool] = []
    for name, word, bound in _BOUND.findall(text):
        value = measures.get(name.lower())
        if value is not None:
            upper = word.lower() in _UPPER_WORDS
            fits.append(value < float(bound) if upper else value > float(bound))
    for name, low, high in _RANGE.findall(text):
        value = measures.get(name.lower())
        if value is not None:
            fits.append(float(low) <= value <= float(high))
    return any(fits) if fits else None


def _measure_conflict(measures: dict[str, float], text: str) -> str | None:
    for name, word, bound in _BOUND.findall(text):
        value = measures.get(name.lower())
        if value is None:
            continue
        limit = float(bound)
        upper = word.lower() in _UPPER_WORDS
        if (upper and value >= limit) or (not upper and value <= limit):
            return f"it applies to {name} {word} {bound}, and the question gives {name} {value:g}"
    for name, low, high in _RANGE.findall(text):
        value = measures.get(name.lower())
        if value is not None and not float(low) <= value <= float(high):
            return f"it applies to {name} {low} to {high}, and the question gives {name} {value:g}"
    return None


def _names_exclusion(question: str, excluded: str) -> bool:
    """Whether the question names what the document excludes: every identifying word
    of the excluded phrase is in the question."""
    zipf = english_frequency()
    words = [w for w in re.findall(r"[a-z]{4,}", excluded.lower()) if zipf(w) < _COMMON]
    asked = question.lower()
    return bool(words) and all(re.search(rf"\b{re.escape(w)}", asked) for w in words)


class ScopeChecker:
    """Checks passages (before generation) and claims (after) against the qualifiers."""

    def __init__(
        self,
        document_text: Callable[[str], str | None],
        graph_exclusions: Callable[[str, Chunk], list[str]] | None = None,
    ) -> None:
        """``graph_exclusions(question, chunk)``: what the knowledge graph says the
        chunk's document excludes, among the things the question names (with a graph)."""
        self._document_text = document_text
        self._graph_exclusions = graph_exclusions
        self._read: dict[tuple[str, str], DocumentScope] = {}

    def _document_scope(self, chunk: Chunk) -> DocumentScope:
        """What a document says of its own reach, read once per document version."""
        key = (chunk.doc_id, chunk.metadata.version)
        if key not in self._read:
            text = self._document_text(chunk.doc_id) or ""
            self._read[key] = DocumentScope(
                exclusions_of(text), staff_in(text), CHILD.search(text) is not None
            )
        return self._read[key]

    def passage_conflict(self, asked: Qualifiers, chunk: Chunk) -> str | None:
        """Why the passage, as its document and section define it, cannot apply."""
        population = population_of(chunk)
        title = chunk.metadata.title
        if asked.population and population and asked.population != population:
            whom = "adults" if population == "adult" else "children"
            return f"{title} covers {whom} only, and the question is about {_whom(asked)}"
        if (
            asked.population == "child"
            and population is None
            and not asked.pregnant  # "after the baby is born" asks about the mother
            and not self._document_scope(chunk).speaks_of_children
        ):
            return (
                f"{title} does not say it covers children, and the question is about {_whom(asked)}"
            )
        scope = " ".join((title, *chunk.heading_path))
        if asked.age_years is not None:
            why = _age_conflict(asked.age_years, scope, "years")
            if why:
                return f"{title}: {why}, and the patient is {age_words(asked.age_years)}"
        heading = chunk.heading_path[-1] if len(chunk.heading_path) > 1 else ""
        why = _measure_conflict(asked.measures, heading)
        if why:
            return f"{title}, section '{heading}': {why}"
        for condition in asked.absent:
            if re.search(rf"\b{re.escape(condition)}", heading, re.IGNORECASE) and not re.search(
                rf"\b(?:no|without|not)\s+(?:\w+\s+)?{re.escape(condition)}", heading, re.IGNORECASE
            ):
                return f"{title}, section '{heading}': it is for patients with {condition}"
        staff = self._document_scope(chunk).staff
        if asked.staff and staff and not asked.staff & staff:
            return (
                f"{title} binds {', '.join(sorted(staff))}s, and the question asks about "
                f"{', '.join(sorted(asked.staff))}s"
            )
        return None

    def screen(
        self, asked: Qualifiers, chunks: Sequence[Chunk]
    ) -> tuple[list[Chunk], dict[str, str]]:
        """The chunks that apply, and why each other one does not. Where sections whose
        headings key them on a value the question gives ("INR 5 to 8") all leave it out,
        the documents do not cover that value, and nothing else found answers it either."""
        kept, conflicts = [], {}
        for chunk in chunks:
            why = self.passage_conflict(asked, chunk)
            if why is None:
                kept.append(chunk)
            else:
                conflicts[chunk.chunk_id] = why
        fits = [band_fit(asked.measures, " ".join(c.heading_path)) for c in chunks]
        if False in fits and True not in fits:
            given = ", ".join(f"{name} {value:g}" for name, value in asked.measures.items())
            conflicts.update({c.chunk_id: f"the documents give no band for {given}" for c in kept})
            kept = []
        return kept, conflicts

    def claim_conflict(
        self, asked: Qualifiers, question: str, chunk: Chunk, claim: str
    ) -> str | None:
        """Why this sentence of the passage cannot apply (its own words, and the
        document's exclusions), after the passage as a whole was admitted."""
        claim_routes = routes_in(claim)
        if asked.routes and claim_routes and not asked.routes & claim_routes:
            return (
                f"it gives the {', '.join(sorted(claim_routes))} route, and the question asks "
                f"about {', '.join(sorted(asked.routes))}"
            )
        if asked.age_years is not None:
            why = _age_conflict(asked.age_years, claim, "years")
            if why:
                return f"{why}, and the patient is {age_words(asked.age_years)}"
        if not claim.lstrip().startswith("|"):  # a table row's ranges are its columns'
            why = _measure_conflict(asked.measures, claim)
            if why:
                return why
        for excluded in self._document_scope(chunk).exclusions:
            if _names_exclusion(question, excluded) and excluded.lower() not in claim.lower():
                return f"{chunk.metadata.title} is not to be used for {excluded}"
        if self._graph_exclusions is not None:
            for excluded in self._graph_exclusions(question, chunk):
                if excluded not in claim.lower():
                    return f"{chunk.metadata.title} is not to be used for {excluded}"
        return None


def _whom(asked: Qualifiers) -> str:
    if asked.population == "child":
        return "a child" if asked.age_years is None else f"a child {age_words(asked.age_years)}"
    return "an adult"

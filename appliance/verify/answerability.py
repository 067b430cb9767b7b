"""Does what was found answer what was asked? The checks after scope and coverage that
refuse, or qualify, an answer, each in a clinician's words: a document not in force that
answers better, a topic that only out-of-scope passages hold, a dose that names another
drug, and the parts of a question that no kept sentence answers."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence

import numpy as np

from appliance.index.base import TermStatistics
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk
from appliance.understand.narrative import CONTENT_WORD
from appliance.understand.spelling import english_frequency
from appliance.verify.coverage import QuestionCoverage, words_for

NOT_IN_FORCE_MARGIN = 0.1
"""How much closer (cosine) a passage of a document not in force must be than anything in
force for the refusal to name that document's dates."""
_ASKS_DOSE = re.compile(
    r"\b(?:what|which|usual|maximum|max|starting|loading|treatment|maintenance|adult|"
    r"paediatric|right|correct)\s+(?:\w+\s+)?dose\b|\bdose (?:of|for)\b|\bdosing\b",
    re.IGNORECASE,
)
_DOSE = re.compile(
    r"\d[\d.,]*\s*(?:mg|g|micrograms?|mcg|units?|mL|mmol|nanograms?)(?:/kg)?\b", re.I
)


def listed(words: Sequence[str]) -> str:
    """ "a", "a or b", "a, b or c": what a refusal says the documents lack."""
    if not words:
        return "what this question asks about"
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def in_force(chunk: Chunk, day: dt.date | None) -> bool:
    meta = chunk.metadata
    return day is None or (
        meta.effective_from <= day and (meta.effective_to is None or day < meta.effective_to)
    )


def iso_day(day: dt.date | None) -> str | None:
    """A day as the audit record writes it (None for no day, or no end)."""
    return None if day is None or day == dt.date.max else day.isoformat()


def not_in_force_reason(chunk: Chunk, day: dt.date | None) -> str:
    meta = chunk.metadata
    when = f"on {day.isoformat()}" if day else "on the day asked"
    if day is not None and meta.effective_from > day:
        return (
            f"the document that covers this, {meta.title} (version {meta.version}), comes "
            f"into force on {meta.effective_from.isoformat()}: it is not in force {when}"
        )
    ended = iso_day(meta.effective_to)
    replaced = f", replaced by {meta.superseded_by}" if meta.superseded_by else ""
    return (
        f"the document that covers this, {meta.title} (version {meta.version}), was in force "
        f"until {ended or 'an earlier day'}{replaced}: it is not in force {when}"
    )


def lost_to_scope(
    focus: str, coverage: QuestionCoverage, removed: Sequence[str], index: TermStatistics
) -> list[str]:
    """The question's words (a name it asks about, or one of its two heaviest words)
    that only the passages removed for their scope contain: those passages were the ones
    about it ("paracetamol" only in a children's chart), and what is left answers
    something else."""
    if not removed:
        return []
    removed_terms = {t for text in removed for t in index.content_terms(text)}
    heaviest = sorted(coverage.weights, key=lambda t: -coverage.weights[t])[:2]
    lost = [t for t in coverage.missing if t in heaviest and t in removed_terms]
    names = [n for n in coverage.missing_names if set(index.content_terms(n)) <= removed_terms]
    return list(dict.fromkeys([*names, *words_for(focus, lost, index)]))


def dose_refusal(
    asking: str, claims: Sequence[tuple[str, str]], names: Sequence[str]
) -> str | None:
    """Why a dose question is not answered by these claims, each ``(sentence, the
    sentence in its context)``, or None: a dose is an answer only for the drug asked
    about ("linezolid" asked, the beta-lactam rows found), so a sentence must give a dose
    and name the drug, in itself or its context (its heading, and ``drug_of_paragraph``)."""
    if not _ASKS_DOSE.search(asking):
        return None
    lowered = [n.lower() for n in names]
    doses = [context for sentence, context in claims if _DOSE.search(sentence)]
    if any(not lowered or any(n in c.lower() for n in lowered) for c in doses):
        return None
    what = f" of {listed(names)}" if names else ""
    return f"the documents found give no dose{what} for this"


def drug_of_paragraph(
    quote: str, chunk_text: str, drugs_named: Callable[[str], set[str]]
) -> str | None:
    """The drug a sentence that names none speaks of: the one drug its paragraph named
    before it ("Give enoxaparin 40 mg once a day. ... For patients weighing more than
    150 kg give 40 mg twice a day."). None when the sentence names a drug itself, when it
    opens its paragraph, line or table row, or when the text before it names two drugs
    or none (then which one is not known)."""
    if drugs_named(quote):
        return None
    at = chunk_text.find(quote)
    if at <= 0:
        return None
    before = chunk_text[:at].rpartition("\n")[2]
    named = drugs_named(before)
    return next(iter(named)) if len(named) == 1 else None


def unanswered_parts(
    parts: Sequence[str],
    claims: Sequence[str],
    embedder: Embedder,
    index: TermStatistics,
    floor: float,
) -> tuple[str, ...]:
    """The parts of a several-part question that no kept sentence speaks to: the part's
    telling words (not everyday ones) are mostly missing from the claims (each under its
    document's title and headings), and none of them is as close to it as ``floor``."""
    if len(parts) < 2 or not claims:
        return ()
    said = {t for text in claims for t in index.content_terms(text)}
    zipf = english_frequency()
    vectors = embedder.embed([*parts, *claims])
    closeness = np.max(vectors[: len(parts)] @ vectors[len(parts) :].T, axis=1)
    missing = []
    for part, close in zip(parts, closeness, strict=True):
        telling = " ".join(w for w in part.split() if zipf(w.lower()) < CONTENT_WORD)
        terms = index.content_terms(telling)
        found = sum(t in said for t in terms) / len(terms) if terms else 1.0
        if found < 0.34 and float(close) < floor:
            missing.append(part)
    return tuple(missing) if len(missing) < len(parts) else ()

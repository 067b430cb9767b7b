"""Title-and-entity chains: passages picked one at a time, each next one scored by its
own score plus a link from a passage already chosen.

A question often needs a passage it does not describe well: the one another passage
leads to. Passage i leads to passage j when i's text names j's title (hospital documents
name each other by title: "see the Adult Sepsis Bundle"), or when j names an entity of i
that the question does not name (capitalised names and years: in ward documents mostly
drug brands, organisms, committees and the years of a guideline). ``chain_selection``
orders passages by score_j + weight * max over chosen i of links[i, j] * score_i.
Designed and weighted on the public multi-hop training pools
(``benchmarks/bridge_weights.py``), where it is the best reranker on every set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Titled(Protocol):
    """A passage with the title it goes by (a document's, or a page's)."""

    @property
    def title(self) -> str: ...

    @property
    def text(self) -> str: ...


def title_pattern(title: str) -> re.Pattern[str] | None:
    words = re.sub(r"\s*\(.*?\)\s*", " ", title).strip()
    if len(words) < 3:
        return None
    return re.compile(r"(?<!\w)" + re.escape(words.lower()) + r"(?!\w)")


def title_links(passages: Sequence[Titled]) -> np.ndarray:
    """links[i, j] = 1.0 where passage i's text names passage j's title, else 0.0."""
    lowered = [p.text.lower() for p in passages]
    links = np.zeros((len(passages), len(passages)), dtype=np.float32)
    for j, passage in enumerate(passages):
        pattern = title_pattern(passage.title)
        if pattern is None:
            continue
        for i, text in enumerate(lowered):
            if i != j and pattern.search(text):
                links[i, j] = 1.0
    return links


# Capitalised word runs (allowing "of", "de", "van" ... inside) and years: a cheap
# stand-in for named entities that needs no model and no parse at query time.
_ENTITY = re.compile(
    r"\b(?:[A-Z][\w'.-]*|\d{3,4})"
    r"(?:\s+(?:(?:of|de|the|von|van|da|du|del|la|le|and)\s+)?(?:[A-Z][\w'.-]*|\d{3,4}))*"
)
# fmt: off
_NOT_NAMES = frozenset({
    "The", "It", "He", "She", "They", "In", "On", "At", "A", "An", "This", "His", "Her",
    "As", "After", "Before", "During", "Since", "When", "While", "There", "Its", "By",
    "For", "From", "With", "Their", "These", "Those", "Following", "However", "Also", "But",
    "And", "If", "Of", "To",
})
# fmt: on


def named_entities(text: str) -> set[str]:
    """Lower-cased capitalised runs and years of ``text``, sentence-opening words dropped."""
    found = set()
    for match in _ENTITY.finditer(text):
        words = match.group(0).split()
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        name = " ".join(words).lower().rstrip(".'-")  # "... Mach." ends a sentence
        if len(name) >= 3:
            found.add(name)
    return found


def _names(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` as whole words (no regex: this runs per pair)."""
    start = text.find(name)
    while start != -1:
        end = start + len(name)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            return True
        start = text.find(name, start + 1)
    return False


def entity_links(question: str, texts: Sequence[str]) -> np.ndarray:
    """links[i, j]: how strongly passage j follows from passage i, in [0, 1].

    Passage j follows from i when it names an entity of i that the question does not
    name (the bridge a multi-hop question leaves out). An entity that more than two
    passages name links each of them with strength 1 / (passages naming it): in a pool
    about one topic its name proves little.
    """
    asked = question.lower()
    lowered = [t.lower() for t in texts]
    links = np.zeros((len(texts), len(texts)), dtype=np.float32)
    holders_of: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        for name in named_entities(text):
            if name in asked:
                continue
            holders = holders_of.get(name)
            if holders is None:
                holders = [j for j, low in enumerate(lowered) if _names(low, name)]
                holders_of[name] = holders
            others = [j for j in holders if j != i]
            strength = 1.0 if len(others) <= 2 else 1.0 / len(others)
            for j in others:
                links[i, j] = max(links[i, j], strength)
    return links


def title_and_entity_links(
    question: str, passages: Sequence[Titled], texts: Sequence[str]
) -> np.ndarray:
    """Both kinds of link in one matrix, as the title-and-entity chain follows them;
    ``texts`` are the passages as the entities are read (title and text together)."""
    return np.maximum(entity_links(question, texts), title_links(passages))


def chain_selection(scores: np.ndarray, links: np.ndarray, weight: float = 0.55) -> np.ndarray:
    """Order passages one at a time; returns scores whose descending order is that order.

    The next passage is the one with the highest score + weight * max over the chosen
    passages i of links[i, j] * score_i: a strong passage already chosen lends its
    strength to the passage it leads to, and the chain can go on for as many hops as the
    question has. Ties go to the lower index, so the order is deterministic.
    """
    base = np.asarray(scores, dtype=np.float32)
    count = len(base)
    bonus = np.zeros(count, dtype=np.float32)
    open_ = np.ones(count, dtype=bool)
    selected = np.zeros(count, dtype=np.float32)
    for slot in range(count):
        current = np.where(open_, base + weight * bonus, -np.inf)
        chosen = int(np.argmax(current))
        open_[chosen] = False
        selected[chosen] = count - slot
        bonus = np.maximum(bonus, links[chosen] * base[chosen])
    return selected

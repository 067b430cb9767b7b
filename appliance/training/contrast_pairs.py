"""Contrast pairs for training the verifier: claims negated, labels flipped.

SciFact's contradictions were written by negating or reversing supported claims, and the
public NLI sets hold almost no such pairs in the science domain. If a premise entails a
claim, it contradicts the claim's negation; if it contradicts a claim, it entails the
negation. Both directions are added, so that "not" alone never predicts a label. A
supported claim with a direction word (increases, higher, promotes ...) and no negation
also gives its reversal as a contradiction. The negation works on the dependency parse
(the registry's spaCy pipeline) of the claim's main clause; a claim it cannot place a
negation in is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from appliance.training.nli_verifier import NliPair

_NEGATORS = frozenset({"not", "n't", "no", "never"})
_DO_SUPPORT = {"VBZ": "does", "VBP": "do", "VBD": "did"}
_OPPOSITES = {
    "increase": "decrease", "increases": "decreases", "increased": "decreased",
    "increasing": "decreasing", "higher": "lower", "high": "low", "more": "less",
    "greater": "smaller", "positive": "negative", "positively": "negatively",
    "promotes": "inhibits", "promote": "inhibit", "activates": "inhibits",
    "enhances": "reduces", "enhance": "reduce", "improves": "worsens", "improve": "worsen",
    "improved": "worsened", "better": "worse", "upregulates": "downregulates",
    "up-regulates": "down-regulates", "upregulation": "downregulation",
    "up-regulation": "down-regulation", "longer": "shorter", "faster": "slower",
    "gain": "loss", "induces": "suppresses", "accelerates": "delays",
    "reduces": "increases", "reduce": "increase", "reduced": "increased",
    "lowers": "raises", "inhibits": "promotes", "suppresses": "induces",
}  # fmt: skip
_OPPOSITES |= {b: a for a, b in _OPPOSITES.items() if b not in _OPPOSITES}
NEGATED = re.compile(r"\b(?:not|no|never|without|cannot)\b|n't\b", re.I)
_DIRECTION_WORD = re.compile(r"\b(" + "|".join(map(re.escape, _OPPOSITES)) + r")\b", re.I)


def negate(claim: Any) -> str | None:
    """The claim (a spaCy Doc) with its main clause negated, or None where the parse gives
    no place for it. A negated clause loses its negator ("does not affect" -> "does
    affect", "receive no treatment" -> "receive treatment")."""
    roots = [t for t in claim if t.dep_ == "ROOT"]
    if not roots:
        return None
    root = roots[0]
    near = [root, *(c for c in root.children if c.dep_ in ("dobj", "attr", "acomp"))]
    negators = [t for t in claim if t.lower_ in _NEGATORS and t.head in near]
    if negators:
        return _without(claim, negators[0].i)
    auxiliaries = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i]
    if auxiliaries:
        return _inserted_after(claim, auxiliaries[0].i, "not")
    if root.lemma_ == "be":
        return _inserted_after(claim, root.i, "not")
    do = _DO_SUPPORT.get(root.tag_)
    if do is None or root.pos_ != "VERB":
        return None
    before = claim[: root.i].text_with_ws
    return f"{before}{do} not {root.lemma_}{root.whitespace_}{claim[root.i + 1 :].text}".strip()


def reverse_direction(claim: str) -> str | None:
    """The claim with its first direction word replaced by its opposite, case kept; None
    for a negated claim ("did not improve" does not contradict "did not worsen")."""
    found = _DIRECTION_WORD.search(claim)
    if found is None or NEGATED.search(claim):
        return None
    word = found.group(0)
    opposite = _OPPOSITES[word.lower()]
    if word[0].isupper():
        opposite = opposite[0].upper() + opposite[1:]
    return claim[: found.start()] + opposite + claim[found.end() :]


def contrast_pairs(pairs: Sequence[NliPair], sources: Iterable[str], nlp: Any) -> list[NliPair]:
    """New pairs from the entailed and contradicted pairs of the named files: each
    hypothesis negated with the opposite label, and each entailed hypothesis reversed in
    direction as a contradiction. Each distinct claim is parsed once.

    Then every claim and every variant once as its own premise, entailed (source
    "<file> (self)", so ``--repeat`` does not multiply them): without these the negated
    variants teach that "not" goes with contradiction, and a verifier trained on them
    rejected negated sentences checked against their own words."""
    named = set(sources)
    chosen = [p for p in pairs if p.source in named and p.label in ("entailment", "contradiction")]
    claims = sorted({p.hypothesis for p in chosen})
    negated = dict(zip(claims, (negate(doc) for doc in nlp.pipe(claims)), strict=True))
    added: dict[tuple[str, str], NliPair] = {}
    for pair in chosen:
        flipped = "contradiction" if pair.label == "entailment" else "entailment"
        variants = [(negated[pair.hypothesis], flipped)]
        if pair.label == "entailment":
            variants.append((reverse_direction(pair.hypothesis), "contradiction"))
        for hypothesis, label in variants:
            if hypothesis and hypothesis != pair.hypothesis:
                new = replace(pair, hypothesis=hypothesis, label=label)
                added.setdefault((new.premise, new.hypothesis), new)
    for pair in [*chosen, *added.values()]:
        selfsame = NliPair(pair.hypothesis, pair.hypothesis, "entailment", f"{pair.source} (self)")
        added.setdefault((selfsame.premise, selfsame.hypothesis), selfsame)
    return list(added.values())


def _without(doc: Any, index: int) -> str:
    before = doc[:index].text_with_ws
    if before and not before.endswith(" "):  # "doesn't affect" -> "does affect"
        before += " "
    return (before + doc[index + 1 :].text).strip()


def _inserted_after(doc: Any, index: int, word: str) -> str:
    return f"{doc[: index + 1].text} {word} {doc[index + 1 :].text}".strip()

"""The extractive generator: no LLM, so it cannot invent. It picks the sentences of the
top passages that best answer the question and returns them verbatim, each citing the
chunk it came from. The default on a CPU-only machine.

A sentence is judged in its context, as a reader would: under its section heading, and a
table row under its column names ("Insulin rate (units/hour) 3" says something; "| 3 |"
does not). A row that is chosen is quoted after its header row, so the answer can be read
on its own. Look-up tables key rows on ranges ("11.1 to 15.0", "below 4.0"), which no
sentence embedding compares with a number, so a row whose range holds a number the
question asks about gains ``range_bonus``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np

from appliance.generate.base import ContextPassage, GeneratedAnswer
from appliance.generate.quotable import QuoteCandidate, candidates_of, cells
from appliance.nlp.embedder import Embedder
from appliance.records import AnswerSentence, Citation
from appliance.understand.narrative import parts_of
from appliance.understand.qualifiers import organ_function_in
from appliance.understand.spelling import specific_words

_NUMBER = r"\d+(?:\.\d+)?"
_RANGE = re.compile(rf"({_NUMBER})\s*(?:to|-|\u2013)\s*({_NUMBER})")
_BOUND = re.compile(
    rf"\b(below|under|less than|above|over|more than)\s+({_NUMBER})|([<>])\s*({_NUMBER})"
)
_BELOW = frozenset(["below", "under", "less than", "<"])
_QUESTION_NUMBER = re.compile(rf"(?<![\w.]){_NUMBER}(?![\w.])")
_NEGATION = re.compile(
    r"\b(?:not|cannot|never|avoid|contraindicated|must not|should not|do not)\b|n't\b|\bcant\b",
    re.IGNORECASE,
)
_ASKS_FOR_A_DRUG = re.compile(
    r"\b(?:which|what)\s+(?:[\w.-]+\s+){0,3}?(?:drugs?|antibiotics?|medicines?|medications?|"
    r"treatments?|therapy|agents?|antivirals?|analgesics?|anticoagulants?|uterotonics?)\b",
    re.IGNORECASE,
)
"""A question whose answer is a drug: "which C. difficile treatment is used ...", "what
is the first antibiotic for ..."."""
_ASKS_FOR_A_KIND = re.compile(
    r"^\s*(?:which|what)\s+(?:[\w-]+\s+){0,2}?([a-z][a-z-]+?)s?\s+"
    r"(?:is|are|was|were|do|does|did|should|must|can|could|will|would|has|have)\b",
    re.IGNORECASE,
)
"""A question that asks for a thing of a kind: "which screening test is used for ...",
"what scale should ...". Its answer names one ("with the 4AT test"); a sentence that
only repeats the question's words ("a 4AT score of 4 suggests delirium") does not."""
_DIGIT_LED = re.compile(r"\b\d+[A-Za-z][\w-]*")
_EXCEPTION = re.compile(r"\b(?:unless|except)\b", re.IGNORECASE)
"""How a document states when something is not done without a negation: "ergometrine
500 micrograms IM, unless the woman has hypertension"."""


_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_STEPS_TAKEN = re.compile(
    r"\b(?:after|had|given|received|already|following)\s+(?:\w+\s+){0,2}?"
    r"(one|two|three|four|five|\d)\s+(?:doses?|steps?|lots?|boluses?)\b|"
    r"\bafter\s+step\s+(\d)\b",
    re.IGNORECASE,
)


def steps_taken(question: str) -> int | None:
    """How many steps of a sequence the question says were already taken ("still
    seizing after two doses of lorazepam": 2), or None."""
    match = _STEPS_TAKEN.search(question)
    if match is None:
        return None
    count = (match.group(1) or match.group(2)).lower()
    return _COUNTS.get(count) or int(count)


def step_number(option: QuoteCandidate) -> int | None:
    """The step a row of a "Step" table is (its first cell), or None."""
    if not option.columns or cells(option.columns)[0].lower() != "step":
        return None
    first = cells(option.quote)[0]
    return int(first) if first.isdigit() else None


def _bounds(text: str) -> set[tuple[bool, float]]:
    """Each "below X" / "above X" in a text, as (is an upper bound, X)."""
    return {
        ((word or sign) in _BELOW, float(bound or signed_bound))
        for word, bound, sign, signed_bound in _BOUND.findall(text.lower())
    }


def holds_number_asked(question: str, text: str) -> bool:
    """Whether ``text`` names a range or bound that holds a number the question asks
    about ("12 mmol/L" and "11.1 to 15.0"; "9" and "above 8"; "below 1.2" and "below
    1.2")."""
    if _bounds(text) & _bounds(question):
        return True
    # A number in a bound of the question ("below 1.2") is not a value to look up.
    asked = [float(n) for n in _QUESTION_NUMBER.findall(_BOUND.sub(" ", question.lower()))]
    if not asked:
        return False
    if any(float(low) <= n <= float(high) for low, high in _RANGE.findall(text) for n in asked):
        return True
    return any(
        (n < limit) if upper else (n > limit) for upper, limit in _bounds(text) for n in asked
    )


def names_one_of_the_kind_asked(question: str, sentence: str) -> bool:
    """Whether ``sentence`` names a thing of the kind the question asks for: it holds
    the kind's word ("test") and a specific name the question does not ("4AT")."""
    asked = _ASKS_FOR_A_KIND.match(question)
    if asked is None:
        return False
    kind = re.compile(rf"\b{re.escape(asked.group(1))}s?\b", re.IGNORECASE)
    return bool(kind.search(sentence)) and bool(_names(sentence) - _names(question))


def _names(text: str) -> set[str]:
    """Specific words, and identifiers that start with a digit ("4AT", "5HT3"; not plain
    numbers)."""
    return specific_words(text) | {w.lower() for w in _DIGIT_LED.findall(text)}


class ExtractiveGenerator:
    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        *,
        drugs_named: Callable[[str], set[str]] | None = None,
        max_sentences: int = 2,
        passages_used: int = 3,
        margin: float = 0.08,
        range_bonus: float = 0.15,
        negation_bonus: float = 0.08,
        name_bonus: float = 0.08,
    ) -> None:
        self._embedder = embedder
        self._drugs_named = drugs_named
        self._max_sentences = max_sentences
        self._passages_used = passages_used
        self._margin = margin
        self._range_bonus = range_bonus
        self._negation_bonus = negation_bonus
        self._name_bonus = name_bonus

    def generate(
        self, question: str, passages: list[ContextPassage], *, search_text: str | None = None
    ) -> GeneratedAnswer:
        question = search_text or question  # sentences are scored against what was searched
        options = [c for p in passages[: self._passages_used] for c in candidates_of(p)]
        if not options:
            return GeneratedAnswer((), json.dumps({"sentences": [], "not_found": True}), self.name)
        parts = parts_of(question)
        asked = [question, *parts] if len(parts) > 1 else [question]
        vectors = self._embedder.embed(
            [*asked, *(c.alone for c in options), *(c.judged_text for c in options)]
        )
        by_reading = vectors[len(asked) :] @ vectors[: len(asked)].T  # (2 * options, readings)
        alone, in_context = np.split(by_reading, 2)
        similarity_by_reading = (alone + in_context) / 2
        similarity = similarity_by_reading[:, 0]
        names = specific_words(question)
        if _NEGATION.search(question):
            # "When must it not be used?" is answered by the sentence that says "do not"
            # or "unless", the more so when it names what is asked about: a sentence
            # embedding reads "metformin is the first drug" as closer than "start
            # metformin ..., unless the eGFR is below 30".
            says_when_not = np.array(
                [bool(_NEGATION.search(c.quote) or _EXCEPTION.search(c.quote)) for c in options]
            )
            about_it = np.array([any(n in c.quote.lower() for n in names) for c in options])
            similarity = similarity + says_when_not * (
                self._negation_bonus + self._name_bonus * about_it
            )
        # Earlier passages ranked higher: a small prior keeps ties with the best passage.
        prior = np.array([0.02 * (self._passages_used - c.passage.number) for c in options])
        # A row that names what the question names ("ceftriaxone") is about it; the
        # neighbouring rows of the same table are not.
        prior = prior + self._name_bonus * np.array(
            [c.table is not None and any(n in c.quote.lower() for n in names) for c in options]
        )
        if self._drugs_named is not None and _ASKS_FOR_A_DRUG.search(question):
            # "Which treatment ...?" is answered by a sentence that names one the question
            # does not, not by one that repeats its words ("the changes are the first
            # antibiotic for penicillin allergy", "contact precautions for C. difficile").
            asked_about = self._drugs_named(question)
            prior = prior + self._name_bonus * np.array(
                [bool(self._drugs_named(c.quote) - asked_about) for c in options]
            )
        in_range = np.array([holds_number_asked(question, c.judged_text) for c in options])
        scores = similarity + prior + self._range_bonus * in_range
        # Where a row's range holds the number asked, the table's other rows are not
        # what was asked ("above 20.0" when the glucose is 12).
        looked_up = {c.table for c, hit in zip(options, in_range, strict=True) if hit and c.table}
        for i, option in enumerate(options):
            if option.table in looked_up and not in_range[i]:
                scores[i] = -np.inf
        # In a sequence of steps, the ones already taken are not the answer; the next is.
        taken = steps_taken(question)
        if taken is not None:
            for i, option in enumerate(options):
                step = step_number(option)
                if step is not None and step <= taken:
                    scores[i] = -np.inf
                elif step == taken + 1:
                    scores[i] += self._range_bonus
        order = np.argsort(-scores)
        best = float(scores[order[0]])
        chosen = [int(i) for i in order if scores[i] >= best - self._margin][: self._max_sentences]
        # A question that asks several things gets the best sentence for each part too.
        for reading in range(1, len(asked)):
            part_scores = similarity_by_reading[:, reading] + prior + self._range_bonus * in_range
            part_scores[~np.isfinite(scores)] = -np.inf
            best_for_part = int(np.argmax(part_scores))
            if best_for_part not in chosen:
                chosen.append(best_for_part)
        chosen += self._organ_function_asked(question, options, scores, chosen)
        chosen += self._kind_asked(question, options, scores, chosen)
        chosen.sort(key=lambda i: (options[i].passage.number, options[i].position))
        quoted: list[tuple[str, str, float]] = []  # (quote, chunk_id, score)
        for i in chosen:
            option = options[i]
            chunk_id = option.passage.chunk.chunk_id
            if option.header is not None and (option.header, chunk_id) not in {
                (quote, cited) for quote, cited, _ in quoted
            }:  # two rows of one table share one header
                quoted.append((option.header, chunk_id, float(scores[i])))
            quoted.append((option.quote, chunk_id, float(scores[i])))
        sentences = tuple(
            AnswerSentence(quote, "claim", (Citation(chunk_id, quote),))
            for quote, chunk_id, _ in quoted
        )
        raw = json.dumps(
            {
                "sentences": [
                    {"text": quote, "kind": "claim", "score": round(score, 4),
                     "citations": [{"chunk_id": chunk_id, "quote": quote}]}
                    for quote, chunk_id, score in quoted
                ],
                "not_found": False,
            }
        )  # fmt: skip
        return GeneratedAnswer(sentences, raw, self.name)

    @staticmethod
    def _organ_function_asked(
        question: str, options: list[QuoteCandidate], scores: np.ndarray, chosen: list[int]
    ) -> list[int]:
        """For a question about the kidneys' or the liver's function ("the dose in renal
        impairment"), the sentence of a quoted passage that states it ("reduce to 20 mg
        if creatinine clearance is below 30"), when no chosen sentence does: a sentence
        embedding relates the question to the usual dose, which repeats its words, more
        than to the change, which is the answer."""
        asked = organ_function_in(question)
        if not asked or any(organ_function_in(options[i].judged_text) & asked for i in chosen):
            return []
        quoted = {options[i].passage.number for i in chosen}
        speaking = [
            i for i, option in enumerate(options)
            if option.passage.number in quoted and np.isfinite(scores[i])
            and organ_function_in(option.judged_text) & asked
        ]  # fmt: skip
        return [max(speaking, key=lambda i: scores[i])] if speaking else []

    @staticmethod
    def _kind_asked(
        question: str, options: list[QuoteCandidate], scores: np.ndarray, chosen: list[int]
    ) -> list[int]:
        """For a question that asks which thing of a kind ("which screening test ..."),
        the sentence of a quoted passage that names one ("with the 4AT test"), when no
        chosen sentence does: a sentence embedding prefers the one that repeats the
        question's words ("a 4AT score of 4 or more suggests delirium")."""
        if not _ASKS_FOR_A_KIND.match(question) or any(
            names_one_of_the_kind_asked(question, options[i].quote) for i in chosen
        ):
            return []
        quoted = {options[i].passage.number for i in chosen}
        naming = [
            i for i, option in enumerate(options)
            if option.passage.number in quoted and np.isfinite(scores[i])
            and names_one_of_the_kind_asked(question, option.quote)
        ]  # fmt: skip
        return [max(naming, key=lambda i: scores[i])] if naming else []

    def close(self) -> None:
        """Nothing to release: the embedder belongs to the appliance."""

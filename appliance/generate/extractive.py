"""The extractive generator: no LLM, so it cannot invent. It picks the sentences of the
top passages that best answer the question and returns them verbatim, each citing the
chunk it came from. The default on a CPU-only machine."""

from __future__ import annotations

import json
import re

import numpy as np

from appliance.generate.base import ContextPassage, GeneratedAnswer
from appliance.nlp.embedder import Embedder
from appliance.records import AnswerSentence, Citation

# A sentence ends at . ! ? (or a line break) followed by space and a capital, digit or bullet.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])|\n+")


def sentences_of(text: str) -> list[str]:
    """The sentences of a passage, each an exact substring of it."""
    pieces = [p.strip(" -*\t") for p in _SENTENCE_END.split(text)]
    return [p for p in pieces if len(p.split()) >= 3 and p in text]


class ExtractiveGenerator:
    name = "extractive"

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_sentences: int = 2,
        passages_used: int = 3,
        margin: float = 0.08,
    ) -> None:
        self._embedder = embedder
        self._max_sentences = max_sentences
        self._passages_used = passages_used
        self._margin = margin

    def generate(self, question: str, passages: list[ContextPassage]) -> GeneratedAnswer:
        options: list[tuple[str, ContextPassage]] = [
            (sentence, passage)
            for passage in passages[: self._passages_used]
            for sentence in sentences_of(passage.chunk.text)
        ]
        if not options:
            return GeneratedAnswer((), json.dumps({"sentences": [], "not_found": True}), self.name)
        vectors = self._embedder.embed([question, *(s for s, _ in options)])
        similarity = vectors[1:] @ vectors[0]
        # Earlier passages ranked higher: a small prior keeps ties with the best passage.
        prior = np.array([0.02 * (self._passages_used - p.number) for _, p in options])
        scores = similarity + prior
        order = np.argsort(-scores)
        best = float(scores[order[0]])
        chosen = [int(i) for i in order if scores[i] >= best - self._margin][: self._max_sentences]
        chosen.sort(
            key=lambda i: (options[i][1].number, options[i][1].chunk.text.find(options[i][0]))
        )
        sentences = tuple(
            AnswerSentence(
                options[i][0], "claim", (Citation(options[i][1].chunk.chunk_id, options[i][0]),)
            )
            for i in chosen
        )
        raw = json.dumps(
            {
                "sentences": [
                    {"text": s.text, "kind": s.kind, "score": round(float(scores[i]), 4),
                     "citations": [{"chunk_id": c.chunk_id, "quote": c.quote} for c in s.citations]}
                    for s, i in zip(sentences, chosen, strict=True)
                ],
                "not_found": False,
            }
        )  # fmt: skip
        return GeneratedAnswer(sentences, raw, self.name)

    def close(self) -> None:
        """Nothing to release: the embedder belongs to the appliance."""

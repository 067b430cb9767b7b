"""Training examples for the answer generator: the product's own prompt (rules, fenced
passages, question) and the JSON answer the verifier accepts.

Built by code from public data that is never evaluated on, each in its own way:

- MedQuAD pages: a page's question heading, its answer section among passages of
  another section of the same page and of other pages; the answer's first sentences
  become the claims, each quoting itself, so every quote is an exact span of its
  passage. Half the answer passages begin with the last sentence of the section before
  it, as a chunk that starts inside a section does, so the answer is not always its
  passage's first sentence;
- PubMedQA: a question, its abstract's sections and its conclusion; the conclusion's
  sentences are the claims and its decision (yes, no, maybe) is the short answer. Only
  the questions after the first ``pubmedqa_skip`` are taken (the end-to-end benchmark
  reads the first ones);
- the multi-hop training pools: the sentences of the supporting passages that hold the
  answer, or share most words with the question;
- refusals: a question given only passages of other topics answers ``not_found``.

A question that also appears in an excluded file (the evaluation sets, named by the
caller) is dropped, compared after lower-casing and removing punctuation.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.generate.base import ContextPassage, asks_yes_or_no
from appliance.generate.prompt import MAX_SENTENCES, build_messages
from appliance.generate.quotable import quotable
from appliance.records import Chunk, DocumentMetadata

PASSAGE_CHARS = 600
"""Passages are cut at a sentence end before this length: the prompt of a CPU training
step stays under about 900 tokens with three passages."""
CLAIMS = 2
"""Claims per answer: the product asks for one to three short sentences."""
LEAD_IN_SHARE = 0.5
"""Share of MedQuAD answer passages that begin with the end of the section before them.
Served chunks seldom open with the answer (a document's banner, a heading's first
line); trained only on passages that do, a model learns to quote first sentences."""
LEAD_IN_CHARS = 240
"""The longest sentence taken as a lead-in."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Source:
    """One question with its passages, before the prompt is written: ``answer`` holds
    the (passage index, quote) pairs the claims cite, empty for a refusal."""

    origin: str
    question: str
    passages: tuple[tuple[str, str], ...]  # (title, text)
    answer: tuple[tuple[int, str], ...]
    decision: str = "none"


@dataclass(frozen=True, slots=True)
class Example:
    """A chat to train on: ``messages`` are the prompt, ``completion`` the answer."""

    origin: str
    kind: str  # "answer" or "refusal"
    messages: tuple[dict[str, str], ...]
    completion: str


def sentences(text: str) -> list[str]:
    """Sentences as exact substrings of ``text`` (split after . ! ? before a capital)."""
    return [part for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def clip(text: str, limit: int = PASSAGE_CHARS) -> str:
    """``text`` cut after the last whole sentence that fits (one sentence at least), as
    a prefix of the original so that quotes stay exact spans."""
    text = text.strip()
    if len(text) <= limit:
        return text
    kept = ""
    for sentence in sentences(text):
        candidate = text[: text.index(sentence, len(kept)) + len(sentence)]
        if len(candidate) > limit and kept:
            break
        kept = candidate
    return kept or text[:limit]


def normalised(question: str) -> str:
    return " ".join(_WORD.findall(question.lower()))


def excluded_questions(paths: Iterable[Path]) -> set[str]:
    """The normalised questions of evaluation files (JSONL with a ``question`` field)."""
    questions: set[str] = set()
    for path in paths:
        for line in path.open(encoding="utf-8"):
            if line.strip():
                questions.add(normalised(json.loads(line)["question"]))
    return questions


PASSAGES = 3
"""Passages per example by default: the answer's and others. Serving gives
``retrieval.context_passages`` (5); three keep a CPU training step short."""


def medquad_sources(path: Path, rng: random.Random, passages: int = PASSAGES) -> Iterator[Source]:
    distractors = passages - 1
    pages = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    sections = [
        (page, section) for page in pages for section in page["sections"]
        if section.get("text", "").strip() and section.get("heading", "").strip()
    ]  # fmt: skip
    for page, section in sections:
        if asks_yes_or_no(section["heading"]):
            continue  # its decision is not in the data: PubMedQA's questions teach those
        answer = clip(section["text"])
        claims = [s for s in sentences(answer) if len(s) > 25][:CLAIMS]
        if not claims:
            continue
        lead_in = _lead_in(page, section) if rng.random() < LEAD_IN_SHARE else None
        passage = f"{lead_in}\n\n{answer}" if lead_in else answer
        # One distractor from the same page where it has another section: about the same
        # disease but not what was asked, so the answer is chosen by the question, not
        # by the topic. The rest from anywhere.
        siblings = [other for other in page["sections"] if other is not section
                    and other.get("text", "").strip()]  # fmt: skip
        others = [(page["focus"], clip(rng.choice(siblings)["text"]))] if siblings else []
        others += [
            (other_page["focus"], clip(other["text"]))
            for other_page, other in rng.sample(sections, distractors + 1)
            if other is not section
        ]
        texts = [(page["focus"], passage), *others[:distractors]]
        yield _shuffled("medquad", section["heading"], texts, claims, "none", rng)


def _lead_in(page: dict[str, Any], section: dict[str, Any]) -> str | None:
    """The last sentence of the page's section before ``section``, when there is one
    short enough to stand before an answer."""
    texts = [other.get("text", "").strip() for other in page["sections"]]
    at = next(i for i, other in enumerate(page["sections"]) if other is section)
    before = [text for text in texts[:at] if text]
    if not before:
        return None
    last = sentences(before[-1])[-1:]
    return last[0] if last and 25 < len(last[0]) <= LEAD_IN_CHARS else None


def pubmedqa_sources(
    path: Path, rng: random.Random, skip: int, passages: int = PASSAGES
) -> Iterator[Source]:
    for number, line in enumerate(path.open(encoding="utf-8")):
        if number < skip or not line.strip():
            continue
        item = json.loads(line)
        conclusion = clip(item["long_answer"])
        claims = sentences(conclusion)[:CLAIMS]
        texts = [(c["label"].title(), clip(c["text"])) for c in item["contexts"]][
            : max(passages - 1, 1)
        ]
        texts.append(("Conclusions", conclusion))
        decision = item["final_decision"] if asks_yes_or_no(item["question"]) else "none"
        yield _shuffled("pubmedqa", item["question"], texts, claims, decision, rng)


def pool_sources(path: Path, rng: random.Random, passages: int = PASSAGES) -> Iterator[Source]:
    """Up to three supporting passages, then others up to ``passages``, one at least."""
    for line in path.open(encoding="utf-8"):
        if not line.strip():
            continue
        item = json.loads(line)
        answers = [item["answer"], *item.get("answer_aliases", [])]
        question_words = set(_WORD.findall(item["question"].lower()))
        supporting = [p for p in item["passages"] if p["is_supporting"]][:3]
        others = [p for p in item["passages"] if not p["is_supporting"]]
        texts, claims = [], []
        for passage in supporting:
            text = clip(passage["text"])
            candidates = sentences(text)
            if not candidates:
                continue
            holding = [s for s in candidates if any(a.lower() in s.lower() for a in answers)]
            best = holding[0] if holding else max(
                candidates, key=lambda s: len(question_words & set(_WORD.findall(s.lower())))
            )  # fmt: skip
            texts.append((passage["title"], text))
            claims.append(best)
        if not claims:
            continue
        drawn = rng.sample(others, min(max(passages - len(texts), 1), len(others)))
        texts += [(p["title"], clip(p["text"])) for p in drawn]
        decision = "none"
        if asks_yes_or_no(item["question"]):
            if item["answer"].lower() not in ("yes", "no"):
                continue
            decision = item["answer"].lower()
        yield _shuffled(path.stem, item["question"], texts, claims[:CLAIMS], decision, rng)


def refusal(source: Source, elsewhere: Sequence[Source], rng: random.Random) -> Source:
    """The question with passages of other questions only, as many as it had: nothing
    answers it."""
    donors = rng.sample([s for s in elsewhere if s.question != source.question], 2)
    texts = tuple(p for donor in donors for p in donor.passages)[: len(source.passages)]
    return Source(source.origin, source.question, texts, ())


def build_examples(
    sources: Sequence[Source],
    *,
    exclude: set[str],
    refusal_share: float,
    rng: random.Random,
) -> list[Example]:
    """Prompts and answers; a share of the questions become refusals (their passages
    swapped for other questions'), and excluded questions are dropped."""
    kept = [s for s in sources if normalised(s.question) not in exclude]
    examples = []
    for source in kept:
        if rng.random() < refusal_share:
            source = refusal(source, kept, rng)
        made = example(source)
        if made is not None:
            examples.append(made)
    rng.shuffle(examples)
    return examples


def example(source: Source) -> Example | None:
    """The prompt exactly as the product writes it, and the answer as JSON in the form
    the product's default ``quoted`` schema holds a model to: a claim is its citation,
    whose quote is what the claim says. A claim quotes what the product lets a model
    quote (a whole sentence or table row of its passage); an answer none of whose quotes
    are such is no example (None), since teaching a refusal there would be teaching a
    wrong one."""
    passages = [
        ContextPassage(number, _chunk(source, number, title, text))
        for number, (title, text) in enumerate(source.passages, start=1)
    ]
    messages = build_messages(source.question, passages)
    claims = [
        {"kind": "claim",
         "citations": [{"chunk_id": passages[index].chunk.chunk_id, "quote": quote}]}
        for index, quote in source.answer
        if quote in quotable(passages[index])
    ][:MAX_SENTENCES]  # fmt: skip
    if source.answer and not claims:
        return None
    answer = {"sentences": claims, "decision": source.decision if claims else "none",
              "not_found": not claims}  # fmt: skip
    return Example(
        source.origin,
        "answer" if claims else "refusal",
        tuple(messages),
        json.dumps(answer, ensure_ascii=False),
    )


def _shuffled(
    origin: str,
    question: str,
    texts: list[tuple[str, str]],
    claims: list[str],
    decision: str,
    rng: random.Random,
) -> Source:
    """The passages in a random order (the answer is not always the first), each claim
    pointing at the passage that holds its quote."""
    order = list(range(len(texts)))
    rng.shuffle(order)
    placed = [texts[i] for i in order]
    answer = []
    for quote in claims:
        holder = next(i for i, (_title, text) in enumerate(placed) if quote in text)
        answer.append((holder, quote))
    return Source(origin, question, tuple(placed), tuple(answer), decision)


def _chunk(source: Source, number: int, title: str, text: str) -> Chunk:
    digest = hashlib.sha256(f"{source.question}\n{number}".encode()).hexdigest()[:10]
    doc_id = f"{source.origin}-{digest}"
    metadata = DocumentMetadata(
        doc_id=doc_id, title=title, effective_from=dt.date(2024, 1, 1), sensitivity="public"
    )
    return Chunk(
        chunk_id=f"{doc_id}#{number}", doc_id=doc_id, ordinal=number, text=text, start=0,
        end=len(text), heading_path=(title,), page=None, source_sha256="", metadata=metadata,
    )  # fmt: skip

"""Fine-tunes a cross-encoder from the shipped MiniLM-L6 weights on question-passage pairs.

A hospital can fine-tune on a few thousand pairs from its own
documents. Pairs come from multi-hop training pools (every supporting passage is a
positive, the pool's other passages are hard negatives) and, optionally, SciFact
training claims against the abstracts they cite. Part of the questions is held out
to choose the epoch and to calibrate the relevance threshold; evaluation files are
never trained on. The model, its manifest (sha256 of every file, what it was trained
on, when, with which command) and its training report go to the data directory.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from appliance.training.loop import PairClassifierTrainer
from appliance.training.pools import read_pools

EVALUATION_SUFFIXES = (".dev.jsonl", ".test.jsonl")


@dataclass(frozen=True, slots=True)
class Pair:
    group: str
    question: str
    passage: str
    label: float


def refuse_evaluation_files(paths: Sequence[Path]) -> None:
    for path in paths:
        if path.name.endswith(EVALUATION_SUFFIXES):
            raise ValueError(
                f"{path} is an evaluation file; a reranker is trained on training data only"
            )


def pool_pairs(
    path: Path, negatives: int, rng: random.Random, limit: int | None = None
) -> list[Pair]:
    pairs: list[Pair] = []
    for question in read_pools(path, limit):
        positives = [p for p in question.passages if p.is_supporting]
        others = [p for p in question.passages if not p.is_supporting]
        chosen = rng.sample(others, min(negatives, len(others)))
        group = f"{path.stem}:{question.qid}"
        pairs += [Pair(group, question.question, p.full_text, 1.0) for p in positives]
        pairs += [Pair(group, question.question, p.full_text, 0.0) for p in chosen]
    return pairs


def scifact_pairs(claims: Path, corpus: Path, negatives: int, rng: random.Random) -> list[Pair]:
    """Claims against cited abstracts with rationale (positives), cited abstracts without
    rationale and random abstracts (negatives)."""
    abstracts = [json.loads(line) for line in corpus.open(encoding="utf-8")]

    def text(abstract: dict[str, Any]) -> str:
        return f"{abstract['title']}. {' '.join(abstract['sentences'])}"

    pairs: list[Pair] = []
    for line in claims.open(encoding="utf-8"):
        claim = json.loads(line)
        group = f"scifact:{claim['id']}"
        evidence = {str(d) for d in claim.get("evidence", {})}
        cited = claim.get("cited_abstracts", [])
        for abstract in cited:
            label = 1.0 if str(abstract["doc_id"]) in evidence else 0.0
            pairs.append(Pair(group, claim["claim"], text(abstract), label))
        if evidence:
            for abstract in rng.sample(abstracts, negatives):
                if str(abstract["doc_id"]) not in evidence:
                    pairs.append(Pair(group, claim["claim"], text(abstract), 0.0))
    return pairs


MEDQUAD_SECTIONS_PER_PAGE = 2
PASSAGE_CHARS = 1500
"""A passage is cut here: the cross-encoder reads 256 tokens of it at most."""


def medquad_pairs(
    corpus: Path, negatives: int, rng: random.Random, limit: int | None = None
) -> list[Pair]:
    """In-domain question-passage pairs from MedQuAD patient-information pages: a
    section's question (its heading) against its own answer (positive); hard negatives
    are other sections of the same page (same topic, another question) and the section
    asking the same kind of question on another page about a related topic (a word of
    the page's focus in common): the passages that resemble an answer without being one."""
    pages = [json.loads(line) for line in corpus.open(encoding="utf-8")][:limit]
    by_word: dict[str, list[int]] = defaultdict(list)
    for number, page in enumerate(pages):
        for word in {w for w in page["focus"].lower().split() if len(w) > 3}:
            by_word[word].append(number)
    pairs: list[Pair] = []
    for number, page in enumerate(pages):
        sections = [s for s in page["sections"] if s["text"].strip()]
        for section in rng.sample(sections, min(MEDQUAD_SECTIONS_PER_PAGE, len(sections))):
            group = f"medquad:{section['qid']}"
            question = section["heading"]
            pairs.append(Pair(group, question, section["text"][:PASSAGE_CHARS], 1.0))
            same_page = [s for s in sections if s is not section]
            related = [
                s
                for word in page["focus"].lower().split()
                for other in by_word.get(word, [])
                if other != number
                for s in pages[other]["sections"]
                if s["qtype"] == section["qtype"] and s["text"].strip()
            ]
            pool = rng.sample(same_page, min(len(same_page), (negatives + 1) // 2))
            pool += rng.sample(related, min(len(related), negatives - len(pool)))
            pairs += [Pair(group, question, s["text"][:PASSAGE_CHARS], 0.0) for s in pool]
    return pairs


def pubmedqa_pairs(path: Path, negatives: int, rng: random.Random) -> list[Pair]:
    """PubMedQA questions against their own abstracts (positive) and other questions'
    abstracts (negatives)."""
    items = [json.loads(line) for line in path.open(encoding="utf-8")]
    abstracts = [" ".join(c["text"] for c in item["contexts"])[:PASSAGE_CHARS] for item in items]
    pairs: list[Pair] = []
    for number, item in enumerate(items):
        group = f"pubmedqa:{item['id']}"
        pairs.append(Pair(group, item["question"], abstracts[number], 1.0))
        others = rng.sample(range(len(items)), negatives + 1)
        pairs += [Pair(group, item["question"], abstracts[o], 0.0) for o in others if o != number][
            :negatives
        ]
    return pairs


def split_by_group(
    pairs: Sequence[Pair], held_out: float, rng: random.Random
) -> tuple[list[Pair], list[Pair]]:
    groups = sorted({p.group for p in pairs})
    rng.shuffle(groups)
    chosen = set(groups[: max(1, int(len(groups) * held_out))])
    return [p for p in pairs if p.group not in chosen], [p for p in pairs if p.group in chosen]


def training_and_held_out(
    pools: Sequence[Path],
    scifact_claims: Path | None,
    scifact_corpus: Path | None,
    negatives: int,
    held_out: float,
    seed: int,
    limit: int | None = None,
    medquad: Path | None = None,
    pubmedqa: Path | None = None,
) -> tuple[list[Pair], list[Pair]]:
    """The pairs ``train-reranker`` trains on and holds out, drawn with one seeded stream."""
    rng = random.Random(seed)
    pairs = [pair for path in pools for pair in pool_pairs(path, negatives, rng, limit)]
    if scifact_claims and scifact_corpus:
        pairs += scifact_pairs(scifact_claims, scifact_corpus, 2, rng)
    if medquad:
        pairs += medquad_pairs(medquad, negatives, rng, limit)
    if pubmedqa:
        pairs += pubmedqa_pairs(pubmedqa, negatives, rng)
    return split_by_group(pairs, held_out, rng)


def best_threshold(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The probability threshold with the best F1 of "relevant" on held-out pairs."""
    best = (0.5, 0.0)
    for threshold in np.linspace(0.05, 0.95, 37):
        predicted = probabilities >= threshold
        tp = float(np.sum(predicted & (labels > 0.5)))
        precision = tp / max(1.0, float(predicted.sum()))
        recall = tp / max(1.0, float((labels > 0.5).sum()))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if f1 > best[1]:
            best = (float(threshold), f1)
    return best


def recall_at_2(pairs: Sequence[Pair], scores: np.ndarray) -> float:
    by_group: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for pair, score in zip(pairs, scores, strict=True):
        by_group[pair.group].append((float(score), pair.label))
    recalls = []
    for items in by_group.values():
        gold = sum(label for _s, label in items)
        if gold:
            top = sorted(items, key=lambda item: -item[0])[:2]
            recalls.append(sum(label for _s, label in top) / gold)
    return float(np.mean(recalls)) if recalls else float("nan")


class CrossEncoderTrainer(PairClassifierTrainer[Pair]):
    """One relevance logit per (question, passage), trained with binary cross-entropy;
    the epoch with the best held-out Recall@2 is kept, and the threshold with the best F1."""

    defaults: ClassVar[dict[str, float]] = {
        "epochs": 2,
        "batch_size": 16,
        "learning_rate": 3e-5,
        "max_length": 256,
    }
    metric = "recall_at_2"
    threshold_metric = "f1"
    truncation = "only_second"

    def model_options(self) -> dict[str, Any]:
        return {"num_labels": 1}

    def texts(self, pair: Pair) -> tuple[str, str]:
        return pair.question, pair.passage

    def loss(self, logits: torch.Tensor, batch: Sequence[Pair]) -> torch.Tensor:
        targets = torch.tensor([p.label for p in batch])
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], targets)

    def scores(self, logits: torch.Tensor) -> np.ndarray:
        return logits[:, 0].numpy()

    def held_out_metric(self, pairs: Sequence[Pair], scores: np.ndarray) -> float:
        return recall_at_2(pairs, scores)

    def calibrate(self, pairs: Sequence[Pair], scores: np.ndarray) -> tuple[float, float]:
        probabilities = 1 / (1 + np.exp(-scores))
        return best_threshold(probabilities, np.array([p.label for p in pairs]))

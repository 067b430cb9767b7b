"""The rerank benchmark (``benchmarks/rerank.py``): rerankers side by side on multi-hop candidate pools.

Every question ranks its own pool. Methods: BM25 over the pool, MiniLM cosine (the
paper's "Vanilla RAG"), CAGE as published, CAGE with a plain GCN, CAGE without
reweighting, and bridge-aware selection (ours) over the cosine or a hybrid first
stage, alone or chained through titles and named entities. Reported: Recall@2 and Recall@5 per
question type, any-correct@5 (for RAMDocs), and each rerank step's latency.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tantivy

from appliance.index.tantivy_lexical import stemmed_analyzer
from appliance.nlp.embedder import Embedder
from appliance.nlp.parse_graph import ParseGraphBuilder, PassageGraph
from appliance.rerank.cage import CageConfig, CageReranker
from appliance.rerank.chain import chain_selection, entity_links, title_and_entity_links
from appliance.rerank.cross_encoder import CrossEncoderReranker
from appliance.training.pools import PoolQuestion, read_pools

from .bridge import (
    bridge_scores,
    hybrid_first_stage,
)

Ranking = list[int]


@dataclass(slots=True)
class QuestionInputs:
    question: PoolQuestion
    cosine: np.ndarray
    graphs: list[PassageGraph]
    relevance: np.ndarray | None = None  # cross-encoder probabilities, when one is installed
    query_vector: np.ndarray | None = None
    passage_vectors: np.ndarray | None = None


@dataclass(slots=True)
class MethodResult:
    recall2: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    recall5: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    any5: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)


class GraphCache:
    """Parse graphs of pool passages, kept between runs (parsing is the slow part)."""

    def __init__(self, path: Path, builder: ParseGraphBuilder) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS graphs (key TEXT PRIMARY KEY, graph BLOB NOT NULL)"
        )
        self._builder = builder

    def graphs(self, texts: Sequence[str]) -> list[PassageGraph]:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, PassageGraph] = {}
        for offset in range(0, len(keys), 500):
            batch = keys[offset : offset + 500]
            rows = self._db.execute(
                f"SELECT key, graph FROM graphs WHERE key IN ({','.join('?' * len(batch))})", batch
            )
            found.update((k, PassageGraph.from_bytes(g)) for k, g in rows)
        missing = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in found]
        if missing:
            built = self._builder.build_many([t for _k, t in missing])
            self._db.executemany(
                "INSERT OR REPLACE INTO graphs VALUES (?, ?)",
                [(k, g.to_bytes()) for (k, _t), g in zip(missing, built, strict=True)],
            )
            self._db.commit()
            found.update((k, g) for (k, _t), g in zip(missing, built, strict=True))
        return [found[k] for k in keys]


def bm25_ranking(question: PoolQuestion) -> Ranking:
    """BM25 over the question's own pool, with the product's English analyzer."""
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("position", stored=True)
    builder.add_text_field("body", tokenizer_name="clinical_en")
    schema = builder.build()
    index = tantivy.Index(schema)
    index.register_tokenizer("clinical_en", stemmed_analyzer())
    writer = index.writer(heap_size=15_000_000, num_threads=1)
    for position, passage in enumerate(question.passages):
        writer.add_document(tantivy.Document(position=position, body=passage.full_text))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    words = " ".join("".join(c if c.isalnum() else " " for c in question.question).lower().split())
    query, _errors = index.parse_query_lenient(words, default_field_names=["body"])
    hits = searcher.search(query, len(question.passages)).hits
    ranked = [int(searcher.doc(address)["position"][0]) for _score, address in hits]
    return ranked + [i for i in range(len(question.passages)) if i not in set(ranked)]


def by_score(scores: np.ndarray) -> Ranking:
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def rerank_top(cosine: np.ndarray, k: int, rescore: Callable[[list[int]], np.ndarray]) -> Ranking:
    """Rerank the first stage's top k with ``rescore``; the rest keep their order."""
    first = by_score(cosine)
    top = first[:k]
    scores = rescore(top)
    return [top[i] for i in by_score(scores)] + first[k:]


CROSS_ENCODER_PREFIX = "Cross-encoder"


def methods(
    k: int, epochs: int, with_cross_encoder: bool = False
) -> dict[str, Callable[[QuestionInputs], Ranking]]:
    cage = CageReranker(CageConfig(epochs=epochs))
    gcn = CageReranker(CageConfig(epochs=epochs, relational=False))
    flat = CageReranker(CageConfig(epochs=epochs, reweight=False))

    def with_cage(reranker: CageReranker) -> Callable[[QuestionInputs], Ranking]:
        return lambda q: rerank_top(
            q.cosine, k, lambda top: reranker.score(q.cosine[top], [q.graphs[i] for i in top])
        )

    def bridge(q: QuestionInputs) -> Ranking:
        return by_score(bridge_scores(q.cosine, q.question.passages))

    def bridge_cage(q: QuestionInputs) -> Ranking:
        base = bridge_scores(q.cosine, q.question.passages)
        return rerank_top(base, k, lambda top: cage.score(base[top], [q.graphs[i] for i in top]))

    def first_stage(q: QuestionInputs) -> np.ndarray:
        question = q.question
        return hybrid_first_stage(
            q.cosine, bm25_ranking(question), question.question, question.passages
        )

    def hybrid(q: QuestionInputs) -> np.ndarray:
        return bridge_scores(first_stage(q), q.question.passages)

    def entity_chain(q: QuestionInputs) -> Ranking:
        texts = [p.full_text for p in q.question.passages]
        links = entity_links(q.question.question, texts)
        # 0.35: this design's best weight on the training pools (benchmarks/bridge_weights.py)
        return by_score(chain_selection(hybrid(q), links, weight=0.35))

    def title_and_entity_chain(q: QuestionInputs) -> Ranking:
        passages = q.question.passages
        texts = [p.full_text for p in passages]
        links = title_and_entity_links(q.question.question, passages, texts)
        return by_score(chain_selection(first_stage(q), links))

    def hybrid_cage(q: QuestionInputs) -> Ranking:
        base = hybrid(q)
        return rerank_top(base, k, lambda top: cage.score(base[top], [q.graphs[i] for i in top]))

    def relevance(q: QuestionInputs) -> np.ndarray:
        assert q.relevance is not None
        return q.relevance

    def ce_cage(q: QuestionInputs) -> Ranking:
        base = relevance(q)
        return rerank_top(base, k, lambda top: cage.score(base[top], [q.graphs[i] for i in top]))

    def ce_bridge(q: QuestionInputs) -> Ranking:
        return by_score(bridge_scores(relevance(q), q.question.passages))

    cross_encoder_methods: dict[str, Callable[[QuestionInputs], Ranking]] = {
        f"{CROSS_ENCODER_PREFIX} (trained here)": lambda q: by_score(relevance(q)),
        f"{CROSS_ENCODER_PREFIX} + CAGE": ce_cage,
        f"{CROSS_ENCODER_PREFIX} + Bridge (ours)": ce_bridge,
    }
    return {
        "BM25 (pool)": lambda q: bm25_ranking(q.question),
        "MiniLM cosine": lambda q: by_score(q.cosine),
        "CAGE": with_cage(cage),
        "CAGE, plain GCN": with_cage(gcn),
        "CAGE, no reweighting": with_cage(flat),
        "Bridge (ours)": bridge,
        "Bridge + CAGE (ours)": bridge_cage,
        "Hybrid bridge (ours)": lambda q: by_score(hybrid(q)),
        "Hybrid bridge + CAGE (ours)": hybrid_cage,
        "Hybrid bridge + entity chain (ours)": entity_chain,
        "Hybrid title-and-entity chain (ours)": title_and_entity_chain,
        **(cross_encoder_methods if with_cross_encoder else {}),
    }


def evaluate(
    path: Path,
    embedder: Embedder,
    cache: GraphCache,
    *,
    k: int = 10,
    epochs: int = 30,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cross_encoder: CrossEncoderReranker | None = None,
    product: tuple[str, Callable[[QuestionInputs], Ranking]] | None = None,
) -> dict[str, MethodResult]:
    """Every method on every question of the pool file. ``product``: a named ranker that
    joins them (the product's own pipeline, ``product.ProductPipeline``)."""
    questions = read_pools(path, limit)
    rankers = methods(k, epochs, with_cross_encoder=cross_encoder is not None)
    if product is not None:
        rankers[product[0]] = product[1]
    results = {name: MethodResult() for name in rankers}
    for number, question in enumerate(questions, start=1):
        texts = [p.full_text for p in question.passages]
        vectors = embedder.embed([question.question, *texts])
        inputs = QuestionInputs(question, vectors[1:] @ vectors[0], cache.graphs(texts))
        inputs.query_vector, inputs.passage_vectors = vectors[0], vectors[1:]
        cross_encoder_ms = 0.0
        if cross_encoder is not None:
            started = time.perf_counter()
            logits = cross_encoder.scores(question.question, texts)
            inputs.relevance = cross_encoder.probability(logits).astype(np.float32)
            cross_encoder_ms = (time.perf_counter() - started) * 1000
        gold = question.gold
        for name, rank in rankers.items():
            started = time.perf_counter()
            ranking = rank(inputs)
            elapsed = (time.perf_counter() - started) * 1000
            if name.startswith(CROSS_ENCODER_PREFIX):
                elapsed += cross_encoder_ms  # the cross-encoder's own step counts too
            result = results[name]
            result.latency_ms.append(elapsed)
            if gold:
                result.recall2[question.kind].append(len(gold & set(ranking[:2])) / len(gold))
                result.recall5[question.kind].append(len(gold & set(ranking[:5])) / len(gold))
                result.any5.append(1.0 if gold & set(ranking[:5]) else 0.0)
        if progress is not None:
            progress(number, len(questions))
    return results


def mean(values: Sequence[float]) -> float:
    return 100.0 * sum(values) / len(values) if values else float("nan")


def overall(by_kind: dict[str, list[float]]) -> list[float]:
    return [v for values in by_kind.values() for v in values]

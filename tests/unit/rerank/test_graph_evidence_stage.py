"""The floor under the knowledge graph's first passage: the stages before may lift it,
never sink it below the place fusion gave it; without a graph hit nothing moves."""

from __future__ import annotations

from appliance.records import Candidate, RetrieverHit
from appliance.rerank.base import RerankQuery
from appliance.rerank.graph_evidence_stage import GraphEvidenceStage
from tests.contract.suites import make_chunk

QUERY = RerankQuery("In whom must carboprost be avoided?", None)


def candidates(fused_scores: list[float], graph_first: int | None) -> list[Candidate]:
    found = []
    for n, score in enumerate(fused_scores):
        hits = {"lexical": RetrieverHit(n + 1, 1.0)}
        if n == graph_first:
            hits["graph"] = RetrieverHit(1, 2.0)
        elif graph_first is not None:
            hits["graph"] = RetrieverHit(n + 2, 1.0)
        found.append(Candidate(make_chunk(f"doc{n}", 0, f"passage {n}"), score, hits))
    return found


def ids(ranked: list[Candidate]) -> list[str]:
    return [c.chunk.doc_id for c in ranked]


def test_a_sunk_first_graph_passage_returns_to_its_fused_place() -> None:
    fused = candidates([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3], graph_first=1)
    reranked = [fused[i] for i in (0, 2, 3, 4, 5, 6, 1)]  # a stage sank doc1 to seventh
    kept = GraphEvidenceStage().rerank(QUERY, reranked)
    assert ids(kept) == ["doc0", "doc1", "doc2", "doc3", "doc4", "doc5", "doc6"]
    assert kept[1].scores["graph_evidence"] == 2.0
    assert sorted(ids(kept)) == sorted(ids(reranked))  # nothing lost, nothing repeated


def test_a_lifted_graph_passage_and_the_others_stay_where_the_stages_put_them() -> None:
    fused = candidates([0.9, 0.8, 0.7, 0.6], graph_first=2)
    reranked = [fused[i] for i in (2, 3, 1, 0)]  # lifted from third to first
    assert ids(GraphEvidenceStage().rerank(QUERY, reranked)) == ids(reranked)


def test_without_the_graph_nothing_moves() -> None:
    fused = candidates([0.9, 0.8, 0.7, 0.6], graph_first=None)
    reranked = [fused[i] for i in (3, 2, 1, 0)]
    assert ids(GraphEvidenceStage().rerank(QUERY, reranked)) == ids(reranked)

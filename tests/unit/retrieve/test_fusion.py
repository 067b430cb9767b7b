import pytest

from appliance.index.base import ScoredChunkId
from appliance.retrieve.fusion import reciprocal_rank_fusion


def ranking(*ids: str) -> list[ScoredChunkId]:
    return [ScoredChunkId(chunk_id, 1.0 / (i + 1)) for i, chunk_id in enumerate(ids)]


def test_rrf_sums_reciprocal_ranks_over_retrievers() -> None:
    fused = reciprocal_rank_fusion({"lexical": ranking("a", "b"), "dense": ranking("b", "c")}, k=60)
    scores = {chunk_id: score for chunk_id, score, _hits in fused}
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [chunk_id for chunk_id, _s, _h in fused] == ["b", "a", "c"]


def test_rrf_keeps_each_retrievers_rank_and_score() -> None:
    fused = reciprocal_rank_fusion({"lexical": ranking("a", "b"), "dense": ranking("b")}, k=10)
    hits = {chunk_id: h for chunk_id, _s, h in fused}
    assert hits["b"]["lexical"].rank == 2
    assert hits["b"]["dense"].rank == 1
    assert hits["b"]["lexical"].score == pytest.approx(0.5)
    assert "dense" not in hits["a"]


def test_rrf_breaks_ties_by_chunk_id_and_ignores_duplicates() -> None:
    fused = reciprocal_rank_fusion({"x": ranking("z", "z", "y"), "w": ranking("y", "z")}, k=60)
    assert [chunk_id for chunk_id, _s, _h in fused] == ["y", "z"]


def test_rrf_rejects_non_positive_k() -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": ranking("a")}, k=0)

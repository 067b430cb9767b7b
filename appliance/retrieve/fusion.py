"""Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009).

score(d) = sum over retrievers r of 1 / (k + rank_r(d)), ranks starting at 1. It
needs no score calibration between engines, which is why BM25 and cosine can be
fused at all; k (60 by default) damps the weight of the very first ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from appliance.index.base import ScoredChunkId
from appliance.records import RetrieverHit


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[ScoredChunkId]], k: int = 60
) -> list[tuple[str, float, dict[str, RetrieverHit]]]:
    """Fuse named rankings; returns (chunk_id, fused score, per-retriever hits), best first.

    Ties are broken by chunk id so that the order is reproducible.
    """
    if k <= 0:
        raise ValueError("the RRF constant k must be positive")
    fused: dict[str, float] = {}
    hits: dict[str, dict[str, RetrieverHit]] = {}
    for name, ranking in rankings.items():
        seen: set[str] = set()
        for scored in ranking:
            if scored.chunk_id in seen:
                continue  # a repeated id neither counts twice nor takes a rank
            seen.add(scored.chunk_id)
            rank = len(seen)
            fused[scored.chunk_id] = fused.get(scored.chunk_id, 0.0) + 1.0 / (k + rank)
            hits.setdefault(scored.chunk_id, {})[name] = RetrieverHit(rank, scored.score)
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [(chunk_id, score, hits[chunk_id]) for chunk_id, score in ordered]

"""Bridge-aware scoring for multi-hop questions (ours).

A multi-hop question needs a passage that the question does not describe well: the
one about the bridge entity that another passage names. So a passage gains when a
strong passage mentions it by title: s_j = cos(q, p_j) + lambda * max_i cos(q, p_i)
over the top-m passages i that mention p_j's title. Titles are document titles or
heading paths in the product, page titles in the public multi-hop sets.

Its first stage can be hybrid (``hybrid_first_stage``): the cosine, plus a little of
BM25's rank (names and numbers the embedding blurs), plus a bonus for a passage whose
title the question names (a comparison question names both of its entities, a bridge
question its first hop). Weights chosen on the training pools, never on the dev sets.

Titles miss the longer chains (MuSiQue's three and four hops): the next hop's passage
often names the bridge entity inside its text ("The Mountrail County Courthouse in
Stanley ...") rather than as its title. The title-and-entity chain
(``appliance.rerank.chain``, a product stage) follows both kinds of link; over the hybrid
first stage, with weight 0.55, it had the best training Recall@5 of the designs and
weights tried (``benchmarks/bridge_weights.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from appliance.rerank.chain import Titled, title_pattern


def bridge_scores(
    cosine: np.ndarray, passages: Sequence[Titled], weight: float = 0.5, sources: int = 3
) -> np.ndarray:
    """First-stage cosine plus the bridge bonus (unchanged where no title is mentioned)."""
    scores = np.asarray(cosine, dtype=np.float32).copy()
    order = np.argsort(-scores, kind="stable")[:sources]
    lowered = [p.text.lower() for p in passages]
    for j, passage in enumerate(passages):
        pattern = title_pattern(passage.title)
        if pattern is None:
            continue
        linked = [float(cosine[i]) for i in order if i != j and pattern.search(lowered[i])]
        if linked:
            scores[j] += weight * max(linked)
    return scores


def title_in_question(question: str, passages: Sequence[Titled]) -> np.ndarray:
    """1.0 for each passage whose title the question names, else 0.0."""
    lowered = question.lower()
    named = np.zeros(len(passages), dtype=np.float32)
    for j, passage in enumerate(passages):
        pattern = title_pattern(passage.title)
        if pattern is not None and pattern.search(lowered):
            named[j] = 1.0
    return named


def hybrid_first_stage(
    cosine: np.ndarray,
    lexical_ranking: Sequence[int],
    question: str,
    passages: Sequence[Titled],
    lexical_weight: float = 0.2,
    title_weight: float = 0.1,
) -> np.ndarray:
    """cos(q, p_j) + lexical_weight / (BM25 rank of p_j) + title_weight * [q names p_j]."""
    reciprocal_rank = np.zeros(len(passages), dtype=np.float32)
    for rank, index in enumerate(lexical_ranking, start=1):
        reciprocal_rank[index] = 1.0 / rank
    return (
        np.asarray(cosine, dtype=np.float32)
        + lexical_weight * reciprocal_rank
        + title_weight * title_in_question(question, passages)
    )

"""Warming up after a start: every model an answer needs is loaded and run once, so
that the first clinician after a restart waits no longer than the next one (loading
them on the first question made it take about 20 s).

Nothing is searched for anyone and nothing is shown: each reranker, the verifier and
the generator read a few passages of one indexed document inside the process, so the
warm-up needs no subject, no access decision and no audit entry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial

from appliance.engines import Appliance
from appliance.generate.base import ContextPassage, GeneratorUnavailable
from appliance.records import Candidate, Chunk
from appliance.rerank.base import RerankQuery

log = logging.getLogger(__name__)

QUESTION = "What is the recommended dose and when should it be reviewed?"
FOLLOW_UP = "and the maximum?"
PASSAGES = 4


def warm_up(appliance: Appliance) -> dict[str, float]:
    """Seconds each part took, in the order they ran. A part that cannot run (no
    document indexed yet, a generator server down) is skipped and said in the log: the
    first question then pays for it, as it would have without a warm-up."""
    timings: dict[str, float] = {}

    def timed(part: str, step: Callable[[], object]) -> None:
        started = time.perf_counter()
        step()
        timings[part] = round(time.perf_counter() - started, 3)

    timed("answer pipeline", lambda: appliance.answers)
    timed("question reader", lambda: appliance.question_reader.read(FOLLOW_UP, QUESTION))
    passages = _some_passages(appliance)
    if not passages:
        log.info("warm-up: no document is indexed yet, so the models were loaded, not run")
        return timings
    vector = appliance.embedder.embed([QUESTION])[0]
    for stage in appliance.query.stages:
        candidates = [Candidate(chunk, 1.0 / (rank + 60)) for rank, chunk in enumerate(passages)]
        timed(
            f"rerank: {stage.name}",
            partial(stage.rerank, RerankQuery(QUESTION, vector), candidates),
        )
    first = passages[0].text
    timed("verifier", lambda: appliance.verifier.check(first, first[: max(20, len(first) // 2)]))
    context = [ContextPassage(n, chunk) for n, chunk in enumerate(passages, 1)]
    try:
        timed("generator", lambda: appliance.generator.generate(QUESTION, context))
    except GeneratorUnavailable as error:
        log.warning("warm-up: the generator did not answer (%s)", error)
    return timings


def _some_passages(appliance: Appliance) -> list[Chunk]:
    """A few passages of the first indexed document, in their order."""
    catalog = appliance.catalog
    for record in catalog.documents():
        if record.state == "indexed" and record.chunk_count:
            chunks = catalog.chunks(sorted(catalog.chunk_ids_of(record.doc_id)))
            return sorted(chunks.values(), key=lambda c: c.start)[:PASSAGES]
    return []

"""The title-and-entity chain as a query-path stage."""

from __future__ import annotations

from appliance.records import Candidate, Chunk, DocumentMetadata
from appliance.rerank.base import RerankQuery
from appliance.rerank.chain_stage import ChainStage


def _candidate(doc_id: str, title: str, text: str, cage: float) -> Candidate:
    metadata = DocumentMetadata(doc_id=doc_id, title=title, sensitivity="internal")
    chunk = Chunk(f"{doc_id}#0", doc_id, 0, text, 0, len(text), (title,), None, "sha", metadata)
    return Candidate(chunk, 0.01, scores={"cage": cage})


def test_a_passage_that_names_another_documents_title_pulls_it_up_behind_it() -> None:
    sepsis = _candidate(
        "sepsis", "Adult Sepsis Bundle", "Give the first dose within one hour; doses by "
        "renal function are in the Antimicrobial Renal Dosing table.", 0.9,
    )  # fmt: skip
    other = _candidate("hygiene", "Hand Hygiene", "Rub hands for 20 to 30 seconds.", 0.6)
    renal = _candidate("renal", "Antimicrobial Renal Dosing", "CrCl below 30: halve it.", 0.5)
    query = RerankQuery("first antibiotic dose in sepsis with poor kidneys", None)
    ranked = ChainStage().rerank(query, [sepsis, other, renal])
    assert [c.chunk.doc_id for c in ranked] == ["sepsis", "renal", "hygiene"]
    assert [c.scores["chain"] for c in ranked] == [3.0, 2.0, 1.0]


def test_chunks_of_one_document_do_not_link_to_each_other() -> None:
    first = _candidate("sepsis", "Adult Sepsis Bundle", "The Adult Sepsis Bundle starts.", 0.9)
    second = _candidate("hygiene", "Hand Hygiene", "Rub hands for 20 to 30 seconds.", 0.6)
    third_metadata = first.chunk.metadata
    text = "Adult Sepsis Bundle: step two."
    third = Candidate(
        Chunk("sepsis#1", "sepsis", 1, text, 0, len(text), (), None, "sha", third_metadata),
        0.01,
        scores={"cage": 0.5},
    )
    ranked = ChainStage().rerank(RerankQuery("sepsis", None), [first, second, third])
    assert [c.chunk.chunk_id for c in ranked] == ["sepsis#0", "hygiene#0", "sepsis#1"]


def test_the_stage_describes_itself_and_leaves_the_rest_in_place() -> None:
    stage = ChainStage(candidates=2, weight=0.3)
    assert stage.to_dict()["weight"] == 0.3 and stage.to_dict()["candidates"] == 2
    assert stage.relevance_threshold is None and not stage.needs_vector
    candidates = [_candidate(f"d{n}", f"Doc {n}", "Plain text.", 1.0 - n / 10) for n in range(4)]
    ranked = stage.rerank(RerankQuery("q", None), list(candidates))
    assert ranked[2:] == candidates[2:] and "chain" not in candidates[3].scores

"""The query path with CAGE: graphs built at ingestion, never at query time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from appliance.settings import Settings
from tests.conftest import SAMPLE_READER, audit_entries, make_settings


def test_every_chunk_has_a_stored_graph(sample_appliance: Appliance) -> None:
    for record in sample_appliance.catalog.documents():
        ids = sorted(sample_appliance.catalog.chunk_ids_of(record.doc_id))
        assert set(sample_appliance.catalog.graphs(ids)) == set(ids)


def test_cage_reorders_the_top_candidates_by_its_formula(sample_appliance: Appliance) -> None:
    candidates = sample_appliance.query.run(
        "first antibiotic for sepsis with penicillin allergy",
        SAMPLE_READER,
        5,
        ActiveOn(dt.date(2026, 11, 30)),
    ).candidates
    assert len(candidates) == 5 and all("cage" in c.scores for c in candidates)
    for candidate in candidates:
        expected = 0.7 * candidate.scores["cosine"] + 0.3 * candidate.scores["cage_coherence"]
        assert abs(candidate.scores["cage"] - expected) < 1e-5
    assert [c.scores["cage"] for c in candidates] == sorted(
        (c.scores["cage"] for c in candidates), reverse=True
    )
    assert "aztreonam 2 g IV" in candidates[0].chunk.text


def test_a_query_never_builds_a_graph(corpus_copy: Path, settings: Settings) -> None:
    with Appliance(settings) as ingesting:
        ingesting.ingestor.ingest([corpus_copy])
    with Appliance(settings) as querying:
        candidates = querying.query.run(
            "which apron for contact precautions", SAMPLE_READER, 5
        ).candidates
        assert "graph_builder" not in querying.__dict__  # no parser was even constructed
    assert candidates and all("cage" in c.scores for c in candidates)


def test_without_cage_no_graphs_are_built_and_order_is_fusion_order(
    corpus_copy: Path, tmp_path: Path
) -> None:
    settings: Settings = make_settings(tmp_path / "plain", rerank={"cage": False})
    with Appliance(settings) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        ids = sorted(appliance.catalog.chunk_ids_of("hand-hygiene-policy"))
        assert appliance.catalog.graphs(ids) == {}
        candidates = appliance.query.run("hand rub seconds", SAMPLE_READER, 5).candidates
        assert appliance.query.rerank_stages == []
        assert all(not c.scores for c in candidates)
        fused = [c.fused_score for c in candidates]
        assert fused == sorted(fused, reverse=True)


def test_every_question_record_names_the_pipeline_that_ranked_it(
    corpus_copy: Path, tmp_path: Path
) -> None:
    """The record says which retrievers, fusion, stages and gates, with which settings,
    produced the ranking; the hash tells two configurations apart at a glance."""
    hashes = {}
    for alpha in (0.7, 0.5):
        settings = make_settings(tmp_path / f"alpha-{alpha}", rerank={"cage_alpha": alpha})
        with Appliance(settings) as appliance:
            appliance.ingestor.ingest([corpus_copy])
            answer = appliance.answers.ask("How long should I rub my hands?", SAMPLE_READER)
        question = audit_entries(settings.data_dir, "question")[-1]["details"]
        pipeline = question["pipeline"]
        assert pipeline["fusion"] == {"method": "reciprocal rank fusion", "k": 60}
        assert set(pipeline["retrievers"]) == {"lexical", "dense"}
        assert [s["name"] for s in pipeline["stages"]] == ["cage"]
        assert pipeline["stages"][0]["alpha"] == alpha and pipeline["stages"][0]["epochs"] == 30
        assert pipeline["answer_gates"]["relevance_floor"] == 0.42
        record = audit_entries(settings.data_dir, "answer")[-1]
        assert record["request_id"] == answer.request_id
        assert record["details"]["pipeline_hash"] == question["pipeline_hash"]
        hashes[alpha] = question["pipeline_hash"]
    assert hashes[0.7] != hashes[0.5]

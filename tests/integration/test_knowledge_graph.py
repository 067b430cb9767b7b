"""The knowledge graph in the appliance, end to end on the embedded graph server:
ingestion fills it and keeps it equal to the catalog through edits and removals, and
its retriever joins the fusion inside the asker's access filter."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.index.filters import ActiveOn, AllOf, AnyOf
from appliance.retrieve.graph import GraphRetriever
from tests.conftest import SAMPLE_CORPUS, SAMPLE_READER, make_settings

DOCUMENTS = (
    "insulin-infusion-protocol.md",
    "sepsis-bundle-v3.md",
    "sepsis-bundle-v4.md",
    "mrsa-screening.md",
    "falls-prevention.md",
    "care-plan-p10234.md",
)
VRIII = "variable rate intravenous insulin infusion"
DKA_PROTOCOL = """---
doc_id: dka-protocol
title: Diabetic Ketoacidosis in Adults
departments: [endocrinology]
sensitivity: internal
---
# Diabetic Ketoacidosis in Adults

## Treatment

Treat diabetic ketoacidosis (DKA) with a fixed-rate intravenous insulin infusion of
0.1 units/kg/hour.
"""

ANALGESIA = """---
doc_id: ward-analgesia
title: Analgesia on the Wards
departments: [pharmacy]
sensitivity: internal
---
# Analgesia on the Wards

## Step two

Ibuprofen 400 mg orally three times a day with food; avoid in asthma.
"""


def graph_appliance(data_dir: Path, engine: str = "arcadedb") -> Appliance:
    return Appliance(make_settings(data_dir, graph={"engine": engine}))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("graph-corpus")
    for name in DOCUMENTS:
        shutil.copy(SAMPLE_CORPUS / name, target / name)
    (target / "dka-protocol.md").write_text(DKA_PROTOCOL, encoding="utf-8")
    (target / "ward-analgesia.md").write_text(ANALGESIA, encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def appliance(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Iterator[Appliance]:
    appliance = graph_appliance(tmp_path_factory.mktemp("graph-data"))
    report = appliance.ingestor.ingest([corpus])
    assert not report.failed, report.failed
    yield appliance
    appliance.close()


def assert_graph_matches_catalog(appliance: Appliance) -> None:
    graph = appliance.knowledge_graph
    assert graph is not None
    assert graph.count() == appliance.catalog.chunk_count()
    for record in appliance.catalog.documents():
        assert graph.chunk_ids_of(record.doc_id) == appliance.catalog.chunk_ids_of(record.doc_id)


def test_ingestion_fills_the_graph_with_the_catalogs_chunks(appliance: Appliance) -> None:
    assert_graph_matches_catalog(appliance)
    graph = appliance.knowledge_graph
    assert graph is not None
    assert graph.abbreviations()["vriii"] == VRIII


def test_the_graph_retriever_joins_the_fusion(appliance: Appliance) -> None:
    candidates = appliance.retriever.retrieve(
        "Is a VRIII used for diabetic ketoacidosis?",
        top_k=5,
        search_filter=ActiveOn(dt.date(2026, 6, 1)),
    )
    top = candidates[0]
    assert top.chunk.doc_id == "insulin-infusion-protocol"
    assert top.hits["graph"].rank == 1  # the passage whose scope excludes DKA
    assert "diabetic ketoacidosis" in top.chunk.text
    assert "graph" in appliance.retriever.to_dict()["retrievers"]  # type: ignore[operator]


def test_a_question_about_whom_a_drug_is_avoided_in_finds_its_contraindication(
    appliance: Appliance,
) -> None:
    today = ActiveOn(dt.date(2026, 6, 1))
    candidates = appliance.retriever.retrieve("Who should not be given ibuprofen?", 5, today)
    [stated] = [c for c in candidates if "graph" in c.hits]
    assert stated.chunk.doc_id == "ward-analgesia" and "avoid in asthma" in stated.chunk.text
    assert stated.hits["graph"].rank == 1
    graph = appliance.knowledge_graph
    assert graph is not None
    reader = GraphRetriever(graph, appliance.fact_extractor)
    evidence = reader.evidence("Who should not be given ibuprofen?", 10, today)
    assert [(e.template, e.evidence) for e in evidence] == [
        ("contraindications", ("ibuprofen CONTRAINDICATED_WITH asthma",))
    ]


def test_a_question_about_the_next_step_reads_the_procedures_order(appliance: Appliance) -> None:
    graph = appliance.knowledge_graph
    assert graph is not None
    reader = GraphRetriever(graph, appliance.fact_extractor)
    today = ActiveOn(dt.date(2026, 6, 1))
    after = reader.evidence("What comes after the blood cultures in sepsis?", 10, today)
    assert (after[0].template, after[0].evidence) == (
        "steps_after",
        ("blood cultures NEXT_STEP piperacillin",),
    )
    assert after[0].chunk_id.startswith("sepsis-bundle-v4@")  # the version in force
    before = reader.evidence("What is done before the blood cultures are taken?", 10, today)
    assert (before[0].template, before[0].evidence) == (
        "steps_before",
        ("lactate NEXT_STEP blood cultures",),
    )
    candidates = appliance.retriever.retrieve("What comes after the blood cultures?", 5, today)
    assert candidates[0].hits["graph"].rank == 1
    assert "2. Take two sets of blood cultures" in candidates[0].chunk.text


def test_the_graphs_first_passage_is_not_sunk_by_the_rerank_stages(
    appliance: Appliance, tmp_path: Path
) -> None:
    today = ActiveOn(dt.date(2026, 6, 1))
    found = appliance.query.run("Who should not be given ibuprofen?", SAMPLE_READER, 10, today)
    [stated] = [c for c in found.candidates if c.hits.get("graph", None) is not None
                and c.hits["graph"].rank == 1]  # fmt: skip
    fused = sorted(found.candidates, key=lambda c: (-c.fused_score, c.chunk.chunk_id))
    assert found.candidates.index(stated) <= fused.index(stated)
    assert [s.name for s in appliance.query.stages][-1] == "graph_evidence"
    with Appliance(make_settings(tmp_path / "no-graph")) as plain:  # no graph, no such stage
        assert "graph_evidence" not in [s.name for s in plain.query.stages]


def test_the_graph_is_silent_where_it_knows_nothing_the_words_do_not(
    appliance: Appliance,
) -> None:
    """One entity and no relational form: BM25 and the vectors find that passage anyway,
    and a third ranking of every passage naming it would only dilute theirs."""
    today = ActiveOn(dt.date(2026, 6, 1))
    candidates = appliance.retriever.retrieve("How is mupirocin given?", 10, today)
    assert candidates and all("graph" not in c.hits for c in candidates)


def test_graph_hits_stay_inside_the_access_filter(appliance: Appliance) -> None:
    public_only = AllOf((AnyOf("sensitivity", ("public",)), ActiveOn(dt.date(2026, 6, 1))))
    candidates = appliance.retriever.retrieve("VRIII for diabetes", 10, public_only)
    assert all("graph" not in c.hits for c in candidates)
    assert all(c.chunk.metadata.sensitivity == "public" for c in candidates)


def test_a_question_about_a_replaced_version_finds_its_successor(appliance: Appliance) -> None:
    graph = appliance.knowledge_graph
    assert graph is not None
    found = graph.find("successors", {"keys": ["penicillin allergy"], "limit": 5})
    assert found and {e.chunk_id.split("@")[0] for e in found} == {"sepsis-bundle-v4"}


def test_an_edit_and_a_removal_keep_the_graph_equal_to_the_catalog(
    appliance: Appliance, corpus: Path
) -> None:
    path = corpus / "insulin-infusion-protocol.md"
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(
            original.replace("Do not use a VRIII for diabetic ketoacidosis", "Use it with care"),
            encoding="utf-8",
        )
        report = appliance.ingestor.ingest([corpus])
        assert (
            report.count("updated") == 1
            and report.count("unchanged") == len(list(corpus.iterdir())) - 1
        )
        assert_graph_matches_catalog(appliance)
        graph = appliance.knowledge_graph
        assert graph is not None
        assert graph.find("scope_match", {"keys": ["diabetic ketoacidosis"], "limit": 5}) == []
        appliance.ingestor.remove(["insulin-infusion-protocol"])
        assert graph.chunk_ids_of("insulin-infusion-protocol") == set()
        assert "vriii" not in graph.abbreviations()
        assert_graph_matches_catalog(appliance)
    finally:
        path.write_text(original, encoding="utf-8")
        appliance.ingestor.ingest([corpus])
    assert_graph_matches_catalog(appliance)


def test_turning_the_graph_on_fills_it_for_documents_already_ingested(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(SAMPLE_CORPUS / "falls-prevention.md", corpus)
    with graph_appliance(tmp_path / "data", engine="none") as without:
        assert without.knowledge_graph is None
        assert without.ingestor.ingest([corpus]).count("added") == 1
    with graph_appliance(tmp_path / "data") as with_graph:
        report = with_graph.ingestor.ingest([corpus])
        assert report.count("updated") == 1
        assert_graph_matches_catalog(with_graph)
        assert with_graph.ingestor.ingest([corpus]).count("unchanged") == 1


def test_the_answer_path_reads_a_documents_exclusions_from_the_graph(
    appliance: Appliance,
) -> None:
    """The insulin infusion protocol excludes diabetic ketoacidosis; another document
    defines "DKA". A question about a patient "in DKA" does not contain the words of the
    exclusion, but the graph reads it as the excluded condition: a rate from the
    protocol's table is not quoted for that patient."""
    from appliance.understand.qualifiers import qualifiers_of

    question = "What insulin rate does a patient in DKA with a capillary glucose of 16 get?"
    table = next(
        chunk
        for chunk in appliance.catalog.chunks(
            sorted(appliance.catalog.chunk_ids_of("insulin-infusion-protocol"))
        ).values()
        if chunk.heading_path[-1] == "Rate scale"
    )
    claim = "| 15.1 to 20.0 | 4 |"
    why = appliance.scope_checker.claim_conflict(qualifiers_of(question), question, table, claim)
    assert (
        why
        == "Variable Rate Intravenous Insulin Infusion is not to be used for diabetic ketoacidosis"
    )
    without_abbreviation = "What insulin rate does a patient with a capillary glucose of 16 get?"
    assert (
        appliance.scope_checker.claim_conflict(
            qualifiers_of(without_abbreviation), without_abbreviation, table, claim
        )
        is None
    )

"""The path of one document, end to end, on the real stores and the real embedder."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from appliance.ingest.parsers import parser_for
from appliance.ingest.preparation import discover
from appliance.settings import Settings
from tests.conftest import SAMPLE_CORPUS, make_settings


def store_ids(appliance: Appliance, doc_id: str) -> tuple[set[str], set[str], set[str]]:
    return (
        appliance.catalog.chunk_ids_of(doc_id),
        appliance.lexical.chunk_ids_of(doc_id),
        appliance.vectors.chunk_ids_of(doc_id),
    )


def test_sample_corpus_offsets_round_trip_for_every_chunk(sample_appliance: Appliance) -> None:
    records = sample_appliance.catalog.documents()
    assert len(records) == len(discover([SAMPLE_CORPUS])) >= 30
    checked = 0
    for record in records:
        path = Path(record.source_path)
        reparsed = parser_for(path)(path, path.read_bytes()).text
        assert sample_appliance.catalog.document_text(record.doc_id) == reparsed
        chunks = sample_appliance.catalog.chunks(
            sorted(sample_appliance.catalog.chunk_ids_of(record.doc_id))
        )
        for chunk in chunks.values():
            assert reparsed[chunk.start : chunk.end] == chunk.text
            checked += 1
    assert checked == sample_appliance.catalog.chunk_count()


def test_every_store_holds_exactly_the_catalogs_chunks(sample_appliance: Appliance) -> None:
    for record in sample_appliance.catalog.documents():
        catalog_ids, lexical_ids, vector_ids = store_ids(sample_appliance, record.doc_id)
        assert catalog_ids == lexical_ids == vector_ids != set()


def test_reingesting_an_unchanged_corpus_writes_nothing(sample_appliance: Appliance) -> None:
    before = {r.doc_id: r.ingested_at for r in sample_appliance.catalog.documents()}
    counts = (sample_appliance.lexical.count(), sample_appliance.vectors.count())
    report = sample_appliance.ingestor.ingest([SAMPLE_CORPUS])
    assert report.count("unchanged") == len(before)
    assert report.chunks_written == 0
    assert {r.doc_id: r.ingested_at for r in sample_appliance.catalog.documents()} == before
    assert (sample_appliance.lexical.count(), sample_appliance.vectors.count()) == counts


def test_hybrid_search_returns_the_current_version_with_every_retrievers_rank(
    sample_appliance: Appliance,
) -> None:
    question = "first antibiotic dose for sepsis with penicillin allergy"
    candidates = sample_appliance.retriever.retrieve(question, 5, ActiveOn(dt.date(2026, 11, 30)))
    [current] = [c for c in candidates if "aztreonam 2 g IV" in c.chunk.text]
    assert current.chunk.doc_id == "sepsis-bundle-v4"
    assert set(current.hits) == {"lexical", "dense"}
    assert all(c.chunk.doc_id != "sepsis-bundle-v3" for c in candidates)
    on_old_day = sample_appliance.retriever.retrieve(question, 5, ActiveOn(dt.date(2024, 6, 1)))
    old = [c.chunk.text for c in on_old_day if c.chunk.doc_id == "sepsis-bundle-v3"]
    assert any("meropenem 1 g IV as the first dose" in text for text in old)
    assert all(c.chunk.doc_id != "sepsis-bundle-v4" for c in on_old_day)


def test_editing_one_file_changes_only_that_files_chunks(
    corpus_copy: Path, settings: Settings
) -> None:
    with Appliance(settings) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        before = {
            r.doc_id: appliance.catalog.chunk_ids_of(r.doc_id)
            for r in appliance.catalog.documents()
        }
        edited = corpus_copy / "hand-hygiene-policy.md"
        edited.write_text(edited.read_text().replace("20 to 30 seconds", "30 to 40 seconds"))
        report = appliance.ingestor.ingest([corpus_copy])
        assert report.count("updated") == 1 and report.count("unchanged") == len(before) - 1
        after = {
            r.doc_id: appliance.catalog.chunk_ids_of(r.doc_id)
            for r in appliance.catalog.documents()
        }
        for doc_id, ids in before.items():
            if doc_id == "hand-hygiene-policy":
                assert ids != after[doc_id] and len(ids & after[doc_id]) == len(ids) - 1
            else:
                assert ids == after[doc_id]
        catalog_ids, lexical_ids, vector_ids = store_ids(appliance, "hand-hygiene-policy")
        assert catalog_ids == lexical_ids == vector_ids == after["hand-hygiene-policy"]
        hit = appliance.retriever.retrieve("how long to rub hands with alcohol", 1)[0]
        assert "30 to 40 seconds" in hit.chunk.text


def test_removing_a_document_leaves_no_trace(corpus_copy: Path, settings: Settings) -> None:
    with Appliance(settings) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        total = appliance.lexical.count()
        removed_chunks = len(appliance.catalog.chunk_ids_of("diabetes-coding-guide"))
        assert appliance.ingestor.remove(["diabetes-coding-guide", "no-such-doc"]) == [
            "diabetes-coding-guide"
        ]
        assert store_ids(appliance, "diabetes-coding-guide") == (set(), set(), set())
        assert appliance.catalog.document("diabetes-coding-guide") is None
        assert appliance.lexical.count() == appliance.vectors.count() == total - removed_chunks
        assert all(
            c.chunk.doc_id != "diabetes-coding-guide"
            for c in appliance.retriever.retrieve("E11.9", 10)
        )


def test_prune_removes_documents_whose_file_is_gone(corpus_copy: Path, settings: Settings) -> None:
    with Appliance(settings) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        (corpus_copy / "visiting-hours.html").unlink()
        assert appliance.ingestor.prune() == ["visiting-hours"]
        assert store_ids(appliance, "visiting-hours") == (set(), set(), set())


def test_bad_files_fail_alone_and_leave_nothing_behind(
    corpus_copy: Path, settings: Settings
) -> None:
    (corpus_copy / "empty.md").write_bytes(b"")
    (corpus_copy / "binary.txt").write_bytes(bytes(range(256)))
    (corpus_copy / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not a pdf")
    (corpus_copy / "bad-meta.md").write_text("---\nsensitivity: top-secret\n---\n# X\n\nText.\n")
    (corpus_copy / "huge.md").write_text("# Big\n\n" + "word " * 3000)
    with Appliance(
        make_settings(settings.data_dir, limits={"max_file_bytes": 10_000})
    ) as appliance:
        report = appliance.ingestor.ingest([corpus_copy, corpus_copy / "missing.md"])
        failed = {o.path.name: o.error for o in report.failed}
        assert set(failed) == {
            "empty.md",
            "binary.txt",
            "broken.pdf",
            "bad-meta.md",
            "huge.md",
            "missing.md",
        }
        assert "empty" in failed["empty.md"]
        assert "sensitivity" in failed["bad-meta.md"]
        assert "over the limit" in failed["huge.md"]
        assert report.count("added") == 5  # the five good sample documents
        for doc_id in ("empty", "binary", "broken", "bad-meta", "huge"):
            assert appliance.catalog.document(doc_id) is None
            assert store_ids(appliance, doc_id) == (set(), set(), set())


def test_two_files_claiming_one_document_id_are_refused(
    corpus_copy: Path, settings: Settings
) -> None:
    clone = corpus_copy / "copy-of-hand-hygiene.md"
    clone.write_text((corpus_copy / "hand-hygiene-policy.md").read_text())
    with Appliance(settings) as appliance:
        report = appliance.ingestor.ingest([corpus_copy])
        [failure] = report.failed
        assert "already taken by another source file" in (failure.error or "")


def test_a_document_left_pending_by_a_crash_is_redone(
    corpus_copy: Path, settings: Settings
) -> None:
    with Appliance(settings) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        record = appliance.catalog.document("isolation-precautions")
        assert record is not None
        # What a crash between "pending" and the stores' commit leaves behind.
        appliance.catalog.mark_pending(
            record.metadata, record.source_path, record.source_sha256, record.fingerprint
        )
        appliance.lexical.delete_documents(["isolation-precautions"])
        appliance.lexical.commit()
        report = appliance.ingestor.ingest([corpus_copy / "hand-hygiene-policy.md"])
        redone = {o.doc_id: o.status for o in report.outcomes}
        assert redone["isolation-precautions"] == "updated"
        catalog_ids, lexical_ids, vector_ids = store_ids(appliance, "isolation-precautions")
        assert catalog_ids == lexical_ids == vector_ids != set()
        assert appliance.catalog.document("isolation-precautions").state == "indexed"

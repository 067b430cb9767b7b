"""Ingestion read in a child process and written here (``appliance.document_reader``): what
comes back is what reading here gives, a reader that dies fails its files and the next
request starts another, and closing drops a document being read without writing it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from appliance.document_reader import (
    CRASHED,
    PreparationProcess,
    PreparationStopped,
    Prepared,
)
from appliance.engines import Appliance
from appliance.ingest.preparation import DocumentOutcome, ReadyBatch
from tests.conftest import make_settings


def _child_started(process: PreparationProcess) -> int:
    for _ in range(600):
        if process.process_id is not None:
            return process.process_id
        time.sleep(0.05)
    raise AssertionError("the document reader did not start")


def _in_background(call: object) -> tuple[threading.Thread, list[object]]:
    """Runs ``call`` in a thread; the list gets its result or the exception it raised."""
    result: list[object] = []

    def run() -> None:
        try:
            result.append(call())  # type: ignore[operator]
        except Exception as error:
            result.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def _long_manual(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manual.md"
    paragraphs = "".join(
        f"Step {n}: the trolley is checked at {n % 24}:00.\n\n" for n in range(800)
    )
    path.write_text(f"# Ward Manual\n\n{paragraphs}")
    return path


def test_documents_read_in_the_child_are_written_as_if_read_here(
    tmp_path: Path, corpus_copy: Path
) -> None:
    settings = make_settings(tmp_path / "data")
    process = PreparationProcess(settings)
    with Appliance(settings) as appliance:
        try:
            # asked from a thread that then ends, as an upload's job asks: the reader stays
            thread, result = _in_background(lambda: process.prepare([corpus_copy], {}))
            thread.join(300)
            prepared: Prepared = result[0]  # type: ignore[assignment]
            reader = process.process_id
            assert reader is not None
            batches = [item for item in prepared if isinstance(item, ReadyBatch)]
            assert batches and not [i for i in prepared if isinstance(i, DocumentOutcome)]
            for batch in batches:  # the child's models give the vectors this process's do
                here = appliance.embedder.embed_chunks(batch.chunks)
                assert np.allclose(batch.vectors, here, atol=1e-5)
            report = appliance.ingestor.write(prepared, actor="it-test")
            assert not report.failed and report.count("added") == len(report.outcomes) == 5
            for outcome in report.outcomes:
                assert outcome.doc_id is not None
                ids = appliance.catalog.chunk_ids_of(outcome.doc_id)
                assert len(ids) == outcome.chunks > 0
                assert ids == appliance.lexical.chunk_ids_of(outcome.doc_id)
                assert ids == appliance.vectors.chunk_ids_of(outcome.doc_id)
            again = process.prepare([corpus_copy], {})
            assert [o.status for o in again if isinstance(o, DocumentOutcome)] == [
                "unchanged"
            ] * len(report.outcomes)
            assert not [i for i in again if isinstance(i, ReadyBatch)]
            assert process.process_id == reader  # one reader, its models loaded once
        finally:
            process.close()


def test_a_reader_that_dies_fails_its_file_and_the_next_starts_afresh(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    manual = _long_manual(tmp_path / "incoming")
    process = PreparationProcess(settings)
    try:
        thread, result = _in_background(lambda: process.prepare([manual], {}))
        os.kill(_child_started(process), signal.SIGKILL)
        thread.join(60)
        crashed: Prepared = result[0]  # type: ignore[assignment]
        assert crashed == [DocumentOutcome(manual, "failed", error=CRASHED)]

        short = tmp_path / "incoming" / "note.md"
        short.write_text("# Note\n\nThe fridge is checked daily.\n")
        (ready,) = process.prepare([short], {})
        assert isinstance(ready, ReadyBatch) and ready.documents[0].path == short.resolve()
    finally:
        process.close()


def test_closing_drops_the_document_being_read_and_writes_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    manual = _long_manual(tmp_path / "incoming")
    process = PreparationProcess(settings)
    thread, result = _in_background(lambda: process.prepare([manual], {}))
    child = _child_started(process)
    process.close()
    thread.join(60)
    assert isinstance(result[0], PreparationStopped)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    with pytest.raises(PreparationStopped):
        process.prepare([manual], {})
    with Appliance(settings) as appliance:
        assert appliance.catalog.documents() == []

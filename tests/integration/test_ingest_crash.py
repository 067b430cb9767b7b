"""A crash at any moment of ingestion loses nothing: the next run finishes the job.

A real ``appliance ingest`` process is killed with SIGKILL at a random moment; a second
run must leave every document indexed and every store holding exactly the catalog's
chunks. One kill in the default suite, many in the slow mode.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from appliance.engines import Appliance
from appliance.ingest.preparation import discover
from tests.conftest import SAMPLE_CORPUS, SLOW, make_settings

KILLS = 6 if SLOW else 1


def run_ingest(corpus: Path, data_dir: Path, kill_after: float | None) -> int:
    env = dict(os.environ, APPLIANCE_DATA_DIR=str(data_dir), APPLIANCE_INGEST_BATCH_DOCUMENTS="2")
    process = subprocess.Popen(
        [sys.executable, "-m", "appliance.cli", "ingest", str(corpus)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if kill_after is None:
        return process.wait(timeout=600)
    time.sleep(kill_after)
    process.send_signal(signal.SIGKILL)
    return process.wait(timeout=60)


@pytest.mark.parametrize("attempt", range(KILLS))
def test_ingest_killed_at_a_random_moment_is_completed_by_the_next_run(
    attempt: int, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    data_dir = tmp_path / "data"
    rng = random.Random(attempt)
    # Model loading takes a few seconds; kills land before, during and after writes.
    run_ingest(corpus, data_dir, kill_after=rng.uniform(4.0, 16.0))
    assert run_ingest(corpus, data_dir, kill_after=None) == 0
    with Appliance(make_settings(data_dir)) as appliance:
        records = appliance.catalog.documents()
        assert len(records) == len(discover([corpus]))
        assert {r.state for r in records} == {"indexed"}
        for record in records:
            catalog_ids = appliance.catalog.chunk_ids_of(record.doc_id)
            assert catalog_ids == appliance.lexical.chunk_ids_of(record.doc_id)
            assert catalog_ids == appliance.vectors.chunk_ids_of(record.doc_id)
        assert (
            appliance.lexical.count()
            == appliance.vectors.count()
            == appliance.catalog.chunk_count()
        )


def test_startup_takes_what_a_crash_left_half_written_out_of_the_stores(tmp_path: Path) -> None:
    """A run that died after writing a document's chunks but before the catalog vouched
    for them (its record still pending): the service's startup removes those chunks, so
    nothing unvouched is searchable, and the next run writes the document whole."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    with Appliance(make_settings(tmp_path / "data")) as appliance:
        assert not appliance.ingestor.ingest([corpus]).failed
        record = appliance.catalog.document("hand-hygiene-policy")
        assert record is not None and appliance.lexical.chunk_ids_of(record.doc_id)
        appliance.catalog.mark_pending(
            record.metadata, record.source_path, record.source_sha256, "interrupted"
        )  # the state a kill between the store writes and the catalog leaves behind
        assert [r.doc_id for r in appliance.catalog.pending()] == [record.doc_id]
        assert appliance.ingestor.reconcile() == ["hand-hygiene-policy"]
        assert appliance.lexical.chunk_ids_of(record.doc_id) == set()
        assert appliance.vectors.chunk_ids_of(record.doc_id) == set()
        unvouched = len(appliance.catalog.chunk_ids_of(record.doc_id))
        vouched = appliance.catalog.chunk_count() - unvouched
        assert appliance.lexical.count() == appliance.vectors.count() == vouched
        report = appliance.ingestor.ingest([corpus])
        assert [o.doc_id for o in report.outcomes if o.status != "unchanged"] == [record.doc_id]
        assert appliance.lexical.chunk_ids_of(record.doc_id) == appliance.catalog.chunk_ids_of(
            record.doc_id
        )

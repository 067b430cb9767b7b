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
from appliance.ingest.pipeline import discover
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

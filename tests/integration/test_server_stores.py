"""The whole appliance on the store servers (OpenSearch for BM25, Qdrant through
qdrant-client's local mode for vectors): it finds what the embedded engines find, and
when the cluster goes away in the middle of an ingestion or a question it says so, keeps
what it knows, and the next run finishes the work without duplicates or losses."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from litestar.testing import TestClient
from opensearchpy import OpenSearch

from appliance.engines import Appliance
from appliance.index.base import StoreUnavailable
from appliance.index.filters import ActiveOn
from appliance.settings import PROJECT_ROOT, Settings
from services.app import create_app
from tests.conftest import SAMPLE_CORPUS, SAMPLE_READER, SLOW, audit_entries, readiness
from tests.servers import NO_NODE, OPENSEARCH_URL, CuttableLink

# Questions written for this test from the sample documents' own wording.
QUESTIONS = (
    "How long should hands be rubbed with alcohol gel?",
    "What is the ICD-10 code E11.9 used for?",
    "Which patients need contact precautions and a yellow apron?",
    "When are visiting hours on the wards?",
    "What is the gentamicin dose in renal impairment?",
)


def server_settings(data_dir: Path, url: str = OPENSEARCH_URL, **overrides: object) -> Settings:
    prefix = "it-" + uuid.uuid4().hex[:12]
    return Settings(  # type: ignore[arg-type]
        data_dir=data_dir,
        lexical={"engine": "opensearch", "opensearch": {"url": url, "index_prefix": prefix}},
        vectors={"engine": "qdrant"},
        **overrides,
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[OpenSearch]:
    client = OpenSearch(hosts=[OPENSEARCH_URL], timeout=30)
    if not client.ping():
        pytest.fail(NO_NODE)
    yield client
    client.indices.delete(index="it-*-chunks-*", ignore_unavailable=True)
    client.close()


@pytest.fixture(scope="module")
def on_servers(
    tmp_path_factory: pytest.TempPathFactory, cluster: OpenSearch
) -> Iterator[Appliance]:
    appliance = Appliance(server_settings(tmp_path_factory.mktemp("servers")))
    report = appliance.ingestor.ingest([SAMPLE_CORPUS])
    assert not report.failed, report.failed
    yield appliance
    appliance.close()


def ranked(appliance: Appliance, question: str) -> list[str]:
    day = ActiveOn(dt.date.today())
    found = appliance.query.run(question, SAMPLE_READER, 10, day, rerank=False)
    return [c.chunk.chunk_id for c in found.candidates]


def test_the_servers_find_what_the_embedded_engines_find(
    on_servers: Appliance, sample_appliance: Appliance
) -> None:
    for question in QUESTIONS:
        assert ranked(on_servers, question) == ranked(sample_appliance, question), question


def test_every_store_holds_what_the_catalog_vouches_for(on_servers: Appliance) -> None:
    chunks = on_servers.catalog.chunk_count()
    assert chunks > 0
    assert on_servers.lexical.count() == on_servers.vectors.count() == chunks
    again = on_servers.ingestor.ingest([SAMPLE_CORPUS])
    assert {o.status for o in again.outcomes} == {"unchanged"}
    assert on_servers.lexical.count() == chunks


def test_an_answer_on_the_servers_cites_a_document(on_servers: Appliance) -> None:
    day = dt.date.today()
    answer = on_servers.answers.ask(QUESTIONS[0], SAMPLE_READER, ActiveOn(day), in_force_on=day)
    assert answer.refusal is None
    cited = {span.doc_id for sentence in answer.sentences for span in sentence.spans}
    assert cited == {"hand-hygiene-policy"}


def test_a_cluster_lost_mid_ingestion_is_an_error_and_the_next_run_finishes(
    tmp_path: Path, cluster: OpenSearch
) -> None:
    link = CuttableLink()
    settings = server_settings(tmp_path / "data", link.url, ingest_batch_documents=2)
    try:
        with Appliance(settings) as appliance:
            link.cut_at(b"/_bulk", 3)  # the third bulk request never arrives
            with pytest.raises(StoreUnavailable, match="did not answer") as failed:
                appliance.ingestor.ingest([SAMPLE_CORPUS])
            assert failed.value.store == "lexical" and link.cut.is_set()
            assert appliance.catalog.pending(), "the interrupted batch stays pending"
        link.mend()
        with Appliance(settings) as appliance:
            appliance.ingestor.reconcile()
            report = appliance.ingestor.ingest([SAMPLE_CORPUS])
            assert not report.failed
            chunks = appliance.catalog.chunk_count()
            assert not appliance.catalog.pending()
            assert appliance.lexical.count() == appliance.vectors.count() == chunks
            for record in appliance.catalog.documents():
                expected = set(appliance.catalog.chunk_ids_of(record.doc_id))
                assert appliance.lexical.chunk_ids_of(record.doc_id) == expected
    finally:
        link.close()


def test_a_cluster_that_lost_its_index_is_not_ready_until_the_stores_are_rebuilt(
    on_servers: Appliance, sample_appliance: Appliance, cluster: OpenSearch
) -> None:
    index = on_servers.lexical.index  # type: ignore[attr-defined]
    cluster.indices.delete(index=index)  # a new cluster, or an index deleted by hand
    services = on_servers.settings.services.model_copy(
        update={"operations_addresses": ["testclient"]}
    )
    app = create_app(on_servers.settings.model_copy(update={"services": services}), on_servers)
    with TestClient(app) as client:
        ready = readiness(client)
        assert ready.status_code == 503
        assert ready.json()["store"] == "lexical" and "rebuild-stores" in ready.json()["error"]
        written = on_servers.ingestor.rebuild_stores()
        assert written == on_servers.catalog.chunk_count()
        assert readiness(client).json()["status"] == "ready"
        on_servers.vectors.delete_documents(["hand-hygiene-policy"])  # a store behind
        on_servers.vectors.commit()
        behind = readiness(client).json()
        assert behind["store"] == "vectors" and "vouches for" in behind["error"]
        on_servers.ingestor.rebuild_stores()
        assert readiness(client).json()["status"] == "ready"
    # A rebuild embeds each document alone, ingestion 32 at a time; on a CPU with native
    # bfloat16 the embedder's rounding depends on the batch (cosines move by about 3e-4),
    # enough to swap two near-tied passages at the bottom of the ten.
    for question in QUESTIONS:
        rebuilt, embedded = ranked(on_servers, question), ranked(sample_appliance, question)
        assert rebuilt[:5] == embedded[:5], question
        assert len(set(rebuilt) ^ set(embedded)) <= 2, question


FAULT_NODE_PORT = 9211
"""A second node, on its own port, that the test stops and starts (the suite's own node
stays up for the other tests)."""


def _node(command: str) -> None:
    script = PROJECT_ROOT / "scripts" / "servers" / "opensearch.sh"
    environment = {**os.environ, "OPENSEARCH_PORT": str(FAULT_NODE_PORT)}
    subprocess.run([str(script), command], env=environment, check=True, timeout=300)


FAULTS = (
    [("stop", 1), ("crash", 1), ("stop", 60), ("crash", 100), ("crash", 140)]
    if SLOW
    else [("stop", 1)]
)
"""How the node goes away (a shutdown, or SIGKILL) and how many chunks it holds by then:
one fault in the default suite, the first batch to nearly the last in the slow mode."""


def _fail_once_chunks_arrive(url: str, fault: str, chunks: int, done: threading.Event) -> None:
    """Takes the node away as soon as it holds ``chunks`` chunks of the ingestion."""
    for _ in range(2400):
        try:
            indices = httpx.get(f"{url}/_cat/indices/it-*?format=json", timeout=5).json()
        except httpx.HTTPError:
            indices = []
        if sum(int(index.get("docs.count") or 0) for index in indices) >= chunks:
            _node(fault)
            done.set()
            return
        time.sleep(0.05)


@pytest.mark.parametrize(("fault", "chunks"), FAULTS)
def test_a_node_lost_mid_ingestion_is_an_error_and_the_next_run_finishes(
    tmp_path: Path, cluster: OpenSearch, fault: str, chunks: int
) -> None:
    url = f"http://127.0.0.1:{FAULT_NODE_PORT}"
    _node("start")
    settings = server_settings(tmp_path / "data", url, ingest_batch_documents=1)
    try:
        with Appliance(settings) as appliance:
            failed = threading.Event()
            failer = threading.Thread(
                target=_fail_once_chunks_arrive, args=(url, fault, chunks, failed)
            )
            failer.start()
            with pytest.raises(StoreUnavailable, match=f"OpenSearch at {url}"):
                appliance.ingestor.ingest([SAMPLE_CORPUS])
            failer.join()
            assert failed.is_set()
            assert appliance.catalog.pending(), "the interrupted documents are not pending"
        _node("start")  # the same node, its data kept (or recovered from its translog)
        with Appliance(settings) as appliance:
            appliance.ingestor.reconcile()
            assert not appliance.ingestor.ingest([SAMPLE_CORPUS]).failed
            assert appliance.catalog.pending() == []
            chunks_indexed = appliance.catalog.chunk_count()
            assert appliance.lexical.count() == appliance.vectors.count() == chunks_indexed
            for record in appliance.catalog.documents():
                expected = set(appliance.catalog.chunk_ids_of(record.doc_id))
                assert appliance.lexical.chunk_ids_of(record.doc_id) == expected
                assert appliance.vectors.chunk_ids_of(record.doc_id) == expected
    finally:
        with contextlib.suppress(Exception):
            httpx.delete(f"{url}/it-*-chunks-*", timeout=30)
        _node("stop")


def test_a_question_while_the_cluster_is_down_fails_fast_and_is_audited(
    tmp_path: Path, cluster: OpenSearch
) -> None:
    link = CuttableLink()
    settings = server_settings(tmp_path / "data", link.url)
    try:
        with Appliance(settings) as appliance:
            assert not appliance.ingestor.ingest([SAMPLE_CORPUS / "hand-hygiene-policy.md"]).failed
            link.cut_at(b"_search", 1)
            day = dt.date.today()
            with pytest.raises(StoreUnavailable, match="lexical|OpenSearch"):
                appliance.answers.ask(QUESTIONS[0], SAMPLE_READER, ActiveOn(day), in_force_on=day)
        records = audit_entries(settings.data_dir, "answer")
        assert records[-1]["details"]["refusal_code"] == "store-unavailable"
        assert records[-1]["details"]["store"] == "lexical"
        assert records[-1]["details"]["sentences"] == []
        services = settings.services.model_copy(update={"operations_addresses": ["testclient"]})
        app = create_app(settings.model_copy(update={"services": services}))
        with TestClient(app) as client:
            ready = readiness(client)
            assert ready.status_code == 503
            assert ready.json()["store"] == "lexical"
    finally:
        link.close()

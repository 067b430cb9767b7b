"""OpenSearch, the lexical server, against every lexical contract, on a real node:
``scripts/servers/opensearch.sh start`` runs one (``make test`` starts it and stops it).
No node is a failure, never a skip: the suite is what says this engine works."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from appliance.index.opensearch_lexical import OpenSearchLexicalIndex
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk
from tests.contract.suites import LexicalIndexContract, StoreContract, TermStatisticsContract
from tests.servers import NO_NODE, OPENSEARCH_URL


def connect() -> OpenSearch:
    return OpenSearch(hosts=[OPENSEARCH_URL], timeout=30)


@pytest.fixture(scope="module")
def made_indices() -> Iterator[set[str]]:
    """The indices this module's tests made, deleted when the module ends."""
    client = connect()
    if not client.ping():
        pytest.fail(NO_NODE)
    made: set[str] = set()
    yield made
    for name in made:
        client.indices.delete(index=name, ignore_unavailable=True)
    client.close()


class TestOpenSearch(StoreContract, LexicalIndexContract, TermStatisticsContract):
    @pytest.fixture(autouse=True)
    def _made(self, made_indices: set[str]) -> None:
        self.made = made_indices

    def _open(self, path: Path) -> OpenSearchLexicalIndex:
        # One index per test folder, named from it: tests never see each other's chunks.
        prefix = "contract-" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
        index = OpenSearchLexicalIndex(connect(), index_prefix=prefix)
        self.made.add(index.index)
        return index

    def open_store(self, path: Path, embedder: Embedder) -> OpenSearchLexicalIndex:
        return self._open(path)

    def write(self, store: OpenSearchLexicalIndex, chunks: list[Chunk], embedder: Embedder) -> None:
        store.upsert(chunks)

    def query_of(self, text: str, embedder: Embedder) -> object:
        return text

    def open_lexical(self, path: Path) -> OpenSearchLexicalIndex:
        return self._open(path)

    def open_term_index(self, path: Path) -> OpenSearchLexicalIndex:
        return self._open(path)

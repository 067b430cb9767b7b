"""tantivy, the embedded lexical engine, against every lexical contract."""

from __future__ import annotations

from pathlib import Path

from appliance.index.tantivy_lexical import TantivyLexicalIndex
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk
from tests.contract.suites import LexicalIndexContract, StoreContract, TermStatisticsContract


class TestTantivy(StoreContract, LexicalIndexContract, TermStatisticsContract):
    def open_store(self, path: Path, embedder: Embedder) -> TantivyLexicalIndex:
        return TantivyLexicalIndex(path)

    def write(self, store: TantivyLexicalIndex, chunks: list[Chunk], embedder: Embedder) -> None:
        store.upsert(chunks)

    def query_of(self, text: str, embedder: Embedder) -> object:
        return text

    def open_lexical(self, path: Path) -> TantivyLexicalIndex:
        return TantivyLexicalIndex(path)

    def open_term_index(self, path: Path) -> TantivyLexicalIndex:
        return TantivyLexicalIndex(path)

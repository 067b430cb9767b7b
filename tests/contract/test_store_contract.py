"""One contract for every store implementation that can run here.

Each store is exercised for real (tantivy on disk, the Qdrant engine through
qdrant-edge): writes, replacement by chunk id, deletion by document, persistence,
and the filter language evaluated inside the engine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from appliance.index.filters import ActiveOn, AllOf, AnyOf, NoneOf, OneOf, SearchFilter
from appliance.index.qdrant_edge_vectors import QdrantEdgeVectorIndex
from appliance.index.tantivy_lexical import TantivyLexicalIndex
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk, DocumentMetadata

TODAY = dt.date(2026, 6, 1)


def make_chunk(doc_id: str, n: int, text: str, **meta: object) -> Chunk:
    fields: dict[str, object] = {
        "doc_id": doc_id,
        "title": f"Title of {doc_id}",
        "sensitivity": "internal",
    }
    fields.update(meta)
    metadata = DocumentMetadata.model_validate(fields)
    return Chunk(
        chunk_id=f"{doc_id}@1#{n:04d}",
        doc_id=doc_id,
        ordinal=n,
        text=text,
        start=0,
        end=len(text),
        heading_path=("Section",),
        page=None,
        source_sha256="0" * 64,
        metadata=metadata,
    )


CORPUS = [
    make_chunk(
        "sepsis",
        0,
        "Give piperacillin tazobactam within one hour for sepsis.",
        departments=["icu", "emergency"],
    ),
    make_chunk(
        "sepsis",
        1,
        "Measure lactate and take blood cultures in sepsis.",
        departments=["icu", "emergency"],
    ),
    make_chunk(
        "old-sepsis",
        0,
        "Give meropenem for sepsis with penicillin allergy.",
        departments=["icu"],
        effective_from="2020-01-01",
        effective_to="2025-01-01",
    ),
    make_chunk(
        "future",
        0,
        "Switch intravenous antibiotics for sepsis to oral at 48 hours.",
        departments=["pharmacy"],
        effective_from="2027-01-01",
    ),
    make_chunk(
        "coding",
        0,
        "Code E11.9 is type 2 diabetes without complications.",
        departments=["coding"],
        doc_type="reference",
    ),
    make_chunk(
        "coding",
        1,
        "Code E11.65 is type 2 diabetes with hyperglycaemia.",
        departments=["coding"],
        doc_type="reference",
    ),
    make_chunk(
        "labs",
        0,
        "An HbA1c of 48 mmol/mol supports a diabetes diagnosis.",
        departments=["endocrinology"],
        sensitivity="confidential",
    ),
    make_chunk(
        "isolation",
        0,
        "Clause 14.2(b) requires gloves and a yellow apron for contact precautions.",
        departments=["infection-control"],
        sensitivity="public",
    ),
]


class StoreUnderTest:
    """Adapts both store kinds to one text-in, ids-out surface for the contract."""

    def __init__(self, name: str, open_store: Callable[[], object], embedder: Embedder) -> None:
        self.name = name
        self._open = open_store
        self._embedder = embedder
        self.store = open_store()

    def reopen(self) -> None:
        self.store.close()
        self.store = self._open()

    def upsert(self, chunks: list[Chunk]) -> None:
        if isinstance(self.store, TantivyLexicalIndex):
            self.store.upsert(chunks)
        else:
            self.store.upsert(chunks, self._embedder.embed_chunks(chunks))
        self.store.commit()

    def delete(self, doc_ids: list[str]) -> None:
        self.store.delete_documents(doc_ids)
        self.store.commit()

    def search(
        self, text: str, limit: int = 10, search_filter: SearchFilter | None = None
    ) -> list[str]:
        query: object = (
            text
            if isinstance(self.store, TantivyLexicalIndex)
            else self._embedder.embed_query(text)
        )
        return [hit.chunk_id for hit in self.store.search(query, limit, search_filter)]


@pytest.fixture(params=["tantivy", "qdrant-edge"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> Iterator[StoreUnderTest]:
    if request.param == "tantivy":
        opener: Callable[[], object] = lambda: TantivyLexicalIndex(tmp_path / "lexical")  # noqa: E731
    else:
        opener = lambda: QdrantEdgeVectorIndex(tmp_path / "vectors", embedder.dimension)  # noqa: E731
    under_test = StoreUnderTest(request.param, opener, embedder)
    under_test.upsert(CORPUS)
    yield under_test
    under_test.store.close()


def ids_of(doc_id: str) -> set[str]:
    return {c.chunk_id for c in CORPUS if c.doc_id == doc_id}


def test_search_finds_the_relevant_chunk_first(store: StoreUnderTest) -> None:
    assert store.search("blood cultures lactate")[0] == "sepsis@1#0001"


def test_upsert_replaces_a_chunk_with_the_same_id(store: StoreUnderTest) -> None:
    replaced = make_chunk("sepsis", 1, "Check the urine output hourly.", departments=["icu"])
    store.upsert([replaced])
    assert store.store.count() == len(CORPUS)
    assert store.search("urine output hourly", 1) == ["sepsis@1#0001"]


def test_delete_removes_every_chunk_of_a_document(store: StoreUnderTest) -> None:
    store.delete(["sepsis"])
    assert store.store.count() == len(CORPUS) - 2
    assert store.store.chunk_ids_of("sepsis") == set()
    assert not ids_of("sepsis") & set(store.search("sepsis lactate piperacillin", 20))


def test_writes_survive_reopening(store: StoreUnderTest) -> None:
    store.reopen()
    assert store.store.count() == len(CORPUS)
    assert store.store.chunk_ids_of("coding") == ids_of("coding")


def test_any_of_filters_inside_the_engine(store: StoreUnderTest) -> None:
    found = store.search("sepsis antibiotics diabetes apron", 20, AnyOf("departments", ("icu",)))
    assert set(found) == ids_of("sepsis") | ids_of("old-sepsis")


def test_empty_any_of_matches_nothing(store: StoreUnderTest) -> None:
    assert store.search("sepsis", 20, AnyOf("departments", ())) == []


def test_active_on_excludes_superseded_and_future_documents(store: StoreUnderTest) -> None:
    found = set(store.search("sepsis antibiotics", 20, ActiveOn(TODAY)))
    assert not found & (ids_of("old-sepsis") | ids_of("future"))
    assert found & ids_of("sepsis")
    on_old_day = set(store.search("sepsis meropenem", 20, ActiveOn(dt.date(2022, 1, 1))))
    assert on_old_day & ids_of("old-sepsis")


def test_boolean_combinations(store: StoreUnderTest) -> None:
    either = OneOf((AnyOf("sensitivity", ("public",)), AnyOf("doc_type", ("reference",))))
    assert set(store.search("code apron diabetes", 20, either)) == ids_of("isolation") | ids_of(
        "coding"
    )
    both = AllOf((AnyOf("departments", ("icu",)), ActiveOn(TODAY)))
    assert set(store.search("sepsis", 20, both)) == ids_of("sepsis")
    neither = AllOf(
        (NoneOf((AnyOf("departments", ("icu", "coding")),)), AnyOf("sensitivity", ("internal",)))
    )
    assert set(store.search("sepsis diabetes antibiotics", 20, neither)) == ids_of("future")


def test_narrow_filter_still_fills_the_top_k(tmp_path: Path, store: StoreUnderTest) -> None:
    # 200 chunks, of which 10 (5%) are visible: a filtered search returns all 10.
    bulk = [
        make_chunk(
            f"bulk{i}",
            0,
            f"Sepsis antibiotic guidance note number {i}.",
            departments=["ward" if i % 20 else "rare"],
        )
        for i in range(200)
    ]
    store.upsert(bulk)
    found = store.search("sepsis antibiotic guidance", 10, AnyOf("departments", ("rare",)))
    assert len(found) == 10
    assert all(int(chunk_id.split("@")[0][4:]) % 20 == 0 for chunk_id in found)

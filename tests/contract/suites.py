"""The contracts every store keeps, as classes that each backend's test module subclasses
(Haystack's document-store suites are the model): ``StoreContract`` for every store,
``LexicalIndexContract`` for a lexical engine (identifiers, query syntax, boosts) and
``TermStatisticsContract`` for what the question-coverage gate reads.

A subclass names its backend: how to open it on a folder, how chunks are written, and how
a question becomes a query. Each store is exercised for real: writes, replacement by
chunk id, deletion by document, persistence, and the filter language evaluated inside
the engine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appliance.index.base import LexicalIndex
from appliance.index.filters import ActiveOn, AllOf, AnyOf, NoneOf, OneOf, SearchFilter
from appliance.nlp.embedder import Embedder
from appliance.records import Chunk, DocumentMetadata
from appliance.verify.coverage import question_coverage, words_for

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


def ids_of(doc_id: str) -> set[str]:
    return {c.chunk_id for c in CORPUS if c.doc_id == doc_id}


class StoreUnderTest:
    """A store behind one text-in, ids-out surface, through its contract's hooks."""

    def __init__(self, contract: StoreContract, path: Path, embedder: Embedder) -> None:
        self._contract = contract
        self._path = path
        self._embedder = embedder
        self.store = contract.open_store(path, embedder)

    def reopen(self) -> None:
        self.store.close()
        self.store = self._contract.open_store(self._path, self._embedder)

    def upsert(self, chunks: list[Chunk]) -> None:
        self._contract.write(self.store, chunks, self._embedder)
        self.store.commit()

    def delete(self, doc_ids: list[str]) -> None:
        self.store.delete_documents(doc_ids)
        self.store.commit()

    def search(
        self, text: str, limit: int = 10, search_filter: SearchFilter | None = None
    ) -> list[str]:
        query = self._contract.query_of(text, self._embedder)
        return [hit.chunk_id for hit in self.store.search(query, limit, search_filter)]


class StoreContract:
    """Every store: a subclass says how to open it, write chunks and make a query."""

    def open_store(self, path: Path, embedder: Embedder) -> Any:
        raise NotImplementedError

    def write(self, store: Any, chunks: list[Chunk], embedder: Embedder) -> None:
        raise NotImplementedError

    def query_of(self, text: str, embedder: Embedder) -> object:
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path: Path, embedder: Embedder) -> Iterator[StoreUnderTest]:
        under_test = StoreUnderTest(self, tmp_path / "store", embedder)
        under_test.upsert(CORPUS)
        yield under_test
        under_test.store.close()

    def test_search_finds_the_relevant_chunk_first(self, store: StoreUnderTest) -> None:
        assert store.search("blood cultures lactate")[0] == "sepsis@1#0001"

    def test_upsert_replaces_a_chunk_with_the_same_id(self, store: StoreUnderTest) -> None:
        replaced = make_chunk("sepsis", 1, "Check the urine output hourly.", departments=["icu"])
        store.upsert([replaced])
        assert store.store.count() == len(CORPUS)
        assert store.search("urine output hourly", 1) == ["sepsis@1#0001"]

    def test_delete_removes_every_chunk_of_a_document(self, store: StoreUnderTest) -> None:
        store.delete(["sepsis"])
        assert store.store.count() == len(CORPUS) - 2
        assert store.store.chunk_ids_of("sepsis") == set()
        assert not ids_of("sepsis") & set(store.search("sepsis lactate piperacillin", 20))

    def test_writes_survive_reopening(self, store: StoreUnderTest) -> None:
        store.reopen()
        assert store.store.count() == len(CORPUS)
        assert store.store.chunk_ids_of("coding") == ids_of("coding")

    def test_any_of_filters_inside_the_engine(self, store: StoreUnderTest) -> None:
        found = store.search(
            "sepsis antibiotics diabetes apron", 20, AnyOf("departments", ("icu",))
        )
        assert set(found) == ids_of("sepsis") | ids_of("old-sepsis")

    def test_empty_any_of_matches_nothing(self, store: StoreUnderTest) -> None:
        assert store.search("sepsis", 20, AnyOf("departments", ())) == []

    def test_active_on_excludes_superseded_and_future_documents(
        self, store: StoreUnderTest
    ) -> None:
        found = set(store.search("sepsis antibiotics", 20, ActiveOn(TODAY)))
        assert not found & (ids_of("old-sepsis") | ids_of("future"))
        assert found & ids_of("sepsis")
        on_old_day = set(store.search("sepsis meropenem", 20, ActiveOn(dt.date(2022, 1, 1))))
        assert on_old_day & ids_of("old-sepsis")

    def test_boolean_combinations(self, store: StoreUnderTest) -> None:
        either = OneOf((AnyOf("sensitivity", ("public",)), AnyOf("doc_type", ("reference",))))
        assert set(store.search("code apron diabetes", 20, either)) == ids_of("isolation") | ids_of(
            "coding"
        )
        both = AllOf((AnyOf("departments", ("icu",)), ActiveOn(TODAY)))
        assert set(store.search("sepsis", 20, both)) == ids_of("sepsis")
        neither = AllOf(
            (
                NoneOf((AnyOf("departments", ("icu", "coding")),)),
                AnyOf("sensitivity", ("internal",)),
            )
        )
        assert set(store.search("sepsis diabetes antibiotics", 20, neither)) == ids_of("future")

    def test_narrow_filter_still_fills_the_top_k(
        self, tmp_path: Path, store: StoreUnderTest
    ) -> None:
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


class VectorIndexContract:
    """A vector store (with ``StoreContract``'s fixture): the step after a run of writes
    (``optimize``: the HNSW graph) keeps every answer and every chunk."""

    def test_optimizing_after_a_run_changes_no_answer(self, store: StoreUnderTest) -> None:
        asked = ("sepsis antibiotics", "diabetes code", "gloves apron")
        before = [store.search(q, search_filter=ActiveOn(TODAY)) for q in asked]
        count = store.store.count()
        store.store.optimize()
        assert [store.search(q, search_filter=ActiveOn(TODAY)) for q in asked] == before
        assert store.store.count() == count
        store.reopen()
        assert store.search(asked[0], search_filter=ActiveOn(TODAY)) == before[0]


def ids(index: LexicalIndex, query: str) -> list[str]:
    return [hit.chunk_id for hit in index.search(query, 10)]


class LexicalIndexContract:
    """A lexical engine: clinical identifiers match exactly, query syntax is data, titles
    weigh more. A subclass opens its engine with its default boosts."""

    def open_lexical(self, path: Path) -> LexicalIndex:
        raise NotImplementedError

    @pytest.fixture
    def lexical(self, tmp_path: Path) -> LexicalIndex:
        index = self.open_lexical(tmp_path / "lexical")
        index.upsert(CORPUS)
        index.commit()
        return index

    def test_icd_code_matches_itself_and_not_its_sibling(self, lexical: LexicalIndex) -> None:
        assert ids(lexical, "E11.9") == ["coding@1#0000"]
        assert ids(lexical, "e11.65") == ["coding@1#0001"]

    def test_mixed_case_lab_name_matches(self, lexical: LexicalIndex) -> None:
        assert ids(lexical, "HbA1c")[0] == "labs@1#0000"

    def test_clause_number_with_letter_matches(self, lexical: LexicalIndex) -> None:
        assert ids(lexical, "what does 14.2(b) require")[0] == "isolation@1#0000"

    @pytest.mark.parametrize(
        ("query", "as_words"),
        [
            ('"penicillin allergy', "penicillin allergy"),
            ("lactate ( [ { cultures", "lactate cultures"),
            ("title:meropenem^3 ~2 sepsis", "title meropenem 3 2 sepsis"),
            ("piperacillin* \\ oral", "piperacillin oral"),
            ("LACTATE AND NOT MEROPENEM", "lactate and not meropenem"),
        ],
    )
    def test_query_syntax_is_data_never_an_operator(
        self, lexical: LexicalIndex, query: str, as_words: str
    ) -> None:
        """Quotes, brackets, field prefixes, boosts, wildcards and AND/OR/NOT are read as the
        words around them: the same hits as the words alone, and never an error."""
        found = ids(lexical, query)
        assert found and found == ids(lexical, as_words)

    @pytest.mark.parametrize("query", ["*", "\\", "( ) [ ]", '"'])
    def test_a_query_of_syntax_alone_finds_nothing(self, lexical: LexicalIndex, query: str) -> None:
        assert ids(lexical, query) == []

    def test_title_matches_are_boosted(self, tmp_path: Path) -> None:
        index = self.open_lexical(tmp_path / "boost")
        in_title = make_chunk(
            "warfarin-guide", 0, "Check the INR daily.", title="Warfarin reversal"
        )
        in_body = make_chunk(
            "other",
            0,
            "Warfarin reversal is covered elsewhere; check the INR daily.",
            title="Ward notes",
        )
        index.upsert([in_body, in_title])
        index.commit()
        assert ids(index, "warfarin reversal")[0] == in_title.chunk_id


DISCHARGE = make_chunk(
    "discharge", 0, "The discharge summary is sent to the general practitioner within 24 hours."
)
CDIFF = make_chunk(
    "cdiff", 0, "Severe Clostridioides difficile infection: white cell count above 15."
)
FORMULARY = make_chunk("formulary", 0, "Oncology drugs are prescribed by the oncology team only.")
SECRET = make_chunk(
    "trial-protocol", 0, "Pembrolizumab 200 mg every 3 weeks.", sensitivity="restricted"
)


class TermStatisticsContract:
    """The question-coverage gate on the engine's own term statistics: rare words weigh
    most, clinical abbreviations count as present, and documents the asker may not read
    weigh nothing. A subclass opens an engine that is a lexical index and its term
    statistics at once."""

    def open_term_index(self, path: Path) -> Any:
        raise NotImplementedError

    @pytest.fixture
    def index(self, tmp_path: Path) -> Any:
        lexical = self.open_term_index(tmp_path / "terms")
        lexical.upsert([DISCHARGE, CDIFF, FORMULARY, SECRET])
        lexical.commit()
        return lexical

    def test_a_question_about_something_the_passages_never_name_is_not_covered(
        self,
        index: Any,
    ) -> None:
        found = question_coverage(
            "What is the dose of pembrolizumab for melanoma?", [FORMULARY.text], index, None
        )
        assert found.coverage < 0.5
        assert set(found.missing) == {"pembrolizumab", "melanoma", "dose"}
        assert words_for("What is the dose of pembrolizumab?", found.missing, index) == [
            "dose",
            "pembrolizumab",
        ]

    def test_rarer_words_weigh_more(self, index: Any) -> None:
        readable = AnyOf("sensitivity", ("internal",))  # pembrolizumab: in no readable chunk
        found = question_coverage("oncology pembrolizumab", [FORMULARY.text], index, readable)
        assert found.weights["pembrolizumab"] > found.weights["oncolog"]
        assert found.missing == ("pembrolizumab",)

    def test_abbreviations_and_truncations_count_as_present(self, index: Any) -> None:
        gp = question_coverage(
            "How soon must the discharge summary reach the GP?", [DISCHARGE.text], index, None
        )
        assert "gp" not in gp.missing and gp.coverage >= 0.5
        diff = question_coverage(
            "What defines severe C. diff infection?", [CDIFF.text], index, None
        )
        assert "diff" not in diff.missing
        # An acronym must be the initials of the passage's words, not of any words at all.
        other = question_coverage("When is the MRI booked?", [DISCHARGE.text], index, None)
        assert "mri" in other.missing

    def test_an_organs_function_is_present_where_a_passage_names_it_its_own_way(
        self, index: Any
    ) -> None:
        # A dosing table says "creatinine clearance" or "eGFR", rarely "renal impairment".
        passage = "Give dalteparin 2500 units once a day if creatinine clearance is below 30."
        renal = question_coverage("Dalteparin in renal impairment", [passage], index, None)
        assert renal.missing == () and renal.coverage == 1.0
        kidney = question_coverage("Dalteparin in kidney failure", [passage], index, None)
        assert kidney.missing == ()
        # The liver is another organ: nothing in the passage speaks of its function.
        hepatic = question_coverage("Dalteparin in hepatic impairment", [passage], index, None)
        assert {t[:5] for t in hepatic.missing} == {"hepat", "impai"}

    def test_a_proper_name_no_readable_chunk_holds_is_unknown(self, index: Any) -> None:
        # Every other word of the question is in the passage; the score it names is not.
        asked = "What Norton score means the discharge summary is sent to the GP?"
        unknown = question_coverage(asked, [DISCHARGE.text], index, None)
        assert unknown.unknown_names == ("Norton",)
        # Not names: a sentence's first word, a month, a name the documents hold.
        known = question_coverage(
            "In March, is Clostridioides difficile severe?", [CDIFF.text], index, None
        )
        assert known.unknown_names == ()
        # A name is known where the documents write the initials of the name it is in.
        index.upsert([make_chunk("neuro", 0, "Call the anaesthetist when the GCS is 8.")])
        index.commit()
        initials = question_coverage(
            "When is the anaesthetist called for a Glasgow Coma Scale of 8?", [], index, None
        )
        assert initials.unknown_names == ()
        first = "Glasgow Coma Scale of 8: when is the anaesthetist called?"
        assert question_coverage(first, [], index, None).unknown_names == ()
        # A name only a document the asker may not read holds is unknown to that asker.
        asked = "Is Pembrolizumab given by the oncology team?"
        readable = AnyOf("sensitivity", ("internal",))
        assert question_coverage(asked, [], index, readable).unknown_names == ("Pembrolizumab",)
        assert question_coverage(asked, [], index, None).unknown_names == ()

    def test_a_person_named_with_a_title_is_not_what_a_question_is_about(self, index: Any) -> None:
        asked = "Is the discharge summary of Mrs Abernethy sent to the GP?"
        found = question_coverage(asked, [DISCHARGE.text], index, None, asking=asked)
        assert found.missing == () and found.coverage == 1.0 and found.unknown_names == ()

    def test_the_grammar_of_asking_is_not_a_topic(self, index: Any) -> None:
        # "How soon" asks for a time and "need" whether something is required; the
        # passage answers both without using either word.
        asked = question_coverage(
            "How soon does the GP need the discharge summary?", [DISCHARGE.text], index, None
        )
        assert asked.missing == () and asked.coverage == 1.0
        # The same words where they are not the form of a question still count.
        named = question_coverage(
            "Is the discharge summary long-acting?", [DISCHARGE.text], index, None
        )
        assert "long" in named.missing

    def test_an_adverb_of_an_everyday_word_weighs_as_an_everyday_word(self, index: Any) -> None:
        # No chunk holds any of the three words below, so each would weigh the most:
        # "urgently" says how (the passage says "within 24 hours"), "subcutaneously"
        # names a route and "anomaly" a thing, both as specific as they are rare.
        asked = question_coverage(
            "Is an anomaly in the discharge summary sent urgently or subcutaneously?",
            [DISCHARGE.text],
            index,
            None,
        )
        weight = {w: asked.weights[t] for w in ("urgent", "subcutan", "anomal")
                  for t in asked.weights if t.startswith(w)}  # fmt: skip
        assert weight["urgent"] < weight["subcutan"] == weight["anomal"]
        assert {t[:6] for t in asked.missing} == {"urgent", "subcut", "anomal"}

    def test_what_the_asker_may_not_read_weighs_nothing(self, index: Any) -> None:
        readable = AnyOf("sensitivity", ("internal",))
        frequencies, total = index.document_frequencies(["pembrolizumab", "oncolog"], readable)
        assert frequencies == {"pembrolizumab": 0, "oncolog": 1} and total == 3
        everyone, total_all = index.document_frequencies(["pembrolizumab"], None)
        assert everyone == {"pembrolizumab": 1} and total_all == 4
        # The weights a reader gets are the same whether or not the hidden document exists.
        with_secret = question_coverage("pembrolizumab dose", [FORMULARY.text], index, readable)
        index.delete_documents(["trial-protocol"])
        index.commit()
        without = question_coverage("pembrolizumab dose", [FORMULARY.text], index, readable)
        assert with_secret == without

    def test_a_question_of_only_function_words_or_numbers_is_not_judged(
        self,
        index: Any,
    ) -> None:
        assert question_coverage("what is it 24?", [], index, None).coverage == 1.0

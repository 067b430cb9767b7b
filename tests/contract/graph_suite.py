"""The contract of the knowledge graph store, which each graph server's test module
subclasses: the same Cypher, through the same driver, must behave the same on the
embedded ArcadeDB and on Neo4j. Writes, replacement, deletion, the access filter inside
every template, dates, negation, supersession, scope and typed relations."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from neo4j import Driver

from appliance.index.cypher_graph import CypherGraphStore, empty_graph
from appliance.index.cypher_templates import TemplateError
from appliance.index.filters import ActiveOn, AllOf, AnyOf, SearchFilter
from appliance.records import RELATION_KINDS, ChunkFacts, Mention, Relation, Scope
from tests.contract.suites import make_chunk

SEPSIS = "sepsis"
ALLERGY = "penicillin allergy"
AZTREONAM = "aztreonam"
VRIII = "variable rate intravenous insulin infusion"
DKA = "diabetic ketoacidosis"
MRSA = "mrsa screening"


def mention(text: str, key: str, kind: str, term: str) -> Mention:
    start = text.index(term)
    return Mention(key, kind, start, start + len(term), term)  # type: ignore[arg-type]


def facts_of_sepsis_v3() -> list[ChunkFacts]:
    text = "Give meropenem for sepsis with penicillin allergy."
    chunk = make_chunk(
        "sepsis-v3", 0, text, departments=["icu"], effective_from="2023-01-01",
        effective_to="2025-03-01", superseded_by="sepsis-v4", version="3",
    )  # fmt: skip
    return [
        ChunkFacts(
            chunk,
            mentions=(
                mention(text, "meropenem", "drug", "meropenem"),
                mention(text, SEPSIS, "condition", "sepsis"),
                mention(text, ALLERGY, "condition", "penicillin allergy"),
            ),
        )
    ]


def facts_of_sepsis_v4() -> list[ChunkFacts]:
    first = "This version supersedes version 3 of the sepsis bundle."
    second = "For penicillin allergy in sepsis give aztreonam 2 g IV."
    meta = {"departments": ["icu", "emergency"], "effective_from": "2025-03-01", "version": "4"}
    dose = second.index("aztreonam 2 g IV")
    return [
        ChunkFacts(
            make_chunk("sepsis-v4", 0, first, **meta),
            mentions=(mention(first, SEPSIS, "condition", "sepsis"),),
        ),
        ChunkFacts(
            make_chunk("sepsis-v4", 1, second, **meta),
            mentions=(
                mention(second, ALLERGY, "condition", "penicillin allergy"),
                mention(second, SEPSIS, "condition", "sepsis"),
                mention(second, AZTREONAM, "drug", "aztreonam"),
            ),
            relations=(
                Relation(
                    "DOSE_OF",
                    AZTREONAM,
                    ALLERGY,
                    dose,
                    dose + 16,
                    (("amount", "2"), ("unit", "g"), ("route", "IV")),
                ),
            ),
        ),
    ]


def facts_of_vriii() -> list[ChunkFacts]:
    text = (
        "Use a Variable Rate Intravenous Insulin Infusion (VRIII) for adults who miss "
        "meals. Do not use a VRIII for diabetic ketoacidosis."
    )
    chunk = make_chunk("vriii", 0, text, departments=["endocrinology"])
    vriii = mention(text, VRIII, "procedure", "Variable Rate Intravenous Insulin Infusion")
    dka = mention(text, DKA, "condition", "diabetic ketoacidosis")
    adults = mention(text, "adult", "population", "adults")
    return [
        ChunkFacts(
            chunk,
            mentions=(vriii, dka, adults),
            scopes=(
                Scope("APPLIES_TO", "adult", adults.start, adults.end),
                Scope("EXCLUDES", DKA, text.index("Do not"), len(text)),
            ),
            abbreviations=(("vriii", VRIII),),
        )
    ]


def facts_of_mrsa(sensitivity: str = "internal") -> list[ChunkFacts]:
    text = "Screen every intensive care admission for MRSA on admission and weekly."
    chunk = make_chunk("mrsa", 0, text, departments=["icu"], sensitivity=sensitivity)
    return [ChunkFacts(chunk, mentions=(mention(text, MRSA, "procedure", "MRSA"),))]


def facts_of_falls() -> list[ChunkFacts]:
    text = "Assess every adult admitted to intensive care for falls risk."
    chunk = make_chunk("falls", 0, text, departments=["icu"])
    return [ChunkFacts(chunk, mentions=(mention(text, "adult", "population", "adult"),))]


def facts_of_uterotonics() -> list[ChunkFacts]:
    text = "Dinoprost 1 mg IM every 2 hours; avoid in epilepsy."
    chunk = make_chunk("uterotonics", 0, text, departments=["maternity"])
    drug = mention(text, "dinoprost", "drug", "Dinoprost")
    condition = mention(text, "epilepsy", "condition", "epilepsy")
    return [
        ChunkFacts(
            chunk,
            mentions=(drug, condition),
            relations=(Relation("CONTRAINDICATED_WITH", "dinoprost", "epilepsy", 0, len(text)),),
        )
    ]


def facts_of_haemorrhage_steps() -> list[ChunkFacts]:
    text = "1. Oxytocin 5 units IV.\n2. Ergometrine 500 micrograms IM.\n3. Carboprost 250 micrograms IM."
    drugs = [mention(text, name.lower(), "drug", name)
             for name in ("Oxytocin", "Ergometrine", "Carboprost")]  # fmt: skip
    second, third = text.index("2."), text.index("3.")
    steps = (
        Relation("NEXT_STEP", "oxytocin", "ergometrine", 0, third),
        Relation("NEXT_STEP", "ergometrine", "carboprost", second, len(text)),
    )
    chunk = make_chunk("haemorrhage", 0, text, departments=["maternity"])
    return [ChunkFacts(chunk, mentions=tuple(drugs), relations=steps)]


class GraphStoreContract:
    """Subclasses provide ``driver`` and ``database`` fixtures for a running server."""

    @pytest.fixture
    def store(self, driver: Driver, database: str) -> Iterator[CypherGraphStore]:
        empty_graph(driver, database)
        store = CypherGraphStore(driver, database, where="the test server")
        yield store
        empty_graph(driver, database)

    @staticmethod
    def census(driver: Driver, database: str) -> dict[str, int]:
        """Nodes by label and relationships by type: what the graph holds."""
        nodes, _, _ = driver.execute_query(
            "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS n", database_=database
        )
        edges, _, _ = driver.execute_query(
            "MATCH ()-[r]->() RETURN type(r) AS kind, count(*) AS n", database_=database
        )
        return {r["label"]: r["n"] for r in nodes} | {r["kind"]: r["n"] for r in edges}

    def ids(self, store: CypherGraphStore, template: str, f: SearchFilter | None = None,
            **values: object) -> list[str]:  # fmt: skip
        values.setdefault("limit", 10)
        return [e.chunk_id for e in store.find(template, dict(values), f)]

    def test_passages_naming_more_of_the_entities_come_first(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_sepsis_v4() + facts_of_vriii())
        found = store.find("entity_chunks", {"keys": [SEPSIS, ALLERGY, AZTREONAM], "limit": 10})
        assert [e.chunk_id for e in found] == ["sepsis-v4@1#0001", "sepsis-v4@1#0000"]
        assert found[0].score == 3.0
        assert set(found[0].evidence) == {SEPSIS, ALLERGY, AZTREONAM}
        assert store.count() == 3
        assert store.chunk_ids_of("sepsis-v4") == {"sepsis-v4@1#0000", "sepsis-v4@1#0001"}

    def test_the_access_filter_runs_inside_every_template(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_sepsis_v4() + facts_of_mrsa("confidential"))
        internal = AnyOf("sensitivity", ("internal",))
        assert self.ids(store, "entity_chunks", internal, keys=[MRSA]) == []
        assert self.ids(store, "entity_chunks", keys=[MRSA]) == ["mrsa@1#0000"]
        emergency = AnyOf("departments", ("emergency",))
        assert self.ids(store, "entity_chunks", emergency, keys=[SEPSIS, MRSA]) == [
            "sepsis-v4@1#0000", "sepsis-v4@1#0001",
        ]  # fmt: skip

    def test_in_force_on_a_day(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_sepsis_v3() + facts_of_sepsis_v4())
        on = {
            day: set(self.ids(store, "entity_chunks", ActiveOn(day), keys=[ALLERGY]))
            for day in (dt.date(2024, 6, 1), dt.date(2025, 3, 1), dt.date(2026, 6, 1))
        }
        assert on[dt.date(2024, 6, 1)] == {"sepsis-v3@1#0000"}
        assert on[dt.date(2025, 3, 1)] == {"sepsis-v4@1#0001"}  # the end day is not in force
        assert on[dt.date(2026, 6, 1)] == {"sepsis-v4@1#0001"}

    def test_negation_finds_documents_without_an_entity(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_mrsa() + facts_of_falls() + facts_of_vriii())
        # "which passages about adults come from documents that do not mention MRSA?"
        assert self.ids(store, "chunks_without", keys=["adult"], absent=[MRSA]) == [
            "falls@1#0000", "vriii@1#0000",
        ]  # fmt: skip
        # a mention the asker cannot read does not count as present
        store.replace_documents(facts_of_mrsa("restricted"))
        text = "Adults on intensive care are screened for MRSA weekly."
        both = ChunkFacts(
            make_chunk("falls", 0, text, departments=["icu"]),
            mentions=(
                mention(text, "adult", "population", "Adults"),
                mention(text, MRSA, "procedure", "MRSA"),
            ),
        )
        store.replace_documents([both])
        assert self.ids(store, "chunks_without", keys=["adult"], absent=[MRSA]) == ["vriii@1#0000"]

    def test_contraindications_are_found_from_the_drug_or_the_condition(
        self, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_uterotonics() + facts_of_sepsis_v4())
        found = store.find("contraindications", {"keys": ["dinoprost"], "limit": 10})
        assert [(e.chunk_id, e.evidence) for e in found] == [
            ("uterotonics@1#0000", ("dinoprost CONTRAINDICATED_WITH epilepsy",))
        ]
        assert self.ids(store, "contraindications", keys=["epilepsy"]) == ["uterotonics@1#0000"]
        assert self.ids(store, "contraindications", keys=[AZTREONAM]) == []  # a dose is not one
        icu = AnyOf("departments", ("icu",))
        assert self.ids(store, "contraindications", icu, keys=["dinoprost"]) == []

    def test_a_procedures_steps_are_found_forwards_and_backwards(
        self, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_haemorrhage_steps() + facts_of_uterotonics())
        after = store.find("steps_after", {"keys": ["ergometrine"], "limit": 10})
        assert [(e.chunk_id, e.evidence) for e in after] == [
            ("haemorrhage@1#0000", ("ergometrine NEXT_STEP carboprost",))
        ]
        before = store.find("steps_before", {"keys": ["ergometrine"], "limit": 10})
        assert [e.evidence for e in before] == [("oxytocin NEXT_STEP ergometrine",)]
        assert self.ids(store, "steps_after", keys=["carboprost"]) == []  # the last step
        assert self.ids(store, "steps_before", keys=["dinoprost"]) == []  # named, in no procedure
        icu = AnyOf("departments", ("icu",))
        assert self.ids(store, "steps_after", icu, keys=["oxytocin"]) == []

    def test_supersession_links_versions_in_either_order(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_sepsis_v3())  # its successor is not here yet
        assert self.ids(store, "successors", keys=[ALLERGY]) == []
        store.replace_documents(facts_of_sepsis_v4())
        found = store.find("successors", {"keys": [ALLERGY], "limit": 10})
        assert [e.chunk_id for e in found] == ["sepsis-v4@1#0000", "sepsis-v4@1#0001"]
        assert found[0].evidence == (
            f"sepsis-v4 supersedes sepsis-v3 from day {dt.date(2025, 3, 1).toordinal()}",
        )
        # asked today, the old version is no longer in force but still says what replaced it
        today = ActiveOn(dt.date(2026, 6, 1))
        assert self.ids(store, "successors", today, keys=[ALLERGY]) == [
            "sepsis-v4@1#0000", "sepsis-v4@1#0001",
        ]  # fmt: skip
        hidden = AllOf((today, AnyOf("departments", ("emergency",))))
        assert self.ids(store, "successors", hidden, keys=[ALLERGY]) == []  # v3 is ICU only
        # the successor removed: the old version stays linked to nothing but a placeholder
        store.delete_documents(["sepsis-v4"])
        assert self.ids(store, "successors", keys=[ALLERGY]) == []
        assert store.chunk_ids_of("sepsis-v4") == set()
        store.replace_documents(facts_of_sepsis_v4())
        assert len(self.ids(store, "successors", keys=[ALLERGY])) == 2
        assert self.census(driver, database)["SUPERSEDES"] == 1

    def test_scope_says_what_a_passage_applies_to_and_excludes(
        self, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_vriii() + facts_of_falls())
        found = store.find("scope_match", {"keys": [DKA, "adult"], "limit": 10})
        assert [e.chunk_id for e in found] == ["vriii@1#0000"]
        assert set(found[0].evidence) == {f"EXCLUDES {DKA}", "APPLIES_TO adult"}
        scopes = store.scopes_of(["vriii@1#0000", "falls@1#0000"])
        assert set(scopes) == {"vriii@1#0000"}
        assert {(s.kind, s.target) for s in scopes["vriii@1#0000"]} == {
            ("APPLIES_TO", "adult"), ("EXCLUDES", DKA),
        }  # fmt: skip
        hidden = AnyOf("departments", ("icu",))
        assert store.scopes_of(["vriii@1#0000"], hidden) == {}

    def test_relations_between_entities_keep_their_evidence(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_sepsis_v4())
        found = store.find("relation_between", {"keys": [AZTREONAM, ALLERGY], "limit": 5})
        assert [(e.chunk_id, e.evidence) for e in found] == [
            ("sepsis-v4@1#0001", (f"{AZTREONAM} DOSE_OF {ALLERGY}",))
        ]
        rows, _, _ = driver.execute_query(
            "MATCH (:Entity)-[r:DOSE_OF]->(:Entity) RETURN r.amount AS amount, r.unit AS unit, "
            "r.route AS route, r.valid_from AS valid_from, r.learned_at AS learned_at",
            database_=database,
        )
        assert rows[0]["amount"] == "2" and rows[0]["unit"] == "g" and rows[0]["route"] == "IV"
        assert rows[0]["valid_from"] == dt.date(2025, 3, 1).toordinal()
        assert rows[0]["learned_at"] > 0

    def test_every_relation_kind_is_written_and_read(self, store: CypherGraphStore) -> None:
        """A relation kind the fact finder states but a template forgets would be lost
        without a trace: each kind goes in and comes back through both templates."""
        text = "Ibuprofen may be used for pain, not to prevent stroke."
        drug = mention(text, "ibuprofen", "drug", "Ibuprofen")
        condition = mention(text, "stroke", "condition", "stroke")
        relations = tuple(
            Relation(kind, "ibuprofen", "stroke", 0, len(text)) for kind in RELATION_KINDS
        )
        chunk = make_chunk("analgesia", 0, text, departments=["wards"])
        store.replace_documents(
            [ChunkFacts(chunk, mentions=(drug, condition), relations=relations)]
        )
        [found] = store.find("relation_between", {"keys": ["ibuprofen", "stroke"], "limit": 5})
        assert set(found.evidence) == {f"ibuprofen {kind} stroke" for kind in RELATION_KINDS}
        stated = store.relations_of([chunk.chunk_id])[chunk.chunk_id]
        assert {r.kind for r in stated} == set(RELATION_KINDS)

    def test_the_statements_of_passages_come_back_as_extracted(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        """What the answer path's check for disagreeing sources reads: each passage's
        relations with their details and spans, inside the access filter; and each
        document's standing, which decides between them."""
        written = facts_of_sepsis_v4()
        store.replace_documents(written + facts_of_vriii())
        asked = ["sepsis-v4@1#0000", "sepsis-v4@1#0001", "vriii@1#0000", "nothing@1#0000"]
        assert store.relations_of(asked) == {"sepsis-v4@1#0001": list(written[1].relations)}
        assert store.relations_of(asked, AnyOf("departments", ("wards",))) == {}
        rows, _, _ = driver.execute_query(
            "MATCH (d:Document) RETURN d.doc_id AS doc_id, d.authority AS authority "
            "ORDER BY doc_id",
            database_=database,
        )
        assert [(r["doc_id"], r["authority"]) for r in rows] == [
            ("sepsis-v4", "department"), ("vriii", "department"),
        ]  # fmt: skip

    def test_re_ingestion_is_idempotent_and_replaces_only_its_own(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_sepsis_v4() + facts_of_vriii() + facts_of_falls())
        before = self.census(driver, database)
        store.replace_documents(facts_of_sepsis_v4())
        store.replace_documents(facts_of_vriii())
        assert self.census(driver, database) == before
        edited = facts_of_vriii()[0]
        text = "Use a VRIII for adults."
        store.replace_documents(
            [
                ChunkFacts(
                    make_chunk("vriii", 0, text, departments=["endocrinology"]),
                    mentions=(mention(text, "adult", "population", "adults"),),
                )
            ]
        )
        after = self.census(driver, database)
        assert "EXCLUDES" not in after and "DEFINES" not in after
        assert self.ids(store, "entity_chunks", keys=[DKA]) == []
        assert self.ids(store, "entity_chunks", keys=[AZTREONAM]) == ["sepsis-v4@1#0001"]
        assert edited.chunk.chunk_id in store.chunk_ids_of("vriii")

    def test_a_deleted_document_leaves_nothing_behind(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_falls())
        alone = self.census(driver, database)
        store.replace_documents(facts_of_vriii() + facts_of_sepsis_v4())
        store.delete_documents(["vriii", "sepsis-v4", "never-ingested"])
        assert self.census(driver, database) == alone  # "adult" stays: falls names it
        assert store.abbreviations() == {}

    def test_abbreviations_come_from_readable_documents(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_vriii())
        assert store.abbreviations() == {"vriii": VRIII}
        assert store.abbreviations(AnyOf("departments", ("icu",))) == {}

    def test_bad_input_is_refused_and_changes_nothing(
        self, driver: Driver, database: str, store: CypherGraphStore
    ) -> None:
        store.replace_documents(facts_of_falls())
        before = self.census(driver, database)
        text = "Give aztreonam."
        dangling = ChunkFacts(
            make_chunk("bad", 0, text),
            mentions=(mention(text, AZTREONAM, "drug", "aztreonam"),),
            relations=(Relation("TREATS", AZTREONAM, SEPSIS, 0, 5),),
        )
        with pytest.raises(ValueError, match="does not mention"):
            store.replace_documents([dangling])
        with pytest.raises(TemplateError, match="no chunk-finding template"):
            store.find("MATCH (n) DETACH DELETE n", {})
        with pytest.raises(TemplateError, match="limit"):
            store.find("entity_chunks", {"keys": [SEPSIS], "limit": 10_000})
        with pytest.raises(TemplateError, match="unknown"):
            store.find("entity_chunks", {"keys": [SEPSIS], "limit": 5, "cypher": "x"})
        assert self.census(driver, database) == before

    def test_values_are_data_never_query_text(self, store: CypherGraphStore) -> None:
        store.replace_documents(facts_of_falls())
        hostile = ["adult' OR 1=1 //", "adult}) DETACH DELETE n //"]
        assert self.ids(store, "entity_chunks", keys=hostile) == []
        assert self.ids(store, "entity_chunks", AllOf(()), keys=["adult"]) == ["falls@1#0000"]
        assert store.count() == 1

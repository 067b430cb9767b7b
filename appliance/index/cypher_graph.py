"""The knowledge graph on any server that speaks Bolt and Cypher: the embedded ArcadeDB
the appliance starts, or Neo4j in production. One implementation, the official driver;
the contract suite decides which Cypher both servers accept.

Layout: ``(:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(:Entity)``, and
``(:Document)-[:NAMES]->(:Entity)`` once per entity a document names; a chunk's scope
(``APPLIES_TO`` / ``EXCLUDES``) and the abbreviations it ``DEFINES`` point from it to an
entity; relations a chunk states join two entities and carry the chunk's id, its
document's validity (valid time) and when the appliance learned them (transaction
time); ``(:Document)-[:SUPERSEDES]->(:Document)`` from the metadata. Chunks carry the
access fields every store keeps, so a template's filter runs inside the query.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from appliance.index.base import GraphEvidence, StoreUnavailable
from appliance.index.cypher_filter import compile_filter
from appliance.index.cypher_templates import CypherTemplate, TemplateError, load_templates
from appliance.index.filters import SearchFilter, day_number, filterable_fields
from appliance.records import (
    OPEN_ENDED,
    RELATION_DETAILS,
    RELATION_KINDS,
    SCOPE_KINDS,
    ChunkFacts,
    DocumentMetadata,
    Relation,
    Scope,
)

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

    from appliance.index.arcadedb_server import ArcadeDbServer

T = TypeVar("T")
CHUNK_FINDERS = frozenset(
    {
        "entity_chunks",
        "chunks_without",
        "contraindications",
        "scope_match",
        "relation_between",
        "successors",
        "steps_after",
        "steps_before",
    }
)
"""The templates that return ranked chunks (``scope_of`` returns scopes)."""

_SCHEMA = (
    "CREATE CONSTRAINT document_id IF NOT EXISTS FOR (d:Document) REQUIRE d.doc_id IS UNIQUE",
    "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.chunk_id IS UNIQUE",
    "CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE e.key IS UNIQUE",
    "CREATE INDEX chunk_document IF NOT EXISTS FOR (c:Chunk) ON (c.doc_id)",
)


def empty_graph(driver: Driver, database: str, batch: int = 10_000) -> None:
    """Delete everything in the database, relationships first, in batches a server's
    transaction memory allows (an entity named by thousands of passages has thousands of
    edges). For tests and benchmarks on a server of their own."""
    for statement in (
        "MATCH ()-[r]->() WITH r LIMIT $batch DELETE r RETURN count(*) AS n",
        "MATCH (n) WITH n LIMIT $batch DELETE n RETURN count(*) AS n",
    ):
        while driver.execute_query(statement, {"batch": batch}, database_=database).records[0]["n"]:
            pass


def document_properties(meta: DocumentMetadata, learned_at: float) -> dict[str, object]:
    return {
        "doc_id": meta.doc_id,
        "title": meta.title,
        "version": meta.version,
        "doc_type": meta.doc_type,
        "effective_from": day_number(meta.effective_from),
        "effective_to": day_number(meta.effective_to or OPEN_ENDED),
        "superseded_by": meta.superseded_by,
        "authority": meta.standing,
        "learned_at": learned_at,
        "placeholder": False,
    }


class CypherGraphStore:
    name = "graph"

    def __init__(
        self, driver: Driver, database: str, *, where: str, server: ArcadeDbServer | None = None
    ) -> None:
        self._driver = driver
        self._server = server
        self._database = database
        self._where = where
        self._templates = load_templates()
        self._schema_ready = False

    # -- writing -------------------------------------------------------------------

    def replace_documents(self, facts: Sequence[ChunkFacts]) -> None:
        if not facts:
            return
        rows = _WriteRows.of(facts, learned_at=time.time())
        self._write("writing to", lambda tx: _replace(tx, rows))

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._write("deleting from", lambda tx: _delete(tx, list(doc_ids)))

    # -- reading -------------------------------------------------------------------

    def find(
        self,
        template: str,
        parameters: dict[str, object],
        search_filter: SearchFilter | None = None,
    ) -> list[GraphEvidence]:
        if template not in CHUNK_FINDERS:
            raise TemplateError(
                f"no chunk-finding template {template!r}; known: {sorted(CHUNK_FINDERS)}"
            )
        rows = self._read(self._templates[template], parameters, search_filter)
        return [
            GraphEvidence(row["chunk_id"], float(row["score"]), template, tuple(row["evidence"]))
            for row in rows
        ]

    def scopes_of(
        self, chunk_ids: Sequence[str], search_filter: SearchFilter | None = None
    ) -> dict[str, list[Scope]]:
        if not chunk_ids:
            return {}
        rows = self._read(
            self._templates["scope_of"], {"chunk_ids": list(chunk_ids)}, search_filter
        )
        scopes: dict[str, list[Scope]] = defaultdict(list)
        for row in rows:
            scopes[row["chunk_id"]].append(
                Scope(row["kind"], row["target"], int(row["start"]), int(row["end"]))
            )
        return dict(scopes)

    def relations_of(
        self, chunk_ids: Sequence[str], search_filter: SearchFilter | None = None
    ) -> dict[str, list[Relation]]:
        if not chunk_ids:
            return {}
        rows = self._read(
            self._templates["relations_of"], {"chunk_ids": list(chunk_ids)}, search_filter
        )
        relations: dict[str, list[Relation]] = defaultdict(list)
        for row in rows:
            details = tuple(
                (name, str(row[name])) for name in RELATION_DETAILS if row[name] is not None
            )
            relation = Relation(
                row["kind"], row["source"], row["target"], int(row["start"]), int(row["end"]),
                details,
            )  # fmt: skip
            relations[row["chunk_id"]].append(relation)
        return dict(relations)

    def abbreviations(self, search_filter: SearchFilter | None = None) -> dict[str, str]:
        access = compile_filter(search_filter)
        query = (
            "MATCH (c:Chunk)-[d:DEFINES]->(e:Entity) WHERE "
            + access.expression
            + " RETURN DISTINCT d.short AS short, e.key AS key ORDER BY short, key"
        )
        return {row["short"]: row["key"] for row in self._run("reading", query, access.parameters)}

    def count(self) -> int:
        rows = self._run("reading", "MATCH (c:Chunk) RETURN count(c) AS n", {})
        return int(rows[0]["n"])

    def chunk_ids_of(self, doc_id: str) -> set[str]:
        rows = self._run(
            "reading",
            "MATCH (c:Chunk) WHERE c.doc_id = $doc_id RETURN c.chunk_id AS chunk_id",
            {"doc_id": doc_id},
        )
        return {row["chunk_id"] for row in rows}

    def close(self) -> None:
        self._driver.close()
        if self._server is not None:
            self._server.stop()

    # -- plumbing ------------------------------------------------------------------

    def _read(
        self,
        template: CypherTemplate,
        parameters: dict[str, object],
        search_filter: SearchFilter | None,
    ) -> list[dict[str, Any]]:
        query, bound = template.query(parameters, search_filter)
        return self._run(f"running the template {template.name} on", query, bound)

    def _run(self, doing: str, query: str, parameters: dict[str, object]) -> list[dict[str, Any]]:
        self._ensure_schema()
        with self._reaching(doing):
            records, _, _ = self._driver.execute_query(
                query, parameters, database_=self._database, routing_="r"
            )
            return [record.data() for record in records]

    def _write(self, doing: str, work: Callable[[ManagedTransaction], T]) -> T:
        self._ensure_schema()
        with self._reaching(doing), self._driver.session(database=self._database) as session:
            return session.execute_write(work)

    def _ensure_schema(self) -> None:
        if self._schema_ready:
            return
        with self._reaching("preparing"):
            for statement in _SCHEMA:
                self._driver.execute_query(statement, database_=self._database)
        self._schema_ready = True

    @contextmanager
    def _reaching(self, doing: str) -> Iterator[None]:
        from neo4j.exceptions import DriverError, Neo4jError, ServiceUnavailable, SessionExpired

        try:
            yield
        except (ServiceUnavailable, SessionExpired, OSError) as error:
            died = self._server.death() if self._server is not None else None
            raise StoreUnavailable(
                "graph",
                f"the knowledge graph ({self._where}) cannot be reached while {doing} it: "
                f"{died or error}",
            ) from error
        except (DriverError, Neo4jError) as error:
            if isinstance(error, Neo4jError) and error.code and ".ClientError." in error.code:
                raise  # our query or data: a defect to see, not an outage
            raise StoreUnavailable(
                "graph", f"the knowledge graph ({self._where}) failed while {doing} it: {error}"
            ) from error


class _WriteRows:
    """A batch of chunk facts as the parameter rows of the write statements."""

    def __init__(self) -> None:
        self.doc_ids: list[str] = []
        self.documents: list[dict[str, object]] = []
        self.chunks: list[dict[str, object]] = []
        self.mentions: list[dict[str, object]] = []
        self.names: list[dict[str, object]] = []
        """Each entity a document names, once (what negation asks of a document)."""
        self.abbreviations: list[dict[str, object]] = []
        self.scopes: dict[str, list[dict[str, object]]] = {k: [] for k in SCOPE_KINDS}
        self.relations: dict[str, list[dict[str, object]]] = {k: [] for k in RELATION_KINDS}

    @classmethod
    def of(cls, facts: Sequence[ChunkFacts], learned_at: float) -> _WriteRows:
        rows = cls()
        named: dict[str, set[str]] = {}
        for fact in facts:
            chunk, meta = fact.chunk, fact.chunk.metadata
            if meta.doc_id not in rows.doc_ids:
                rows.doc_ids.append(meta.doc_id)
                rows.documents.append(document_properties(meta, learned_at))
            rows.chunks.append({**filterable_fields(chunk), "ordinal": chunk.ordinal})
            kinds = {m.key: m.kind for m in fact.mentions}
            for key in sorted(set(kinds) - named.get(chunk.doc_id, set())):
                named.setdefault(chunk.doc_id, set()).add(key)
                rows.names.append({"doc_id": chunk.doc_id, "key": key})
            for m in fact.mentions:
                rows.mentions.append(
                    {"chunk_id": chunk.chunk_id, "key": m.key, "kind": m.kind,
                     "start": m.start, "end": m.end, "text": m.text}
                )  # fmt: skip
            for short, key in fact.abbreviations:
                _require(key in kinds, chunk.chunk_id, f"defines {short!r} as {key!r}")
                rows.abbreviations.append({"chunk_id": chunk.chunk_id, "short": short, "key": key})
            for s in fact.scopes:
                _require(s.target in kinds, chunk.chunk_id, f"scopes {s.target!r}")
                rows.scopes[s.kind].append(
                    {"chunk_id": chunk.chunk_id, "key": s.target, "start": s.start, "end": s.end}
                )
            for r in fact.relations:
                _require(
                    r.source in kinds and r.target in kinds,
                    chunk.chunk_id,
                    f"relates {r.source!r} to {r.target!r}",
                )
                rows.relations[r.kind].append(
                    {
                        "source": r.source,
                        "target": r.target,
                        "properties": {
                            **dict(r.details),
                            "chunk_id": chunk.chunk_id,
                            "doc_id": chunk.doc_id,
                            "start": r.start,
                            "end": r.end,
                            "valid_from": day_number(meta.effective_from),
                            "valid_to": day_number(meta.effective_to or OPEN_ENDED),
                            "learned_at": learned_at,
                        },
                    }
                )
        return rows


def _require(holds: bool, chunk_id: str, what: str) -> None:
    if not holds:
        raise ValueError(f"chunk {chunk_id} {what}, which it does not mention; nothing written")


def _replace(tx: ManagedTransaction, rows: _WriteRows) -> None:
    _delete(tx, rows.doc_ids)
    tx.run(
        "UNWIND $documents AS d MERGE (x:Document {doc_id: d.doc_id}) SET x += d",
        documents=rows.documents,
    ).consume()
    tx.run(
        "UNWIND $chunks AS row MATCH (d:Document {doc_id: row.doc_id}) "
        "CREATE (c:Chunk) SET c = row CREATE (d)-[:HAS_CHUNK]->(c)",
        chunks=rows.chunks,
    ).consume()
    tx.run(
        "UNWIND $mentions AS m MATCH (c:Chunk {chunk_id: m.chunk_id}) "
        "MERGE (e:Entity {key: m.key}) ON CREATE SET e.kind = m.kind "
        "CREATE (c)-[:MENTIONS {start: m.start, end: m.end, text: m.text}]->(e)",
        mentions=rows.mentions,
    ).consume()
    tx.run(
        "UNWIND $rows AS n MATCH (d:Document {doc_id: n.doc_id}), (e:Entity {key: n.key}) "
        "CREATE (d)-[:NAMES]->(e)",
        rows=rows.names,
    ).consume()
    tx.run(
        "UNWIND $rows AS a MATCH (c:Chunk {chunk_id: a.chunk_id}), (e:Entity {key: a.key}) "
        "CREATE (c)-[:DEFINES {short: a.short}]->(e)",
        rows=rows.abbreviations,
    ).consume()
    for kind, scoped in rows.scopes.items():  # relationship types come from a closed list
        tx.run(
            "UNWIND $rows AS s MATCH (c:Chunk {chunk_id: s.chunk_id}), (e:Entity {key: s.key}) "
            f"CREATE (c)-[:{kind} {{start: s.start, end: s.end}}]->(e)",
            rows=scoped,
        ).consume()
    for kind, related in rows.relations.items():
        tx.run(
            "UNWIND $rows AS r MATCH (a:Entity {key: r.source}), (b:Entity {key: r.target}) "
            f"CREATE (a)-[x:{kind}]->(b) SET x = r.properties",
            rows=related,
        ).consume()
    _link_supersession(tx, rows.doc_ids)


def _link_supersession(tx: ManagedTransaction, doc_ids: list[str]) -> None:
    """SUPERSEDES edges to and from these documents, as their metadata and the metadata
    of documents already in the graph say; a successor not yet ingested is a
    placeholder node until it is."""
    tx.run(
        "UNWIND $ids AS id MATCH (old:Document {doc_id: id}) WHERE old.superseded_by IS NOT NULL "
        "MERGE (new:Document {doc_id: old.superseded_by}) ON CREATE SET new.placeholder = true "
        "MERGE (new)-[:SUPERSEDES]->(old)",
        ids=doc_ids,
    ).consume()
    tx.run(
        "UNWIND $ids AS id MATCH (new:Document {doc_id: id}), (old:Document) "
        "WHERE old.superseded_by = id MERGE (new)-[:SUPERSEDES]->(old)",
        ids=doc_ids,
    ).consume()


def _delete(tx: ManagedTransaction, doc_ids: list[str]) -> None:
    """Everything of these documents, and the entities only they named."""
    touched = [
        record["key"]
        for record in tx.run(
            "MATCH (c:Chunk)-[]->(e:Entity) WHERE c.doc_id IN $ids RETURN DISTINCT e.key AS key",
            ids=doc_ids,
        )
    ]
    tx.run(
        "MATCH (a:Entity)-[r]->(:Entity) WHERE a.key IN $keys AND r.doc_id IN $ids DELETE r",
        keys=touched,
        ids=doc_ids,
    ).consume()
    tx.run("MATCH (c:Chunk) WHERE c.doc_id IN $ids DETACH DELETE c", ids=doc_ids).consume()
    # A document another one names as its successor stays, as a placeholder.
    tx.run(
        "MATCH (d:Document) WHERE d.doc_id IN $ids "
        "AND NOT EXISTS { MATCH (old:Document) WHERE old.superseded_by = d.doc_id } "
        "DETACH DELETE d",
        ids=doc_ids,
    ).consume()
    tx.run(
        "MATCH (d:Document) WHERE d.doc_id IN $ids "
        "OPTIONAL MATCH (d)-[s:SUPERSEDES|NAMES]->() DELETE s "
        "WITH DISTINCT d SET d.placeholder = true REMOVE d.superseded_by",
        ids=doc_ids,
    ).consume()
    tx.run(
        "MATCH (e:Entity) WHERE e.key IN $keys AND NOT (e)<-[]-(:Chunk) DETACH DELETE e",
        keys=touched,
    ).consume()

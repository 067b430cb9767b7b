"""The knowledge graph's cost and speed, in one run.

1. Ingestion: the same MedQuAD pages (../shared/data/corpus) ingested end to end with
   ``graph.engine`` none and with the embedded ArcadeDB: chunks per second both ways
   (fact extraction and graph writes are the difference).
2. Scale: the facts those pages gave (real entities, scopes and relations) written again
   under new document ids, with access labels and effective windows drawn with a fixed
   seed, until the graph holds each size asked for (10,000 and 100,000 chunks by default),
   into the embedded ArcadeDB and into Neo4j side by side: graph write rate, and every
   chunk-finding template's latency p50/p95 under a clinician's access filter, with keys
   drawn from the graph's own entities.

Neo4j is the one ``scripts/servers/neo4j.sh run`` starts:

    scripts/servers/neo4j.sh run .venv/bin/python benchmarks/graph_scale.py \\
        [--pages 300] [--sizes 10000 100000] [--queries 200] [--out benchmarks/results/graph]

``--ingestion-only`` runs part 1 alone (no Neo4j needed) and keeps the scale figures
already in the results file.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ingest_and_query import write_medquad
from neo4j import Driver, GraphDatabase
from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.eval.stats import percentile
from appliance.index.arcadedb_server import DATABASE, USER, ArcadeDbServer
from appliance.index.cypher_graph import CHUNK_FINDERS, CypherGraphStore, empty_graph
from appliance.index.filters import ActiveOn, AllOf, AnyOf, OneOf, SearchFilter
from appliance.records import ChunkFacts
from appliance.settings import PROJECT_ROOT, Settings

DEPARTMENTS = [f"dept-{n:02d}" for n in range(20)]
SENSITIVITIES = ("public", "internal", "confidential", "restricted")
BATCH = 500
console = Console()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/graph")
    parser.add_argument("--ingestion-only", action="store_true")
    args = parser.parse_args()
    written = args.out / "graph_scale.json"
    results: dict[str, object] = {}
    if args.ingestion_only and written.is_file():
        results = json.loads(written.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="graph-scale-") as work_dir:
        work = Path(work_dir)
        pages = work / "pages"
        pages.mkdir()
        write_medquad(pages, args.pages)
        results["ingestion"], facts = ingestion_rates(work, pages)
        if not args.ingestion_only:
            results["scale"] = scales(work, facts, args.sizes, args.queries)
    show(results)
    args.out.mkdir(parents=True, exist_ok=True)
    written.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"written: {written}")


def scales(
    work: Path, facts: list[ChunkFacts], sizes: list[int], queries: int
) -> dict[str, object]:
    servers = {"arcadedb": arcadedb_store(work), "neo4j": neo4j_store()}
    figures: dict[str, object] = {
        name: scale(name, store, facts, sizes, queries) for name, store in servers.items()
    }
    for store in servers.values():
        store.close()
    with neo4j_driver() as driver:  # the server is left as it was found
        empty_graph(driver, "neo4j")
    return figures


def ingestion_rates(work: Path, pages: Path) -> tuple[dict[str, float], list[ChunkFacts]]:
    rates: dict[str, float] = {}
    facts: list[ChunkFacts] = []
    for engine in ("none", "arcadedb"):
        settings = Settings(data_dir=work / f"ingest-{engine}", graph={"engine": engine})  # type: ignore[arg-type]
        with Appliance(settings) as appliance:
            _ = appliance.embedder, appliance.knowledge_graph  # loading is start-up
            started = time.perf_counter()
            report = appliance.ingestor.ingest([pages])
            rates[f"graph_{engine}_chunks_per_s"] = round(
                report.chunks_written / (time.perf_counter() - started), 1
            )
            rates["chunks"] = report.chunks_written
            if engine == "arcadedb":
                catalog = appliance.catalog
                chunks = [
                    c
                    for r in catalog.documents()
                    for c in catalog.chunks(sorted(catalog.chunk_ids_of(r.doc_id))).values()
                ]
                started = time.perf_counter()
                facts = appliance.fact_extractor.extract(chunks)
                rates["extraction_chunks_per_s"] = round(
                    len(chunks) / (time.perf_counter() - started), 1
                )
        console.print(
            f"ingestion with graph {engine}: {rates[f'graph_{engine}_chunks_per_s']} chunks/s"
        )
    return rates, facts


def arcadedb_store(work: Path) -> CypherGraphStore:
    server = ArcadeDbServer(work / "arcadedb", heap_mb=1024).start()
    driver = GraphDatabase.driver(server.url, auth=(USER, server.password()))
    return CypherGraphStore(driver, DATABASE, where="ArcadeDB", server=server)


def neo4j_driver() -> Driver:
    url = os.environ.get("APPLIANCE_TEST_NEO4J_URL", "bolt://127.0.0.1:7687")
    password_file = os.environ.get("APPLIANCE_TEST_NEO4J_PASSWORD_FILE")
    if not password_file:
        raise SystemExit("run under scripts/servers/neo4j.sh run (it starts Neo4j)")
    password = Path(password_file).read_text(encoding="utf-8").strip()
    return GraphDatabase.driver(url, auth=("neo4j", password))


def neo4j_store() -> CypherGraphStore:
    driver = neo4j_driver()
    empty_graph(driver, "neo4j")
    return CypherGraphStore(driver, "neo4j", where="Neo4j")


def copies(facts: list[ChunkFacts], seed: int = 7) -> Iterator[ChunkFacts]:
    """The facts again and again under new document ids, with drawn access labels."""
    rng = random.Random(seed)
    round_ = 0
    while True:
        labels: dict[str, dict[str, object]] = {}
        for fact in facts:
            chunk = fact.chunk
            doc_id = f"{chunk.doc_id}-r{round_}"
            if doc_id not in labels:
                start = dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(2000))
                labels[doc_id] = {
                    "doc_id": doc_id,
                    "departments": tuple(rng.sample(DEPARTMENTS, rng.randint(1, 3))),
                    "sensitivity": rng.choice(SENSITIVITIES),
                    "effective_from": start,
                    "effective_to": start + dt.timedelta(days=rng.randrange(400, 4000))
                    if rng.random() < 0.3
                    else None,
                }
            meta = chunk.metadata.model_copy(update=labels[doc_id])
            yield dataclasses.replace(
                fact,
                chunk=dataclasses.replace(
                    chunk, chunk_id=f"{chunk.chunk_id}-r{round_}", doc_id=doc_id, metadata=meta
                ),
            )
        round_ += 1


def documents(stream: Iterator[ChunkFacts]) -> Iterator[list[ChunkFacts]]:
    """The stream cut at document boundaries."""
    current: list[ChunkFacts] = []
    for fact in stream:
        if current and fact.chunk.doc_id != current[0].chunk.doc_id:
            yield current
            current = []
        current.append(fact)


def clinician_filter(rng: random.Random) -> SearchFilter:
    departments = tuple(rng.sample(DEPARTMENTS, 3))
    return AllOf(
        (
            OneOf(
                (
                    AnyOf("sensitivity", ("public",)),
                    AllOf(
                        (
                            AnyOf("sensitivity", ("internal", "confidential")),
                            AnyOf("departments", departments),
                        )
                    ),
                )
            ),
            ActiveOn(dt.date(2026, 6, 1)),
        )
    )


def scale(
    name: str, store: CypherGraphStore, facts: list[ChunkFacts], sizes: list[int], queries: int
) -> dict[str, object]:
    stream = documents(copies(facts))
    written, seconds = 0, 0.0
    keys = sorted({m.key for f in facts for m in f.mentions})
    scoped = sorted({s.target for f in facts for s in f.scopes}) or keys
    figures: dict[str, object] = {}
    for size in sizes:
        while written < size:
            batch: list[ChunkFacts] = []
            while len(batch) < BATCH and written + len(batch) < size:
                batch += next(stream)  # documents whole: a write replaces each one
            started = time.perf_counter()
            store.replace_documents(batch)
            seconds += time.perf_counter() - started
            written += len(batch)
        rng = random.Random(size)
        latency: dict[str, dict[str, float]] = {}
        for template in sorted(CHUNK_FINDERS):
            timings = []
            for n in range(queries + 5):
                values: dict[str, object] = {"keys": rng.sample(keys, 2), "limit": 50}
                if template == "scope_match":
                    values["keys"] = rng.sample(scoped, min(2, len(scoped)))
                if template == "chunks_without":
                    values["absent"] = rng.sample(keys, 1)
                started = time.perf_counter()
                store.find(template, values, clinician_filter(rng))
                if n >= 5:  # the first few warm the server's caches
                    timings.append((time.perf_counter() - started) * 1000)
            latency[template] = {
                "p50": round(percentile(timings, 50), 2),
                "p95": round(percentile(timings, 95), 2),
            }
        figures[str(size)] = {
            "chunks": store.count(),
            "write_chunks_per_s": round(written / seconds, 1),
            "template_ms": latency,
        }
        console.print(f"{name} at {size}: {figures[str(size)]}")
    return figures


def show(results: dict[str, object]) -> None:
    ingestion = results["ingestion"]
    console.print(f"ingestion: {ingestion}")
    table = Table(title="graph templates under a clinician's filter, p50 / p95 ms")
    table.add_column("server, chunks")
    table.add_column("writes/s", justify="right")
    for template in sorted(CHUNK_FINDERS):
        table.add_column(template, justify="right")
    for server, sizes in results["scale"].items():  # type: ignore[attr-defined]
        for size, row in sizes.items():
            table.add_row(
                f"{server}, {size}",
                str(row["write_chunks_per_s"]),
                *[
                    f"{row['template_ms'][t]['p50']} / {row['template_ms'][t]['p95']}"
                    for t in sorted(CHUNK_FINDERS)
                ],
            )
    console.print(table)


if __name__ == "__main__":
    main()

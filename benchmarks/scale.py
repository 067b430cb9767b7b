"""The stores at scale, side by side in one run: the embedded stack (tantivy, qdrant-edge)
against the server stack (OpenSearch for BM25), on 200,000 real chunks.

The chunks pool the public data in ../shared/data: every sentence of the MedQuAD pages and
of the SciFact and PubMedQA abstracts, every multi-hop pool passage, then MedQuAD's
several-sentence paragraphs and whole SciFact abstracts until the count is reached (a
paragraph and its sentences, as overlapping chunks). Each chunk gets access labels drawn with a fixed seed (one of 20
departments, a sensitivity, an effective window), and every query runs under an access
filter shaped as the product compiles one for a clinician: public, or internal and
confidential in three departments, in force today (about a fifth of the chunks).

For each stack: write rate (chunks per second into the store, vectors given), index size
on disk, resident memory (what this process grew by with the embedded stores open; the
OpenSearch node's own, a 512 MB heap), and query latency p50/p95 for each store and for the hybrid path (both
stores searched in parallel, as the retriever does, then reciprocal rank fusion). The
query vectors are made before timing: embedding a question costs the same on both
stacks and is reported on its own line. Questions are real ones from the same data
(multi-hop and PubMedQA questions, SciFact claims, MedQuAD section headings).

No registry ships a Qdrant server binary, so the server stack keeps qdrant-edge for
vectors (qdrant-client's local mode is a test double, not a server); the Qdrant server
row belongs to a host that runs one.

    scripts/servers/opensearch.sh run .venv/bin/python benchmarks/scale.py \\
        [--chunks 200000] [--queries 300] [--work DIR] [--out benchmarks/results/scale]

The pooled chunks and their vectors are cached in --work (embedding 200,000 chunks takes
most of the first run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from opensearchpy import OpenSearch
from rich.console import Console
from rich.table import Table

from appliance.cli.progress import progress_display
from appliance.engines import Appliance
from appliance.eval.stats import percentile
from appliance.index.base import LexicalEngine, LexicalIndex, VectorIndex
from appliance.index.filters import ActiveOn, AllOf, AnyOf, OneOf, SearchFilter
from appliance.index.opensearch_lexical import OpenSearchLexicalIndex
from appliance.index.qdrant_edge_vectors import QdrantEdgeVectorIndex
from appliance.index.tantivy_lexical import TantivyLexicalIndex
from appliance.records import Chunk, DocumentMetadata
from appliance.retrieve.fusion import reciprocal_rank_fusion
from appliance.settings import PROJECT_ROOT, Settings

DATA = PROJECT_ROOT.parent / "shared" / "data"
DEPARTMENTS = tuple(f"dept-{n:02d}" for n in range(20))
SENSITIVITIES = ("public", "internal", "confidential", "restricted")
READER_DEPARTMENTS = DEPARTMENTS[:3]
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
WRITE_BATCH = 1000
console = Console()


# -- the pool ------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text.strip()) if len(s) > 20]


def pooled_passages(limit: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(title, text) chunks from the public data, and real questions over it."""
    chunks: list[tuple[str, str]] = []
    questions: list[str] = []
    paragraphs: list[tuple[str, str]] = []
    for line in (DATA / "corpus" / "medquad_nih_patient_info.jsonl").open(encoding="utf-8"):
        page = json.loads(line)
        for section in page["sections"]:
            questions.append(section["heading"])
            for paragraph in section["text"].split("\n"):
                parts = _sentences(paragraph)
                chunks += [(page["focus"], s) for s in parts]
                if len(parts) > 1:
                    paragraphs.append((page["focus"], paragraph.strip()))
    seen: set[str] = set()
    for name in ("hotpotqa.dev", "2wikimultihopqa.dev", "musique.dev", "ramdocs.test"):
        for line in (DATA / "multihop" / f"{name}.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            questions.append(row["question"])
            for passage in row.get("passages", []):
                if passage["text"] not in seen:
                    seen.add(passage["text"])
                    chunks.append((passage.get("title") or "", passage["text"]))
    for line in (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        chunks += [(row["title"], s) for s in row["sentences"] if len(s) > 20]
        if len(row["sentences"]) > 1:
            paragraphs.append((row["title"], " ".join(row["sentences"])))
    for line in (DATA / "scifact" / "claims_dev.jsonl").open(encoding="utf-8"):
        questions.append(json.loads(line)["claim"])
    for line in (DATA / "pubmedqa" / "pqa_l.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        questions.append(row["question"])
        for context in row["contexts"]:
            chunks += [("", s) for s in _sentences(context["text"])]
    chunks += paragraphs[: max(0, limit - len(chunks))]
    return chunks[:limit], questions


def make_chunks(passages: list[tuple[str, str]]) -> list[Chunk]:
    """Chunks with seeded access labels: about 5% of a document's worth per department."""
    labels = random.Random(20261203)
    chunks = []
    for n, (title, text) in enumerate(passages):
        doc_id = f"scale-{n // 20:06d}"
        start = dt.date(2020, 1, 1) + dt.timedelta(days=labels.randrange(2000))
        ended = labels.random() < 0.1
        metadata = DocumentMetadata(
            doc_id=doc_id,
            title=title or doc_id,
            departments=(labels.choice(DEPARTMENTS),),
            sensitivity=labels.choices(SENSITIVITIES, weights=(2, 5, 2, 1))[0],
            effective_from=start,
            effective_to=start + dt.timedelta(days=365) if ended else None,
        )
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}@1#{n % 20:04d}",
                doc_id=doc_id,
                ordinal=n % 20,
                text=text,
                start=0,
                end=len(text),
                heading_path=(title,) if title else (),
                page=None,
                source_sha256="0" * 64,
                metadata=metadata,
            )
        )
    return chunks


def clinician_filter(day: dt.date) -> SearchFilter:
    """As the access module compiles one for a clinician of three departments."""
    return AllOf(
        (
            OneOf(
                (
                    AnyOf("sensitivity", ("public",)),
                    AllOf(
                        (
                            AnyOf("departments", READER_DEPARTMENTS),
                            AnyOf("sensitivity", ("internal", "confidential")),
                        )
                    ),
                )
            ),
            ActiveOn(day),
        )
    )


def cached_vectors(
    work: Path, chunks: list[Chunk], questions: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Chunk and question embeddings (all-MiniLM-L6-v2 through the registry), cached."""
    chunk_file, question_file = work / "chunk-vectors.npy", work / "question-vectors.npy"
    if chunk_file.is_file() and question_file.is_file():
        vectors = np.load(chunk_file)
        if len(vectors) == len(chunks):
            return vectors.astype(np.float32), np.load(question_file)
    with Appliance(Settings(data_dir=work / "embedder")) as appliance:
        embedder = appliance.embedder
        parts = []
        with progress_display(console) as progress:
            task = progress.add_task("embedding chunks", total=len(chunks))
            for start in range(0, len(chunks), 2000):
                batch = chunks[start : start + 2000]
                parts.append(embedder.embed_chunks(batch).astype(np.float16))
                progress.update(task, advance=len(batch))
        vectors = np.concatenate(parts)
        asked = np.stack([embedder.embed_query(q) for q in questions])
        started = time.perf_counter()
        for q in questions[:100]:
            embedder.embed_query(q)
        (work / "query-embedding-ms.txt").write_text(
            f"{(time.perf_counter() - started) * 1000 / min(100, len(questions)):.2f}"
        )
    np.save(chunk_file, vectors)
    np.save(question_file, asked)
    return vectors.astype(np.float32), asked


# -- measuring -----------------------------------------------------------------------------


def write_all(
    name: str,
    chunks: list[Chunk],
    write: Callable[[list[Chunk], int], None],
    commit: Callable[[], None],
) -> float:
    """Chunks per second, committed at the end (batches of WRITE_BATCH)."""
    started = time.perf_counter()
    with progress_display(console) as progress:
        task = progress.add_task(f"writing into {name}", total=len(chunks))
        for start in range(0, len(chunks), WRITE_BATCH):
            batch = chunks[start : start + WRITE_BATCH]
            write(batch, start)
            progress.update(task, advance=len(batch))
    commit()
    return len(chunks) / (time.perf_counter() - started)


def latencies(run: Callable[[int], object], count: int) -> dict[str, float]:
    for n in range(min(20, count)):  # warm caches and connections
        run(n)
    timings = []
    for n in range(count):
        started = time.perf_counter()
        run(n)
        timings.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": round(percentile(timings, 50), 2),
        "p95_ms": round(percentile(timings, 95), 2),
    }


def directory_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def opensearch_pid() -> int | None:
    found = subprocess.run(
        ["pgrep", "-f", "org.opensearch.bootstrap.OpenSearch"], capture_output=True, text=True
    )
    pids = found.stdout.split()
    return int(pids[0]) if pids else None


def measure_stack(
    name: str,
    lexical: LexicalIndex,
    vectors: VectorIndex,
    chunks: list[Chunk],
    chunk_vectors: np.ndarray,
    questions: list[str],
    question_vectors: np.ndarray,
    search_filter: SearchFilter,
    size: Callable[[], float],
    memory: Callable[[], float],
) -> dict[str, object]:
    lexical_rate = write_all(
        f"{name}: lexical", chunks, lambda batch, _start: lexical.upsert(batch), lexical.commit
    )
    vector_rate = write_all(
        f"{name}: vectors",
        chunks,
        lambda batch, start: vectors.upsert(batch, chunk_vectors[start : start + len(batch)]),
        lambda: (vectors.commit(), vectors.optimize()),  # as an ingestion run ends
    )
    pool = ThreadPoolExecutor(max_workers=1)

    def hybrid(n: int) -> object:
        lexical_hits = pool.submit(lexical.search, questions[n], 50, search_filter)
        dense_hits = vectors.search(question_vectors[n], 50, search_filter)
        return reciprocal_rank_fusion({"lexical": lexical_hits.result(), "dense": dense_hits})[:10]

    count = len(questions)
    figures = {
        "chunks": lexical.count(),
        "lexical_write_chunks_per_s": round(lexical_rate, 1),
        "vector_write_chunks_per_s": round(vector_rate, 1),
        "index_mb": size(),
        "lexical_p": latencies(lambda n: lexical.search(questions[n], 50, search_filter), count),
        "dense_p": latencies(
            lambda n: vectors.search(question_vectors[n], 50, search_filter), count
        ),
        "hybrid_p": latencies(hybrid, count),
        "rss_mb": memory(),
    }
    pool.shutdown()
    return figures


def filtered_share(lexical: LexicalEngine, search_filter: SearchFilter) -> float:
    """The share of chunks the access filter admits."""
    _frequencies, admitted = lexical.document_frequencies([], search_filter)
    return admitted / max(1, lexical.count())


# -- the run -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--work", type=Path, default=Path("/tmp/appliance-scale"))
    parser.add_argument(
        "--out", type=Path, default=PROJECT_ROOT / "benchmarks" / "results" / "scale"
    )
    parser.add_argument("--opensearch-url", default="http://127.0.0.1:9200")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    passages, all_questions = pooled_passages(args.chunks)
    chunks = make_chunks(passages)
    questions = random.Random(7).sample(all_questions, min(args.queries, len(all_questions)))
    console.print(f"{len(chunks):,} chunks pooled, {len(questions)} questions")
    chunk_vectors, question_vectors = cached_vectors(args.work, chunks, questions)
    search_filter = clinician_filter(dt.date.today())

    stores = args.work / "stores"
    shutil.rmtree(stores, ignore_errors=True)
    before = rss_mb()  # the embedded stores' memory is what this process grows by
    vectors_embedded = QdrantEdgeVectorIndex(stores / "qdrant-edge", chunk_vectors.shape[1])
    tantivy = TantivyLexicalIndex(stores / "tantivy")
    results: dict[str, object] = {}
    results["embedded (tantivy + qdrant-edge)"] = measure_stack(
        "embedded", tantivy, vectors_embedded, chunks, chunk_vectors, questions,
        question_vectors, search_filter,
        size=lambda: round(directory_mb(stores / "tantivy") + directory_mb(stores / "qdrant-edge"), 1),
        memory=lambda: round(rss_mb() - before, 1),
    )  # fmt: skip
    share = filtered_share(tantivy, search_filter)
    tantivy.close()
    vectors_embedded.close()

    client = OpenSearch(hosts=[args.opensearch_url], timeout=120)
    prefix = "scale-bench"
    client.indices.delete(index=f"{prefix}-chunks-*", ignore_unavailable=True)
    opensearch = OpenSearchLexicalIndex(client, index_prefix=prefix, bulk_chunks=WRITE_BATCH)
    vectors_server = QdrantEdgeVectorIndex(stores / "qdrant-edge-2", chunk_vectors.shape[1])

    def opensearch_mb() -> float:
        stats = client.indices.stats(index=opensearch.index, metric="store")
        return round(stats["_all"]["primaries"]["store"]["size_in_bytes"] / 2**20, 1)

    def node_rss() -> float:
        pid = opensearch_pid()
        return rss_mb(pid) if pid else float("nan")

    results["servers (OpenSearch + qdrant-edge)"] = measure_stack(
        "servers", opensearch, vectors_server, chunks, chunk_vectors, questions,
        question_vectors, search_filter,
        size=lambda: round(opensearch_mb() + directory_mb(stores / "qdrant-edge-2"), 1),
        memory=node_rss,
    )  # fmt: skip
    client.indices.delete(index=opensearch.index, ignore_unavailable=True)
    vectors_server.close()

    embedding_ms = (args.work / "query-embedding-ms.txt").read_text()
    report = {
        "command": "benchmarks/scale.py "
        + " ".join(f"--{k} {v}" for k, v in vars(args).items() if k in ("chunks", "queries")),
        "date": dt.date.today().isoformat(),
        "chunks": len(chunks),
        "questions": len(questions),
        "filter_admits_share": round(share, 3),
        "query_embedding_ms": float(embedding_ms),
        "stacks": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)


def print_report(report: dict) -> None:  # type: ignore[type-arg]
    table = Table(
        title=f"{report['chunks']:,} chunks, {report['questions']} questions, access filter admits {report['filter_admits_share']:.0%}"
    )
    table.add_column("figure")
    for name in report["stacks"]:
        table.add_column(name, justify="right")
    stacks = list(report["stacks"].values())

    def row(label: str, value: Callable[[dict], object]) -> None:  # type: ignore[type-arg]
        table.add_row(label, *(str(value(s)) for s in stacks))

    row("lexical writes, chunks/s", lambda s: s["lexical_write_chunks_per_s"])
    row("vector writes, chunks/s", lambda s: s["vector_write_chunks_per_s"])
    row("index size, MB", lambda s: s["index_mb"])
    row("resident memory, MB", lambda s: s["rss_mb"])
    for key, label in (("lexical_p", "BM25"), ("dense_p", "vectors"), ("hybrid_p", "hybrid")):
        row(f"{label} p50 / p95, ms", lambda s, k=key: f"{s[k]['p50_ms']} / {s[k]['p95_ms']}")
    console.print(table)
    console.print(f"question embedding (either stack): {report['query_embedding_ms']} ms each")


if __name__ == "__main__":
    main()

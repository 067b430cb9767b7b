"""Ingestion throughput, query latency and retrieval quality, side by side.

1. MedQuAD (../shared/data/corpus, 2,802 NIH/CDC pages, CC BY 4.0) is written out as
   Markdown files and ingested end to end through the real pipeline: chunks per second
   and peak memory.
2. 200 MedQuAD questions (section headings) are run through lexical, dense and hybrid
   retrieval: latency p50/p95 after warm-up, and Recall@10 of the page's own section.
3. The sample corpus golden set (appliance/sample_corpus/golden.jsonl): Recall@1/3/10
   and MRR@10 of lexical, dense and hybrid.

    .venv/bin/python benchmarks/ingest_and_query.py [--docs N] [--queries N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import resource
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from appliance.access.rules import Subject
from appliance.cli.progress import progress_display
from appliance.engines import Appliance
from appliance.index.filters import ActiveOn
from appliance.nlp.embedder import Embedder
from appliance.settings import PROJECT_ROOT, Settings

MEDQUAD = PROJECT_ROOT.parent / "shared" / "data" / "corpus" / "medquad_nih_patient_info.jsonl"
SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
MODES = ("lexical", "dense", "hybrid", "hybrid+rerank")


def reader_of_everything(appliance: Appliance) -> Subject:
    """A subject the shipped policy lets read every ingested document (a department head
    of every department, caring for every patient), so the figures measure retrieval."""
    metas = [record.metadata for record in appliance.catalog.documents()]
    return Subject(
        "benchmark-reader",
        ("department_head",),
        tuple(sorted({d for m in metas for d in m.departments})),
        tuple(sorted({m.patient_id for m in metas if m.patient_id})),
    )


def run_mode(appliance: Appliance, question: str, search_filter, mode: str):  # type: ignore[no-untyped-def]
    """A retriever alone, or the whole query pipeline (access, fusion, the rerank stages)."""
    if mode == "hybrid+rerank":
        reader = reader_of_everything(appliance)
        return appliance.query.run(question, reader, 10, search_filter).candidates
    return appliance.retriever.retrieve(question, 10, search_filter, mode)  # type: ignore[arg-type]


console = Console()


def write_medquad(target: Path, limit: int | None, pages: list[dict] | None = None) -> list[dict]:
    if pages is None:
        pages = [json.loads(line) for line in MEDQUAD.open(encoding="utf-8")][:limit]
    for page in pages:
        body = [
            f"---\ndoc_id: {page['doc_id']}\ndoc_type: patient-information\nsensitivity: public\n"
            f"departments: [all]\n---\n# {page['focus']}\n"
        ]
        for section in page["sections"]:
            body.append(f"## {section['heading']}\n\n{section['text']}\n")
        (target / f"{page['doc_id']}.md").write_text("\n".join(body), encoding="utf-8")
    return pages


def percentile(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if len(values) > 1
        else values[0]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--docs", type=int, default=None, help="ingest only the first N MedQuAD pages"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--no-cage",
        action="store_true",
        help="main run without CAGE (no parse graphs at ingestion, no CAGE at query time)",
    )
    parser.add_argument(
        "--graph-cost",
        type=int,
        default=200,
        help="first ingest N pages with and without parse graphs, side by side (0: skip)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="appliance-bench-"))
    corpus = work / "medquad"
    corpus.mkdir()
    pages = write_medquad(corpus, args.docs)
    figures: dict[str, object] = {}
    if args.graph_cost:
        figures["graph_cost"] = graph_cost(work, pages[: args.graph_cost])
    settings = Settings(data_dir=work / "data", rerank={"cage": not args.no_cage})  # type: ignore[arg-type]
    figures["cage"] = not args.no_cage
    with Appliance(settings) as appliance:
        _ = appliance.embedder  # model load is start-up, not ingestion
        files = sorted(corpus.glob("*.md"))
        with progress_display(
            console,
            TextColumn("[bold]MedQuAD"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[chunks]} chunks"),
        ) as progress:
            task = progress.add_task("MedQuAD ingest", total=len(files), chunks=0)
            written = 0

            def advance(outcome) -> None:  # type: ignore[no-untyped-def]
                nonlocal written
                written += outcome.chunks
                progress.update(task, advance=1, chunks=written)

            started = time.perf_counter()
            report = appliance.ingestor.ingest([corpus], on_outcome=advance)
            elapsed = time.perf_counter() - started
        chunks = report.chunks_written
        figures["ingest"] = {
            "documents": report.count("added"),
            "failed": len(report.failed),
            "chunks": chunks,
            "seconds": round(elapsed, 1),
            "chunks_per_second": round(chunks / elapsed, 1),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }

        # Queries: MedQuAD section headings; the gold chunks are that section's chunks.
        rng = random.Random(7)
        sections = [(p["doc_id"], s["heading"]) for p in pages for s in p["sections"]]
        sample = rng.sample(sections, min(args.queries, len(sections)))
        for mode in MODES:  # warm-up
            run_mode(appliance, "what are the symptoms of diabetes", None, mode)
        latency: dict[str, list[float]] = {m: [] for m in MODES}
        found: dict[str, int] = dict.fromkeys(MODES, 0)
        for doc_id, heading in sample:
            question = re.sub(r"\s+\?$", "?", heading)
            for mode in MODES:
                t0 = time.perf_counter()
                candidates = run_mode(appliance, question, None, mode)
                latency[mode].append((time.perf_counter() - t0) * 1000)
                if any(
                    c.chunk.doc_id == doc_id and heading in c.chunk.heading_path for c in candidates
                ):
                    found[mode] += 1
        figures["medquad_queries"] = {
            m: {
                "p50_ms": round(percentile(latency[m], 50), 1),
                "p95_ms": round(percentile(latency[m], 95), 1),
                "recall_at_10": round(found[m] / len(sample), 3),
            }
            for m in MODES
        }

    figures["golden"] = golden_set(work / "sample-data")
    figures["embedding_precision"] = embedding_precision(pages)
    print_report(figures, len(sample))
    out = PROJECT_ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "ingest_and_query.json").write_text(json.dumps(figures, indent=2) + "\n")
    console.print(f"figures written to {out / 'ingest_and_query.json'}")


def golden_set(data_dir: Path) -> dict[str, dict[str, float]]:
    """Recall@k and MRR@10 on the sample corpus golden set, documents in force today."""
    rows = [json.loads(line) for line in (SAMPLE / "golden.jsonl").open(encoding="utf-8")]
    golden = [row for row in rows if row.get("answerable", True)]
    with Appliance(Settings(data_dir=data_dir)) as appliance:
        appliance.ingestor.ingest([SAMPLE / "documents"])
        catalog = appliance.catalog
        ranks: dict[str, list[int | None]] = {m: [] for m in MODES}
        for item in golden:
            ids = catalog.chunk_ids_of(item["doc_id"])
            gold = {
                cid
                for cid, chunk in catalog.chunks(sorted(ids)).items()
                if item["quote"] in chunk.index_text
            }
            if not gold:
                raise SystemExit(f"golden quote not found in {item['doc_id']}: {item['quote']!r}")
            for mode in MODES:
                candidates = run_mode(appliance, item["question"], ActiveOn(dt.date.today()), mode)
                ranks[mode].append(
                    next((i for i, c in enumerate(candidates, 1) if c.chunk.chunk_id in gold), None)
                )
    result = {}
    for mode in MODES:
        r = ranks[mode]
        result[mode] = {
            "recall_at_1": round(sum(1 for x in r if x is not None and x <= 1) / len(r), 3),
            "recall_at_3": round(sum(1 for x in r if x is not None and x <= 3) / len(r), 3),
            "recall_at_10": round(sum(1 for x in r if x is not None) / len(r), 3),
            "mrr_at_10": round(sum(1 / x for x in r if x is not None) / len(r), 3),
            "questions": len(r),
        }
    return result


def graph_cost(work: Path, pages: list[dict]) -> dict[str, float]:  # type: ignore[type-arg]
    """Ingestion rate of the same pages without and with parse graphs (CAGE's input)."""
    subset = work / "graph-cost"
    subset.mkdir()
    write_medquad(subset, None, pages)
    rates: dict[str, float] = {}
    for label, cage in (("without_graphs", False), ("with_graphs", True)):
        settings = Settings(data_dir=work / f"graph-cost-{label}", rerank={"cage": cage})  # type: ignore[arg-type]
        with Appliance(settings) as appliance:
            _ = appliance.embedder, appliance.graph_builder  # loading is start-up
            started = time.perf_counter()
            report = appliance.ingestor.ingest([subset])
            rates[f"{label}_chunks_per_second"] = round(
                report.chunks_written / (time.perf_counter() - started), 1
            )
            rates["chunks"] = report.chunks_written
    return rates


def embedding_precision(pages: list[dict]) -> dict[str, float]:  # type: ignore[type-arg]
    """bfloat16 autocast (the default on CPUs with native bf16) against float32."""
    texts = [s["text"][:900] for p in pages[:200] for s in p["sections"]][:384]
    with Appliance(Settings(data_dir=Path(tempfile.mkdtemp()))) as appliance:
        model = appliance.registry.load("embedder")
    result: dict[str, float] = {}
    vectors = {}
    for precision in ("float32", "bfloat16"):
        embedder = Embedder(model, batch_size=16, precision=precision)  # type: ignore[arg-type]
        embedder.embed(texts[:32])  # warm-up
        started = time.perf_counter()
        vectors[precision] = embedder.embed(texts)
        result[f"{precision}_texts_per_second"] = round(
            len(texts) / (time.perf_counter() - started), 1
        )
    cosine = (vectors["float32"] * vectors["bfloat16"]).sum(axis=1)
    result["min_cosine_bf16_vs_fp32"] = round(float(cosine.min()), 6)
    return result


def print_report(figures: dict, queries: int) -> None:  # type: ignore[type-arg]
    ingest = figures["ingest"]
    if "graph_cost" in figures:
        cost = figures["graph_cost"]
        console.print(
            f"[bold]Parse graphs at ingestion[/bold] ({cost['chunks']} chunks): without "
            f"{cost['without_graphs_chunks_per_second']} chunks/s, with "
            f"{cost['with_graphs_chunks_per_second']} chunks/s"
        )
    console.print(f"main run with CAGE: {figures['cage']}")
    console.print(
        f"\n[bold]Ingestion[/bold] {ingest['documents']} documents, {ingest['chunks']} chunks in "
        f"{ingest['seconds']} s: [bold]{ingest['chunks_per_second']} chunks/s[/bold], peak RSS {ingest['peak_rss_mib']} MiB"
    )
    table = Table(title=f"MedQuAD, {queries} questions (top 10, after warm-up)")
    for column in ("retriever", "p50 ms", "p95 ms", "Recall@10 (own section)"):
        table.add_column(column)
    for mode, row in figures["medquad_queries"].items():
        table.add_row(mode, str(row["p50_ms"]), str(row["p95_ms"]), str(row["recall_at_10"]))
    console.print(table)
    precision = figures["embedding_precision"]
    console.print(
        f"[bold]Embedding[/bold] float32 {precision['float32_texts_per_second']} texts/s, "
        f"bfloat16 {precision['bfloat16_texts_per_second']} texts/s, "
        f"min cosine bf16 vs fp32 {precision['min_cosine_bf16_vs_fp32']}"
    )
    table = Table(title="Sample corpus golden set")
    for column in ("retriever", "Recall@1", "Recall@3", "Recall@10", "MRR@10"):
        table.add_column(column)
    for mode, row in figures["golden"].items():
        table.add_row(
            mode,
            str(row["recall_at_1"]),
            str(row["recall_at_3"]),
            str(row["recall_at_10"]),
            str(row["mrr_at_10"]),
        )
    console.print(table)


if __name__ == "__main__":
    main()

"""Hybrid retrieval with the knowledge graph against hybrid without it, side by side in
one run, on the sample corpus: the same documents ingested twice (``graph.engine`` none,
then the embedded ArcadeDB), every golden set asked through the whole answer path on
both, figures per question kind. The graph must lift the relational, temporal and
negation kinds and cost nothing elsewhere.

It also measures what the graph costs at ingestion (chunks per second with fact
extraction and graph writes, against without) and the latency of the graph retriever
alone (question reading plus its templates) on the embedded server.

    .venv/bin/python -m benchmarks.graph_retrieval [--golden FILE ...] \\
        [--distractor-pages N] [--out benchmarks/results/graph]

Without --golden: the graph golden set and the retrieval golden set of the sample
corpus, and the ward development set when ../shared/data is beside the checkout.

``--distractor-pages N`` ingests N MedQuAD pages (public patient information, thousands
of chunks on the same drugs and conditions) beside the sample corpus in both data
directories: on the sample corpus alone, lexical and dense retrieval already find every
gold passage, and the question is what the graph adds when they have competition. The
figures go to ``graph_retrieval_with_distractors.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.eval.golden import GoldenReport, evaluate, latency
from appliance.eval.stats import percentile
from appliance.index.filters import ActiveOn
from appliance.settings import PROJECT_ROOT, Settings
from benchmarks.ingest_and_query import write_medquad

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
WARD_DEV = PROJECT_ROOT.parent / "shared" / "data" / "clinical" / "dev.jsonl"
KIND_ORDER = ("relational", "temporal", "negation", "conflict")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, nargs="*")
    parser.add_argument("--distractor-pages", type=int, default=0)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "benchmarks/results/graph")
    args = parser.parse_args()
    goldens = args.golden or [
        g for g in (SAMPLE / "golden-graph.jsonl", SAMPLE / "golden.jsonl", WARD_DEV) if g.exists()
    ]
    console = Console()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="graph-bench-") as work:
        corpus = [SAMPLE / "documents"]
        if args.distractor_pages:
            pages = Path(work) / "medquad"
            pages.mkdir()
            write_medquad(pages, args.distractor_pages)
            corpus.append(pages)
        for engine in ("none", "arcadedb"):
            data_dir = Path(work) / engine
            with Appliance(Settings(data_dir=data_dir, graph={"engine": engine})) as appliance:  # type: ignore[arg-type]
                # loading models and starting the graph server is start-up, not ingestion
                _ = appliance.embedder, appliance.graph_builder, appliance.knowledge_graph
                if appliance.knowledge_graph is not None:
                    _ = appliance.fact_extractor
                started = time.perf_counter()
                report = appliance.ingestor.ingest(corpus)
                seconds = time.perf_counter() - started
                assert not report.failed, report.failed
                entry: dict[str, object] = {
                    "ingest_chunks_per_s": report.chunks_written / seconds,
                    "chunks": report.chunks_written,
                }
                for golden in goldens:
                    console.print(f"[bold]{engine}[/]: {golden.name}")
                    entry[golden.name] = summary(evaluate(appliance, golden))
                if appliance.knowledge_graph is not None:
                    entry["graph_retriever_ms"] = graph_latency(appliance, goldens)
                results[engine] = entry
            shutil.rmtree(data_dir, ignore_errors=True)
    show(console, results, goldens)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "graph_retrieval_with_distractors" if args.distractor_pages else "graph_retrieval"
    written = args.out / f"{name}.json"
    results["distractor_pages"] = {"pages": args.distractor_pages}
    written.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"written: {written}")


def summary(report: GoldenReport) -> dict[str, object]:
    return {
        "figures": report.figures(),
        "by_kind": report.by_kind(),
        "latency": latency(report),
        "per_question": [
            {k: row.get(k) for k in ("question", "kinds", "as_of", "refused", "contains_gold",
                                     "gold_rank_before_rerank", "gold_rank_after_rerank")}
            for row in report.per_question
        ],
    }  # fmt: skip


def graph_latency(appliance: Appliance, goldens: list[Path]) -> dict[str, float]:
    """The graph retriever alone: reading the question and running its templates."""
    from appliance.retrieve.graph import GraphRetriever

    graph = appliance.knowledge_graph
    assert graph is not None
    retriever = GraphRetriever(graph, appliance.fact_extractor)
    questions = [json.loads(line)["question"] for g in goldens for line in g.open() if line.strip()]
    in_force = ActiveOn(dt.date.today())
    retriever.search(questions[0], 50, in_force)  # warm
    timings = []
    for question in questions:
        started = time.perf_counter()
        retriever.search(question, 50, in_force)
        timings.append((time.perf_counter() - started) * 1000)
    return {"p50": percentile(timings, 50), "p95": percentile(timings, 95), "n": len(timings)}


def show(console: Console, results: dict[str, dict[str, object]], goldens: list[Path]) -> None:
    for golden in goldens:
        table = Table(title=f"{golden.name}: hybrid without the graph | with it")
        columns = (
            "kind",
            "questions",
            "recall@10",
            "MRR before rerank",
            "gold in answer",
            "refused",
        )
        for column in columns:
            table.add_column(column, justify="right" if column != "kind" else "left")
        without = results["none"][golden.name]["by_kind"]  # type: ignore[index]
        with_graph = results["arcadedb"][golden.name]["by_kind"]  # type: ignore[index]
        kinds = sorted(
            without,
            key=lambda k: (k not in KIND_ORDER, KIND_ORDER.index(k) if k in KIND_ORDER else 0, k),
        )
        for kind in kinds:
            a, b = without[kind], with_graph[kind]
            table.add_row(
                kind, str(a["questions"]),
                f"{a['recall_at_10']:.2f} | {b['recall_at_10']:.2f}",
                f"{a['mrr_before_rerank']:.2f} | {b['mrr_before_rerank']:.2f}",
                f"{a['contains_gold']:.2f} | {b['contains_gold']:.2f}",
                f"{a['refused']:.2f} | {b['refused']:.2f}",
            )  # fmt: skip
        figures_a = results["none"][golden.name]["figures"]  # type: ignore[index]
        figures_b = results["arcadedb"][golden.name]["figures"]  # type: ignore[index]
        table.add_section()
        for name in ("recall_at_10_before_rerank", "answer_contains_gold",
                     "false_refusal_rate", "correct_refusal_rate", "unsafe_answers"):  # fmt: skip
            table.add_row(name, "", f"{figures_a[name]:.3f} | {figures_b[name]:.3f}", "", "", "")
        console.print(table)
    for engine, entry in results.items():
        console.print(
            f"{engine}: ingestion {entry['ingest_chunks_per_s']:.1f} chunks/s over "
            f"{entry['chunks']} chunks" + (
                f"; graph retriever p50 {entry['graph_retriever_ms']['p50']:.1f} ms, "  # type: ignore[index]
                f"p95 {entry['graph_retriever_ms']['p95']:.1f} ms"  # type: ignore[index]
                if "graph_retriever_ms" in entry else ""
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()

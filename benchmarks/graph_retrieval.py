"""Hybrid retrieval with the knowledge graph against hybrid without it, side by side in
one run, on the sample corpus: the same documents ingested twice (``graph.engine`` none,
then the embedded ArcadeDB), every golden set asked through the whole answer path on
both, figures per question kind. The graph must lift the relational, temporal and
negation kinds and cost nothing elsewhere.

It also measures what the graph costs at ingestion (chunks per second with fact
extraction and graph writes, against without) and the latency of the graph retriever
alone (question reading plus its templates) on the embedded server.

    .venv/bin/python -m benchmarks.graph_retrieval [--golden FILE ...] \\
        [--distractor-pages N] [--engines none arcadedb] [--user ID] \\
        [--out benchmarks/results/graph]

Without --golden: the graph golden set and the retrieval golden set of the sample
corpus, and the ward development set when ../shared/data is beside the checkout.

``--distractor-pages N`` ingests N MedQuAD pages (public patient information, thousands
of chunks on the same drugs and conditions) beside the sample corpus in both data
directories: on the sample corpus alone, lexical and dense retrieval already find every
gold passage, and the question is what the graph adds when they have competition. The
figures go to ``graph_retrieval_with_distractors.json``.

``--user ID`` asks as one of the sample corpus's demo users (``subjects.toml``) instead
of a reader of everything: the answer path's gates weigh a question's words among the
chunks the asker may read, so a clinician can be answered where the evaluator is
refused. ``--engines`` runs one engine only; the file name then says which.
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

from appliance.access.rules import Subject
from appliance.engines import Appliance
from appliance.eval.golden import GoldenReport, evaluate, latency
from appliance.eval.stats import percentile
from appliance.index.filters import ActiveOn
from appliance.settings import PROJECT_ROOT, Settings
from benchmarks.ingest_and_query import write_medquad

SAMPLE = PROJECT_ROOT / "appliance" / "sample_corpus"
WARD_DEV = PROJECT_ROOT.parent / "shared" / "data" / "clinical" / "dev.jsonl"
KIND_ORDER = ("relational", "temporal", "negation", "conflict")
ENGINES = ("none", "arcadedb")
ENGINE_NAMES = {"none": "hybrid without the graph", "arcadedb": "with it"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", type=Path, nargs="*")
    parser.add_argument("--distractor-pages", type=int, default=0)
    parser.add_argument(
        "--engines", nargs="+", choices=ENGINES, default=list(ENGINES),
        help="graph engines to compare (default both)",
    )  # fmt: skip
    parser.add_argument(
        "--user", help="ask as this user of the sample corpus (default a reader of everything)"
    )
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
        for engine in args.engines:
            data_dir = Path(work) / engine
            with Appliance(Settings(data_dir=data_dir, graph={"engine": engine})) as appliance:  # type: ignore[arg-type]
                reader = as_user(appliance, args.user) if args.user else None
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
                    entry[golden.name] = summary(evaluate(appliance, golden, reader=reader))
                if appliance.knowledge_graph is not None:
                    entry["graph_retriever_ms"] = graph_latency(appliance, goldens)
                results[engine] = entry
            shutil.rmtree(data_dir, ignore_errors=True)
    show(console, results, goldens)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "graph_retrieval_with_distractors" if args.distractor_pages else "graph_retrieval"
    name += f"_as_{args.user}" if args.user else ""
    name += "" if list(args.engines) == list(ENGINES) else "_" + "_".join(args.engines)
    written = args.out / f"{name}.json"
    results["distractor_pages"] = {"pages": args.distractor_pages}
    results["asked_as"] = {"user": args.user or "a reader of everything"}
    written.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"written: {written}")


def as_user(appliance: Appliance, user: str) -> Subject:
    """``user`` of the sample corpus's demo users, installed in the data directory."""
    appliance.settings.access_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(SAMPLE / "subjects.toml", appliance.settings.access_dir / "subjects.toml")
    return appliance.subjects.get(user)


def summary(report: GoldenReport) -> dict[str, object]:
    return {
        "figures": report.figures(),
        "by_kind": report.by_kind(),
        "latency": latency(report),
        "per_question": [
            {k: row.get(k) for k in ("question", "kinds", "as_of", "refused", "refusal", "unsafe",
                                     "contains_gold", "gold_rank_before_rerank",
                                     "gold_rank_after_rerank")}
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
    """One table per golden set, each cell "without the graph | with it" (or the one
    engine run)."""
    engines = list(results)
    for golden in goldens:
        table = Table(title=f"{golden.name}: " + " | ".join(ENGINE_NAMES[e] for e in engines))
        columns = ("kind", "questions", "recall@10", "MRR before rerank", "gold in answer",
                   "refused")  # fmt: skip
        for column in columns:
            table.add_column(column, justify="right" if column != "kind" else "left")
        by_kind = [results[e][golden.name]["by_kind"] for e in engines]  # type: ignore[index]
        kinds = sorted(
            by_kind[0],
            key=lambda k: (k not in KIND_ORDER, KIND_ORDER.index(k) if k in KIND_ORDER else 0, k),
        )
        for kind in kinds:
            rows = [figures[kind] for figures in by_kind]
            table.add_row(
                kind, str(rows[0]["questions"]),
                *(" | ".join(f"{row[key]:.2f}" for row in rows)
                  for key in ("recall_at_10", "mrr_before_rerank", "contains_gold", "refused")),
            )  # fmt: skip
        figures = [results[e][golden.name]["figures"] for e in engines]  # type: ignore[index]
        table.add_section()
        for name in ("recall_at_10_before_rerank", "answer_contains_gold",
                     "false_refusal_rate", "correct_refusal_rate", "unsafe_answers"):  # fmt: skip
            cells = " | ".join(f"{f[name]:.3f}" for f in figures)
            table.add_row(name, "", cells, "", "", "")
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

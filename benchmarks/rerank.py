"""Rerankers side by side on multi-hop pools: Recall@2/@5 by type, latency, chart.

    APPLIANCE_DATA_DIR=<dir> .venv/bin/python benchmarks/rerank.py --data POOLS ...

The harness is ``benchmarks/rerank_bench``. A trained cross-encoder in the data
directory's registry role ``reranker`` joins the comparison.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rerank_bench.harness import GraphCache, evaluate
from rerank_bench.product import PRODUCT, ProductPipeline
from rerank_bench.report import markdown, summarise, write_report
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from appliance.cli.common import console, errors, open_appliance
from appliance.cli.progress import progress_display
from appliance.nlp.parse_graph import ParseGraphBuilder
from appliance.rerank.cross_encoder import CrossEncoderReranker


def main(
    data: Annotated[
        list[Path], typer.Option(exists=True, dir_okay=False, help="Pool files (JSONL).")
    ],
    out: Annotated[Path, typer.Option(help="Report folder.")] = Path("benchmarks/results/rerank"),
    k: Annotated[int, typer.Option(min=2, help="Candidates CAGE reranks.")] = 10,
    epochs: Annotated[int, typer.Option(min=1, help="CAGE training epochs per query.")] = 30,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    reranker_role: Annotated[
        str, typer.Option(help="Registry role of a cross-encoder to compare, when installed.")
    ] = "reranker",
) -> None:
    """Rerankers side by side on multi-hop pools: Recall@2/@5 by type, latency, chart."""
    command = "benchmarks/rerank.py " + " ".join(sys.argv[1:])
    if data_dir := os.environ.get("APPLIANCE_DATA_DIR"):  # where the trained reranker was
        command = f"APPLIANCE_DATA_DIR={data_dir} {command}"
    with open_appliance() as appliance:
        builder = ParseGraphBuilder(appliance.registry.load("spacy-vectors"))
        cache = GraphCache(appliance.settings.data_dir / "cache" / "pool-graphs.sqlite3", builder)
        pipeline = ProductPipeline(appliance.settings, appliance.registry)
        stages = ", then ".join(pipeline.describe()) or "fusion only"
        errors.print(f"{PRODUCT}: RRF k={appliance.settings.retrieval.rrf_k}, then {stages}")
        cross_encoder = None
        if appliance.registry.has(reranker_role):
            manifest = appliance.registry.manifest(reranker_role)
            cross_encoder = CrossEncoderReranker(
                appliance.registry.load(reranker_role), threshold=manifest.threshold
            )
        else:
            errors.print(f"no {reranker_role!r} model installed: cross-encoder methods left out")
        results = {}
        with progress_display(
            errors,
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as progress:
            for path in data:
                task = progress.add_task(path.stem, total=None)

                def advance(done: int, total: int, task: int = task) -> None:
                    progress.update(task, completed=done, total=total)

                results[path.stem] = evaluate(
                    path,
                    appliance.embedder,
                    cache,
                    k=k,
                    epochs=epochs,
                    limit=limit,
                    progress=advance,
                    cross_encoder=cross_encoder,
                    product=(f"{PRODUCT} ({stages})", pipeline.rank),
                )
    summary = summarise(results)
    for written in write_report(summary, out, command):
        console.print(f"wrote {written}")
    console.print(markdown(summary, command))


if __name__ == "__main__":
    typer.run(main)

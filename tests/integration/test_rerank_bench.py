"""The rerank benchmark on a few real HotpotQA pools (full runs live in benchmarks/results)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from appliance.settings import PROJECT_ROOT
from appliance.training.pools import read_pools
from benchmarks.rerank_bench.harness import GraphCache, bm25_ranking, evaluate
from benchmarks.rerank_bench.report import summarise, write_report

HOTPOT = Path(__file__).resolve().parents[3] / "shared" / "data" / "multihop" / "hotpotqa.dev.jsonl"
pytestmark = pytest.mark.skipif(not HOTPOT.exists(), reason="needs ../shared/data")


def test_bm25_over_a_pool_ranks_every_passage_once() -> None:
    question = read_pools(HOTPOT, limit=1)[0]
    ranking = bm25_ranking(question)
    assert sorted(ranking) == list(range(len(question.passages)))


def test_benchmark_reports_every_method_with_recall_and_latency(
    tmp_path: Path, embedder, graph_builder
) -> None:
    cache = GraphCache(tmp_path / "graphs.sqlite3", graph_builder)
    results = evaluate(HOTPOT, embedder, cache, k=10, epochs=5, limit=4)
    summary = summarise({"hotpotqa": results})["hotpotqa"]
    assert {
        "BM25 (pool)",
        "MiniLM cosine",
        "CAGE",
        "CAGE, plain GCN",
        "CAGE, no reweighting",
        "Bridge (ours)",
        "Hybrid bridge (ours)",
        "Hybrid bridge + CAGE (ours)",
        "Hybrid bridge + entity chain (ours)",
        "Hybrid title-and-entity chain (ours)",
    } <= set(summary)
    for row in summary.values():
        assert row["questions"] == 4
        assert 0.0 <= row["recall_at_5"] <= 100.0 and row["recall_at_2"] <= row["recall_at_5"]
        assert 0.0 < row["latency_p50_ms"] <= row["latency_p95_ms"]
    written = write_report({"hotpotqa": summary}, tmp_path / "report", "test")
    assert [p.name for p in written] == ["rerank.md", "rerank.json", "rerank.png"]
    assert written[2].stat().st_size > 1000
    # Graphs are cached: a second run parses nothing new.
    before = cache._db.execute("SELECT count(*) FROM graphs").fetchone()[0]
    evaluate(HOTPOT, embedder, cache, k=10, epochs=5, limit=4)
    assert cache._db.execute("SELECT count(*) FROM graphs").fetchone()[0] == before == 40


def test_the_command_line_report_names_the_data_directory_of_its_models(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    arguments = ["--data", str(HOTPOT), "--limit", "1", "--epochs", "2",
                 "--out", str(tmp_path / "report")]  # fmt: skip
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "benchmarks" / "rerank.py"), *arguments],
        env={**os.environ, "APPLIANCE_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "report" / "rerank.md").read_text(encoding="utf-8")
    assert f"Command: `APPLIANCE_DATA_DIR={data_dir} benchmarks/rerank.py --data" in table


def test_the_product_row_ranks_as_the_query_path_does(
    tmp_path: Path, embedder, graph_builder
) -> None:
    """Fusion by reciprocal rank (k=60, ties by id), then CAGE over the fused top 10
    with the cosine as its similarity, computed here from their definitions."""
    from appliance.model_registry import ModelRegistry
    from appliance.rerank.cage import CageConfig, CageReranker
    from benchmarks.rerank_bench.harness import QuestionInputs, by_score
    from benchmarks.rerank_bench.product import ProductPipeline
    from tests.conftest import make_settings

    cache = GraphCache(tmp_path / "graphs.sqlite3", graph_builder)
    for question in read_pools(HOTPOT, limit=2):
        texts = [p.full_text for p in question.passages]
        vectors = embedder.embed([question.question, *texts])
        cosine = vectors[1:] @ vectors[0]
        inputs = QuestionInputs(
            question, cosine, cache.graphs(texts), None, vectors[0], vectors[1:]
        )
        fused_score = {
            i: 1 / (60 + bm25_ranking(question).index(i) + 1)
            + 1 / (60 + by_score(cosine).index(i) + 1)
            for i in range(len(texts))
        }
        fused = sorted(fused_score, key=lambda i: (-fused_score[i], str(i)))
        plain = make_settings(tmp_path / "plain", rerank={"cage": False})
        assert ProductPipeline(plain, ModelRegistry(plain)).rank(inputs) == fused
        settings = make_settings(tmp_path / "cage")
        ranked = ProductPipeline(settings, ModelRegistry(settings)).rank(inputs)
        top = fused[:10]
        scores = CageReranker(CageConfig()).score(cosine[top], [inputs.graphs[i] for i in top])
        assert ranked[:10] == [top[i] for i in np.argsort(-scores, kind="stable")]
        assert ranked[10:] == fused[10:]

"""Does CAGE's coherence point at the gold passages? Measured on the training pools.

CAGE as published adds (1 - alpha) x coherence to the query similarity. That can only
raise Recall@5 where the passages coherent with the rest of the candidate set are the
gold ones more often than the others. For every question of the public training pools
(../shared/data/rerank_train; the rerank benchmark's dev sets are never read): the 10
passages MiniLM ranks first, their parse graphs from the rerank benchmark's graph cache
in the data directory (parsed on the first run), and several signals over those 10:

- CAGE's coherence s_i / (k - 1) after 1, 30 (the product's setting) and 60 epochs;
- graph size: a passage's node count over the largest in its pool. CAGE pools a graph
  by summing its nodes, and its coherence follows graph size (the Spearman figure below);
- CAGE's coherence (30 epochs) with graph size removed: the residual of a least-squares
  fit on log node count within each pool;
- text coherence: the mean MiniLM cosine of a passage with the other nine (no graph);
- the query similarity itself, for comparison.

Figures per pool set: the ROC AUC of each signal for gold against other passages within
each pool, averaged over pools (0.5: no signal; below 0.5: the signal favours the
distractors), the mean within-pool Spearman correlation of CAGE's coherence (30 epochs)
with graph size, and Recall@5 of alpha x similarity + (1 - alpha) x signal at alpha 1 (MiniLM
alone), 0.9 and 0.7 (the published alpha).

With ``--golden FILE``, the same is measured on the product's own chunks: each
answerable golden question goes through the query path (CAGE on, as configured), and the
figures are the within-list Spearman of CAGE's coherence with graph size and the AUC of each for the
chunks holding a gold quote, among the 10 candidates shown. The golden set's corpus
must be ingested in the data directory first.

    .venv/bin/python benchmarks/cage_signal.py [--questions N] [--golden FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rerank_bench.harness import GraphCache, rerank_top
from rich.console import Console
from rich.table import Table
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from appliance.cli.common import open_appliance
from appliance.engines import Appliance
from appliance.eval.golden import gold_chunk_ids, gold_quotes, reader_of_everything
from appliance.index.filters import ActiveOn
from appliance.nlp.parse_graph import ParseGraphBuilder, PassageGraph
from appliance.rerank.cage import CageConfig, CageReranker
from appliance.settings import PROJECT_ROOT
from appliance.training.pools import PoolQuestion, read_pools

TRAIN = PROJECT_ROOT.parent / "shared" / "data" / "rerank_train"
SETS = ("hotpotqa", "musique", "2wikimultihopqa")
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "cage_signal.json"
K = 10
ALPHAS = (1.0, 0.9, 0.7)
CAGE_EPOCHS = (1, 30, 60)
SHIPPED_EPOCHS = CageConfig().epochs  # the product's setting
console = Console()
RERANKERS = {epochs: CageReranker(CageConfig(epochs=epochs)) for epochs in CAGE_EPOCHS}


class Candidates:
    """One question's first stage: MiniLM similarities, its top k, their vectors and graphs."""

    def __init__(
        self,
        question: PoolQuestion,
        similarity: np.ndarray,
        passage_vectors: np.ndarray,
        graphs: list[PassageGraph],
    ) -> None:
        self.question = question
        self.similarity = similarity
        self.top = [int(i) for i in np.argsort(-similarity, kind="stable")[:K]]
        self.top_vectors = passage_vectors[self.top]
        self.graphs = graphs
        self.nodes = np.array([g.num_nodes for g in graphs], dtype=np.float64)
        self._coherence: dict[int, np.ndarray] = {}

    def cage_coherence(self, reranker: CageReranker) -> np.ndarray:
        """CAGE's coherence of the top k, trained once per configuration."""
        epochs = reranker.config.epochs
        if epochs not in self._coherence:
            self._coherence[epochs] = reranker.coherence(self.graphs).astype(np.float64)
        return self._coherence[epochs]


Signal = Callable[[Candidates], np.ndarray]


def text_coherence(candidates: Candidates) -> np.ndarray:
    """Mean cosine of each top passage's MiniLM vector with the other k - 1."""
    similarities = candidates.top_vectors @ candidates.top_vectors.T
    k = len(similarities)
    return (similarities.sum(axis=1) - np.diag(similarities)) / max(k - 1, 1)


def graph_size(candidates: Candidates) -> np.ndarray:
    return candidates.nodes / max(candidates.nodes.max(), 1.0)


def without_graph_size(values: np.ndarray, candidates: Candidates) -> np.ndarray:
    """What is left of ``values`` after a least-squares fit on log node count."""
    log_nodes = np.log(np.maximum(candidates.nodes, 1.0))
    design = np.stack([log_nodes, np.ones_like(log_nodes)], axis=1)
    coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
    return values - design @ coefficients


def signals() -> dict[str, Signal]:
    named: dict[str, Signal] = {}
    for epochs, reranker in RERANKERS.items():
        named[f"CAGE coherence, {epochs} epochs"] = lambda c, r=reranker: c.cage_coherence(r)
    named["graph size"] = graph_size
    named[f"CAGE coherence, {SHIPPED_EPOCHS} epochs, graph size removed"] = lambda c: (
        without_graph_size(c.cage_coherence(RERANKERS[SHIPPED_EPOCHS]), c)
    )
    named["text coherence (MiniLM, no graph)"] = text_coherence
    named["query similarity"] = lambda c: c.similarity[c.top]
    return named


def auc(labels: list[bool], signal: np.ndarray) -> float | None:
    """ROC AUC of gold against other passages (None when one side is empty)."""
    if all(labels) or not any(labels):
        return None
    return float(roc_auc_score(labels, signal))


def pool_auc(signal: np.ndarray, candidates: Candidates) -> float | None:
    return auc([i in candidates.question.gold for i in candidates.top], signal)


def refuse_golden_without_cage_or_corpus(appliance: Appliance) -> None:
    """Checked before the training pools, so that a run is not lost at its end."""
    if not appliance.settings.rerank.cage:
        raise SystemExit("--golden needs CAGE on (settings: rerank.cage)")
    if not appliance.catalog.documents():
        raise SystemExit(
            f"--golden: ingest the golden set's corpus into {appliance.settings.data_dir}"
        )


def golden_signal(appliance: Appliance, golden: Path) -> dict[str, object]:
    """CAGE's coherence and graph size against the gold chunks of a golden set."""
    reader = reader_of_everything(appliance)
    rows = [json.loads(line) for line in golden.open(encoding="utf-8") if line.strip()]
    correlations: list[float] = []
    aucs: dict[str, list[float]] = {"graph size": [], "CAGE coherence": []}
    for row in rows:
        if not row.get("answerable", True):
            continue
        gold, _missing = gold_chunk_ids(appliance.catalog, gold_quotes(row))
        in_force = ActiveOn(dt.date.fromisoformat(row["as_of"])) if "as_of" in row else None
        shown = appliance.query.run(row["question"], reader, K, in_force).candidates
        ids = [c.chunk.chunk_id for c in shown]
        stored = appliance.catalog.graphs(ids)
        nodes = np.array([PassageGraph.from_bytes(stored[i]).num_nodes for i in ids], float)
        coherence = np.array([c.scores["cage_coherence"] for c in shown])
        correlations.append(spearmanr(nodes, coherence).statistic)
        labels = [i in gold for i in ids]
        for name, values in (("graph size", nodes), ("CAGE coherence", coherence)):
            if (value := auc(labels, values)) is not None:
                aucs[name].append(value)
    return {
        "rerank_stages": appliance.query.rerank_stages,
        "questions": len(correlations),
        "coherence_size_spearman": round(float(np.nanmean(correlations)), 3),
        "lists_with_auc": len(aucs["graph size"]),
        **{
            f"auc_{n.replace(' ', '_').lower()}": round(float(np.mean(v)), 3)
            for n, v in aucs.items()
        },
    }


def recall_at_5(candidates: Candidates, signal: np.ndarray, alpha: float) -> float:
    combined = alpha * candidates.similarity[candidates.top] + (1 - alpha) * signal
    ranking = rerank_top(candidates.similarity, K, lambda _top: combined)
    gold = candidates.question.gold
    return len(gold & set(ranking[:5])) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=None, help="per set (default: all)")
    parser.add_argument("--golden", type=Path, help="also a golden set ingested in the data dir")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    if args.golden and not args.golden.is_file():
        parser.error(f"--golden: no such file {args.golden}")
    named = signals()
    figures: dict[str, dict[str, object]] = {}
    product: dict[str, object] | None = None
    with open_appliance() as appliance:
        if args.golden:
            refuse_golden_without_cage_or_corpus(appliance)
        builder = ParseGraphBuilder(appliance.registry.load("spacy-vectors"))
        cache = GraphCache(appliance.settings.data_dir / "cache" / "pool-graphs.sqlite3", builder)
        for name in SETS:
            questions = read_pools(TRAIN / f"{name}.train.jsonl", args.questions)
            console.print(f"{name}: {len(questions)} questions ...")
            aucs: dict[str, list[float]] = {s: [] for s in named}
            size_correlations: list[float] = []
            recalls: dict[str, dict[float, list[float]]] = {
                s: {a: [] for a in ALPHAS} for s in named
            }
            for question in questions:
                texts = [p.full_text for p in question.passages]
                vectors = appliance.embedder.embed([question.question, *texts])
                similarity = vectors[1:] @ vectors[0]
                top = np.argsort(-similarity, kind="stable")[:K]
                graphs = cache.graphs([texts[i] for i in top])
                candidates = Candidates(question, similarity, vectors[1:], graphs)
                size_correlations.append(
                    spearmanr(
                        candidates.nodes, candidates.cage_coherence(RERANKERS[SHIPPED_EPOCHS])
                    ).statistic
                )
                for signal_name, signal in named.items():
                    values = np.asarray(signal(candidates), dtype=np.float64)
                    if (value := pool_auc(values, candidates)) is not None:
                        aucs[signal_name].append(value)
                    for alpha in ALPHAS:
                        recalls[signal_name][alpha].append(recall_at_5(candidates, values, alpha))
            figures[name] = {
                "questions": len(questions),
                "coherence_size_spearman": round(float(np.nanmean(size_correlations)), 3),
                "signals": {
                    signal_name: {
                        "pools_with_auc": len(aucs[signal_name]),
                        "mean_auc": round(float(np.mean(aucs[signal_name])), 3),
                        **{
                            f"recall5_alpha_{alpha}": round(100 * float(np.mean(values)), 1)
                            for alpha, values in recalls[signal_name].items()
                        },
                    }
                    for signal_name in named
                },
            }
        if args.golden:
            console.print(f"{args.golden}: the query path's candidates ...")
            product = golden_signal(appliance, args.golden)
    for name, by_set in figures.items():
        table = Table(
            title=f"{name} training pools ({by_set['questions']}), MiniLM top {K}; "
            f"Spearman of CAGE coherence with graph size {by_set['coherence_size_spearman']}"
        )
        for column in ("signal", "AUC gold vs other", *(f"R@5 alpha {a}" for a in ALPHAS)):
            table.add_column(column)
        for signal_name, row in by_set["signals"].items():
            table.add_row(
                signal_name,
                f"{row['mean_auc']:.3f}",
                *(f"{row[f'recall5_alpha_{a}']:.1f}" for a in ALPHAS),
            )
        console.print(table)
    if product is not None:
        console.print(f"{args.golden} through the query path: {product}")
    command = "benchmarks/cage_signal.py"
    command += f" --questions {args.questions}" if args.questions else ""
    command += f" --golden {args.golden}" if args.golden else ""
    results = {"command": command, "date": time.strftime("%Y-%m-%d"), "k": K, "sets": figures}
    if product is not None:
        results["golden"] = {"file": str(args.golden), **product}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""What pronoun resolution changes in CAGE's graphs and rankings, resolver against resolver.

CAGE's paper resolves pronouns with a neural model before building its graphs. The
appliance's default is a rule-based resolver (``PronounResolver``); F-coref runs where a
bundle installs a model in the registry role ``coreference`` (``FastcorefResolver``);
``NoResolution`` is the baseline. For every question of each multi-hop pool file: the 10
passages MiniLM ranks first, parsed once with en_core_web_md, and from each parse one
graph per resolver. Reported per resolver: pronouns resolved per passage, nodes and edges
per graph, CAGE's Recall@5 and Recall@2 (alpha 0.7, 30 epochs, as the rerank benchmark),
and how many questions' top 5 differ from the baseline's.

    .venv/bin/python benchmarks/coreference.py [--questions N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from rerank_bench.harness import rerank_top
from rich.console import Console
from rich.table import Table

from appliance.cli.common import open_appliance
from appliance.nlp.neural_coreference import COREFERENCE_ROLE, FastcorefResolver
from appliance.nlp.parse_graph import (
    CoreferenceResolver,
    NoResolution,
    ParseGraphBuilder,
    PronounResolver,
)
from appliance.rerank.cage import CageReranker
from appliance.settings import PROJECT_ROOT
from appliance.training.pools import read_pools

MULTIHOP = PROJECT_ROOT.parent / "shared" / "data" / "multihop"
FILES = ("hotpotqa.dev", "2wikimultihopqa.dev", "musique.dev", "ramdocs.test")
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "coreference.json"
K = 10
console = Console()


class CountingResolver:
    """Passes a resolver through and counts the pronouns it resolves, so that each
    passage is resolved once (F-coref's resolution is a model call)."""

    def __init__(self, resolver: CoreferenceResolver) -> None:
        self._resolver = resolver
        self.name = resolver.name
        self.resolved = 0

    def resolve(self, doc: Any) -> dict[int, Any]:
        referents = self._resolver.resolve(doc)
        self.resolved += len(referents)
        return referents


def recall(ranking: list[int], gold: set[int], depth: int) -> float:
    return len(gold & set(ranking[:depth])) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=None, help="per file (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    cage = CageReranker()
    figures: dict[str, dict[str, dict[str, float]]] = {}
    with open_appliance() as appliance:
        nlp = appliance.registry.load("spacy-vectors")
        resolvers: list[CoreferenceResolver] = [NoResolution(), PronounResolver()]
        if appliance.registry.has(COREFERENCE_ROLE):
            name = appliance.registry.manifest(COREFERENCE_ROLE).name
            resolvers.append(FastcorefResolver(appliance.registry.load(COREFERENCE_ROLE), name))
        else:
            console.print(f"no model in the role {COREFERENCE_ROLE!r}: F-coref is not measured")
        counting = {r.name: CountingResolver(r) for r in resolvers}
        builders = {name: ParseGraphBuilder(nlp, c) for name, c in counting.items()}
        baseline = resolvers[0].name
        for name in FILES:
            # as the rerank benchmark: a question without a gold passage has no recall
            questions = [
                q for q in read_pools(MULTIHOP / f"{name}.jsonl", args.questions) if q.gold
            ]
            console.print(f"{name}: {len(questions)} questions ...")
            totals = {
                r: {"nodes": 0, "edges": 0, "r5": 0.0, "r2": 0.0, "moved": 0} for r in builders
            }
            resolved_before = {name: c.resolved for name, c in counting.items()}
            passages = 0
            for question in questions:
                texts = [p.full_text for p in question.passages]
                vectors = appliance.embedder.embed([question.question, *texts])
                cosine = vectors[1:] @ vectors[0]
                top = np.argsort(-cosine, kind="stable")[:K]
                docs = list(nlp.pipe([texts[i] for i in top], batch_size=32))
                passages += len(docs)
                top5: dict[str, set[int]] = {}
                for resolver_name, builder in builders.items():
                    graphs = [builder.from_doc(doc) for doc in docs]
                    counted = totals[resolver_name]
                    counted["nodes"] += sum(g.num_nodes for g in graphs)
                    counted["edges"] += sum(len(g.edges) for g in graphs)
                    ranking = rerank_top(
                        cosine, K, lambda chosen, c=cosine, g=graphs: cage.score(c[chosen], g)
                    )
                    counted["r5"] += recall(ranking, question.gold, 5)
                    counted["r2"] += recall(ranking, question.gold, 2)
                    top5[resolver_name] = set(ranking[:5])
                for resolver_name in builders:
                    totals[resolver_name]["moved"] += top5[resolver_name] != top5[baseline]
            figures[name] = {
                r: {
                    "pronouns_resolved_per_passage": round(
                        (counting[r].resolved - resolved_before[r]) / passages, 3
                    ),
                    "nodes_per_graph": round(t["nodes"] / passages, 2),
                    "edges_per_graph": round(t["edges"] / passages, 2),
                    "cage_recall_at_5": round(100 * t["r5"] / len(questions), 1),
                    "cage_recall_at_2": round(100 * t["r2"] / len(questions), 1),
                    "questions_whose_top5_differs_from_none": int(t["moved"]),
                    "questions": len(questions),
                }
                for r, t in totals.items()
            }
    for name, by_resolver in figures.items():
        table = Table(title=f"{name}: CAGE over MiniLM's top {K}, graphs by resolver")
        for column in (
            "resolver",
            "pronouns / passage",
            "nodes",
            "edges",
            "R@5",
            "R@2",
            "top 5 moved",
        ):
            table.add_column(column)
        for resolver_name, row in by_resolver.items():
            table.add_row(
                resolver_name,
                f"{row['pronouns_resolved_per_passage']:.2f}",
                f"{row['nodes_per_graph']:.1f}",
                f"{row['edges_per_graph']:.1f}",
                f"{row['cage_recall_at_5']:.1f}",
                f"{row['cage_recall_at_2']:.1f}",
                str(row["questions_whose_top5_differs_from_none"]),
            )
        console.print(table)
    command = "benchmarks/coreference.py" + (
        f" --questions {args.questions}" if args.questions else ""
    )
    args.out.write_text(
        json.dumps(
            {"command": command, "date": time.strftime("%Y-%m-%d"), "k": K, "files": figures},
            indent=2,
        )
        + "\n"
    )
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

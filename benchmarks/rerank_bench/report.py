"""Writes a rerank benchmark's figures as a Markdown table, JSON and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path

from appliance.eval.stats import percentile

from .harness import MethodResult, mean, overall


def summarise(
    results: dict[str, dict[str, MethodResult]],
) -> dict[str, dict[str, dict[str, object]]]:
    summary: dict[str, dict[str, dict[str, object]]] = {}
    for dataset, by_method in results.items():
        summary[dataset] = {}
        for method, result in by_method.items():
            summary[dataset][method] = {
                "recall_at_5": round(mean(overall(result.recall5)), 1),
                "recall_at_2": round(mean(overall(result.recall2)), 1),
                "any_correct_at_5": round(mean(result.any5), 1),
                "recall_at_5_by_type": {
                    k: round(mean(v), 1) for k, v in sorted(result.recall5.items())
                },
                "recall_at_2_by_type": {
                    k: round(mean(v), 1) for k, v in sorted(result.recall2.items())
                },
                "questions": len(overall(result.recall5)),
                "latency_p50_ms": round(percentile(result.latency_ms, 50), 2),
                "latency_p95_ms": round(percentile(result.latency_ms, 95), 2),
            }
    return summary


def markdown(summary: dict[str, dict[str, dict[str, object]]], command: str) -> str:
    lines = ["# Rerank benchmark", "", f"Command: `{command}`", ""]
    for dataset, by_method in summary.items():
        any_method = next(iter(by_method.values()))
        lines += [f"## {dataset} ({any_method['questions']} questions)", ""]
        kinds = list(any_method["recall_at_5_by_type"])  # type: ignore[arg-type]
        header = ["method", "R@5", "R@2", "any@5", *[f"R@5 {k}" for k in kinds], "p50 ms", "p95 ms"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for method, row in by_method.items():
            by_type = row["recall_at_5_by_type"]
            cells = [
                method,
                f"{row['recall_at_5']:.1f}",
                f"{row['recall_at_2']:.1f}",
                f"{row['any_correct_at_5']:.1f}",
                *[f"{by_type[k]:.1f}" for k in kinds],  # type: ignore[index]
                f"{row['latency_p50_ms']}",
                f"{row['latency_p95_ms']}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_report(
    summary: dict[str, dict[str, dict[str, object]]], out: Path, command: str
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    table = out / "rerank.md"
    table.write_text(markdown(summary, command), encoding="utf-8")
    data = out / "rerank.json"
    data.write_text(
        json.dumps({"command": command, "results": summary}, indent=2) + "\n", encoding="utf-8"
    )
    datasets = list(summary)
    method_names = list(next(iter(summary.values())))
    figure, axis = plt.subplots(figsize=(max(8, 2.2 * len(datasets)) + 3, 4.8))
    width = 0.8 / len(method_names)
    colours = plt.get_cmap("tab20").colors  # one colour a method, up to 20 methods
    for m, method in enumerate(method_names):
        values = [float(summary[d][method]["recall_at_5"]) for d in datasets]  # type: ignore[arg-type]
        positions = [i + m * width for i in range(len(datasets))]
        axis.bar(positions, values, width, label=method, color=colours[m % len(colours)])
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(datasets))], datasets)
    axis.set_ylabel("Recall@5 (%)")
    axis.set_ylim(0, 100)
    axis.set_title("Rerankers on multi-hop candidate pools")
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars
    figure.tight_layout()
    chart = out / "rerank.png"
    figure.savefig(chart, dpi=120)
    plt.close(figure)
    return [table, data, chart]

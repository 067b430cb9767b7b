"""Writes a golden-set evaluation as a Markdown table, JSON and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path

from appliance.eval.golden import GoldenReport, latency


def write_golden_report(
    report: GoldenReport, failed_gates: list[str], out: Path, command: str
) -> list[Path]:
    """golden.md (figures, gates, every question), golden.json and golden.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    figures = report.figures()
    lines = [
        f"# Golden-set evaluation\n\n`{command}`\n",
        f"{report.questions} questions ({report.answerable} answerable), generator "
        f"`{report.generator}`, verifier `{report.verifier}`, {report.citations} citations. "
        f"Rerank after fusion: {', then '.join(report.rerank_stages) or 'none'}. "
        f"Asked as `{report.asked_as}`. "
        "Answer latency end to end: "
        + ", ".join(f"{k} {v:.0f}" for k, v in latency(report).items())
        + "\n",
        "| figure | value |",
        "|---|---|",
        *[f"| {name} | {value:.3f} |" for name, value in figures.items()],
        "",
        "Gates: " + ("all pass" if not failed_gates else "; ".join(failed_gates)),
        "",
        "| kind | questions | gold passage retrieved (top 10) "
        "| answer contains every gold quote | refused |",
        "|---|---|---|---|---|",
        *[
            f"| {kind} | {row['questions']} | {row['recall_at_10']:.3f} "
            f"| {row['contains_gold']:.3f} | {row['refused']:.3f} |"
            for kind, row in report.by_kind().items()
        ],
        "",
        "| question | kinds | answerable | refused (why) | gold rank after rerank "
        "| answer contains gold |",
        "|---|---|---|---|---|---|",
    ]
    for row in report.per_question:
        why = f" ({row['refusal']})" if row["refused"] else ""
        kinds = ", ".join(row.get("kinds") or [])  # type: ignore[arg-type]
        as_of = f" (as of {row['as_of']})" if row.get("as_of") else ""
        lines.append(
            f"| {row['question']}{as_of} | {kinds} | {row['answerable']} | {row['refused']}{why} | "
            f"{row.get('gold_rank_after_rerank', '')} | {row.get('contains_gold', '')} |"
        )
    table = out / "golden.md"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = out / "golden.json"
    data.write_text(
        json.dumps({"command": command, "figures": figures, "failed_gates": failed_gates,
                    "generator": report.generator, "verifier": report.verifier,
                    "rerank_stages": report.rerank_stages, "asked_as": report.asked_as,
                    "latency": latency(report), "by_kind": report.by_kind(),
                    "per_question": report.per_question}, indent=2, default=str) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    figure, axis = plt.subplots(figsize=(9, 4.2))
    axis.barh(list(figures), list(figures.values()), color="#3b6ea5")
    axis.set_xlim(0, 1)
    axis.invert_yaxis()
    axis.set_title(f"Golden set: {report.generator} generator, {report.verifier} verifier")
    figure.tight_layout()
    chart = out / "golden.png"
    figure.savefig(chart, dpi=120)
    plt.close(figure)
    return [table, data, chart]

"""``appliance eval``: the release gate, every golden question through the answer path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from appliance.cli.common import GeneratorKind, console, errors, fail, open_appliance
from appliance.cli.progress import progress_display

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_corpus"


def evaluate_golden(
    golden: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Golden set (JSONL).")],
    gates: Annotated[
        Path, typer.Option(exists=True, dir_okay=False, help="Release gates (TOML).")
    ] = (EVAL_DIR / "gates.toml"),
    report_dir: Annotated[Path, typer.Option("--report", help="Where the report goes.")] = Path(
        "eval-report"
    ),
    generator: Annotated[
        GeneratorKind | None,
        typer.Option(help="Override the configured generator (settings: generator.kind)."),
    ] = None,
) -> None:
    """Ask every golden question through the whole answer path; report the figures as
    Markdown, JSON and a chart; exit 1 when a release gate fails."""
    from appliance.eval.golden import check_gates, evaluate, latency
    from appliance.eval.report import write_golden_report

    with open_appliance(generator.value if generator else None) as appliance:
        if not appliance.catalog.documents():
            raise fail(
                f"no documents in {appliance.settings.data_dir}: ingest the corpus the golden "
                "set is about first (for the sample set: appliance ingest "
                f"{SAMPLE_DIR})",
                code=2,
            )
        with progress_display(
            errors, TextColumn("[bold]questions"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as progress:  # fmt: skip
            task = progress.add_task("golden questions", total=None)
            report = evaluate(
                appliance,
                golden,
                lambda done, total: progress.update(task, completed=done, total=total),
            )
    failed = check_gates(report, gates)
    for problem in report.failures:
        errors.print(f"[yellow]warning:[/yellow] {escape(problem)}")
    paths = write_golden_report(report, failed, report_dir, f"appliance eval --golden {golden}")
    table = Table(
        title=f"{golden.name}: {report.questions} questions ({report.answerable} answerable)"
    )
    table.add_column("figure")
    table.add_column("value")
    for name, value in report.figures().items():
        table.add_row(name, f"{value:.3f}")
    console.print(table)
    timing = ", ".join(f"{k} {v:.0f}" for k, v in latency(report).items())
    stages = ", then ".join(report.rerank_stages) or "none"
    console.print(
        f"generator {report.generator}, verifier {report.verifier}; "
        f"rerank after fusion: {stages}; answer {timing}"
    )
    console.print(f"report {paths[0]}")
    for problem in failed:
        errors.print(f"[red]gate failed:[/red] {problem}")
    if failed:
        raise typer.Exit(code=1)

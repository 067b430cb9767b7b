"""``appliance eval``: the release gate, every golden question through the answer path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from appliance.cli.common import (
    GeneratorKind,
    console,
    errors,
    fail,
    known_subject,
    open_appliance,
)
from appliance.cli.progress import progress_display
from appliance.cli.running_service import running_service

if TYPE_CHECKING:
    from appliance.eval.golden import GoldenReport

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"


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
    user: Annotated[
        str | None,
        typer.Option(
            help="Ask as this user, with what they may read (default: a reader of everything)."
        ),
    ] = None,
) -> None:
    """Ask every golden question through the whole answer path; report the figures as
    Markdown, JSON and a chart; exit 1 when a release gate fails."""
    from appliance.eval.golden import check_gates, latency
    from appliance.eval.report import write_golden_report

    with progress_display(
        errors, TextColumn("[bold]questions"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(),
    ) as progress:  # fmt: skip
        task = progress.add_task("golden questions", total=None)
        report = _evaluated(
            golden,
            generator.value if generator else None,
            user,
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
        f"asked as {report.asked_as}; generator {report.generator}, verifier {report.verifier}; "
        f"rerank after fusion: {stages}; answer {timing}"
    )
    console.print(f"report {paths[0]}")
    for problem in failed:
        errors.print(f"[red]gate failed:[/red] {problem}")
    if failed:
        raise typer.Exit(code=1)


def _evaluated(
    golden: Path, generator: str | None, user: str | None, progress: Callable[[int, int], None]
) -> GoldenReport:
    """The golden set's report: asked by the running service when it holds the stores
    (its questions go on between the evaluation's), else here."""
    from appliance.eval.golden import GoldenReport, NoDocuments, evaluate

    service = running_service()
    if service is None:
        with open_appliance(generator) as appliance:
            reader = known_subject(appliance, user) if user else None
            try:
                return evaluate(appliance, golden, progress, reader=reader)
            except NoDocuments as error:
                raise fail(str(error), code=2) from None
    asked = {"golden": str(golden.resolve()), "generator": generator, "user": user}
    try:
        for line in service.lines("eval", asked):
            if "done" in line:
                progress(line["done"], line["total"])
            elif "report" in line:
                return GoldenReport(**line["report"])
            else:
                raise fail(line["error"], code=line["code"])
    finally:
        service.close()
    raise fail("the web service ended the evaluation without its report", code=3)

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
from appliance.cli.running_service import RunningService, running_service

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
    every_user: Annotated[
        bool,
        typer.Option(
            "--every-user",
            help="Ask once as each of the site's users; a report for each, under --report.",
        ),
    ] = False,
) -> None:
    """Ask every golden question through the whole answer path; report the figures as
    Markdown, JSON and a chart; exit 1 when a release gate fails. Asked as a user, the
    gates file's [as_a_user] gates apply: what they may not read is refused by design,
    but no answer may be unsafe."""
    from appliance.eval.golden import check_gates
    from appliance.eval.report import write_golden_report

    if user and every_user:
        raise fail("--user and --every-user ask as different readers: give one", code=2)
    users: list[str | None] = _site_users() if every_user else [user]
    with progress_display(
        errors, TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(),
    ) as progress:  # fmt: skip

        def told(asker: str | None) -> Callable[[int, int], None]:
            name = f"golden questions as {asker}" if asker else "golden questions"
            task = progress.add_task(name)
            return lambda done, total: progress.update(task, completed=done, total=total)

        reports = _evaluated(golden, generator.value if generator else None, users, told)
    command = f"appliance eval --golden {golden}"
    failed_by_report = []
    for asker, report in zip(users, reports, strict=True):
        failed = check_gates(report, gates, as_a_user=asker is not None)
        failed_by_report.append(failed)
        for problem in report.failures:
            errors.print(f"[yellow]warning:[/yellow] {escape(problem)}")
        out = report_dir / report.asked_as if every_user else report_dir
        asked_as = f" --user {asker}" if asker else ""
        paths = write_golden_report(report, failed, out, command + asked_as)
        if not every_user:
            _print_figures(golden, report)
        console.print(f"report {paths[0]}")
        for problem in failed:
            errors.print(f"[red]gate failed[/red] (asked as {report.asked_as}): {problem}")
    if every_user:
        _print_by_user(golden, reports, failed_by_report)
    if any(failed_by_report):
        raise typer.Exit(code=1)


def _site_users() -> list[str | None]:
    """The site's users, from its subjects file (readable while the service runs)."""
    from appliance.access.subjects import SubjectDirectory
    from appliance.settings import Settings

    directory = SubjectDirectory(Settings().access_dir / "subjects.toml")
    try:
        users = sorted(directory.subjects())
    except ValueError as error:
        raise fail(str(error), code=2) from None
    if not users:
        raise fail(f"no users in {directory.path}; see 'appliance users add'", code=2)
    return list(users)


def _print_figures(golden: Path, report: GoldenReport) -> None:
    from appliance.eval.golden import latency

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


def _print_by_user(
    golden: Path, reports: list[GoldenReport], failed_by_report: list[list[str]]
) -> None:
    table = Table(title=f"{golden.name}: {reports[0].questions} questions, asked as each user")
    for column in ("user", "unsafe answers", "correct refusals", "false refusals",
                   "exact spans", "gold quote", "gates"):  # fmt: skip
        user = column == "user"
        table.add_column(column, justify="left" if user else "right", no_wrap=user)
    for report, failed in zip(reports, failed_by_report, strict=True):
        table.add_row(
            report.asked_as,
            str(report.unsafe_answers),
            f"{report.correct_refusal_rate:.3f}",
            f"{report.false_refusal_rate:.3f}",
            f"{report.exact_span_validity:.3f}",
            f"{report.answer_contains_gold:.3f}",
            "[red]failed[/red]" if failed else "pass",
        )
    console.print(table)


def _evaluated(
    golden: Path,
    generator: str | None,
    users: list[str | None],
    told: Callable[[str | None], Callable[[int, int], None]],
) -> list[GoldenReport]:
    """The golden set's report for each user (``None``: a reader of everything): asked
    by the running service when it holds the stores (its questions go on between the
    evaluation's), else here. An unknown user stops it before any question."""
    from appliance.eval.golden import NoDocuments, evaluate

    service = running_service()
    if service is None:
        with open_appliance(generator) as appliance:
            readers = [known_subject(appliance, u) if u else None for u in users]
            try:
                return [
                    evaluate(appliance, golden, told(u), reader=reader)
                    for u, reader in zip(users, readers, strict=True)
                ]
            except NoDocuments as error:
                raise fail(str(error), code=2) from None
    reports = []
    for asker in users:
        service = service or running_service()
        if service is None:
            raise fail("the web service stopped during the evaluation", code=3)
        reports.append(_asked_of_service(service, golden, generator, asker, told(asker)))
        service = None
    return reports


def _asked_of_service(
    service: RunningService,
    golden: Path,
    generator: str | None,
    user: str | None,
    progress: Callable[[int, int], None],
) -> GoldenReport:
    from appliance.eval.golden import GoldenReport

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

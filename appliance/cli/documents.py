"""``appliance ingest`` and ``appliance docs``: put documents in, list and remove them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.cli.progress import progress_display
from appliance.cli.running_service import running_service
from appliance.engines import Appliance
from appliance.ingest.pipeline import IngestReport
from appliance.ingest.preparation import DocumentOutcome, OutcomeStatus, discover

docs_app = typer.Typer(no_args_is_help=True, help="List and remove ingested documents.")


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(
            f"{speed:5.1f} docs/s" if speed else "  -.- docs/s", style="progress.data.speed"
        )


def ingest_with_progress(
    appliance: Appliance, paths: list[Path], defaults: dict[str, object]
) -> IngestReport:
    """Ingest ``paths`` with a progress bar (or log lines) of documents and chunks."""
    with progress_display(
        errors,
        TextColumn("[bold]ingesting"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[chunks]} chunks"),
    ) as progress:
        task = progress.add_task("ingest", total=len(discover(paths)), chunks=0)
        written = 0

        def advance(outcome: DocumentOutcome) -> None:
            nonlocal written
            if outcome.status in ("added", "updated"):
                written += outcome.chunks
            if outcome.status == "failed":
                progress.console.print(f"[red]failed[/red] {outcome.error}")
            if outcome.warning:
                progress.console.print(
                    f"[yellow]warning[/yellow] {outcome.path}: {escape(outcome.warning)}"
                )
            progress.update(task, advance=1, chunks=written)

        return appliance.ingestor.ingest(paths, defaults=defaults, on_outcome=advance)


def print_ingest_summary(report: IngestReport, pruned: int = 0) -> None:
    statuses: tuple[OutcomeStatus, ...] = ("added", "updated", "unchanged", "failed")
    summary = ", ".join(f"{report.count(s)} {s}" for s in statuses)
    console.print(
        f"{summary}; {report.chunks_written} chunks written"
        + (f"; {pruned} pruned" if pruned else "")
    )


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to ingest.")],
    default_sensitivity: Annotated[
        str | None, typer.Option(help="Sensitivity for documents whose metadata names none.")
    ] = None,
    default_department: Annotated[
        list[str] | None, typer.Option(help="Department for documents whose metadata names none.")
    ] = None,
    default_doc_type: Annotated[
        str | None, typer.Option(help="Type for untyped documents.")
    ] = None,
    prune: Annotated[
        bool, typer.Option(help="Also remove documents whose source file no longer exists.")
    ] = False,
) -> None:
    """Ingest documents: unchanged files are skipped, changed ones replaced."""
    defaults: dict[str, object] = {}
    if default_sensitivity:
        defaults["sensitivity"] = default_sensitivity
    if default_department:
        defaults["departments"] = default_department
    if default_doc_type:
        defaults["doc_type"] = default_doc_type
    service = running_service()
    if service is not None:
        done = service.post(
            "ingest",
            {"paths": [str(p.resolve()) for p in paths], "defaults": defaults, "prune": prune},
        )
        service.close()
        report = IngestReport(
            [DocumentOutcome(Path(o["path"]), **o["outcome"]) for o in done["outcomes"]]
        )
        for outcome in report.failed:
            errors.print(f"[red]failed:[/red] {escape(outcome.error or str(outcome.path))}")
        for outcome in report.outcomes:
            if outcome.warning:
                errors.print(f"[yellow]warning:[/yellow] {outcome.path}: {escape(outcome.warning)}")
        pruned = len(done["pruned"])
    else:
        with open_appliance() as appliance:
            report = ingest_with_progress(appliance, paths, defaults)
            pruned = len(appliance.ingestor.prune()) if prune else 0
    print_ingest_summary(report, pruned)
    if report.failed:
        raise typer.Exit(code=1)


NARROW_COLUMNS = 100
"""Below this terminal width each document is a short block of lines, not a table row."""


@docs_app.command("list")
def docs_list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, for scripts.")] = False,
) -> None:
    """Every ingested document with its version, dates, labels and chunk count."""
    with open_appliance() as appliance:
        records = appliance.catalog.documents()
    if as_json:
        rows = [
            {**r.metadata.model_dump(mode="json"), "chunks": r.chunk_count, "state": r.state,
             "ingested_at": r.ingested_at, "source_path": r.source_path}
            for r in records
        ]  # fmt: skip
        typer.echo(json.dumps(rows, indent=2))
        return
    if console.width < NARROW_COLUMNS:
        for r in records:
            m = r.metadata
            console.print(f"[bold]{escape(r.doc_id)}[/bold]  {escape(m.title)}")
            departments = ", ".join(m.departments) or "no departments"
            console.print(
                f"  version {escape(m.version)}, {m.doc_type}, in force {m.effective_from} - "
                f"{m.effective_to or ''}\n  {m.sensitivity}, {departments}; "
                f"{r.chunk_count} chunks, {r.state}",
                highlight=False,
            )
    else:
        table = Table()
        for column in ("doc_id", "title", "version", "type", "effective", "sensitivity",
                       "departments", "chunks", "state"):  # fmt: skip
            table.add_column(column, overflow="fold")
        for r in records:
            m = r.metadata
            table.add_row(
                r.doc_id, m.title, m.version, m.doc_type,
                f"{m.effective_from} - {m.effective_to or ''}", m.sensitivity,
                ", ".join(m.departments), str(r.chunk_count), r.state,
            )  # fmt: skip
        console.print(table)
    console.print(f"{len(records)} documents")


@docs_app.command("rebuild-stores")
def docs_rebuild_stores(
    only_behind: Annotated[
        bool,
        typer.Option(
            "--only-behind",
            help="Only when a store does not hold the catalog's chunks (a store turned on "
            "by an upgrade or a setting): what an upgrade runs.",
        ),
    ] = False,
) -> None:
    """Write every chunk the catalog holds into every store again (a store server that
    lost its index, a new one, the knowledge graph turned on): documents are not read
    again, only embedded (and their facts extracted, with a knowledge graph)."""
    service = running_service()
    if service is not None:
        service.close()
        raise fail(
            f"the web service (pid {service.owner.pid}) holds the stores: stop it, then "
            "rebuild them",
            code=2,
        )
    with open_appliance() as appliance:
        if only_behind:
            vouched = appliance.catalog.chunk_count()
            if not (behind := appliance.stores_behind()):
                stores = ", ".join(appliance.store_counts())
                console.print(  # one line: the upgrade reads it
                    f"{stores} each hold the catalog's {vouched} chunks: nothing to do",
                    soft_wrap=True,
                )
                return
            console.print(f"the catalog vouches for {vouched} chunks; behind it: {behind}")
        documents = [r for r in appliance.catalog.documents() if r.state == "indexed"]
        with progress_display(
            errors, TextColumn("[bold]rebuilding"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as progress:  # fmt: skip
            task = progress.add_task("rebuild", total=len(documents))
            written = appliance.ingestor.rebuild_stores(
                lambda _doc_id: progress.update(task, advance=1)
            )
        counts = appliance.store_counts()
    console.print(
        f"{len(documents)} documents, {written} chunks written; the stores now hold "
        + ", ".join(f"{n} ({store})" for store, n in counts.items())
    )


@docs_app.command("remove")
def docs_remove(
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids to remove.")],
) -> None:
    """Remove documents from every store and the catalog."""
    service = running_service()
    if service is not None:
        removed = service.post("remove", {"doc_ids": doc_ids})["removed"]
        service.close()
    else:
        with open_appliance() as appliance:
            removed = appliance.ingestor.remove(doc_ids)
    for doc_id in doc_ids:
        if doc_id in removed:
            console.print(f"removed {doc_id}")
        else:
            errors.print(f"[red]error:[/red] no document {doc_id!r}; see 'appliance docs list'")
    if len(removed) != len(set(doc_ids)):
        raise typer.Exit(code=1)

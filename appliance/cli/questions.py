"""``appliance search``, ``appliance ask`` and ``appliance demo``: questions from the
command line, as a given user, with what each stage scored and every citation's place."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer
from rich.markup import escape
from rich.table import Table

from appliance.access.rules import Subject
from appliance.answer import NOT_ANSWERED, Answer
from appliance.cli.common import (
    GeneratorKind,
    console,
    errors,
    fail,
    known_subject,
    open_appliance,
)
from appliance.cli.documents import ingest_with_progress, print_ingest_summary
from appliance.cli.running_service import running_service
from appliance.engines import Appliance
from appliance.generate.base import GeneratorUnavailable
from appliance.generate.llama_cpp_server import ServerFailed
from appliance.index.filters import ActiveOn, SearchFilter, requested_filter
from appliance.model_registry import ModelUnavailable
from appliance.query import SearchResult
from appliance.retrieve.hybrid import QueryError

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_corpus"
SAMPLE_CORPUS = SAMPLE_DIR / "documents"
SAMPLE_SUBJECTS = SAMPLE_DIR / "subjects.toml"
SAMPLE_QUESTION = "What is the first antibiotic dose for suspected sepsis with penicillin allergy?"
SAMPLE_USER = "dr-okafor"
Mode = Literal["hybrid", "lexical", "dense"]


def run_search(
    appliance: Appliance,
    question: str,
    subject: Subject,
    top_k: int,
    search_filter: SearchFilter | None,
    mode: Mode,
    rerank: bool,
) -> SearchResult:
    try:
        return appliance.query.run(question, subject, top_k, search_filter, mode, rerank)
    except QueryError as error:
        raise fail(str(error), code=2) from None


def search(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    user: Annotated[str, typer.Option(help="Who asks: results are what this user may read.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100)] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, lexical or dense.")] = "hybrid",
    department: Annotated[list[str] | None, typer.Option(help="Only these departments.")] = None,
    sensitivity: Annotated[list[str] | None, typer.Option(help="Only these sensitivities.")] = None,
    doc_type: Annotated[list[str] | None, typer.Option(help="Only these document types.")] = None,
    as_of: Annotated[
        dt.datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Documents in force on this day (default today)."),
    ] = None,
    all_dates: Annotated[
        bool, typer.Option(help="Include superseded and future documents.")
    ] = False,
    rerank: Annotated[bool, typer.Option(help="Run the rerank stages (CAGE) after fusion.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Rank chunks for a question: retriever ranks, stage scores, heading path, page, offsets."""
    if mode not in ("hybrid", "lexical", "dense"):
        errors.print(f"[red]error:[/red] unknown mode {mode!r}; use hybrid, lexical or dense")
        raise typer.Exit(code=2)
    day = as_of.date() if as_of else None
    service = running_service()
    if service is not None:
        asked = {
            "question": question, "user": user, "top_k": top_k, "mode": mode,
            "departments": department or [], "sensitivities": sensitivity or [],
            "doc_types": doc_type or [], "as_of": day and day.isoformat(),
            "all_dates": all_dates, "rerank": rerank,
        }  # fmt: skip
        report = service.post("search", asked)
        service.close()
    else:
        search_filter = requested_filter(
            department or (), sensitivity or (), doc_type or (), day, all_dates
        )
        with open_appliance() as appliance:
            subject = known_subject(appliance, user)
            result = run_search(
                appliance, question, subject, top_k, search_filter, cast(Mode, mode), rerank
            )
        report = result.report(question, user, search_filter)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2))
        sys.stdout.write("\n")
        return
    print_search(report)


def print_search(report: dict[str, Any]) -> None:
    """A search's ranking (``SearchResult.report``) as a table."""
    if report["break_glass"]:
        console.print("[bold red]BREAK-THE-GLASS ACTIVE[/bold red]: flagged rows are audited.")
    console.print(
        f"[bold]{escape(report['question'])}[/bold]\n[dim]filter: {escape(report['filter'])}[/dim]"
    )
    if not report["results"]:
        console.print("No chunk matches this question.")
        return
    table = Table(show_lines=True)
    for column in ("#", "document", "where", "ranks", "text"):
        table.add_column(column, overflow="fold")
    for position, row in enumerate(report["results"], start=1):
        where = " > ".join(row["heading_path"]) or "-"
        where += f"\npage {row['page']}" if row["page"] else ""
        where += f"\nchars {row['start']}-{row['end']}"
        ranks = "\n".join(
            f"{name}: #{hit['rank']} ({hit['score']:.3f})"
            for name, hit in sorted(row["retrievers"].items())
        )
        ranks += f"\nrrf: {row['fused_score']:.4f}"
        ranks += "".join(f"\n{stage}: {score:.3f}" for stage, score in row["stage_scores"].items())
        text = row["text"] if len(row["text"]) <= 400 else row["text"][:400] + " ..."
        # Retrieved text is data: escaped, so a document can never inject console markup.
        table.add_row(
            f"{position}\n[bold red]BTG[/bold red]" if row["break_glass"] else str(position),
            f"{escape(row['title'])}\n[dim]{escape(row['doc_id'])} v{escape(row['version'])}, "
            f"from {row['effective_from']}[/dim]",
            escape(where),
            ranks,
            escape(text),
        )
    console.print(table)


def _describe_span(span: dict[str, Any]) -> str:
    """A citation (``CitedSpan.to_dict``) in words: document, version, date, place."""
    where = " > ".join(span["heading_path"]) + (f", page {span['page']}" if span["page"] else "")
    return (
        f"{escape(span['title'])} v{escape(span['version'])} (from {span['effective_from']}) > "
        f"{escape(where)}, chars {span['start']}-{span['end']} [dim]{span['chunk_id']}[/dim]"
    )


def ask_question(appliance: Appliance, question: str, subject: Subject, day: dt.date) -> Answer:
    try:
        return appliance.answers.ask(question, subject, ActiveOn(day), in_force_on=day)
    except QueryError as error:
        raise fail(str(error), code=2) from None
    except (GeneratorUnavailable, ServerFailed, ModelUnavailable) as error:
        raise fail(f"the generator is not available: {error}", code=3) from None


def ask(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    user: Annotated[str, typer.Option(help="Who asks: the answer uses what they may read.")],
    as_of: Annotated[
        dt.datetime | None,
        typer.Option(formats=["%Y-%m-%d"], help="Documents in force on this day (default today)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    generator: Annotated[
        GeneratorKind | None,
        typer.Option(help="Override the configured generator (settings: generator.kind)."),
    ] = None,
) -> None:
    """A verified answer, every sentence citing a document span; or a refusal with the
    closest sources. Recorded in the audit log before it is shown."""
    day = as_of.date() if as_of else dt.date.today()
    service = running_service()
    if service is not None:
        asked = {"question": question, "user": user, "as_of": day.isoformat(),
                 "generator": generator.value if generator else None}  # fmt: skip
        answer = service.post("ask", asked)
        service.close()
    else:
        with open_appliance(generator.value if generator else None) as appliance:
            answer = ask_question(
                appliance, question, known_subject(appliance, user), day
            ).to_dict()
    if as_json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
        return
    print_answer(answer)


def print_answer(answer: dict[str, Any]) -> None:
    """An answer (``Answer.to_dict``, as the service also returns it) in words, every
    sentence with its citations; a refusal with its reason and closest sources."""
    if answer["refused"]:
        reason = escape(answer["refusal"])
        console.print(f"[bold yellow]{NOT_ANSWERED}[/bold yellow] [dim]({reason})[/dim]")
        for source in answer["closest_sources"]:
            where = " > ".join(source["heading_path"])
            console.print(
                f"  closest: {escape(source['title'])} - {escape(where)} "
                f"[dim]{source['chunk_id']}[/dim]"
            )
    else:
        if answer["scope"]:
            console.print(f"[bold]{escape(answer['scope'])}:[/bold]")
        if answer["decision"] is not None:
            console.print(
                f"[bold]In short: {answer['decision']}[/bold] "
                "[dim](the generator's reading of the cited sentences below)[/dim]"
            )
        for verified in answer["sentences"]:
            marks = "".join(f"[{n}]" for n in range(1, len(verified["citations"]) + 1))
            text = escape(verified["text"])
            console.print(f"{text} [bold cyan]{escape(marks)}[/bold cyan]")
            for n, span in enumerate(verified["citations"], start=1):
                console.print(f"  [{n}] {_describe_span(span)}", highlight=False)
        if answer["unanswered_parts"]:
            parts = "; ".join(answer["unanswered_parts"])
            console.print(f"[yellow]The documents found do not answer: {escape(parts)}[/yellow]")
        for conflict in answer["conflicts"]:
            console.print(
                f"[bold red]The sources disagree on {escape(conflict['about'])}:[/bold red]"
            )
            for side in conflict["sources"]:
                console.print(
                    f"  {escape(side['title'])} (version {escape(side['version'])}, "
                    f"effective {side['effective_from']}, {side['authority']}): "
                    f"{escape(side['statement'])}",
                    highlight=False,
                )
            console.print(f"  {escape(conflict['precedence'] or UNDECIDED)}", highlight=False)
    if answer["read_as"]:
        console.print(f"[dim]read as: {escape(answer['read_as'])}[/dim]", highlight=False)
    console.print(
        f"[dim]generator {answer['generator']}, verifier {answer['verifier']}; "
        f"audit entry {answer['audit_entry']}[/dim]"
    )


UNDECIDED = "No rule decides which prevails: ask the documents' owners."


def demo(
    question: Annotated[
        str, typer.Argument(help="Question to ask after ingesting.")
    ] = SAMPLE_QUESTION,
) -> None:
    """Ingest the bundled (fictional) sample corpus, then show one question's ranked
    passages and its verified, cited answer, as a demo user."""
    with open_appliance() as appliance:
        subjects_file = appliance.subjects.path
        if not subjects_file.exists():
            subjects_file.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SAMPLE_SUBJECTS, subjects_file)
            console.print(f"installed the demo users in {subjects_file}")
        print_ingest_summary(ingest_with_progress(appliance, [SAMPLE_CORPUS], {}))
        subject = known_subject(appliance, SAMPLE_USER)
        console.print(f"asking as {SAMPLE_USER} (clinician, emergency and ICU)")
        today = dt.date.today()
        search_filter = requested_filter(as_of=today)
        result = run_search(appliance, question, subject, 5, search_filter, "hybrid", True)
        print_search(result.report(question, SAMPLE_USER, search_filter))
        console.print("\n[bold]The verified answer[/bold]")
        print_answer(ask_question(appliance, question, subject, today).to_dict())

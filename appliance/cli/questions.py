"""``appliance search``, ``appliance ask`` and ``appliance demo``: questions from the
command line, as a given user, with what each stage scored and every citation's place."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Annotated, Literal, cast

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
from appliance.engines import Appliance
from appliance.generate.base import GeneratorUnavailable
from appliance.generate.llama_cpp_server import ServerFailed
from appliance.index.filters import ActiveOn, AllOf, AnyOf, SearchFilter, describe
from appliance.model_registry import ModelUnavailable
from appliance.query import SearchResult
from appliance.records import Candidate, CitedSpan
from appliance.retrieve.hybrid import QueryError

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_corpus"
SAMPLE_CORPUS = SAMPLE_DIR / "documents"
SAMPLE_SUBJECTS = SAMPLE_DIR / "subjects.toml"
SAMPLE_QUESTION = "What is the first antibiotic dose for suspected sepsis with penicillin allergy?"
SAMPLE_USER = "dr-okafor"
Mode = Literal["hybrid", "lexical", "dense"]


def _search_filter(
    departments: list[str] | None,
    sensitivities: list[str] | None,
    doc_types: list[str] | None,
    as_of: dt.date | None,
    all_dates: bool,
) -> SearchFilter | None:
    clauses: list[SearchFilter] = []
    if departments:
        clauses.append(AnyOf("departments", tuple(d.lower() for d in departments)))
    if sensitivities:
        clauses.append(AnyOf("sensitivity", tuple(sensitivities)))
    if doc_types:
        clauses.append(AnyOf("doc_type", tuple(doc_types)))
    if not all_dates:
        clauses.append(ActiveOn(as_of or dt.date.today()))
    return AllOf(tuple(clauses)) if clauses else None


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
    search_filter = _search_filter(
        department, sensitivity, doc_type, as_of.date() if as_of else None, all_dates
    )
    with open_appliance() as appliance:
        subject = known_subject(appliance, user)
        result = run_search(
            appliance, question, subject, top_k, search_filter, cast(Mode, mode), rerank
        )
    if as_json:
        sys.stdout.write(json.dumps(_search_json(question, user, search_filter, result), indent=2))
        sys.stdout.write("\n")
        return
    print_search(question, search_filter, result)


def _search_json(
    question: str, user: str, search_filter: SearchFilter | None, result: SearchResult
) -> dict[str, object]:
    return {
        "question": question,
        "user": user,
        "filter": describe(search_filter),
        "policy_version": result.scope.policy_version,
        "results": [
            {
                "chunk_id": c.chunk.chunk_id,
                "doc_id": c.chunk.doc_id,
                "version": c.chunk.metadata.version,
                "title": c.chunk.metadata.title,
                "heading_path": list(c.chunk.heading_path),
                "page": c.chunk.page,
                "start": c.chunk.start,
                "end": c.chunk.end,
                "fused_score": c.fused_score,
                "retrievers": {n: {"rank": h.rank, "score": h.score} for n, h in c.hits.items()},
                "stage_scores": c.scores,
                "break_glass": c.break_glass,
                "text": c.chunk.text,
            }
            for c in result.candidates
        ],
    }


def print_search(question: str, search_filter: SearchFilter | None, result: SearchResult) -> None:
    if result.scope.grant is not None:
        console.print("[bold red]BREAK-THE-GLASS ACTIVE[/bold red]: flagged rows are audited.")
    _print_candidates(question, search_filter, result.candidates)


def _print_candidates(
    question: str, search_filter: SearchFilter | None, candidates: list[Candidate]
) -> None:
    console.print(
        f"[bold]{escape(question)}[/bold]\n[dim]filter: {escape(describe(search_filter))}[/dim]"
    )
    if not candidates:
        console.print("No chunk matches this question.")
        return
    table = Table(show_lines=True)
    for column in ("#", "document", "where", "ranks", "text"):
        table.add_column(column, overflow="fold")
    for position, candidate in enumerate(candidates, start=1):
        chunk = candidate.chunk
        meta = chunk.metadata
        where = " > ".join(chunk.heading_path) or "-"
        where += f"\npage {chunk.page}" if chunk.page else ""
        where += f"\nchars {chunk.start}-{chunk.end}"
        ranks = "\n".join(
            f"{name}: #{hit.rank} ({hit.score:.3f})" for name, hit in sorted(candidate.hits.items())
        )
        ranks += f"\nrrf: {candidate.fused_score:.4f}"
        ranks += "".join(f"\n{stage}: {score:.3f}" for stage, score in candidate.scores.items())
        text = chunk.text if len(chunk.text) <= 400 else chunk.text[:400] + " ..."
        # Retrieved text is data: escaped, so a document can never inject console markup.
        table.add_row(
            f"{position}\n[bold red]BTG[/bold red]" if candidate.break_glass else str(position),
            f"{escape(meta.title)}\n[dim]{escape(chunk.doc_id)} v{escape(meta.version)}, "
            f"from {meta.effective_from}[/dim]",
            escape(where),
            ranks,
            escape(text),
        )
    console.print(table)


def _describe_span(span: CitedSpan) -> str:
    where = " > ".join(span.heading_path) + (f", page {span.page}" if span.page else "")
    return (
        f"{escape(span.title)} v{escape(span.version)} (from {span.effective_from}) > "
        f"{escape(where)}, chars {span.start}-{span.end} [dim]{span.chunk_id}[/dim]"
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
    with open_appliance(generator.value if generator else None) as appliance:
        answer = ask_question(appliance, question, known_subject(appliance, user), day)
    if as_json:
        sys.stdout.write(json.dumps(answer.to_dict(), indent=2) + "\n")
        return
    print_answer(answer)


def print_answer(answer: Answer) -> None:
    if answer.refused:
        reason = answer.refusal_reason
        console.print(f"[bold yellow]{NOT_ANSWERED}[/bold yellow] [dim]({reason})[/dim]")
        for source in answer.closest_sources:
            where = " > ".join(source.heading_path)
            console.print(
                f"  closest: {escape(source.title)} - {escape(where)} [dim]{source.chunk_id}[/dim]"
            )
    else:
        if answer.scope:
            console.print(f"[bold]{answer.scope}:[/bold]")
        if answer.decision is not None:
            console.print(
                f"[bold]In short: {answer.decision}[/bold] "
                "[dim](the generator's reading of the cited sentences below)[/dim]"
            )
        for verified in answer.sentences:
            marks = "".join(f"[{n}]" for n in range(1, len(verified.spans) + 1))
            text = escape(verified.sentence.text)
            console.print(f"{text} [bold cyan]{escape(marks)}[/bold cyan]")
            for n, span in enumerate(verified.spans, start=1):
                console.print(f"  [{n}] {_describe_span(span)}", highlight=False)
        if answer.unanswered_parts:
            parts = "; ".join(answer.unanswered_parts)
            console.print(f"[yellow]The documents found do not answer: {escape(parts)}[/yellow]")
    if answer.read_as:
        console.print(f"[dim]read as: {escape(answer.read_as)}[/dim]", highlight=False)
    console.print(
        f"[dim]generator {answer.generator}, verifier {answer.verifier}; "
        f"audit entry {answer.audit_entry}[/dim]"
    )


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
        search_filter = _search_filter(None, None, None, today, False)
        result = run_search(appliance, question, subject, 5, search_filter, "hybrid", True)
        print_search(question, search_filter, result)
        console.print("\n[bold]The verified answer[/bold]")
        print_answer(ask_question(appliance, question, subject, today))

"""The ``appliance`` command: ingest, search, documents, models, policy and break-the-glass."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TypeVar

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

from appliance.answer import NOT_ANSWERED, CitedSpan
from appliance.cli_access import break_glass_app, policy_app
from appliance.cli_common import console, errors, fail, known_subject, open_appliance
from appliance.cli_progress import progress_display
from appliance.generate.llama_cpp_server import ServerFailed
from appliance.generate.openai_compatible import GeneratorUnavailable
from appliance.index.filters import ActiveOn, AllOf, AnyOf, SearchFilter, describe
from appliance.ingest.pipeline import DocumentOutcome, discover
from appliance.model_registry import ModelNotInstalled, ModelUnavailable, hash_directory
from appliance.retrieve.hybrid import QueryError

app = typer.Typer(no_args_is_help=True, help=__doc__, pretty_exceptions_enable=False)
docs_app = typer.Typer(no_args_is_help=True, help="List and remove ingested documents.")
models_app = typer.Typer(no_args_is_help=True, help="Inspect and verify the model registry.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that compare methods side by side.")
app.add_typer(docs_app, name="docs")
app.add_typer(models_app, name="models")
app.add_typer(bench_app, name="bench")
app.add_typer(policy_app, name="policy")
app.add_typer(break_glass_app, name="break-glass")

T = TypeVar("T")
SAMPLE_CORPUS = Path(__file__).parent / "sample_corpus" / "documents"
SAMPLE_SUBJECTS = Path(__file__).parent / "sample_corpus" / "subjects.toml"
SAMPLE_QUESTION = "What is the first antibiotic dose for suspected sepsis with penicillin allergy?"
SAMPLE_USER = "dr-okafor"


class GeneratorKind(StrEnum):
    extractive = "extractive"
    llama_cpp = "llama-cpp"
    openai = "openai"


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(
            f"{speed:5.1f} docs/s" if speed else "  -.- docs/s", style="progress.data.speed"
        )


@app.command()
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
    total = len(discover(paths))
    with open_appliance() as appliance:
        with progress_display(
            errors,
            TextColumn("[bold]ingesting"),
            BarColumn(),
            MofNCompleteColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[chunks]} chunks"),
        ) as progress:
            task = progress.add_task("ingest", total=total, chunks=0)
            written = 0

            def advance(outcome: DocumentOutcome) -> None:
                nonlocal written
                if outcome.status in ("added", "updated"):
                    written += outcome.chunks
                if outcome.status == "failed":
                    progress.console.print(f"[red]failed[/red] {outcome.error}")
                progress.update(task, advance=1, chunks=written)

            report = appliance.ingestor.ingest(paths, defaults=defaults, on_outcome=advance)
        removed = appliance.ingestor.prune() if prune else []
    summary = ", ".join(
        f"{report.count(s)} {s}"
        for s in ("added", "updated", "unchanged", "failed")  # type: ignore[arg-type]
    )
    console.print(
        f"{summary}; {report.chunks_written} chunks written"
        + (f"; {len(removed)} pruned" if removed else "")
    )
    if report.failed:
        raise typer.Exit(code=1)


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


@app.command()
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
        try:
            result = appliance.query.run(question, subject, top_k, search_filter, mode, rerank)  # type: ignore[arg-type]
        except QueryError as error:
            errors.print(f"[red]error:[/red] {error}")
            raise typer.Exit(code=2) from None
    candidates = result.candidates
    if as_json:
        payload = [
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
            for c in candidates
        ]
        sys.stdout.write(
            json.dumps(
                {
                    "question": question,
                    "user": user,
                    "filter": describe(search_filter),
                    "policy_version": result.scope.policy_version,
                    "results": payload,
                },
                indent=2,
            )
            + "\n"
        )
        return
    if result.scope.grant is not None:
        console.print("[bold red]BREAK-THE-GLASS ACTIVE[/bold red]: flagged rows are audited.")
    _print_candidates(question, search_filter, candidates)


def _print_candidates(question: str, search_filter: SearchFilter | None, candidates: list) -> None:  # type: ignore[type-arg]
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


@app.command()
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
        subject = known_subject(appliance, user)
        try:
            answer = appliance.answers.ask(question, subject, ActiveOn(day), in_force_on=day)
        except QueryError as error:
            errors.print(f"[red]error:[/red] {error}")
            raise typer.Exit(code=2) from None
        except (GeneratorUnavailable, ServerFailed, ModelUnavailable) as error:
            raise fail(f"the generator is not available: {error}", code=3) from None
    if as_json:
        sys.stdout.write(json.dumps(dataclasses.asdict(answer), indent=2, default=str) + "\n")
        return
    if answer.refused:
        console.print(f"[bold yellow]{NOT_ANSWERED}[/bold yellow] [dim]({answer.refusal})[/dim]")
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
        for sentence, spans in answer.sentences:
            marks = "".join(f"[{n}]" for n in range(1, len(spans) + 1))
            console.print(f"{escape(sentence.text)} [bold cyan]{escape(marks)}[/bold cyan]")
            for n, span in enumerate(spans, start=1):
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


@app.command()
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
    ingest([SAMPLE_CORPUS], None, None, None, False)
    console.print(f"asking as {SAMPLE_USER} (clinician, emergency and ICU)")
    search(question, SAMPLE_USER, 5, "hybrid", None, None, None, None, False, True, False)
    console.print("\n[bold]The verified answer[/bold]")
    ask(question, SAMPLE_USER, None, False)


@docs_app.command("list")
def docs_list() -> None:
    """Every ingested document with its version, dates, labels and chunk count."""
    with open_appliance() as appliance:
        records = appliance.catalog.documents()
    table = Table()
    for column in (
        "doc_id",
        "title",
        "version",
        "type",
        "effective",
        "sensitivity",
        "departments",
        "chunks",
        "state",
    ):
        table.add_column(column)
    for r in records:
        m = r.metadata
        effective = f"{m.effective_from} - {m.effective_to or ''}"
        table.add_row(
            r.doc_id,
            m.title,
            m.version,
            m.doc_type,
            effective,
            m.sensitivity,
            ", ".join(m.departments),
            str(r.chunk_count),
            r.state,
        )
    console.print(table)
    console.print(f"{len(records)} documents")


@docs_app.command("remove")
def docs_remove(
    doc_ids: Annotated[list[str], typer.Argument(help="Document ids to remove.")],
) -> None:
    """Remove documents from every store and the catalog."""
    with open_appliance() as appliance:
        removed = appliance.ingestor.remove(doc_ids)
    for doc_id in doc_ids:
        if doc_id in removed:
            console.print(f"removed {doc_id}")
        else:
            errors.print(f"[red]error:[/red] no document {doc_id!r}; see 'appliance docs list'")
    if len(removed) != len(set(doc_ids)):
        raise typer.Exit(code=1)


@models_app.command("list")
def models_list() -> None:
    """The models in the registry: role, name, licence and where they load from."""
    with open_appliance() as appliance:
        table = Table()
        for column in ("role", "name", "kind", "licence", "location"):
            table.add_column(column, overflow="fold")
        for manifest in appliance.registry.manifests():
            try:
                location = str(appliance.registry.locate(manifest.role))
            except ModelUnavailable:
                location = f"[red]not installed[/red] ({manifest.source.install})"
            table.add_row(manifest.role, manifest.name, manifest.kind, manifest.licence, location)
    console.print(table)


@models_app.command("verify")
def models_verify() -> None:
    """Check every installed model file against its manifest's sha256. A model that is not
    installed fails only if the settings use it; an altered one always fails."""
    failures = 0
    with open_appliance() as appliance:
        settings = appliance.settings
        in_use = {settings.embedder_role, "spacy-parser", "spacy-vectors"}
        if settings.generator.kind == "llama-cpp":
            in_use.add(settings.generator.model_role)
        for manifest in appliance.registry.manifests():
            try:
                resolved = appliance.registry.resolve(manifest.role)
                files = len(manifest.files)
                console.print(
                    f"[green]ok[/green]   {manifest.role}: {manifest.name} "
                    f"({files} files in {resolved.directory})"
                )
            except ModelNotInstalled as error:
                if manifest.role in in_use:
                    failures += 1
                    console.print(f"[red]fail[/red] {error}")
                else:
                    console.print(f"[yellow]absent[/yellow] (not used by the settings) {error}")
            except ModelUnavailable as error:
                failures += 1
                console.print(f"[red]fail[/red] {error}")
    if failures:
        raise typer.Exit(code=1)


@models_app.command("hash")
def models_hash(directory: Annotated[Path, typer.Argument(exists=True, file_okay=False)]) -> None:
    """Print the [[files]] entries of a manifest for a model directory."""
    for model_file in hash_directory(directory):
        sys.stdout.write(
            f'[[files]]\npath = "{model_file.path}"\nsha256 = "{model_file.sha256}"\n\n'
        )


def _with_progress(run: Callable[[Callable[[int, int], None]], T]) -> T:
    """Run a training job with a progress bar of its optimiser steps."""
    with progress_display(
        errors, TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(),
    ) as progress:  # fmt: skip
        task = progress.add_task("training steps", total=None)
        return run(lambda done, total: progress.update(task, completed=done, total=total))


@models_app.command("train-reranker")
def models_train_reranker(
    train: Annotated[
        list[Path] | None,
        typer.Option(exists=True, dir_okay=False, help="Training pools (JSONL)."),
    ] = None,
    medquad: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="MedQuAD pages (JSONL): in-domain questions with their answers, and hard "
            "negatives from the same page and related pages.",
        ),
    ] = None,
    pubmedqa: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="PubMedQA questions with abstracts."),
    ] = None,
    scifact_claims: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    scifact_corpus: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    name: Annotated[
        str, typer.Option(help="Folder name under the site model directory.")
    ] = "reranker-minilm",
    role: Annotated[str, typer.Option(help="Registry role the model fills.")] = "reranker",
    epochs: Annotated[int, typer.Option(min=1)] = 2,
    negatives: Annotated[int, typer.Option(min=1, help="Negatives per pool question.")] = 6,
    held_out: Annotated[float, typer.Option(min=0.05, max=0.5)] = 0.15,
    max_length: Annotated[int, typer.Option(min=32, max=512)] = 256,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N questions per file.")
    ] = None,
    seed: int = 13,
) -> None:
    """Fine-tune a cross-encoder from the shipped MiniLM-L6 weights on training pairs."""
    from appliance.rerank.train_cross_encoder import (
        CrossEncoderTrainer,
        now,
        refuse_evaluation_files,
        training_and_held_out,
        write_manifest,
    )

    train = train or []
    if not (train or medquad or pubmedqa or scifact_claims):
        raise fail(
            "name training data: --train POOLS, --medquad, --pubmedqa or --scifact-claims", code=2
        )
    try:
        refuse_evaluation_files([*train, *([scifact_claims] if scifact_claims else [])])
    except ValueError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(code=2) from None
    training, held = training_and_held_out(
        train, scifact_claims, scifact_corpus, negatives, held_out, seed, limit, medquad, pubmedqa
    )
    command = "appliance models train-reranker " + " ".join(sys.argv[3:])
    provenance = {
        "trained_at": now(),
        "trained_on": ", ".join(str(p) for p in [*train, scifact_claims, medquad, pubmedqa] if p),
        "command": command,
    }
    with open_appliance() as appliance:
        base_role = appliance.settings.embedder_role
        base = appliance.registry.resolve(base_role)
        provenance["base_model"] = f"{base.manifest.name} (role {base_role})"
        site = appliance.registry.site_models_dir
        trainer = CrossEncoderTrainer(
            base.directory, epochs=epochs, max_length=max_length, seed=seed
        )
        report = _with_progress(
            lambda advance: trainer.train(training, held, site / name, provenance, advance)
        )
        manifest = write_manifest(site, role, name, report, provenance, base.manifest)
    by_epoch = [round(r, 3) for r in report.held_out_recall_at_2]
    console.print(
        f"trained on {report.pairs_train} pairs ({report.pairs_held_out} held out); "
        f"best epoch {report.best_epoch}; held-out Recall@2 by epoch {by_epoch}; "
        f"threshold {report.threshold:.2f} (F1 {report.threshold_f1:.3f})\n"
        f"model {report.directory}\nmanifest {manifest}"
    )


@models_app.command("train-verifier")
def models_train_verifier(
    data: Annotated[
        list[Path], typer.Option(exists=True, dir_okay=False, help="NLI pairs (JSONL).")
    ],
    name: Annotated[str, typer.Option(help="Folder under the site model directory.")] = (
        "verifier-minilm-nli"
    ),
    per_label: Annotated[
        int | None, typer.Option(min=10, help="At most this many pairs of each label.")
    ] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    held_out: Annotated[float, typer.Option(min=0.02, max=0.5)] = 0.1,
    max_length: Annotated[int, typer.Option(min=32, max=512)] = 128,
    repeat: Annotated[
        list[str] | None,
        typer.Option(help="FILE_NAME=TIMES: show that file's training pairs TIMES per epoch."),
    ] = None,
    contrast: Annotated[
        list[str] | None,
        typer.Option(
            help="FILE_NAME: add that file's entailed and contradicted training claims "
            "negated, with the opposite label (SciFact's contradictions are negated claims), "
            "and each claim and variant as its own premise, entailed."
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            help="Registry role of the starting weights (default: the embedder's, MiniLM-L6), "
            "or a larger encoder such as 'encoder-large' (MPNet; about three times slower)."
        ),
    ] = None,
    learning_rate: Annotated[float, typer.Option(min=1e-7, max=1e-2)] = 4e-5,
    seed: int = 13,
) -> None:
    """Fine-tune the NLI verifier (entailment / neutral / contradiction) from shipped
    encoder weights; it then fills the registry role "verifier"."""
    import random

    from appliance.rerank.train_cross_encoder import now, write_manifest
    from appliance.verify.claim_negation import contrast_pairs
    from appliance.verify.train_verifier import (
        VerifierTrainer,
        balance,
        parse_repeats,
        read_nli,
        repeat_in_domain,
    )

    try:
        repeats = parse_repeats(repeat or [])
        pairs = read_nli(data)
    except ValueError as error:
        raise fail(str(error), code=2) from None
    for option, names in (("--repeat", set(repeats)), ("--contrast", set(contrast or []))):
        unknown = names - {path.name for path in data}
        if unknown:
            raise fail(f"{option} names files that are not among --data: {sorted(unknown)}", code=2)
    rng = random.Random(seed)
    chosen = balance(pairs, per_label, rng)
    cut = max(1, int(len(chosen) * held_out))
    held, training = chosen[:cut], chosen[cut:]
    provenance = {
        "trained_at": now(),
        "trained_on": ", ".join(str(p) for p in data),
        "command": "appliance models train-verifier " + " ".join(sys.argv[3:]),
    }
    with open_appliance() as appliance:
        base = base or appliance.settings.embedder_role
        try:
            base_model = appliance.registry.resolve(base)
        except ModelUnavailable as error:
            raise fail(f"--base {base}: {error}", code=2) from None
        provenance["base_model"] = f"{base_model.manifest.name} (role {base})"
        if contrast:  # training pairs only: the held-out pairs stay as drawn
            nlp = appliance.registry.load("spacy-vectors")
            training += contrast_pairs(training, contrast, nlp)
        training = repeat_in_domain(training, repeats)
        site = appliance.registry.site_models_dir
        trainer = VerifierTrainer(
            base_model.directory, epochs=epochs, max_length=max_length,
            learning_rate=learning_rate, seed=seed,
        )  # fmt: skip
        report = _with_progress(
            lambda advance: trainer.train(training, held, site / name, provenance, advance)
        )
        manifest = write_manifest(
            site, "verifier", name, report, provenance, base_model.manifest,
            "NLI verifier fine-tuned on this site (appliance models train-verifier).",
        )  # fmt: skip
    console.print(
        f"trained on {report.pairs_train} pairs ({report.pairs_held_out} held out); held-out "
        f"accuracy by epoch {[round(a, 3) for a in report.held_out_recall_at_2]}; entailment "
        f"threshold {report.threshold:.2f} (F0.5 {report.threshold_f1:.3f})\n"
        f"model {report.directory}\nmanifest {manifest}"
    )


@app.command("eval")
def evaluate_golden(
    golden: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Golden set (JSONL).")],
    gates: Annotated[
        Path, typer.Option(exists=True, dir_okay=False, help="Release gates (TOML).")
    ] = (Path(__file__).parent / "eval" / "gates.toml"),
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
                f"{Path(__file__).parent / 'sample_corpus'})",
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


@bench_app.command("rerank")
def bench_rerank(
    data: Annotated[
        list[Path], typer.Option(exists=True, dir_okay=False, help="Pool files (JSONL).")
    ],
    out: Annotated[Path, typer.Option(help="Report folder.")] = Path("benchmarks/results/rerank"),
    k: Annotated[int, typer.Option(min=2, help="Candidates CAGE reranks.")] = 10,
    epochs: Annotated[int, typer.Option(min=1, help="CAGE training epochs per query.")] = 30,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    reranker_role: Annotated[
        str, typer.Option(help="Registry role of a cross-encoder to compare, when installed.")
    ] = "reranker",
) -> None:
    """Rerankers side by side on multi-hop pools: Recall@2/@5 by type, latency, chart."""
    from appliance.eval.report import summarise, write_report
    from appliance.eval.rerank_bench import GraphCache, evaluate
    from appliance.nlp.parse_graph import ParseGraphBuilder
    from appliance.rerank.cross_encoder import CrossEncoderReranker

    command = "appliance bench rerank " + " ".join(sys.argv[3:])
    if data_dir := os.environ.get("APPLIANCE_DATA_DIR"):  # where the trained reranker was
        command = f"APPLIANCE_DATA_DIR={data_dir} {command}"
    with open_appliance() as appliance:
        builder = ParseGraphBuilder(appliance.registry.load("spacy-vectors"))
        cache = GraphCache(appliance.settings.data_dir / "cache" / "pool-graphs.sqlite3", builder)
        cross_encoder = None
        if appliance.registry.has(reranker_role):
            manifest = appliance.registry.manifest(reranker_role)
            cross_encoder = CrossEncoderReranker(
                appliance.registry.load(reranker_role), threshold=manifest.threshold
            )
        else:
            errors.print(f"no {reranker_role!r} model installed: cross-encoder methods left out")
        results = {}
        with progress_display(
            errors,
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ) as progress:
            for path in data:
                task = progress.add_task(path.stem, total=None)

                def advance(done: int, total: int, task: int = task) -> None:
                    progress.update(task, completed=done, total=total)

                results[path.stem] = evaluate(
                    path,
                    appliance.embedder,
                    cache,
                    k=k,
                    epochs=epochs,
                    limit=limit,
                    progress=advance,
                    cross_encoder=cross_encoder,
                )
    summary = summarise(results)
    for written in write_report(summary, out, command):
        console.print(f"wrote {written}")
    from appliance.eval.report import markdown

    console.print(markdown(summary, command))


def main() -> None:
    app()


if __name__ == "__main__":
    main()

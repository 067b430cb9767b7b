"""``appliance models train-reranker`` and ``train-verifier``: a site trains its own pair
classifiers with the recipes of ``appliance.training``, imported inside the commands so
that the product CLI starts fast."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.cli.progress import progress_display
from appliance.model_registry import ModelUnavailable

T = TypeVar("T")


def _with_progress(run: Callable[[Callable[[int, int], None]], T]) -> T:
    """Run a training job with a progress bar of its optimiser steps."""
    with progress_display(
        errors, TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(),
    ) as progress:  # fmt: skip
        task = progress.add_task("training steps", total=None)
        return run(lambda done, total: progress.update(task, completed=done, total=total))


def train_reranker(
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
    from appliance.training.cross_encoder import (
        CrossEncoderTrainer,
        refuse_evaluation_files,
        training_and_held_out,
    )
    from appliance.training.manifest import now, write_manifest

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
    by_epoch = [round(r, 3) for r in report.by_epoch]
    console.print(
        f"trained on {report.pairs_train} pairs ({report.pairs_held_out} held out); "
        f"best epoch {report.best_epoch}; held-out Recall@2 by epoch {by_epoch}; "
        f"threshold {report.threshold:.2f} (F1 {report.threshold_score:.3f})\n"
        f"model {report.directory}\nmanifest {manifest}"
    )


def train_verifier(
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

    from appliance.training.contrast_pairs import contrast_pairs
    from appliance.training.manifest import now, write_manifest
    from appliance.training.nli_verifier import (
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
        f"accuracy by epoch {[round(a, 3) for a in report.by_epoch]}; entailment "
        f"threshold {report.threshold:.2f} (F0.5 {report.threshold_score:.3f})\n"
        f"model {report.directory}\nmanifest {manifest}"
    )

"""``appliance models train-reranker``, ``train-verifier`` and ``train-generator``: a site
trains its own models with the recipes of ``appliance.training``, imported inside the
commands so that the product CLI starts fast; ``merge-generator`` merges a LoRA adapter
(the shipped one, or one trained here) into its base for the llama.cpp server."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.cli.progress import progress_display
from appliance.engines import Appliance
from appliance.model_registry import ModelManifest, ModelUnavailable

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
        manifest = write_manifest(
            site, role, name, report.directory, provenance, base.manifest,
            threshold=report.threshold,
        )  # fmt: skip
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
            site, "verifier", name, report.directory, provenance, base_model.manifest,
            "NLI verifier fine-tuned on this site (appliance models train-verifier).",
            threshold=report.threshold,
        )  # fmt: skip
    console.print(
        f"trained on {report.pairs_train} pairs ({report.pairs_held_out} held out); held-out "
        f"accuracy by epoch {[round(a, 3) for a in report.by_epoch]}; entailment "
        f"threshold {report.threshold:.2f} (F0.5 {report.threshold_score:.3f})\n"
        f"model {report.directory}\nmanifest {manifest}"
    )


def train_generator(
    medquad: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="MedQuAD pages (JSONL): answer sections."),
    ] = None,
    pubmedqa: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="PubMedQA: conclusions and decisions."),
    ] = None,
    pubmedqa_skip: Annotated[
        int,
        typer.Option(min=0, help="Leave out PubMedQA's first N questions (benchmarks read them)."),
    ] = 350,
    pool: Annotated[
        list[Path] | None,
        typer.Option(exists=True, dir_okay=False, help="Multi-hop training pools (JSONL)."),
    ] = None,
    exclude: Annotated[
        list[Path] | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Evaluation files (JSONL with 'question'): their questions are never trained on.",
        ),
    ] = None,
    per_source: Annotated[int, typer.Option(min=1, help="At most N questions per source.")] = 400,
    # No refusal examples by default: the answer path's gates refuse what the documents
    # do not answer before a generator is asked, and the small base trained with 10%
    # refusals answered "not found" to nearly every question (README, "Fine-tuning the
    # generator").
    refusals: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=0.9,
            help="Share of questions given others' passages, to answer 'not found'.",
        ),
    ] = 0.0,
    passages: Annotated[
        int,
        typer.Option(
            min=2, max=20, help="Passages per example, the answer's among them (serving gives 5)."
        ),
    ] = 3,
    held_out: Annotated[int, typer.Option(min=0, help="Examples kept out to measure.")] = 24,
    base: Annotated[str, typer.Option(help="Registry role of the base GGUF model.")] = "llm-small",
    name: Annotated[str, typer.Option(help="Folder under the site model directory.")] = (
        "generator-lora"
    ),
    role: Annotated[str, typer.Option(help="Registry role the merged model fills.")] = (
        "llm-tuned"
    ),
    steps: Annotated[int, typer.Option(min=1)] = 600,
    accumulate: Annotated[int, typer.Option(min=1, help="Examples per optimiser step.")] = 4,
    rank: Annotated[int, typer.Option(min=1, max=256)] = 8,
    max_tokens: Annotated[int, typer.Option(min=128, max=8192)] = 1024,
    learning_rate: Annotated[float, typer.Option(min=1e-7, max=1e-1)] = 2e-4,
    seed: int = 13,
) -> None:
    """Fine-tune the answer generator with LoRA on public data (never an evaluation set):
    the adapter with its base as a Hugging Face directory (for vLLM: base/ and adapter/)
    and the base GGUF with the adapter merged (for llama.cpp), registered under --role;
    choose it with generator.model_role."""
    import random

    from appliance.training.generator_examples import (
        build_examples,
        excluded_questions,
        medquad_sources,
        pool_sources,
        pubmedqa_sources,
    )
    from appliance.training.generator_lora import (
        GeneratorTrainingReport,
        LoraRecipe,
        load_base,
        merged_deltas,
        save_adapter,
        save_base,
        train_lora,
    )
    from appliance.training.manifest import now, write_manifest

    pools = pool or []
    if not (medquad or pubmedqa or pools):
        raise fail("name training data: --medquad, --pubmedqa or --pool", code=2)
    rng = random.Random(seed)
    streams = [medquad_sources(medquad, rng, passages)] if medquad else []
    streams += [pubmedqa_sources(pubmedqa, rng, pubmedqa_skip, passages)] if pubmedqa else []
    streams += [pool_sources(path, rng, passages) for path in pools]
    sources = []
    for stream in streams:
        drawn = list(stream)
        sources += rng.sample(drawn, min(per_source, len(drawn)))
    examples = build_examples(
        sources, exclude=excluded_questions(exclude or []), refusal_share=refusals, rng=rng
    )
    held, training = examples[:held_out], examples[held_out:]
    recipe = LoraRecipe(
        rank=rank, alpha=2 * rank, steps=steps, accumulate=accumulate, max_tokens=max_tokens,
        learning_rate=learning_rate, seed=seed,
    )  # fmt: skip
    provenance = {
        "trained_at": now(),
        "trained_on": ", ".join(str(p) for p in [medquad, pubmedqa, *pools] if p),
        "command": "appliance models train-generator " + " ".join(sys.argv[3:]),
    }
    with open_appliance() as appliance:
        try:
            base_model = appliance.registry.resolve(base)
        except ModelUnavailable as error:
            raise fail(f"--base {base}: {error}", code=2) from None
        if base_model.manifest.kind != "gguf":
            raise fail(f"--base {base} is a {base_model.manifest.kind} model, not a GGUF", code=2)
        gguf_file: Path = appliance.registry.load(base)
        provenance["base_model"] = f"{base_model.manifest.name} (role {base})"
        errors.print(f"[dim]{len(training)} examples; loading {gguf_file.name}...[/dim]")
        model, tokenizer = load_base(gguf_file.parent, gguf_file.name)
        save_base(model, tokenizer, appliance.registry.site_models_dir / name / "base")

        def run(advance: Callable[[int, int], None]) -> tuple[Any, GeneratorTrainingReport]:
            return train_lora(
                model, tokenizer, training, recipe, base_name=base_model.manifest.name,
                held_out=held, progress=advance,
            )  # fmt: skip

        tuned, report = _with_progress(run)
        site = appliance.registry.site_models_dir
        save_adapter(tuned, site / name / "adapter", report)
        write_manifest(
            site, f"{role}-adapter", f"{name} (LoRA adapter on {base_model.manifest.name})",
            site / name / "adapter", provenance, base_model.manifest,
            "LoRA adapter of the answer generator (appliance models train-generator): what "
            "vLLM serves on the base, and what merge-generator merges into it.",
            kind="lora-adapter",
        )  # fmt: skip
        merged, manifest = _register_merged(
            appliance, gguf_file, base_model.manifest, merged_deltas(tuned), name, role,
            provenance,
        )  # fmt: skip
    console.print(
        f"{report.examples_used} examples ({report.examples_too_long} too long), "
        f"{report.steps} steps, {report.tokens_trained} tokens in {report.seconds:.0f} s; "
        f"loss {report.loss_by_step[0]:.3f} -> {report.loss_by_step[-1]:.3f}"
        + (f", held out {report.held_out_loss:.3f}" if report.held_out_loss is not None else "")
        + f"\nfor vLLM: base {site / name / 'base'}, adapter {site / name / 'adapter'}"
        + f"\nfor llama.cpp: {merged}"
        + f"\nmanifest {manifest}",
        highlight=False,
    )


def merge_generator(
    adapter: Annotated[
        str, typer.Option(help="Registry role of the LoRA adapter (shipped or trained here).")
    ] = "llm-tuned-adapter",
    base: Annotated[str, typer.Option(help="Registry role of the base GGUF model.")] = "llm-small",
    name: Annotated[str, typer.Option(help="Folder under the site model directory.")] = (
        "generator-lora"
    ),
    role: Annotated[str, typer.Option(help="Registry role the merged model fills.")] = (
        "llm-tuned"
    ),
    vllm: Annotated[
        bool,
        typer.Option("--vllm", help="Also write base/ and adapter/ beside it: what vLLM serves."),
    ] = False,
) -> None:
    """Merge a LoRA adapter into its base GGUF for the llama.cpp server and register it
    under --role (choose it with generator.model_role): how a site serves the adapter the
    product ships without training one."""
    import shutil

    from appliance.training.generator_lora import adapter_deltas, load_base, save_base
    from appliance.training.manifest import now

    with open_appliance() as appliance:
        try:
            lora = appliance.registry.resolve(adapter)
            base_model = appliance.registry.resolve(base)
        except ModelUnavailable as error:
            raise fail(str(error), code=2) from None
        if lora.manifest.kind != "lora-adapter":
            raise fail(
                f"--adapter {adapter} is a {lora.manifest.kind} model, not a LoRA adapter", code=2
            )
        if base_model.manifest.kind != "gguf":
            raise fail(f"--base {base} is a {base_model.manifest.kind} model, not a GGUF", code=2)
        trained_on = json.loads((lora.directory / "training.json").read_text("utf-8"))["base"]
        if trained_on != base_model.manifest.name:
            raise fail(
                f"the adapter {lora.manifest.name} was trained on {trained_on}, and --base "
                f"{base} is {base_model.manifest.name}: name the base it was trained on",
                code=2,
            )
        gguf_file: Path = appliance.registry.load(base)
        errors.print(f"[dim]merging {lora.manifest.name} into {gguf_file.name}...[/dim]")
        model, tokenizer = load_base(gguf_file.parent, gguf_file.name)
        folder = appliance.registry.site_models_dir / name
        if vllm:
            save_base(model, tokenizer, folder / "base")
            shutil.copytree(lora.directory, folder / "adapter", dirs_exist_ok=True)
        deltas = adapter_deltas(model, lora.directory)
        provenance = {
            **lora.manifest.provenance,
            "adapter": f"{lora.manifest.name} (role {adapter})",
            "merged_at": now(),
            "merged_by": "appliance models merge-generator " + " ".join(sys.argv[3:]),
        }
        merged, manifest = _register_merged(
            appliance, gguf_file, base_model.manifest, deltas, name, role, provenance
        )
    console.print(
        (f"for vLLM: base {folder / 'base'}, adapter {folder / 'adapter'}\n" if vllm else "")
        + f"for llama.cpp: {merged}\nmanifest {manifest}",
        highlight=False,
    )


def _register_merged(
    appliance: Appliance,
    base_gguf: Path,
    base: ModelManifest,
    deltas: dict[str, Any],
    name: str,
    role: str,
    provenance: dict[str, str],
) -> tuple[Path, Path]:
    """The base GGUF with the adapter's deltas merged, written under the site model
    directory and registered under ``role``: the merged file and its manifest."""
    from appliance.training.generator_lora import export_merged_gguf
    from appliance.training.manifest import write_manifest

    site = appliance.registry.site_models_dir
    folder = site / name / "gguf"
    folder.mkdir(parents=True, exist_ok=True)
    export_merged_gguf(base_gguf, deltas, folder / "model.gguf")
    manifest = write_manifest(
        site, role, f"{name} (LoRA on {base.name}, merged)", folder, provenance, base,
        "Answer generator fine-tuned with LoRA, merged into its base for llama.cpp.",
        kind="gguf",
    )  # fmt: skip
    return folder / "model.gguf", manifest

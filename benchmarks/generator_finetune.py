"""The fine-tuned answer generator against its un-tuned base, side by side on the same
questions, both served by llama.cpp on this machine's CPU.

Questions: the sample golden set and ../shared/data/clinical/dev.jsonl, on the sample
corpus, asked through the whole answer path as a reader of everything. Per model:

- schema validity: the raw output parses and follows the answer schema (with the
  context's chunk ids), read from each answer's audit record;
- exact-span quotes: citations whose quote is character for character in the chunk it
  names, before verification;
- citations surviving verification: cited spans shown, over citations written;
- answers containing the gold quote; correct refusals (unanswerable rows) and false
  refusals (answerable rows), as ``appliance eval`` counts them;
- generation tokens per second and the answer's p50 seconds.

    .venv/bin/python -m benchmarks.generator_finetune [--tuned llm-tuned] [--base llm-small] \\
        [--questions FILE ...]

Each model runs with its quotes free (any text, checked only afterwards), held by
decoding to the passages' sentences (``verbatim``), or with each claim one of those
sentences quoted whole (``generator.quotes = "quoted"``, the default), and with uncited framing
sentences offered or not (``generator.framing``, off by default).

The tuned role is what ``appliance models train-generator`` registered (in the site
model directory of APPLIANCE_DATA_DIR, or --models-from).

Each run writes a fixed fence key into its data directory, so two runs of the same
command ask the same prompts and print the same figures. ``--fence-keys N`` runs each
model under N keys and prints each figure's mean with its range: a small model's choice
of sentence moves with the fence's nonce, and one key is one draw.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import get_args

import jsonschema
from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.eval.golden import evaluate
from appliance.generate.base import ContextPassage
from appliance.generate.openai_compatible import complete_sentences
from appliance.generate.prompt import FENCE_KEY_FILE, QuoteRule, answer_schema
from appliance.settings import GeneratorSettings, Settings

CONSOLE = Console(stderr=True)
ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "appliance" / "sample_corpus"
RULE_NAMES = {"free": "free quotes", "verbatim": "held quotes", "quoted": "quoted claims"}
QUESTIONS = [SAMPLE / "golden.jsonl", ROOT.parent / "shared" / "data" / "clinical" / "dev.jsonl"]


def measure(
    role: str,
    quotes: QuoteRule,
    framing: bool,
    data: Path,
    questions: list[Path],
    max_tokens: int,
) -> dict[str, float | None]:
    settings = Settings(
        data_dir=data,
        generator=GeneratorSettings(
            kind="llama-cpp",
            model_role=role,
            quotes=quotes,
            framing=framing,
            max_tokens=max_tokens,
        ),
    )
    figures: dict[str, list[float]] = {"contains": [], "correct_refusal": [], "false_refusal": []}
    seconds: list[float] = []
    with Appliance(settings) as appliance:
        for path in questions:
            report = evaluate(
                appliance,
                path,
                lambda done, total, name=path.name: CONSOLE.log(f"{role} {name}: {done}/{total}"),
            )
            figures["contains"].append(report.answer_contains_gold * report.answerable)
            figures["correct_refusal"].append(
                report.correct_refusal_rate * (report.questions - report.answerable)
            )
            figures["false_refusal"].append(report.false_refusal_rate * report.answerable)
            seconds += [ms / 1000 for ms in report.answer_ms]
            figures.setdefault("answerable", []).append(report.answerable)
            figures.setdefault("unanswerable", []).append(report.questions - report.answerable)
        records = [
            e
            for e in _entries(data)
            if e.get("type") == "answer" and e["details"].get("raw_output")
        ]
        valid = exact = written = shown = 0
        tokens = generate_seconds = 0.0
        tokenizer = _tokenizer(appliance, role)
        for entry in records:
            details = entry["details"]
            raw, context = details["raw_output"], list(details["relevance"])
            chunks = appliance.catalog.chunks(context)
            passages = [ContextPassage(n, chunks[c]) for n, c in enumerate(context, start=1)]
            try:
                document = json.loads(raw)
                jsonschema.validate(document, answer_schema(passages, quotes, framing))
                valid += 1
            except (json.JSONDecodeError, jsonschema.ValidationError):
                # cut off by the token limit: its complete sentences were still verified
                document = complete_sentences(raw) or {"sentences": []}
            for sentence in document.get("sentences", []):
                for citation in sentence.get("citations", []):
                    written += 1
                    chunk = chunks.get(citation.get("chunk_id", ""))
                    exact += bool(
                        chunk and citation.get("quote") and citation["quote"] in chunk.text
                    )
            shown += sum(c.get("verdict") == "supported" for c in details.get("checks", []))
            tokens += len(tokenizer(raw, add_special_tokens=False)["input_ids"])
            generate_seconds += float(details.get("timings", {}).get("generate", 0.0))
    answerable = sum(figures.pop("answerable"))
    unanswerable = sum(figures.pop("unanswerable"))
    return {
        "answers generated": len(records),
        "schema validity": valid / len(records) if records else 0.0,
        "exact-span quotes": exact / written if written else 0.0,
        "citations surviving verification": shown / written if written else 0.0,
        "answers containing the gold quote": sum(figures["contains"]) / answerable,
        "correct refusals": (
            sum(figures["correct_refusal"]) / unanswerable if unanswerable else None
        ),
        "false refusals": sum(figures["false_refusal"]) / answerable,
        "tokens/s": tokens / generate_seconds if generate_seconds else 0.0,
        "answer p50 s": statistics.median(seconds),
    }


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def fence_key(index: int) -> bytes:
    """The benchmark's ``index``-th fence key: fixed, so runs repeat."""
    return hashlib.sha256(f"generator-benchmark-fence-key-{index}".encode()).digest()


def summarised(runs: list[dict[str, float | None]]) -> dict[str, object]:
    """One key's figures as they are; several keys' as mean, min and max per figure."""
    if len(runs) == 1:
        return dict(runs[0])
    summary: dict[str, object] = {}
    for figure in runs[0]:
        values = [v for run in runs if (v := run[figure]) is not None]
        summary[figure] = (
            {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}
            if values
            else None
        )
    summary["fence keys"] = len(runs)
    return summary


def _cell(value: object) -> str:
    if isinstance(value, dict):
        return f"{value['mean']:.3f} ({value['min']:.2f}-{value['max']:.2f})"
    return _shown(value if isinstance(value, (int, float)) else None)


def _entries(data: Path) -> list[dict]:  # type: ignore[type-arg]
    from audit.reader import LogReader

    return [json.loads(record.entry) for record in LogReader(data / "audit").records()]


def _tokenizer(appliance: Appliance, role: str):  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    model_file: Path = appliance.registry.load(role)
    return AutoTokenizer.from_pretrained(model_file.parent, gguf_file=model_file.name)


def _first(path: Path, limit: int, folder: Path) -> Path:
    """The file's first ``limit`` answerable questions and its first third as many
    unanswerable ones: the sets list the unanswerable last, and a sample without them
    cannot measure correct refusals."""
    by_kind: dict[bool, list[str]] = {True: [], False: []}
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        by_kind[json.loads(line).get("answerable", True) is not False].append(line)
    kept = folder / path.name
    kept.write_text("".join(by_kind[True][:limit] + by_kind[False][: max(1, limit // 3)]))
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuned", help="the tuned model's role (left out: the base alone)")
    parser.add_argument("--base", default="llm-small")
    parser.add_argument(
        "--quotes",
        default="free,quoted",
        help="quote rules to compare (comma-separated): free, verbatim, quoted",
    )
    parser.add_argument(
        "--framing",
        default="without",
        help="framing sentences offered (comma-separated): without, with",
    )
    parser.add_argument(
        "--models-from", type=Path, help="a data directory whose site models to use"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=GeneratorSettings().max_tokens,
        help="generation limit per answer (default: the product's own setting)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each run's data directory (its audit log holds every raw answer) here",
    )
    parser.add_argument(
        "--fence-keys",
        type=int,
        default=1,
        help="run each model under this many fixed fence keys (mean and range per figure)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        help="only the first N answerable questions of each file (and N/3 unanswerable)",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        nargs="+",
        help="golden files to ask (default: the sample golden set and the ward dev set)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "generator_finetune.json"
    )
    args = parser.parse_args()
    asked = args.questions or [q for q in QUESTIONS if q.is_file()]
    for missing in [q for q in args.questions or QUESTIONS if not q.is_file()]:
        if args.questions:
            parser.error(f"no such golden file: {missing}")
        CONSOLE.log(f"[yellow]not asked: {missing} is not here[/]")
    rules: list[QuoteRule] = [q for q in get_args(QuoteRule) if q in args.quotes.split(",")]
    framings = [f == "with" for f in ("without", "with") if f in args.framing.split(",")]
    runs = [
        (role, rule, framing)
        for role in (args.base, args.tuned)
        if role
        for rule in rules
        for framing in framings
    ]
    results = {}
    for role, rule, framing in runs:
        name = f"{role} ({RULE_NAMES[rule]}{', framing' if framing else ''})"
        per_key = []
        for index in range(args.fence_keys):
            with tempfile.TemporaryDirectory() as scratch:
                data = Path(scratch) / "data"
                if args.models_from:
                    shutil.copytree(args.models_from / "models", data / "models")
                data.mkdir(parents=True, exist_ok=True)
                (data / FENCE_KEY_FILE).write_text(fence_key(index).hex() + "\n")
                CONSOLE.log(f"{name}, fence key {index}: ingesting the sample corpus")
                with Appliance(Settings(data_dir=data)) as appliance:
                    appliance.ingestor.ingest([SAMPLE / "documents"])
                CONSOLE.log(f"{name}, fence key {index}: asking")
                questions = asked
                if args.limit:
                    questions = [_first(q, args.limit, Path(scratch)) for q in questions]
                per_key.append(measure(role, rule, framing, data, questions, args.max_tokens))
                if args.keep:
                    kept = args.keep / f"{name.replace(' ', '_')}-key{index}"
                    shutil.copytree(data, kept, dirs_exist_ok=True)
        results[name] = summarised(per_key)
    table = Table(title="Answer generator on llama.cpp (CPU): base and tuned, by quote rule")
    table.add_column("figure")
    for name in results:
        table.add_column(name, justify="right")
    for figure in next(iter(results.values())):
        table.add_row(figure, *(_cell(results[r][figure]) for r in results))
    Console().print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    asked_from = {
        "questions": [q.name for q in asked],
        "limit": args.limit,
        "max_tokens": args.max_tokens,
    }
    args.out.write_text(json.dumps({"asked": asked_from, **results}, indent=2))


if __name__ == "__main__":
    main()

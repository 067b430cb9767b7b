"""Refusal gates on data the gates were not designed on: MedQuAD pages.

Half of a seeded sample of MedQuAD pages (../shared/data/corpus, CC BY 4.0) is ingested;
one section heading ("What are the symptoms of X ?") per page is asked. A question of an
ingested page is answerable; one of a page left out is not (questions whose subject is
named anywhere in the ingested pages are dropped, since the corpus may answer them).
Side by side in one run, on the same data directory: the cosine floor alone, and the
cosine floor with the question-coverage gate. Figures: correct refusals (unanswerable)
and false refusals (answerable), with the extractive generator.

    .venv/bin/python -m benchmarks.answerability [--pages 300] [--seed 13]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.settings import PROJECT_ROOT, AnswerSettings, Settings
from benchmarks.ingest_and_query import MEDQUAD, reader_of_everything, write_medquad

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "answerability.json"
GATES = {
    "cosine floor only": 0.0,
    "cosine floor + question coverage": AnswerSettings().min_question_coverage,
}
console = Console()


def questions(pages: list[dict], ingested: list[dict], rng: random.Random) -> list[dict]:  # type: ignore[type-arg]
    corpus_text = " ".join(
        s["text"].lower() + " " + p["focus"].lower() for p in ingested for s in p["sections"]
    )
    chosen = []
    in_corpus = {p["doc_id"] for p in ingested}
    for page in pages:
        answerable = page["doc_id"] in in_corpus
        if not answerable and page["focus"].lower() in corpus_text:
            continue
        section = rng.choice(page["sections"])
        chosen.append({"question": section["heading"], "answerable": answerable})
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    every = [json.loads(line) for line in MEDQUAD.open(encoding="utf-8")]
    pages = rng.sample(every, args.pages)
    ingested = pages[: args.pages // 2]
    asked = questions(pages, ingested, rng)
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="appliance-answerability-") as work:
        corpus = Path(work) / "corpus"
        corpus.mkdir()
        write_medquad(corpus, None, ingested)
        data_dir = Path(work) / "data"
        with Appliance(Settings(data_dir=data_dir)) as appliance:
            report = appliance.ingestor.ingest([corpus])
            console.print(f"ingested {len(ingested)} pages, {report.chunks_written} chunks")
        for name, minimum in GATES.items():
            settings = Settings(
                data_dir=data_dir, answer=AnswerSettings(min_question_coverage=minimum)
            )
            with Appliance(settings) as appliance:
                reader = reader_of_everything(appliance)
                refused = {True: [], False: []}  # type: dict[bool, list[bool]]
                for row in asked:
                    answer = appliance.answers.ask(row["question"], reader)
                    refused[row["answerable"]].append(answer.refused)
            figures[name] = {
                "correct_refusal_rate": sum(refused[False]) / len(refused[False]),
                "false_refusal_rate": sum(refused[True]) / len(refused[True]),
                "unanswerable": len(refused[False]),
                "answerable": len(refused[True]),
            }
    table = Table(title=f"MedQuAD answerability ({len(asked)} questions, seed {args.seed})")
    for column in ("gate", "correct refusals", "false refusals"):
        table.add_column(column)
    for name, row in figures.items():
        table.add_row(
            name, f"{row['correct_refusal_rate']:.3f}", f"{row['false_refusal_rate']:.3f}"
        )
    console.print(table)
    RESULTS.write_text(json.dumps({"pages": args.pages, "seed": args.seed, **figures}, indent=2))
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

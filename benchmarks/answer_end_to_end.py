"""Answers end to end on public sets where each question brings its own corpus.

- The multi-hop pools (../shared/data/multihop: HotpotQA, 2WikiMultihopQA, MuSiQue):
  answer exact match and token F1 against the gold answer and its aliases (SQuAD
  normalisation, as in the CAGE paper's end-to-end table), whether the answer contains
  the gold answer at all, and whether a supporting passage is among its citations.
- PubMedQA (../shared/data/pubmedqa, expert-labelled): each question's abstract sections,
  conclusion left out, as its corpus. Every question is answerable from them, so every
  refusal is a false one; the token F1 of the answer against the authors' conclusion,
  and the accuracy of the answer's yes/no/maybe decision against the experts' (over all
  questions, a refusal or no decision counting as wrong, and over those decided). The
  extractive generator writes no decision.

Every passage is ingested as a document of its own, and each question is asked through
the whole answer path (retrieve, rerank, generate, verify, refuse) with a filter to its
own documents. A temporary data directory per run. A generator error (a timeout, a
malformed reply) is counted and the run goes on; three in a row stop it. Figures are
over the questions answered.

    .venv/bin/python benchmarks/answer_end_to_end.py [--questions 100] [--generator extractive]
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import string
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from appliance.answer import Answer
from appliance.engines import Appliance
from appliance.eval.golden import reader_of_everything
from appliance.generate.base import GeneratorUnavailable
from appliance.index.filters import AnyOf
from appliance.settings import PROJECT_ROOT, GeneratorSettings, Settings

SHARED = PROJECT_ROOT.parent / "shared" / "data"
MULTIHOP = {
    "HotpotQA": SHARED / "multihop" / "hotpotqa.dev.jsonl",
    "2WikiMultihopQA": SHARED / "multihop" / "2wikimultihopqa.dev.jsonl",
    "MuSiQue": SHARED / "multihop" / "musique.dev.jsonl",
}
PUBMEDQA = SHARED / "pubmedqa" / "pqa_l.jsonl"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "answer_end_to_end"
FAILURES_THAT_STOP = 3  # a server that died fails every question; stop rather than spin
console = Console()


@dataclass(frozen=True, slots=True)
class Case:
    """One question, the documents it brings, and what a right answer holds."""

    dataset: str
    question: str
    documents: dict[str, tuple[str, str]]  # doc_id -> (title, text)
    answers: tuple[str, ...]
    supporting: frozenset[str]  # doc_ids of the gold passages
    decision: str | None = None  # PubMedQA's yes / no / maybe


def normalise(text: str) -> str:
    """SQuAD answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def token_f1(predicted: str, gold: str) -> float:
    ours, theirs = normalise(predicted).split(), normalise(gold).split()
    common = sum(min(ours.count(t), theirs.count(t)) for t in set(theirs))
    if not common:
        return 0.0
    precision, recall = common / len(ours), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def multihop_cases(name: str, path: Path, limit: int) -> Iterator[Case]:
    for number, line in enumerate(path.open(encoding="utf-8")):
        if number >= limit:
            return
        row = json.loads(line)
        gold = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
        documents, supporting = {}, set()
        for index, passage in enumerate(row["passages"]):
            doc_id = f"{name.lower()}-{number}-{index}"
            documents[doc_id] = (passage.get("title") or f"Passage {index}", passage["text"])
            if passage["is_supporting"]:
                supporting.add(doc_id)
        answers = tuple(str(a) for a in [*gold, *row.get("answer_aliases", [])])
        yield Case(name, row["question"], documents, answers, frozenset(supporting))


def pubmedqa_cases(limit: int) -> Iterator[Case]:
    for number, line in enumerate(PUBMEDQA.open(encoding="utf-8")):
        if number >= limit:
            return
        row = json.loads(line)
        documents = {
            f"pubmedqa-{row['id']}-{index}": (context["label"].title(), context["text"])
            for index, context in enumerate(row["contexts"])
        }
        yield Case(
            "PubMedQA", row["question"], documents, (row["long_answer"],), frozenset(),
            row["final_decision"],
        )  # fmt: skip


def write_corpus(cases: list[Case], folder: Path) -> None:
    for case in cases:
        for doc_id, (title, text) in case.documents.items():
            front = f"---\ndoc_id: {doc_id}\ndoc_type: reference\nsensitivity: public\n"
            front += "departments: [all]\n---\n"
            (folder / f"{doc_id}.md").write_text(f"{front}# {title}\n\n{text}\n", "utf-8")


def score(case: Case, answer: Answer) -> dict[str, float]:
    text = " ".join(v.sentence.text for v in answer.sentences)
    cited = {span.doc_id for v in answer.sentences for span in v.spans}
    row = {
        "refused": float(answer.refused),
        "token_f1": max(token_f1(text, gold) for gold in case.answers) if text else 0.0,
    }
    if case.dataset != "PubMedQA":
        row["exact_match"] = float(any(normalise(text) == normalise(g) for g in case.answers))
        row["contains_answer"] = float(
            bool(text) and any(normalise(g) in normalise(text) for g in case.answers)
        )
        row["cites_supporting"] = float(bool(cited & case.supporting))
    if case.decision is not None:
        row["decided"] = float(answer.decision is not None)
        row["decision_correct"] = float(answer.decision == case.decision)
    return row


def run(cases: list[Case], generator: GeneratorSettings) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="appliance-end-to-end-") as work:
        corpus, data_dir = Path(work) / "corpus", Path(work) / "data"
        corpus.mkdir()
        write_corpus(cases, corpus)
        settings = Settings(data_dir=data_dir, generator=generator)
        with Appliance(settings) as appliance:
            started = time.perf_counter()
            report = appliance.ingestor.ingest([corpus])
            console.print(
                f"ingested {sum(len(c.documents) for c in cases)} passages "
                f"({report.chunks_written} chunks) in {time.perf_counter() - started:.0f} s"
            )
            reader = reader_of_everything(appliance)
            rows: dict[str, list[dict[str, float]]] = {}
            errors: Counter[str] = Counter()
            failed_in_a_row = 0
            try:
                for case in track(cases, description="asking", console=console):
                    own = AnyOf("doc_id", tuple(case.documents))
                    started = time.perf_counter()
                    try:
                        answer = appliance.answers.ask(case.question, reader, own)
                    except GeneratorUnavailable as error:  # one timeout is not the end
                        errors[case.dataset] += 1
                        failed_in_a_row += 1
                        console.print(f"[red]generator error[/red] ({case.dataset}): {error}")
                        if failed_in_a_row == FAILURES_THAT_STOP:
                            console.print(f"{FAILURES_THAT_STOP} errors in a row: stopping")
                            break
                        continue
                    failed_in_a_row = 0
                    row = score(case, answer)
                    row["ms"] = (time.perf_counter() - started) * 1000
                    rows.setdefault(case.dataset, []).append(row)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep what was measured
                asked = sum(len(r) for r in rows.values())
                console.print(f"interrupted: figures over the {asked} questions answered so far")
    figures: dict[str, dict[str, float]] = {
        dataset: {"questions": 0, "generator_errors": count}
        for dataset, count in errors.items()
        if dataset not in rows
    }
    for dataset, scored in rows.items():
        answered = [r for r in scored if not r["refused"]]
        figures[dataset] = {
            "questions": len(scored),
            "generator_errors": errors[dataset],
            "refused": statistics.mean(r["refused"] for r in scored),
            "p50_ms": statistics.median(r["ms"] for r in scored),
            **{
                key: statistics.mean(r[key] for r in scored)
                for key in ("exact_match", "token_f1", "contains_answer")
                if key in scored[0]
            },
        }
        if "decided" in scored[0]:
            decided = [r for r in scored if r["decided"]]
            figures[dataset]["decision_accuracy"] = statistics.mean(
                r["decision_correct"] for r in scored
            )
            figures[dataset]["decided"] = len(decided) / len(scored)
            if decided:  # absent, shown as n/a, rather than a 0 that no answer earned
                figures[dataset]["decision_accuracy_when_decided"] = statistics.mean(
                    r["decision_correct"] for r in decided
                )
        if "cites_supporting" in scored[0]:
            figures[dataset]["cites_supporting_when_answered"] = (
                statistics.mean(r["cites_supporting"] for r in answered) if answered else 0.0
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100, help="per data set")
    parser.add_argument("--generator", choices=("extractive", "llama-cpp"), default="extractive")
    parser.add_argument("--model-role", default="llm", help="for llama-cpp: llm or llm-small")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument(
        "--sets", nargs="+", choices=(*MULTIHOP, "PubMedQA"), default=[*MULTIHOP, "PubMedQA"]
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `timeout` keeps the figures too
    cases = [
        c
        for n, p in MULTIHOP.items()
        if n in args.sets
        for c in multihop_cases(n, p, args.questions)
    ]
    if "PubMedQA" in args.sets:
        cases += list(pubmedqa_cases(args.questions))
    generator = GeneratorSettings(
        kind=args.generator, model_role=args.model_role, max_tokens=args.max_tokens
    )
    figures = run(cases, generator)
    label = args.generator if args.generator == "extractive" else f"llama-cpp-{args.model_role}"
    table = Table(title=f"answers end to end, generator {label}")
    columns = ("questions", "generator_errors", "refused", "exact_match", "token_f1",
               "contains_answer", "cites_supporting_when_answered", "decided", "decision_accuracy",
               "decision_accuracy_when_decided", "p50_ms")  # fmt: skip
    table.add_column("data set")
    for column in columns:
        table.add_column(column)
    for dataset, row in figures.items():
        table.add_row(
            dataset,
            *(
                "n/a" if c not in row
                else f"{row[c]:.0f}" if c in ("questions", "generator_errors", "p50_ms")
                else f"{row[c]:.3f}"
                for c in columns
            ),
        )  # fmt: skip
    console.print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    command = "benchmarks/answer_end_to_end.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}"
        for k, v in vars(args).items()
    )
    every_set = set(args.sets) == {*MULTIHOP, "PubMedQA"}
    out = RESULTS / (f"{label}.json" if every_set else f"{label}-{'-'.join(args.sets)}.json")
    out.write_text(json.dumps({"command": command, **figures}, indent=2) + "\n", "utf-8")
    console.print(f"written to {out.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()

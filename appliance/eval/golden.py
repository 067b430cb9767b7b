"""The golden-set evaluation of the whole answer path, with release gates.

A golden file has one question per line: ``{"question", "doc_id", "quote"}`` for a
question the corpus answers (the quote locates the gold chunk), ``{"question", "gold":
[{"doc_id", "quote"}, ...]}`` for one whose answer needs several passages, or
``{"question", "answerable": false}`` for one it does not. ``as_of`` (a day) asks with
the documents in force that day (without it, those in force today, as the page asks);
``kinds`` tags a question (identifier, negation, date-range, two-document, ...) and the
report gives each kind's figures. Each question
is asked as a reader who may see every ingested document, so that the figures measure
retrieval, generation and verification rather than the policy.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.access.rules import Subject
from appliance.answer import Answer
from appliance.engines import Appliance
from appliance.eval.stats import percentile
from appliance.index.catalog import Catalog
from appliance.index.filters import ActiveOn

_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)*")
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_corpus"


class NoDocuments(ValueError):
    """Nothing is ingested: every question would be refused and the figures would say
    nothing of the product."""


@dataclass(slots=True)
class GoldenReport:
    questions: int = 0
    answerable: int = 0
    recall_at_10_before_rerank: float = 0.0
    mean_reciprocal_rank_after_rerank: float = 0.0
    exact_span_validity: float = 1.0
    citation_precision: float = 0.0
    answer_contains_gold: float = 0.0
    answer_token_f1: float = 0.0
    correct_refusal_rate: float = 0.0
    false_refusal_rate: float = 0.0
    unsafe_answers: int = 0
    """Answers that must not have been given: to a question the documents do not answer,
    or citing a passage whose scope contradicts the question's qualifiers (judged by the
    product's own scope checker, so only the first kind is an independent count)."""
    citations: int = 0
    generator: str = ""
    verifier: str = ""
    rerank_stages: list[str] = field(default_factory=list)
    """The stages after fusion that ranked the passages (settings change them)."""
    asked_as: str = ""
    """Who asked: a user's id, or the reader of everything the evaluation asks as by
    default (what a user may read changes what the gates let through)."""
    answer_ms: list[float] = field(default_factory=list)
    """End to end per question (retrieve, rerank, generate, verify, audit)."""
    failures: list[str] = field(default_factory=list)
    per_question: list[dict[str, object]] = field(default_factory=list)

    def by_kind(self) -> dict[str, dict[str, float]]:
        """Per question kind: how many, gold passage among the first 10 retrieved,
        answered with every gold quote, refused."""
        grouped: dict[str, list[dict[str, object]]] = defaultdict(list)
        for outcome in self.per_question:
            kinds = outcome.get("kinds") or ["plain"]
            for kind in kinds if isinstance(kinds, list) else [kinds]:
                grouped[str(kind)].append(outcome)
        return {
            kind: {
                "questions": len(rows),
                "recall_at_10": _share(
                    r["recalled_at_10"] is True for r in rows if "recalled_at_10" in r
                ),
                "mrr_before_rerank": _share(
                    1 / float(rank)
                    if isinstance(rank := r["gold_rank_before_rerank"], int)
                    else 0.0
                    for r in rows
                    if "gold_rank_before_rerank" in r
                ),
                "contains_gold": _share(r.get("contains_gold") is True for r in rows),
                "refused": _share(r["refused"] is True for r in rows),
            }
            for kind, rows in sorted(grouped.items())
        }

    def figures(self) -> dict[str, float]:
        return {
            name: getattr(self, name)
            for name in (
                "recall_at_10_before_rerank", "mean_reciprocal_rank_after_rerank",
                "exact_span_validity", "citation_precision", "answer_contains_gold",
                "answer_token_f1", "correct_refusal_rate", "false_refusal_rate",
                "unsafe_answers",
            )
        }  # fmt: skip


def _share(flags: object) -> float:
    values = list(flags)  # type: ignore[call-overload]
    return sum(values) / len(values) if values else 0.0


def latency(report: GoldenReport) -> dict[str, float]:
    """Answer latency p50 and p95 (interpolated: a p95 is never below the p50)."""
    if not report.answer_ms:
        return {}
    return {"p50_ms": percentile(report.answer_ms, 50), "p95_ms": percentile(report.answer_ms, 95)}


def reader_of_everything(appliance: Appliance) -> Subject:
    """A department head of every department, caring for every patient."""
    metas = [record.metadata for record in appliance.catalog.documents()]
    return Subject(
        "golden-evaluator",
        ("department_head",),
        tuple(sorted({d for m in metas for d in m.departments})),
        tuple(sorted({m.patient_id for m in metas if m.patient_id})),
    )


def gold_quotes(row: dict[str, Any]) -> list[dict[str, str]]:
    """An answerable golden row's expected passages, as ``{"doc_id", "quote"}``."""
    return row.get("gold") or [{"doc_id": row["doc_id"], "quote": row["quote"]}]


def gold_chunk_ids(catalog: Catalog, golds: list[dict[str, str]]) -> tuple[set[str], list[str]]:
    """The chunks that hold each gold quote, and a message for each quote found nowhere."""
    gold: set[str] = set()
    missing: list[str] = []
    for expected in golds:
        found = {
            chunk_id
            for chunk_id, chunk in catalog.chunks(
                sorted(catalog.chunk_ids_of(expected["doc_id"]))
            ).items()
            if expected["quote"] in chunk.index_text
        }
        if not found:
            missing.append(f"golden quote not found in {expected['doc_id']}: {expected['quote']!r}")
        gold |= found
    return gold, missing


def token_f1(answer: str, gold: str) -> float:
    predicted, expected = _TOKEN.findall(answer.lower()), _TOKEN.findall(gold.lower())
    common = sum(min(predicted.count(t), expected.count(t)) for t in set(expected))
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def evaluate(
    appliance: Appliance,
    golden_path: Path,
    progress: Callable[[int, int], None] | None = None,
    hold: Callable[[], AbstractContextManager[object]] = nullcontext,
    reader: Subject | None = None,
) -> GoldenReport:
    """Ask every golden question through the whole answer path; ``progress(done, total)``
    after each (with an LLM generator a run takes half an hour on the CPU). ``hold()``
    is entered around each question's work: a running service passes its engine lock,
    so that clinicians' questions go on between the evaluation's. ``reader``: who asks
    (default a reader of everything); what a clinician may read changes more than which
    passages are found, since the gates weigh words among the readable chunks."""
    rows = [json.loads(line) for line in golden_path.open(encoding="utf-8") if line.strip()]
    with hold():
        if not appliance.catalog.documents():
            raise NoDocuments(
                f"no documents in {appliance.settings.data_dir}: ingest the corpus the golden "
                f"set is about first (for the sample set: appliance ingest {SAMPLE_DIR})"
            )
        reader = reader or reader_of_everything(appliance)
    report = GoldenReport(
        questions=len(rows), rerank_stages=appliance.query.rerank_stages, asked_as=reader.user_id
    )
    tally = _Tally(appliance, reader, report)
    for row in _reporting(rows, progress):
        with hold():  # the service's questions wait only for this one
            tally.ask(row)
    return tally.finished()


@dataclass
class _Tally:
    """What the evaluation counts as it asks each golden question, and the report's
    figures at the end."""

    appliance: Appliance
    reader: Subject
    report: GoldenReport
    recalls: list[bool] = field(default_factory=list)
    reciprocal_ranks: list[float] = field(default_factory=list)
    contains: list[bool] = field(default_factory=list)
    f1s: list[float] = field(default_factory=list)
    refusals_correct: list[bool] = field(default_factory=list)
    refusals_false: list[bool] = field(default_factory=list)
    valid_spans: int = 0
    entailed_citations: int = 0

    def ask(self, row: dict[str, Any]) -> None:
        appliance, report, catalog = self.appliance, self.report, self.appliance.catalog
        question = row["question"]
        answerable = row.get("answerable", True)
        # As the clinician's page asks: with the documents in force on the day asked
        # about, today when the row names none.
        day = dt.date.fromisoformat(row["as_of"]) if "as_of" in row else dt.date.today()
        in_force = ActiveOn(day)
        started = time.perf_counter()
        answer = appliance.answers.ask(question, self.reader, in_force, in_force_on=day)
        report.answer_ms.append((time.perf_counter() - started) * 1000)
        report.generator, report.verifier = answer.generator, answer.verifier
        outcome: dict[str, object] = {
            "question": question,
            "answerable": answerable,
            "kinds": row.get("kinds", []),
            "refused": answer.refused,
            "refusal": answer.refusal_reason,
        }
        if "as_of" in row:
            outcome["as_of"] = row["as_of"]
        for verified in answer.sentences:
            for span in verified.spans:
                report.citations += 1
                text = catalog.document_text(span.doc_id) or ""
                self.valid_spans += text[span.start : span.end] == span.quote
                entailment = appliance.verifier.check(span.quote, verified.sentence.text)
                self.entailed_citations += entailment.entailed
        unsafe = not answerable and not answer.refused
        unsafe = unsafe or _cites_out_of_scope(appliance, question, answer)
        report.unsafe_answers += unsafe
        outcome["unsafe"] = unsafe
        if not answerable:
            self.refusals_correct.append(answer.refused)
            outcome["answer"] = " ".join(v.sentence.text for v in answer.sentences)
            report.per_question.append(outcome)
            return
        report.answerable += 1
        self.refusals_false.append(answer.refused)
        golds = gold_quotes(row)
        gold, missing = gold_chunk_ids(catalog, golds)
        report.failures.extend(missing)
        if not gold:
            return
        fused = appliance.retriever.retrieve(question, 10, in_force)
        recalled = any(c.chunk.chunk_id in gold for c in fused)
        self.recalls.append(recalled)
        fused_rank = next((n for n, c in enumerate(fused, 1) if c.chunk.chunk_id in gold), None)
        ranked = appliance.query.run(question, self.reader, 10, in_force).candidates
        rank = next((n for n, c in enumerate(ranked, 1) if c.chunk.chunk_id in gold), None)
        self.reciprocal_ranks.append(1 / rank if rank else 0.0)
        text = " ".join(v.sentence.text for v in answer.sentences)
        has_all = all(expected["quote"] in text for expected in golds)
        self.contains.append(has_all)
        quotes = " ".join(expected["quote"] for expected in golds)
        self.f1s.append(token_f1(text, quotes) if text else 0.0)
        outcome.update(
            recalled_at_10=recalled,
            gold_rank_before_rerank=fused_rank,
            gold_rank_after_rerank=rank,
            answer=text,
            contains_gold=has_all,
        )
        report.per_question.append(outcome)

    def finished(self) -> GoldenReport:
        report, citations = self.report, self.report.citations
        report.recall_at_10_before_rerank = _mean(self.recalls)
        report.mean_reciprocal_rank_after_rerank = _mean(self.reciprocal_ranks)
        report.exact_span_validity = self.valid_spans / citations if citations else 1.0
        report.citation_precision = self.entailed_citations / citations if citations else 0.0
        report.answer_contains_gold = _mean(self.contains)
        report.answer_token_f1 = _mean(self.f1s)
        report.correct_refusal_rate = _mean(self.refusals_correct)
        report.false_refusal_rate = _mean(self.refusals_false)
        return report


def _mean(values: list[bool] | list[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def _cites_out_of_scope(appliance: Appliance, question: str, answer: Answer) -> bool:
    """Whether a cited passage's scope contradicts the question's qualifiers."""
    if answer.refused:
        return False
    understood = appliance.question_reader.read(question)
    scope = appliance.scope_checker
    cited = {span.chunk_id: v.sentence.text for v in answer.sentences for span in v.spans}
    for chunk_id, chunk in appliance.catalog.chunks(sorted(cited)).items():
        asked = understood.qualifiers
        if scope.passage_conflict(asked, chunk) or scope.claim_conflict(
            asked, understood.search_text, chunk, cited[chunk_id]
        ):
            return True
    return False


def _reporting(
    rows: list[dict[str, Any]], progress: Callable[[int, int], None] | None
) -> Iterator[dict[str, Any]]:
    """The rows, with ``progress`` told after each one's work (``continue`` included)."""
    for done, row in enumerate(rows, start=1):
        yield row
        if progress is not None:
            progress(done, len(rows))


def check_gates(report: GoldenReport, gates_path: Path, as_a_user: bool = False) -> list[str]:
    """Every gate that fails, in words: ``[minimum]`` and ``[maximum]`` tables of figures,
    or the ``[as_a_user]`` tables' when the set was asked as one of the site's users
    (what they may not read is refused by design). A file without them gates a user as
    it gates the reader of everything: never no gate at all."""
    gates = tomllib.loads(gates_path.read_text(encoding="utf-8"))
    user_gates = gates.get("as_a_user", {})
    figures = report.figures()
    named = {
        name
        for table in (gates, user_gates)
        for bound in ("minimum", "maximum")
        for name in table.get(bound, {})
    }
    unknown = named - set(figures)
    if unknown:
        raise ValueError(f"{gates_path}: unknown figures {sorted(unknown)}")
    chosen = user_gates if as_a_user and user_gates else gates
    failed = []
    for name, floor in chosen.get("minimum", {}).items():
        if figures[name] < floor:
            failed.append(f"{name} {figures[name]:.3f} is below the gate {floor}")
    for name, ceiling in chosen.get("maximum", {}).items():
        if figures[name] > ceiling:
            failed.append(f"{name} {figures[name]:.3f} is above the gate {ceiling}")
    return failed

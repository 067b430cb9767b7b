"""Citation verifiers side by side: the lexical-structural fallback against the trained
NLI verifier (and any other NLI model installed in the role "verifier").

- SciFact dev (../shared/data/scifact/claims_dev.jsonl, never trained on): each claim
  against the rationale sentences of each cited abstract (SUPPORT or CONTRADICT), and
  NOT_ENOUGH_INFO claims against the first two sentences of their cited abstracts.
  Reported: support-versus-contradict accuracy, and the precision and recall of
  "entailed" over all pairs.
- NLI dev: the verifier's own held-out pairs (the same balanced draw and seed as its
  training run), three-way accuracy, support-versus-contradict accuracy over its
  entailed and contradicted pairs, and the precision of "entailed".
- Self-entailment: each sentence against itself, which any verifier must call entailed
  (an LLM that quotes a guideline sentence word for word must not lose it), over the
  SciFact dev claims and the sample golden set's quotes, and over the negated ones alone
  (the contrast pairs teach that negation goes with contradiction).
- With ``--negation-check``, also the NLI verifier asked about each claim and its
  negation together (an experiment the product does not use).

    APPLIANCE_DATA_DIR=... .venv/bin/python benchmarks/verifier.py [--per-label N]
        [--nli FILE ...] [--negation-check] [--out FILE]

``--nli`` names the files the verifier was trained on (default: every file in
../shared/data/nli), so that the held-out draw is the training run's own.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from appliance.engines import Appliance
from appliance.nlp.pair_classifier import load_pair_classifier
from appliance.settings import PROJECT_ROOT, Settings
from appliance.training.contrast_pairs import NEGATED, negate
from appliance.training.nli_verifier import LABELS, balance, read_nli
from appliance.verify.base import Entailment, EntailmentVerifier
from appliance.verify.lexical import LexicalVerifier
from appliance.verify.nli import NliVerifier

SHARED = PROJECT_ROOT.parent / "shared" / "data"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "verifier.json"
console = Console()


def scifact_pairs() -> list[tuple[str, str, str]]:
    """(premise, hypothesis, SUPPORT | CONTRADICT | NOT_ENOUGH_INFO)."""
    pairs = []
    for line in (SHARED / "scifact" / "claims_dev.jsonl").open(encoding="utf-8"):
        claim = json.loads(line)
        for abstract in claim["cited_abstracts"]:
            rationale = abstract.get("rationale_sentences") or []
            if claim["label"] in ("SUPPORT", "CONTRADICT") and rationale:
                sentences = [
                    abstract["sentences"][i] if isinstance(i, int) else i for i in rationale
                ]
                pairs.append((" ".join(sentences), claim["claim"], claim["label"]))
            elif claim["label"] == "NOT_ENOUGH_INFO":
                pairs.append(
                    (" ".join(abstract["sentences"][:2]), claim["claim"], "NOT_ENOUGH_INFO")
                )
    return pairs


def self_entailment_sentences() -> dict[str, list[str]]:
    """SciFact dev claims and the sample golden set's quotes, each once."""
    claims = [
        json.loads(line)["claim"]
        for line in (SHARED / "scifact" / "claims_dev.jsonl").open(encoding="utf-8")
    ]
    golden = PROJECT_ROOT / "appliance" / "sample_corpus" / "golden.jsonl"
    quotes = [
        gold["quote"]
        for line in golden.open(encoding="utf-8")
        if line.strip()
        for gold in json.loads(line).get("gold") or [json.loads(line)]
        if "quote" in gold
    ]
    return {"scifact_claims": sorted(set(claims)), "golden_quotes": sorted(set(quotes))}


def self_entailment(verifier: EntailmentVerifier, sentences: list[str]) -> dict[str, float]:
    """Share of sentences judged entailed by themselves: all, and the negated ones."""
    entailed = [verifier.check(s, s).entailed for s in sentences]
    negated = [e for s, e in zip(sentences, entailed, strict=True) if NEGATED.search(s)]
    return {
        "sentences": len(sentences),
        "entailed": float(np.mean(entailed)),
        "negated_sentences": len(negated),
        "negated_entailed": float(np.mean(negated)) if negated else float("nan"),
    }


class NegationCheckedVerifier:
    """An experiment (``--negation-check``), not used by the product: evidence that
    supports a claim contradicts the claim negated, so the verifier is asked both
    questions and the answers weighed together, hoping to catch a reversed finding that
    one question lets through. The negation is the training contrast pairs' own
    (``contrast_pairs.negate``). It did not help (docs/figures.md): the class stays so that the
    figure can be reproduced.

    A sentence is entailed only when the evidence entails it above the threshold *and*
    the support margin over the sentence and its negation is positive; a sentence the
    parse cannot negate is judged as before."""

    kind = "nli"

    def __init__(self, verifier: NliVerifier, nlp: Any) -> None:
        self._verifier = verifier
        self._nlp = nlp
        self.name = f"{verifier.name} + negation check"
        self.threshold = verifier.threshold

    def negations(self, sentences: Sequence[str]) -> list[str | None]:
        """Each sentence with its main clause negated, or None where the parse gives no
        place for a negation."""
        return [negate(doc) for doc in self._nlp.pipe(sentences)]

    def support_margins(
        self, premises: Sequence[str], hypotheses: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(P(entailment) of each pair, support margin of each pair). The margin is
        P(e) - P(c) for the sentence, averaged with P(c) - P(e) for its negation where
        there is one: above zero, the two questions together say "supported"."""
        entail = self._verifier.label_index("entailment")
        contradict = self._verifier.label_index("contradiction")
        rows = self._verifier.probabilities(list(premises), list(hypotheses))
        margins = rows[:, entail] - rows[:, contradict]
        negated = self.negations(hypotheses)
        where = [i for i, sentence in enumerate(negated) if sentence]
        if where:
            flipped = self._verifier.probabilities(
                [premises[i] for i in where], [negated[i] for i in where]
            )
            margins[where] = (margins[where] + flipped[:, contradict] - flipped[:, entail]) / 2
        return rows[:, entail], margins

    def check(self, evidence: str, sentence: str) -> Entailment:
        [score], [margin] = self.support_margins([evidence], [sentence])
        entailed = bool(score >= self.threshold and margin > 0)
        reasons = (f"P(entailment) = {score:.2f}", f"support margin with negation = {margin:.2f}")
        return Entailment(float(score), entailed, reasons)


NLI_KINDS = (NliVerifier, NegationCheckedVerifier)


def says_support(
    verifier: NliVerifier | NegationCheckedVerifier, pairs: list[tuple[str, str, str]]
) -> np.ndarray:
    """Support versus contradict, for pairs known to be one of the two: which is likelier
    by the model, or by the model asked about the claim and its negation."""
    premises, hypotheses = [p for p, _, _ in pairs], [h for _, h, _ in pairs]
    if isinstance(verifier, NegationCheckedVerifier):
        return verifier.support_margins(premises, hypotheses)[1] > 0
    rows = verifier.probabilities(premises, hypotheses)
    return (
        rows[:, verifier.label_index("entailment")] > rows[:, verifier.label_index("contradiction")]
    )


def evaluate(verifier: EntailmentVerifier, pairs: list[tuple[str, str, str]]) -> dict[str, float]:
    start = time.perf_counter()
    entailed = np.array(
        [verifier.check(premise, hypothesis).entailed for premise, hypothesis, _ in pairs]
    )
    per_pair_ms = (time.perf_counter() - start) * 1000 / len(pairs)
    gold = np.array([label for _, _, label in pairs])
    decided = gold != "NOT_ENOUGH_INFO"
    supported = gold == "SUPPORT"
    support = says_support(verifier, pairs) if isinstance(verifier, NLI_KINDS) else entailed
    return {
        "pairs": len(pairs),
        "support_vs_contradict_accuracy": float(np.mean(support[decided] == supported[decided])),
        "entailed_precision": float(np.sum(entailed & supported) / max(1, entailed.sum())),
        "entailed_recall": float(np.sum(entailed & supported) / max(1, supported.sum())),
        "ms_per_pair": per_pair_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--per-label", type=int, default=None,
        help="as in the training run (default: no cap, as train-verifier's default)",
    )  # fmt: skip
    parser.add_argument(
        "--nli", type=Path, nargs="+", default=sorted((SHARED / "nli").glob("*.jsonl")),
        help="the NLI files of the training run, as its --data (default: all of them)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--held-out", type=float, default=0.1)
    parser.add_argument(
        "--negation-check", action="store_true",
        help="also the NLI verifier asked about each claim and its negation (an experiment)",
    )  # fmt: skip
    parser.add_argument(
        "--compare-with", type=Path, default=None,
        help="another NLI model directory, judged beside the installed verifier with its "
        "threshold (the full-precision model that the shipped half-precision one came from)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the figures go")
    args = parser.parse_args()
    with Appliance(Settings()) as appliance:
        verifiers: list[EntailmentVerifier] = [LexicalVerifier()]
        if appliance.verifier.kind == "nli":
            verifiers.append(appliance.verifier)
            if args.negation_check:
                nlp = appliance.registry.load("spacy-vectors")
                verifiers.append(NegationCheckedVerifier(appliance.verifier, nlp))
            if args.compare_with is not None:
                installed = appliance.verifier
                verifiers.append(
                    NliVerifier(
                        load_pair_classifier(args.compare_with),
                        f"{args.compare_with.name} (from {args.compare_with})",
                        installed.threshold,  # type: ignore[attr-defined]
                    )
                )
        scifact = scifact_pairs()
        own_words = self_entailment_sentences()
        chosen = balance(read_nli(args.nli), args.per_label, random.Random(args.seed))
        held = chosen[: max(1, int(len(chosen) * args.held_out))]
        nli = [(p.premise, p.hypothesis, p.label) for p in held]
        figures: dict[str, dict[str, object]] = {}
        for verifier in verifiers:
            row: dict[str, object] = {"kind": verifier.kind, "scifact": evaluate(verifier, scifact)}
            entailed = np.array([verifier.check(p, h).entailed for p, h, _ in nli])
            gold = np.array([label == "entailment" for _, _, label in nli])
            row["nli_held_out"] = {
                "pairs": len(nli),
                "entailed_precision": float(np.sum(entailed & gold) / max(1, entailed.sum())),
                "entailed_recall": float(np.sum(entailed & gold) / max(1, gold.sum())),
            }
            if isinstance(verifier, NliVerifier):
                rows = verifier.probabilities([p for p, _, _ in nli], [h for _, h, _ in nli])
                order = [verifier.label_index(label) for label in LABELS]
                predicted = np.array(LABELS)[rows[:, order].argmax(1)]
                row["nli_held_out"]["three_way_accuracy"] = float(
                    np.mean(predicted == [lab for _, _, lab in nli])
                )
            if isinstance(verifier, NLI_KINDS):
                decided = [(p, h, lab) for p, h, lab in nli if lab != "neutral"]
                support = np.array([lab == "entailment" for _, _, lab in decided])
                row["nli_held_out"]["support_vs_contradict_accuracy"] = float(
                    np.mean(says_support(verifier, decided) == support)
                )
            row["self_entailment"] = {
                name: self_entailment(verifier, sentences) for name, sentences in own_words.items()
            }
            figures[verifier.name] = row
    table = Table(title="citation verifiers")
    for column in ("verifier", "SciFact support vs contradict acc.", "SciFact entailed P / R",
                   "NLI held-out entailed P / R", "NLI 3-way acc.", "ms/pair"):  # fmt: skip
        table.add_column(column)
    for name, row in figures.items():
        sci, held_out = row["scifact"], row["nli_held_out"]
        table.add_row(
            f"{name} ({row['kind']})",
            f"{sci['support_vs_contradict_accuracy']:.3f}",  # type: ignore[index]
            f"{sci['entailed_precision']:.3f} / {sci['entailed_recall']:.3f}",  # type: ignore[index]
            f"{held_out['entailed_precision']:.3f} / {held_out['entailed_recall']:.3f}",  # type: ignore[index]
            f"{held_out.get('three_way_accuracy', float('nan')):.3f}",  # type: ignore[union-attr]
            f"{sci['ms_per_pair']:.1f}",  # type: ignore[index]
        )
    console.print(table)
    selves = Table(title="sentences judged entailed by themselves (all / negated)")
    selves.add_column("verifier")
    for name in own_words:
        selves.add_column(name)
    for name, row in figures.items():
        cells = row["self_entailment"].values()  # type: ignore[attr-defined]
        selves.add_row(
            name,
            *(f"{c['entailed']:.3f} / {c['negated_entailed']:.3f} ({c['negated_sentences']})"
              for c in cells),
        )  # fmt: skip
    console.print(selves)
    command = " ".join(["benchmarks/verifier.py", *sys.argv[1:]])
    args.out.write_text(json.dumps({"command": command, **figures}, indent=2) + "\n")
    console.print(f"written to {args.out}")


if __name__ == "__main__":
    main()

"""Contrast pairs for the verifier: claims negated on their real spaCy parse."""

from __future__ import annotations

import pytest

from appliance.training.contrast_pairs import contrast_pairs, negate, reverse_direction
from appliance.training.nli_verifier import NliPair


@pytest.mark.parametrize(
    ("claim", "negated"),
    [
        ("Aspirin reduces the severity of migraines.",
         "Aspirin does not reduce the severity of migraines."),
        ("Antidepressants reduce the severity of migraines.",
         "Antidepressants do not reduce the severity of migraines."),
        ("The trial recruited 300 patients.", "The trial did not recruit 300 patients."),
        ("Elevated lactate is associated with mortality.",
         "Elevated lactate is not associated with mortality."),
        ("Sepsis can be diagnosed from cultures.", "Sepsis can not be diagnosed from cultures."),
        ("Amitriptyline is an effective treatment.", "Amitriptyline is not an effective treatment."),
        ("Folic acid does not affect kidney disease progression.",
         "Folic acid does affect kidney disease progression."),
        ("Folic acid doesn't affect kidney disease progression.",
         "Folic acid does affect kidney disease progression."),
        ("Most patients receive no treatment.", "Most patients receive treatment."),
    ],
)  # fmt: skip
def test_the_main_clause_is_negated(spacy_pipeline, claim: str, negated: str) -> None:
    assert negate(spacy_pipeline(claim)) == negated


def test_a_claim_without_a_clause_gives_nothing(spacy_pipeline) -> None:
    assert negate(spacy_pipeline("Lower mortality in treated patients.")) is None


def test_direction_words_reverse_but_not_in_a_negated_claim() -> None:
    assert reverse_direction("Exercise increases insulin sensitivity.") == (
        "Exercise decreases insulin sensitivity."
    )
    assert reverse_direction("Higher doses lower blood pressure.") == (
        "Lower doses lower blood pressure."
    )
    assert reverse_direction("Walking did not improve lung function.") is None
    assert reverse_direction("Aspirin is an analgesic.") is None


def test_contrast_pairs_flip_labels_and_touch_only_the_named_file(spacy_pipeline) -> None:
    evidence = "In the trial, exercise increased insulin sensitivity."
    pairs = [
        NliPair(evidence, "Exercise increases insulin sensitivity.", "entailment", "sci"),
        NliPair(evidence, "Exercise has no effect on insulin sensitivity.", "contradiction", "sci"),
        NliPair(evidence, "Exercise causes fatigue.", "neutral", "sci"),
        NliPair(evidence, "Exercise increases insulin sensitivity.", "entailment", "other"),
    ]
    added = {
        (p.hypothesis, p.label, p.source) for p in contrast_pairs(pairs, ["sci"], spacy_pipeline)
    }
    variants = {
        ("Exercise does not increase insulin sensitivity.", "contradiction", "sci"),
        ("Exercise decreases insulin sensitivity.", "contradiction", "sci"),
        ("Exercise has effect on insulin sensitivity.", "entailment", "sci"),
    }
    claims = {
        "Exercise increases insulin sensitivity.",
        "Exercise has no effect on insulin sensitivity.",
    }
    # every claim and variant also as its own premise, entailed, and not repeated with "sci"
    selves = {(h, "entailment", "sci (self)") for h in claims | {h for h, _, _ in variants}}
    assert added == variants | selves
    assert all(
        p.premise == p.hypothesis
        for p in contrast_pairs(pairs, ["sci"], spacy_pipeline)
        if p.source == "sci (self)"
    )

"""Training a tiny NLI verifier and using it through the registry in the answer path."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from appliance.cli import app
from appliance.engines import Appliance
from appliance.model_registry import ModelRegistry
from appliance.training.nli_verifier import (
    LABELS,
    NliPair,
    balance,
    best_entailment_threshold,
    detokenise,
    parse_repeats,
    read_nli,
    repeat_in_domain,
)
from appliance.verify.nli import NliVerifier
from benchmarks.verifier import NegationCheckedVerifier
from tests.conftest import SAMPLE_READER, make_settings

NLI = Path(__file__).resolve().parents[3] / "shared" / "data" / "nli"
runner = CliRunner()


def test_tokenised_text_is_detokenised() -> None:
    assert detokenise("Two women ca n't hold `` to go '' packages .") == (
        'Two women can\'t hold "to go" packages.'
    )


def test_labels_are_balanced_to_the_rarest() -> None:
    pairs = [
        NliPair("p", "h", label, "s")
        for label in ["entailment"] * 9 + ["neutral"] * 5 + ["contradiction"] * 3
    ]
    chosen = balance(pairs, None, random.Random(1))
    assert (
        sorted(p.label for p in chosen)
        == ["contradiction"] * 3 + ["entailment"] * 3 + ["neutral"] * 3
    )


def test_in_domain_pairs_repeat_only_where_asked() -> None:
    pairs = [NliPair("p", "h", "entailment", "scifact.train.jsonl"),
             NliPair("p", "h", "neutral", "snli.dev.jsonl")]  # fmt: skip
    repeated = repeat_in_domain(pairs, parse_repeats(["scifact.train.jsonl=3"]))
    assert [p.source for p in repeated] == ["scifact.train.jsonl"] * 3 + ["snli.dev.jsonl"]
    for bad in ("scifact.train.jsonl", "=2", "scifact.train.jsonl=0", "x=two"):
        with pytest.raises(ValueError, match="FILE_NAME=TIMES"):
            parse_repeats([bad])


@pytest.mark.parametrize(
    ("option", "value"), [("--repeat", "other.jsonl=2"), ("--contrast", "other.jsonl")]
)
def test_a_file_named_but_not_trained_on_is_refused(
    tmp_path: Path, option: str, value: str
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "entailment"}))
    arguments = ["models", "train-verifier", "--data", str(pairs), option, value]
    result = runner.invoke(app, arguments, env={"APPLIANCE_DATA_DIR": str(tmp_path / "data")})
    assert result.exit_code == 2 and f"{option} names files that are not among --data" in (
        result.output
    )
    assert not (tmp_path / "data" / "models").exists()


def test_starting_weights_from_a_role_without_a_model_are_refused(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "entailment"}))
    arguments = ["models", "train-verifier", "--data", str(pairs), "--base", "no-such-role"]
    result = runner.invoke(app, arguments, env={"APPLIANCE_DATA_DIR": str(tmp_path / "data")})
    assert result.exit_code == 2
    assert "--base no-such-role: no model manifest for the role 'no-such-role'" in result.output
    assert not (tmp_path / "data" / "models").exists()


def test_the_threshold_favours_precision() -> None:
    probabilities = np.array([0.95, 0.9, 0.6, 0.55, 0.4, 0.1])
    entailed = np.array([True, True, False, True, False, False])
    threshold, _score = best_entailment_threshold(probabilities, entailed)
    assert 0.6 < threshold <= 0.9


def test_the_scifact_evaluation_is_never_trained_on(tmp_path: Path) -> None:
    evaluation = tmp_path / "claims_dev.jsonl"
    evaluation.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "entailment"}))
    with pytest.raises(ValueError, match="never trains on it"):
        read_nli([evaluation])


@pytest.mark.skipif(not NLI.exists(), reason="needs ../shared/data")
def test_train_a_tiny_verifier_and_answer_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus_copy: Path
) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(data_dir))
    arguments = ["models", "train-verifier", "--data", str(NLI / "scifact.train.jsonl"),
                 "--contrast", "scifact.train.jsonl", "--per-label", "30", "--max-length", "64"]  # fmt: skip
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    # stderr is not a terminal here: progress comes as log lines, ending at the last step
    steps = [line for line in result.stderr.splitlines() if line.startswith("training steps: ")]
    assert steps and "(100%)" in steps[-1]
    registry = ModelRegistry(make_settings(data_dir))
    manifest = registry.manifest("verifier")
    assert manifest.kind == "cross-encoder" and manifest.threshold is not None
    assert "train-verifier" in manifest.provenance["command"]
    assert manifest.provenance["base_model"] == "all-MiniLM-L6-v2 (role embedder)"
    assert manifest.licence == "Apache-2.0 (weights derived from all-MiniLM-L6-v2)"
    verifier = NliVerifier(registry.load("verifier"), manifest.name, manifest.threshold)
    verdict = verifier.check("Aspirin lowers fever.", "Aspirin lowers fever.")
    assert 0.0 <= verdict.score <= 1.0 and len(verdict.reasons) == 3
    long_sentence = "The patient received the dose again. " * 80  # longer than max_length alone
    assert 0.0 <= verifier.check("A short premise.", long_sentence).score <= 1.0
    assert_negation_check_weighs_both_questions(verifier, registry)

    with Appliance(make_settings(data_dir)) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        assert appliance.verifier.kind == "nli"
        answer = appliance.answers.ask(
            "How long should I rub my hands with alcohol gel?", SAMPLE_READER
        )
        assert answer.verifier == manifest.name


def assert_negation_check_weighs_both_questions(
    verifier: NliVerifier, registry: ModelRegistry
) -> None:
    """The support margin is P(e) - P(c) for the claim averaged with P(c) - P(e) for its
    negation; a sentence the parse cannot negate keeps the model's own margin."""
    checked = NegationCheckedVerifier(verifier, registry.load("spacy-vectors"))
    premise, claim, fragment = "Aspirin lowers fever in adults.", "Aspirin lowers fever.", "Fever."
    assert checked.negations([claim, fragment]) == ["Aspirin does not lower fever.", None]
    e, c = verifier.label_index("entailment"), verifier.label_index("contradiction")
    asked = verifier.probabilities(
        [premise] * 3, [claim, "Aspirin does not lower fever.", fragment]
    )
    scores, margins = checked.support_margins([premise, premise], [claim, fragment])
    both = ((asked[0, e] - asked[0, c]) + (asked[1, c] - asked[1, e])) / 2
    assert margins == pytest.approx([both, asked[2, e] - asked[2, c]], abs=1e-4)
    assert scores == pytest.approx([asked[0, e], asked[2, e]], abs=1e-4)
    verdict = checked.check(premise, claim)
    assert verdict.entailed == (verdict.score >= verifier.threshold and margins[0] > 0)


@pytest.mark.skipif(not NLI.exists(), reason="needs ../shared/data")
def test_a_second_round_starts_from_the_installed_verifier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training may continue from a verifier trained earlier (--base verifier); the new
    manifest names that verifier as its base, and its licence follows the base's."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(data_dir))
    arguments = ["models", "train-verifier", "--data", str(NLI / "scifact.train.jsonl"),
                 "--per-label", "20", "--max-length", "64"]  # fmt: skip
    assert runner.invoke(app, arguments).exit_code == 0
    result = runner.invoke(app, [*arguments, "--base", "verifier", "--name", "round-2"])
    assert result.exit_code == 0, result.output
    registry = ModelRegistry(make_settings(data_dir))
    manifest = registry.manifest("verifier")
    assert manifest.name == "round-2"
    assert manifest.provenance["base_model"] == "verifier-minilm-nli (role verifier)"
    assert manifest.licence == "Apache-2.0 (weights derived from verifier-minilm-nli)"
    verifier = NliVerifier(registry.load("verifier"), manifest.name, manifest.threshold or 0.5)
    assert {verifier.label_index(label) for label in LABELS} == {0, 1, 2}

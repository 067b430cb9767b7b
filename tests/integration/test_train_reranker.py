"""Training a tiny cross-encoder and loading it back through the model registry."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from appliance.answer import NOT_RELEVANT
from appliance.cli import app
from appliance.engines import Appliance
from appliance.model_registry import ModelRegistry
from appliance.rerank.cross_encoder import CrossEncoderReranker
from appliance.training.cross_encoder import Pair, best_threshold, split_by_group
from tests.conftest import SAMPLE_READER, audit_entries, make_settings

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
TRAIN = SHARED / "rerank_train" / "hotpotqa.train.jsonl"
runner = CliRunner()


def test_held_out_split_keeps_each_question_on_one_side() -> None:
    pairs = [Pair(f"q{i // 3}", "q", f"p{i}", float(i % 3 == 0)) for i in range(60)]
    train, held = split_by_group(pairs, 0.2, random.Random(1))
    assert {p.group for p in train}.isdisjoint({p.group for p in held})
    assert len(train) + len(held) == 60 and len({p.group for p in held}) == 4


def test_threshold_is_chosen_for_the_best_f1() -> None:
    probabilities = np.array([0.9, 0.8, 0.7, 0.3, 0.2, 0.1])
    labels = np.array([1, 1, 1, 0, 0, 0])
    threshold, f1 = best_threshold(probabilities, labels)
    assert 0.3 < threshold <= 0.7 and f1 == 1.0


@pytest.mark.skipif(not TRAIN.exists(), reason="needs ../shared/data")
def test_train_a_tiny_reranker_and_use_it_through_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus_copy: Path
) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(data_dir))
    arguments = ["models", "train-reranker", "--train", str(TRAIN), "--limit", "5", "--epochs", "1"]
    result = runner.invoke(app, [*arguments, "--max-length", "64", "--negatives", "2"])
    assert result.exit_code == 0, result.output
    registry = ModelRegistry(make_settings(data_dir))
    manifest = registry.manifest("reranker")
    assert manifest.kind == "cross-encoder" and 0.0 < (manifest.threshold or 0) < 1.0
    assert manifest.provenance["trained_on"] == str(TRAIN)
    assert "train-reranker" in manifest.provenance["command"]
    assert manifest.provenance["base_model"] == "all-MiniLM-L6-v2 (role embedder)"
    assert manifest.licence == "Apache-2.0 (weights derived from all-MiniLM-L6-v2)"
    resolved = registry.resolve("reranker")  # every file checked against its sha256
    assert (resolved.directory / "training.json").is_file()
    reranker = CrossEncoderReranker(registry.load("reranker"), manifest.threshold)
    logits = reranker.scores(
        "Who directed the film?", ["The film was directed by Jane Roe.", "Rain."]
    )
    assert logits.shape == (2,) and np.all(np.isfinite(logits))

    with Appliance(make_settings(data_dir)) as appliance:
        appliance.ingestor.ingest([corpus_copy])
        candidates = appliance.query.run(
            "which apron for contact precautions", SAMPLE_READER, 5
        ).candidates
        assert appliance.query.relevance_threshold == manifest.threshold
        assert appliance.query.rerank_stages == [
            f"cross-encoder (top 20, threshold {manifest.threshold:.2f})",
            "CAGE (top 10, alpha 0.7, 30 epochs)",
        ]
        answer = appliance.answers.ask("which apron for contact precautions", SAMPLE_READER)
        record = audit_entries(data_dir, "answer")[-1]["details"]
        assert record["relevance_signal"] == "cross-encoder"
        assert record["relevance_floor"] == manifest.threshold
        below = max(record["relevance"].values()) < manifest.threshold
        assert (answer.refusal_reason == NOT_RELEVANT) == below
    assert all(0.0 <= c.scores["cross_encoder"] <= 1.0 for c in candidates)
    for candidate in candidates:  # CAGE's similarity term is the cross-encoder's probability
        expected = (
            0.7 * candidate.scores["cross_encoder"] + 0.3 * candidate.scores["cage_coherence"]
        )
        assert abs(candidate.scores["cage"] - expected) < 1e-5


def test_evaluation_files_are_refused_for_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_DATA_DIR", str(tmp_path))
    evaluation = tmp_path / "hotpotqa.dev.jsonl"
    evaluation.write_text("{}\n")
    result = runner.invoke(app, ["models", "train-reranker", "--train", str(evaluation)])
    assert result.exit_code == 2
    assert not (tmp_path / "models").exists()

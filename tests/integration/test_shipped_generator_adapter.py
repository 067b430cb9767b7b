"""The answer generator's LoRA adapter the product ships (models/generator-lora-smollm2):
the registry verifies it, ``appliance models merge-generator`` merges it into the base
GGUF the llm-small package installs, and the llama.cpp server answers with the result
as it would with any registered model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from appliance.cli import app
from appliance.engines import Appliance
from appliance.model_registry import ModelRegistry
from appliance.settings import GeneratorSettings
from tests.conftest import SAMPLE_CORPUS, make_settings
from tests.integration.test_answers import CLINICIAN_ED, TODAY

pytest.importorskip("llama_cpp.server", reason="needs the llm extra: make install-llm")
pytest.importorskip("peft")

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "generator-lora-smollm2"


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("shipped-adapter")
    result = CliRunner().invoke(
        app, ["models", "merge-generator"], env={"APPLIANCE_DATA_DIR": str(data)}
    )
    assert result.exit_code == 0, result.output
    return data


def test_the_shipped_adapter_is_small_verified_and_names_its_recipe(tmp_path: Path) -> None:
    registry = ModelRegistry(make_settings(tmp_path))
    adapter = registry.resolve("llm-tuned-adapter")  # every file's sha256 checked
    assert adapter.directory == SHIPPED and adapter.manifest.kind == "lora-adapter"
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 20 * 1024 * 1024
    report = json.loads((SHIPPED / "training.json").read_text())
    assert report["base"] == registry.manifest("llm-small").name
    command = adapter.manifest.provenance["command"]
    for evaluation_set in (  # never trained on
        "appliance/sample_corpus/golden.jsonl",
        "appliance/sample_corpus/golden-graph.jsonl",
        "../shared/data/clinical/dev.jsonl",
    ):
        assert f"--exclude {evaluation_set}" in command


def test_merge_generator_registers_it_as_the_tuned_generator(merged: Path) -> None:
    registry = ModelRegistry(make_settings(merged))
    tuned = registry.manifest("llm-tuned")
    assert tuned.kind == "gguf"
    assert tuned.provenance["adapter"].endswith("(role llm-tuned-adapter)")
    assert "train-generator" in tuned.provenance["command"]
    model_file: Path = registry.load("llm-tuned")
    assert model_file == merged / "models" / "generator-lora" / "gguf" / "model.gguf"


def test_llama_cpp_answers_with_the_merged_adapter_and_its_quote_is_verified(
    merged: Path, tmp_path: Path
) -> None:
    """Each prompt fences the passages with a fresh random nonce, and the 135M model's
    answer depends on those tokens: asked the same question twelve times it answered
    seven and wrote nothing verifiable five. So the question is asked until it is
    answered (at most eight times: all eight refused at that rate is under 0.1%), and
    every answer shown must quote the document verbatim."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(SAMPLE_CORPUS / "hand-hygiene-policy.md", corpus)
    settings = make_settings(
        merged, generator=GeneratorSettings(kind="llama-cpp", model_role="llm-tuned")
    )
    with Appliance(settings) as appliance:
        assert not appliance.ingestor.ingest([corpus]).failed
        answered = []
        for _ in range(8):
            answer = appliance.answers.ask(
                "How long should I rub my hands with alcohol gel?", CLINICIAN_ED, in_force_on=TODAY
            )
            assert answer.generator.startswith("llama-cpp:generator-lora")
            for verified in answer.sentences:
                for span in verified.spans:
                    text = appliance.catalog.document_text(span.doc_id)
                    assert span.doc_id.startswith("hand-hygiene")
                    assert text is not None and text[span.start : span.end] == span.quote
            if not answer.refused:
                answered.append(answer)
                break
        assert answered, "eight refusals in a row"
        assert any(v.spans for v in answered[0].sentences)

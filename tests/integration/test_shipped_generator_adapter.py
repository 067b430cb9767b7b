"""The answer generator's LoRA adapter the product ships (models/generator-lora-smollm2):
the registry verifies it, ``appliance models merge-generator`` merges it into the base
GGUF the llm-small package installs, and the llama.cpp server answers with the result
as it would with any registered model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from appliance.cli import app
from appliance.engines import Appliance
from appliance.generate.base import ContextPassage
from appliance.generate.prompt import answer_schema
from appliance.model_registry import ModelRegistry
from appliance.settings import GeneratorSettings
from tests.conftest import SAMPLE_CORPUS, audit_entries, make_settings
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


def test_llama_cpp_serves_the_merged_adapter_its_answer_follows_the_schema_and_repeats(
    merged: Path, tmp_path: Path
) -> None:
    """The merged model, served by llama.cpp, writes the answer schema with quotes that
    are exact spans of its passages; every span shown is verbatim in the document; and
    the same question on the same documents, asked again after a restart, gets the same
    prompt (the fence nonce is keyed) and so the same answer.

    Whether the 135M model picks the sentence that answers is a quality figure, measured
    by benchmarks/generator_finetune.py, not a property a test can hold: on this question
    it often quotes the document's banner, which verification rejects (a refusal)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(SAMPLE_CORPUS / "hand-hygiene-policy.md", corpus)
    settings = make_settings(
        merged, generator=GeneratorSettings(kind="llama-cpp", model_role="llm-tuned")
    )
    question = "How long should I rub my hands with alcohol gel?"
    answers = []
    for _ in range(2):  # a fresh server each time: no prompt cache carried over
        with Appliance(settings) as appliance:
            if not answers:
                assert not appliance.ingestor.ingest([corpus]).failed
            answer = appliance.answers.ask(question, CLINICIAN_ED, in_force_on=TODAY)
            assert answer.generator.startswith("llama-cpp:generator-lora")
            for verified in answer.sentences:
                for span in verified.spans:
                    text = appliance.catalog.document_text(span.doc_id)
                    assert span.doc_id.startswith("hand-hygiene")
                    assert text is not None and text[span.start : span.end] == span.quote
            answers.append(answer)
            record = audit_entries(merged, "answer")[-1]
            context = list(record["details"]["relevance"])
            chunks = appliance.catalog.chunks(context)
            passages = [ContextPassage(n, chunks[c]) for n, c in enumerate(context, start=1)]
            document = json.loads(record["details"]["raw_output"])
            jsonschema.validate(document, answer_schema(passages))
            for sentence in document["sentences"]:
                for citation in sentence["citations"]:
                    assert citation["quote"] in chunks[citation["chunk_id"]].text
    first, second = audit_entries(merged, "answer")[-2:]
    assert first["details"]["raw_output"] == second["details"]["raw_output"]
    assert answers[0].refused == answers[1].refused
    assert [v.sentence.text for v in answers[0].sentences] == [
        v.sentence.text for v in answers[1].sentences
    ]

"""A tiny LoRA run of the answer generator, end to end: ``appliance models
train-generator`` trains a few steps from the registry's SmolLM2 GGUF on public data,
saves the adapter and its base as a Hugging Face directory (what vLLM serves), writes the
base GGUF with the adapter merged and registers it; the merged file holds exactly the
weights of base plus adapter (read back by transformers' own GGUF reader), and the
llama.cpp generator serves it through the registry and answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from appliance.cli import app
from appliance.engines import Appliance
from appliance.generate.openai_compatible import OpenAICompatibleGenerator
from appliance.model_registry import ModelRegistry
from appliance.settings import GeneratorSettings
from appliance.training.generator_lora import load_base
from tests.conftest import SAMPLE_CORPUS, audit_entries, make_settings
from tests.integration.test_answers import CLINICIAN_ED, TODAY

pytest.importorskip("llama_cpp.server", reason="needs the llm extra: make install-llm")
pytest.importorskip("peft")

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("generator-data")
    result = CliRunner().invoke(
        app,
        ["models", "train-generator", "--pubmedqa", str(DATA / "pubmedqa" / "pqa_l.jsonl"),
         "--per-source", "3", "--held-out", "1", "--steps", "2", "--accumulate", "1",
         "--learning-rate", "0.01", "--name", "tiny-lora", "--role", "llm-tiny"],
        env={"APPLIANCE_DATA_DIR": str(data)},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 steps" in result.output
    return data


def test_the_adapter_and_its_report_are_saved(trained: Path) -> None:
    adapter = trained / "models" / "tiny-lora" / "adapter"
    report = json.loads((adapter / "training.json").read_text())
    assert report["steps"] == 2 and report["examples_used"] == 2
    assert len(report["loss_by_step"]) == 2 and report["held_out_loss"] is not None
    weights = adapter / "adapter_model.safetensors"
    assert weights.stat().st_size < 20 * 1024 * 1024  # small enough to commit


def test_the_merged_gguf_holds_what_vllm_serves_base_and_adapter(trained: Path) -> None:
    """vLLM serves the saved Hugging Face base with the PEFT adapter on top; llama.cpp the
    merged GGUF: the same weights."""
    from peft import PeftModel

    registry = ModelRegistry(make_settings(trained))
    merged_file: Path = registry.load("llm-tiny")  # checksums verified
    base, _tokenizer = load_base(trained / "models" / "tiny-lora" / "base")
    assert base.config.architectures == ["LlamaForCausalLM"]
    names = ("model.layers.0.self_attn.q_proj.weight", "model.layers.7.self_attn.k_proj.weight",
             "model.layers.29.mlp.down_proj.weight")  # fmt: skip
    untouched = {n: p.detach().numpy().copy() for n, p in base.named_parameters() if n in names}
    expected = PeftModel.from_pretrained(base, trained / "models" / "tiny-lora" / "adapter")
    wanted = dict(expected.merge_and_unload().named_parameters())
    exported, _ = load_base(merged_file.parent, merged_file.name)
    got = dict(exported.named_parameters())
    for name in names:
        merged_weight = wanted[name].detach().numpy()
        assert np.abs(got[name].detach().numpy() - merged_weight).max() < 2e-3
        assert np.abs(merged_weight - untouched[name]).max() > 1e-3


def test_the_llama_cpp_generator_serves_the_tuned_model(trained: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(SAMPLE_CORPUS / "hand-hygiene-policy.md", corpus)
    settings = make_settings(
        trained,
        generator=GeneratorSettings(kind="llama-cpp", model_role="llm-tiny", max_tokens=128),
    )
    with Appliance(settings) as appliance:
        assert not appliance.ingestor.ingest([corpus]).failed
        generator = appliance.generator
        assert isinstance(generator, OpenAICompatibleGenerator) and generator._server is not None
        assert generator._server.model_path.parent == trained / "models" / "tiny-lora" / "gguf"
        answer = appliance.answers.ask(
            "How long should I rub my hands with alcohol gel?", CLINICIAN_ED, in_force_on=TODAY
        )
        assert answer.generator.startswith("llama-cpp:tiny-lora")
        (record,) = [
            e for e in audit_entries(trained, "answer") if e["request_id"] == answer.request_id
        ]
        assert record["details"]["raw_output"]  # what the tuned model wrote, kept for the audit


def _gguf_tensors(path: Path) -> dict[str, np.ndarray]:
    import gguf

    return {t.name: np.array(t.data) for t in gguf.GGUFReader(path).tensors}


def test_merge_generator_rebuilds_the_merged_model_from_the_registered_adapter(
    trained: Path,
) -> None:
    """train-generator registers its adapter; merge-generator, reading it back onto the
    base, writes the same merged GGUF that training wrote: how a site serves a shipped
    adapter without training."""
    registry = ModelRegistry(make_settings(trained))
    adapter = registry.resolve("llm-tiny-adapter")
    assert adapter.manifest.kind == "lora-adapter"
    assert adapter.directory == trained / "models" / "tiny-lora" / "adapter"
    result = CliRunner().invoke(
        app,
        ["models", "merge-generator", "--adapter", "llm-tiny-adapter", "--name", "tiny-again",
         "--role", "llm-tiny-again", "--vllm"],
        env={"APPLIANCE_DATA_DIR": str(trained)},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    registry = ModelRegistry(make_settings(trained))
    again: Path = registry.load("llm-tiny-again")
    assert again == trained / "models" / "tiny-again" / "gguf" / "model.gguf"
    for_vllm = trained / "models" / "tiny-again"  # --vllm: the base and the adapter beside it
    assert (for_vllm / "base" / "config.json").is_file()
    for adapter_file in adapter.manifest.files:
        copied = for_vllm / "adapter" / adapter_file.path
        assert copied.read_bytes() == (adapter.directory / adapter_file.path).read_bytes()
    provenance = registry.manifest("llm-tiny-again").provenance
    assert provenance["adapter"].endswith("(role llm-tiny-adapter)")
    assert "train-generator" in provenance["command"]  # the adapter's own recipe, kept
    trained_tensors = _gguf_tensors(registry.load("llm-tiny"))
    merged_tensors = _gguf_tensors(again)
    assert trained_tensors.keys() == merged_tensors.keys()
    for name, weights in trained_tensors.items():
        assert merged_tensors[name].dtype == weights.dtype
        if weights.dtype == np.float16:
            assert np.abs(merged_tensors[name].astype(np.float32) - weights).max() < 1e-3, name
        else:
            assert np.array_equal(merged_tensors[name], weights), name


def test_merge_generator_refuses_a_base_the_adapter_was_not_trained_on(trained: Path) -> None:
    """An adapter's deltas on another base are noise: refused, nothing registered."""
    manifests = trained / "models" / "manifests"
    llm_small = Path(__file__).resolve().parents[2] / "models" / "manifests" / "llm-small.toml"
    other = llm_small.read_text().replace('role = "llm-small"', 'role = "llm-other"')
    (manifests / "llm-other.toml").write_text(
        other.replace('name = "SmolLM2-135M-Instruct (Q4_1 GGUF)"', 'name = "Another base"')
    )
    runner = CliRunner()
    env = {"APPLIANCE_DATA_DIR": str(trained)}
    try:
        result = runner.invoke(
            app,
            ["models", "merge-generator", "--adapter", "llm-tiny-adapter", "--base",
             "llm-other", "--role", "llm-wrong", "--name", "wrong"],
            env=env,
        )  # fmt: skip
        assert result.exit_code == 2
        assert "was trained on SmolLM2-135M-Instruct (Q4_1 GGUF)" in result.output
        result = runner.invoke(
            app,
            ["models", "merge-generator", "--adapter", "embedder", "--role", "llm-wrong"],
            env=env,
        )
        assert result.exit_code == 2 and "not a LoRA adapter" in result.output
        assert not (manifests / "llm-wrong.toml").exists()
        assert not (trained / "models" / "wrong").exists()
    finally:
        (manifests / "llm-other.toml").unlink()

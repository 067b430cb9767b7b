"""LoRA fine-tuning of the answer generator, and its export for llama.cpp.

The base is a Llama-architecture chat model read from its GGUF file (transformers
dequantises it), so the registry's own ``llm-small`` model is the starting point and
no weights are fetched; a larger Llama in Hugging Face layout (a site's model bundle)
goes through the same steps on a GPU. Only the answer is trained on: the prompt's
tokens (the rules, the passages, the question) carry no loss.

``export_merged_gguf`` writes the base GGUF again with every LoRA-adapted weight merged
(``W + B A * alpha / r``) and stored as F16, everything else (tokenizer, chat template,
other tensors, quantised as they were) copied: the llama.cpp server the appliance runs
loads it as it loads the base. llama.cpp keeps the query and key projections of a
Llama with their rows permuted for its rotary embedding, so their merged weights are
permuted the same way (as llama.cpp's own converter does). The PEFT adapter itself is
what vLLM loads (``--enable-lora``), and what the product ships: ``adapter_deltas``
reads a saved adapter back onto its base, so the merged GGUF is rebuilt on any site
from the adapter (10 MB) and the base the registry already has.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from appliance.training.generator_examples import Example
from appliance.training.loop import optimiser_and_schedule

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_GGUF_NAMES = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class LoraRecipe:
    """Everything that decides a run (kept in its report)."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.05
    learning_rate: float = 2e-4
    steps: int = 600
    accumulate: int = 4
    """Examples per optimiser step (one at a time: no padding on a CPU)."""
    max_tokens: int = 1024
    """Longer examples are left out rather than cut (a cut answer teaches broken JSON)."""
    seed: int = 13


@dataclass
class GeneratorTrainingReport:
    """What a run measured: examples, steps, tokens, seconds and the loss as it fell."""

    base: str
    recipe: dict[str, Any]
    examples_offered: int
    examples_used: int
    examples_too_long: int
    steps: int
    tokens_trained: int
    seconds: float
    loss_by_step: list[float] = field(default_factory=list)
    held_out_loss: float | None = None


def load_base(directory: Path, gguf_file: str | None = None) -> tuple[Any, Any]:
    """The base model and tokenizer: from a GGUF file in ``directory`` (dequantised),
    or from a Hugging Face model directory when ``gguf_file`` is None."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    options = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(directory, **options)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, **options)
    return model, tokenizer


def tokenised(example: Example, tokenizer: Any) -> tuple[list[int], int]:
    """The chat's token ids and how many of them are the prompt (which carries no loss)."""
    prompt = tokenizer.apply_chat_template(
        list(example.messages), add_generation_prompt=True, tokenize=False
    )
    whole = tokenizer.apply_chat_template(
        [*example.messages, {"role": "assistant", "content": example.completion}],
        tokenize=False,
    )
    if not whole.startswith(prompt):
        raise ValueError("the chat template does not extend the prompt with the answer")
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    answer_ids = tokenizer(whole[len(prompt) :], add_special_tokens=False)["input_ids"]
    return prompt_ids + answer_ids, len(prompt_ids)


def train_lora(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    recipe: LoraRecipe,
    *,
    base_name: str,
    held_out: Sequence[Example] = (),
    progress: Callable[[int, int], None] = lambda _done, _total: None,
) -> tuple[Any, GeneratorTrainingReport]:
    """The model with a trained LoRA adapter (a PEFT model), and the run's report."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(recipe.seed)
    rng = random.Random(recipe.seed)
    encoded, too_long = [], 0
    for example in examples:
        ids, prompt_length = tokenised(example, tokenizer)
        if len(ids) > recipe.max_tokens:
            too_long += 1
            continue
        encoded.append((ids, prompt_length))
    if not encoded:
        raise ValueError(f"no example fits in {recipe.max_tokens} tokens")
    config = LoraConfig(
        r=recipe.rank, lora_alpha=recipe.alpha, lora_dropout=recipe.dropout,
        target_modules=list(TARGETS), task_type="CAUSAL_LM",
    )  # fmt: skip
    tuned = get_peft_model(model, config)
    tuned.train()
    optimiser, schedule = optimiser_and_schedule(tuned, recipe.learning_rate, recipe.steps)
    report = GeneratorTrainingReport(
        base=base_name, recipe=asdict(recipe), examples_offered=len(examples),
        examples_used=len(encoded), examples_too_long=too_long, steps=recipe.steps,
        tokens_trained=0, seconds=0.0,
    )  # fmt: skip
    started = time.monotonic()
    order: list[int] = []
    for step in range(recipe.steps):
        total = torch.zeros(())
        for _ in range(recipe.accumulate):
            if not order:
                order = list(range(len(encoded)))
                rng.shuffle(order)
            ids, prompt_length = encoded[order.pop()]
            loss = _answer_loss(tuned, ids, prompt_length) / recipe.accumulate
            loss.backward()
            total += loss.detach()
            report.tokens_trained += len(ids)
        torch.nn.utils.clip_grad_norm_(tuned.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        report.loss_by_step.append(round(float(total), 4))
        progress(step + 1, recipe.steps)
    report.seconds = round(time.monotonic() - started, 1)
    if held_out:
        tuned.eval()
        with torch.no_grad():
            losses = [float(_answer_loss(tuned, *tokenised(e, tokenizer))) for e in held_out]
        report.held_out_loss = round(sum(losses) / len(losses), 4)
    return tuned, report


def _answer_loss(model: Any, ids: list[int], prompt_length: int) -> torch.Tensor:
    tokens = torch.tensor([ids])
    labels = tokens.clone()
    labels[0, :prompt_length] = -100
    return model(input_ids=tokens, labels=labels).loss


def save_base(model: Any, tokenizer: Any, directory: Path) -> None:
    """The base as a Hugging Face model directory: what vLLM serves, with the adapter
    on top (``--enable-lora``), when the base came from a GGUF file. Saved before
    training (PEFT wraps the layers in place), in the precision it was trained in."""
    directory.mkdir(parents=True, exist_ok=True)
    # Loaded from a GGUF file, the model is marked as quantised by it and transformers
    # refuses to save it; its weights are plain tensors already, dequantised at load.
    quantizer = getattr(model, "hf_quantizer", None)
    quantization = getattr(model.config, "quantization_config", None)
    try:
        model.hf_quantizer = None
        if quantization is not None:
            del model.config.quantization_config
        model.save_pretrained(directory)
    finally:
        model.hf_quantizer = quantizer
        if quantization is not None:
            model.config.quantization_config = quantization
    tokenizer.save_pretrained(directory)


def save_adapter(tuned: Any, directory: Path, report: GeneratorTrainingReport) -> None:
    """The PEFT adapter (what vLLM loads) and the run's report beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    tuned.save_pretrained(directory)
    (directory / "training.json").write_text(json.dumps(asdict(report), indent=2), "utf-8")


def llama_rope_permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """A query or key projection in llama.cpp's row order (its converter's permute)."""
    rows = weights.shape[0]
    return (
        weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def merged_deltas(tuned: Any) -> dict[str, np.ndarray]:
    """Each adapted weight's change ``B A * alpha / r``, by its GGUF tensor name, in
    llama.cpp's layout."""
    config = tuned.base_model.model.config
    deltas: dict[str, np.ndarray] = {}
    for name, module in tuned.named_modules():
        if not hasattr(module, "lora_A") or "default" not in module.lora_A:
            continue
        layer = int(name.split(".layers.")[1].split(".")[0])
        kind = ".".join(name.split(".")[-2:])
        a = module.lora_A["default"].weight.detach().float()
        b = module.lora_B["default"].weight.detach().float()
        delta = (b @ a * module.scaling["default"]).numpy()
        if kind == "self_attn.q_proj":
            delta = llama_rope_permute(delta, config.num_attention_heads)
        elif kind == "self_attn.k_proj":
            delta = llama_rope_permute(delta, config.num_key_value_heads)
        deltas[f"blk.{layer}.{_GGUF_NAMES[kind]}.weight"] = delta
    return deltas


def adapter_deltas(base: Any, adapter: Path) -> dict[str, np.ndarray]:
    """``merged_deltas`` of a saved PEFT adapter, read onto the base model it was trained
    on (wrapped in place, as training does)."""
    from peft import PeftModel

    return merged_deltas(PeftModel.from_pretrained(base, adapter))


def export_merged_gguf(base_gguf: Path, deltas: dict[str, np.ndarray], target: Path) -> None:
    """The base GGUF with each delta added to its weight (stored F16); all metadata and
    every other tensor copied as they are."""
    import gguf

    reader = gguf.GGUFReader(base_gguf)
    architecture = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(target, architecture, endianess=reader.endianess)
    for item in reader.fields.values():
        if item.name == gguf.Keys.General.ARCHITECTURE or item.name.startswith("GGUF."):
            continue
        value_type = item.types[0]
        sub_type = item.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(item.name, item.contents(), value_type, sub_type=sub_type)
    tensors = []
    for tensor in reader.tensors:
        if tensor.name in deltas:
            base = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
            merged = (base + deltas[tensor.name]).astype(np.float16)
            tensors.append((tensor.name, merged, gguf.GGMLQuantizationType.F16))
        else:
            tensors.append((tensor.name, tensor.data, tensor.tensor_type))
    missing = set(deltas) - {name for name, _data, _kind in tensors}
    if missing:
        raise ValueError(f"the base GGUF has no tensor {sorted(missing)[0]}")
    for name, data, kind in tensors:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _name, data, _kind in tensors:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()

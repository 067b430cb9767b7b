"""The registry manifest of a model trained on site: checksums of every file, and where
it came from (what it was trained on, when, with which command, from which weights)."""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from pathlib import Path

from appliance.model_registry import ModelManifest, hash_directory


def write_manifest(
    site_models_dir: Path,
    role: str,
    name: str,
    directory: Path,
    provenance: dict[str, str],
    base: ModelManifest,
    description: str = "Cross-encoder fine-tuned on this site (appliance models train-reranker).",
    *,
    kind: str = "cross-encoder",
    threshold: float | None = None,
) -> Path:
    """A registry manifest for the model trained into ``directory`` (checksums of every
    file, provenance). Its licence is the base model's: fine-tuned weights are derived
    from it."""
    licence = base.licence.split(" (")[0] + f" (weights derived from {base.name})"
    lines = [
        f"role = {json.dumps(role)}",
        f"name = {json.dumps(name)}",
        f"kind = {json.dumps(kind)}",
        f"licence = {json.dumps(licence)}",
        f"description = {json.dumps(description)}",
        *([] if threshold is None else [f"threshold = {threshold:.4f}"]),
        "",
        "[source]",
        f"directory = {json.dumps(str(directory.relative_to(site_models_dir)))}",
        f"install = {json.dumps('retrain with: ' + provenance.get('command', 'train-reranker'))}",
        "",
        "[provenance]",
        *[f"{key} = {json.dumps(value)}" for key, value in sorted(provenance.items())],
        "",
    ]
    for model_file in hash_directory(directory):
        lines += [
            "[[files]]",
            f"path = {json.dumps(model_file.path)}",
            f'sha256 = "{model_file.sha256}"',
            "",
        ]
    text = "\n".join(lines)
    tomllib.loads(text)  # never write a manifest the registry could not read
    path = site_models_dir / "manifests" / f"{role}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

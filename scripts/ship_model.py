"""Copy a model trained on this site into the product's own ``models/`` folder, in half
precision, with a manifest that names every file's sha256: how the project's NLI
verifier came to ship in the repository.

    python scripts/ship_model.py SITE_MODEL_DIR NAME ROLE THRESHOLD

The manifest's provenance (base model, data, command) is taken from the model's
``training.json``; licences of the training data are written by hand after it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from transformers import AutoModelForSequenceClassification, AutoTokenizer

from appliance.model_registry import hash_directory

MODELS = Path(__file__).resolve().parent.parent / "models"


def main(source: Path, name: str, role: str, threshold: float) -> None:
    target = MODELS / name
    target.mkdir(parents=True, exist_ok=True)
    model = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=True)
    model.half().save_pretrained(target, safe_serialization=True)
    AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(target)
    shutil.copy(source / "training.json", target / "training.json")
    training = json.loads((target / "training.json").read_text(encoding="utf-8"))
    lines = [
        f'role = "{role}"', f'name = "{name} (half precision)"', 'kind = "cross-encoder"',
        f"threshold = {threshold}", "", "[source]", f'shipped = "{name}"',
        'install = "it ships in the repository"', "", "[provenance]",
        f'base_model = "{training["base_model"]}"', f'command = "{training["command"]}"',
        f'trained_at = "{training["trained_at"]}"', "",
    ]  # fmt: skip
    for model_file in hash_directory(target):
        lines += ["[[files]]", f'path = "{model_file.path}"', f'sha256 = "{model_file.sha256}"', ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]))

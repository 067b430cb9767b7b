"""Every model is resolved by role through this one registry.

A manifest in ``models/`` (one TOML file per model) names the role, where the files
come from (an installed Python package, or a directory under the local model
directory), the sha256 of every file, and the licence. Checksums are verified before
a model is loaded; nothing is ever fetched from a network.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import threading
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from appliance.settings import Settings

log = logging.getLogger(__name__)

ModelKind = Literal[
    "sentence-transformer", "spacy", "cross-encoder", "gguf", "fastcoref", "lora-adapter"
]


class ModelUnavailable(RuntimeError):
    """A model cannot be resolved: missing, altered, or its manifest is wrong."""


MADE_ON_SITE = {
    "llm-tuned": (
        "a site makes it: 'appliance models merge-generator' merges the shipped adapter in "
        "seconds, 'appliance models train-generator' trains one"
    ),
}
"""Roles no package ships: the command that fills each, for the error that finds one
missing (a setting can name such a role before the site has made its model)."""


class ModelNotInstalled(ModelUnavailable):
    """A model whose package or files are absent (as opposed to present but altered)."""


class ModelFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    sha256: str


class ModelPart(BaseModel):
    """One piece of a file that a registry ships split over several packages."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    package: str
    path: str


class ModelArchive(BaseModel):
    """A zip file that the parts join into; the manifest's files are unpacked from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sha256: str
    root: str = ""  # the folder inside the zip that holds the files, e.g. "all-mpnet-base-v2"


class ModelSource(BaseModel):
    """Where the files are: ``package`` (+ ``path`` inside it), ``shipped`` (a folder of
    the product's own ``models/``, for the models the project trains and carries) or
    ``directory`` (under the site's model directory). With
    ``parts``, the manifest's single file is assembled into ``directory`` by joining the
    parts in order, and kept only if its sha256 matches; with ``parts`` and ``archive``,
    the parts join into a zip whose listed files are unpacked into ``directory``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    package: str | None = None
    path: str = "."
    shipped: str | None = None
    directory: str | None = None
    parts: tuple[ModelPart, ...] = ()
    archive: ModelArchive | None = None
    install: str

    @model_validator(mode="after")
    def _exactly_one_origin(self) -> ModelSource:
        origins = [o for o in (self.package, self.shipped, self.directory) if o is not None]
        if len(origins) != 1:
            raise ValueError(
                "a model source names exactly one of 'package', 'shipped' or 'directory'"
            )
        if self.parts and self.directory is None:
            raise ValueError("a model assembled from parts needs a 'directory' to assemble into")
        if self.archive is not None and not self.parts:
            raise ValueError("an 'archive' is joined from 'parts': name them")
        return self


class ModelManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: str
    name: str
    kind: ModelKind
    licence: str
    description: str = ""
    source: ModelSource
    files: tuple[ModelFile, ...]
    threshold: float | None = None
    """A pair classifier's calibrated threshold: the relevance probability of a reranker,
    the entailment probability of an NLI verifier."""
    provenance: dict[str, str] = {}  # for models trained here: data, time, command


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    manifest: ModelManifest
    directory: Path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_directory(directory: Path) -> list[ModelFile]:
    """The ``files`` entries of a manifest for a model directory (used to write one)."""
    return [
        ModelFile(path=str(p.relative_to(directory)), sha256=sha256_of(p))
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    ]


class ModelRegistry:
    """Resolves roles to verified model directories and loads each model once."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        # Manifests shipped with the product, then those of models trained or installed on
        # this site (in the data directory), which take precedence for their roles.
        self._manifests = self._read_manifests(settings.models_dir)
        self._manifests.update(self._read_manifests(self.site_models_dir))

    @staticmethod
    def _read_manifests(models_dir: Path) -> dict[str, ModelManifest]:
        manifests: dict[str, ModelManifest] = {}
        for path in sorted(models_dir.glob("manifests/*.toml")):
            try:
                manifest = ModelManifest.model_validate(tomllib.loads(path.read_text("utf-8")))
            except (tomllib.TOMLDecodeError, ValidationError) as error:
                raise ModelUnavailable(f"model manifest {path} is not valid: {error}") from error
            if manifest.role in manifests:
                raise ModelUnavailable(
                    f"two manifests claim the role {manifest.role!r}: "
                    f"{manifests[manifest.role].name} and {manifest.name} ({path})"
                )
            manifests[manifest.role] = manifest
        return manifests

    @property
    def site_models_dir(self) -> Path:
        return self._settings.local_model_dir or (self._settings.data_dir / "models")

    def manifests(self) -> list[ModelManifest]:
        return list(self._manifests.values())

    def has(self, role: str) -> bool:
        """Whether a manifest fills the role (its files are checked only on loading)."""
        return role in self._manifests

    def manifest(self, role: str) -> ModelManifest:
        try:
            return self._manifests[role]
        except KeyError:
            known = ", ".join(sorted(self._manifests)) or "none"
            made = f"; {MADE_ON_SITE[role]}" if role in MADE_ON_SITE else ""
            raise ModelUnavailable(
                f"no model manifest for the role {role!r} in {self._settings.models_dir}/manifests "
                f"(roles with a manifest: {known}){made}"
            ) from None

    def locate(self, role: str) -> Path:
        """The directory the role's files should be in (not yet verified)."""
        manifest = self.manifest(role)
        source = manifest.source
        if source.package is not None:
            spec = importlib.util.find_spec(source.package)
            if spec is None or not spec.submodule_search_locations:
                raise ModelNotInstalled(
                    f"model for role {role!r} ({manifest.name}) is not installed: the Python "
                    f"package {source.package!r} is missing. Install it with: {source.install}"
                )
            return Path(next(iter(spec.submodule_search_locations))) / source.path
        if source.shipped is not None:
            return self._settings.models_dir / source.shipped
        return self.site_models_dir / (source.directory or "")

    def _package_file(self, manifest: ModelManifest, part: ModelPart) -> Path:
        spec = importlib.util.find_spec(part.package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotInstalled(
                f"model {manifest.name} is not installed: the Python package {part.package!r} "
                f"(one of its {len(manifest.source.parts)} parts) is missing. "
                f"Install it with: {manifest.source.install}"
            )
        return Path(next(iter(spec.submodule_search_locations))) / part.path

    def _assemble(self, manifest: ModelManifest, directory: Path) -> None:
        """Join the parts into the manifest's one file, or into a zip and unpack its
        files, atomically and only if the join has the expected sha256 (a wrong or
        reordered part is never kept). One process at a time: the web service and its
        document reader, or two workers, may first need the same model at once, and
        each would otherwise clear the other's half-joined file."""
        directory.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(directory.parent):
            self._assemble_alone(manifest, directory)

    def _assemble_alone(self, manifest: ModelManifest, directory: Path) -> None:
        archive = manifest.source.archive
        if archive is None:
            if len(manifest.files) != 1:
                raise ModelUnavailable(f"{manifest.name}: a model from parts has exactly one file")
            expected = manifest.files[0]
            target = directory / expected.path
            if not (target.is_file() and sha256_of(target) == expected.sha256):
                directory.mkdir(parents=True, exist_ok=True)
                self._join_parts(manifest, target, expected.sha256)
            return
        if all((directory / f.path).is_file() for f in manifest.files):
            return  # unpacked before; resolve() still checks every file's sha256
        joined = directory.with_name(directory.name + ".zip")
        staging = directory.with_name(directory.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            self._join_parts(manifest, joined, archive.sha256)
            _unpack(joined, archive.root, manifest.files, staging)
            shutil.rmtree(directory, ignore_errors=True)
            staging.replace(directory)
        finally:
            joined.unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)

    def _join_parts(self, manifest: ModelManifest, target: Path, sha256: str) -> None:
        parts = [self._package_file(manifest, part) for part in manifest.source.parts]
        log.info("assembling %s from %d parts into %s", manifest.name, len(parts), target)
        partial = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    for block in iter(functools.partial(handle.read, 1 << 22), b""):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            partial.unlink()
            raise ModelUnavailable(
                f"model {manifest.name}: its {len(parts)} parts join to sha256 "
                f"{digest.hexdigest()}, the manifest expects {sha256}; a part is "
                f"altered or of another version. Reinstall them with: {manifest.source.install}"
            )
        partial.replace(target)

    def resolve(self, role: str) -> ResolvedModel:
        """Locate the role's model and verify every file against its manifest."""
        manifest = self.manifest(role)
        directory = self.locate(role)
        if manifest.source.parts:
            self._assemble(manifest, directory)
        for expected in manifest.files:
            path = directory / expected.path
            if not path.is_file():
                raise ModelNotInstalled(
                    f"model for role {role!r} ({manifest.name}) is incomplete: expected file "
                    f"{path} is missing. Install it with: {manifest.source.install}"
                )
            actual = sha256_of(path)
            if actual != expected.sha256:
                remedy = f"reinstall it with: {manifest.source.install}"
                if manifest.source.archive is not None:
                    remedy = f"delete {directory} and it is unpacked again from its parts"
                raise ModelUnavailable(
                    f"model for role {role!r} ({manifest.name}) failed its checksum: {path} has "
                    f"sha256 {actual}, the manifest expects {expected.sha256}. The file was "
                    f"altered or is another version; {remedy}"
                )
        return ResolvedModel(manifest, directory)

    def load(self, role: str) -> Any:
        """The loaded model for a role: verified, then loaded once for the whole process."""
        resolved = self.resolve(role)
        key = (resolved.manifest.kind, resolved.directory.resolve())
        with _PROCESS_LOCK:
            if key not in _PROCESS_MODELS:
                _PROCESS_MODELS[key] = _LOADERS[resolved.manifest.kind](resolved.directory)
            return _PROCESS_MODELS[key]


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """Hold an advisory lock on ``folder`` (flock on the folder itself: nothing is left
    behind, and the kernel lets go of it when a holder dies)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing the last descriptor releases the lock


def _unpack(archive: Path, root: str, files: tuple[ModelFile, ...], into: Path) -> None:
    """Extract exactly the manifest's files (nothing else the zip holds, and no path
    that would land outside ``into``)."""
    with zipfile.ZipFile(archive) as opened:
        for expected in files:
            target = (into / expected.path).resolve()
            if not target.is_relative_to(into.resolve()):
                raise ModelUnavailable(f"manifest file {expected.path!r} lies outside its model")
            member = f"{root}/{expected.path}" if root else expected.path
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with opened.open(member) as source, target.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 22)
            except KeyError:
                raise ModelUnavailable(f"{archive.name} holds no {member!r}") from None


_PROCESS_MODELS: dict[tuple[str, Path], Any] = {}
_PROCESS_LOCK = threading.Lock()


def _load_sentence_transformer(directory: Path) -> Any:
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(directory), device="cpu", local_files_only=True)


def _load_spacy(directory: Path) -> Any:
    import spacy

    return spacy.load(directory)


def _load_pair_classifier(directory: Path) -> Any:
    from appliance.nlp.pair_classifier import load_pair_classifier

    return load_pair_classifier(directory)


def _load_fastcoref(directory: Path) -> Any:
    """An F-coref model (role ``coreference``); the package is the site's to install."""
    try:
        from fastcoref import FCoref
    except ImportError as error:
        raise ModelUnavailable(
            f"the model in {directory} needs the fastcoref package, which is not installed "
            "(pip install fastcoref into the appliance's environment), or remove the "
            "coreference manifest to use the rule-based resolver"
        ) from error
    import spacy

    # F-coref needs only spaCy's English tokenizer; named by a string it would load (or,
    # failing that, download) a whole spaCy model, so it gets a blank English pipeline.
    return FCoref(
        model_name_or_path=str(directory),
        device="cpu",
        nlp=spacy.blank("en"),
        enable_progress_bar=False,
    )


def _gguf_file(directory: Path) -> Path:
    """A GGUF model is served by a separate process: "loading" it names its one file."""
    files = sorted(directory.glob("*.gguf"))
    if len(files) != 1:
        raise ModelUnavailable(
            f"expected exactly one .gguf file in {directory}, found {len(files)}"
        )
    return files[0]


def _adapter_directory(directory: Path) -> Path:
    """A LoRA adapter is merged into its base (``appliance models merge-generator``) or
    served on top of it by vLLM, never run alone: "loading" it names its folder."""
    return directory


_LOADERS = {
    "sentence-transformer": _load_sentence_transformer,
    "spacy": _load_spacy,
    "cross-encoder": _load_pair_classifier,
    "gguf": _gguf_file,
    "fastcoref": _load_fastcoref,
    "lora-adapter": _adapter_directory,
}

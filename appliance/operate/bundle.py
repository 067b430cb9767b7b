"""The offline bundle: everything an air-gapped host needs, in one folder, with a signed
manifest of every file's sha256.

``build`` runs on a connected build machine. It gathers the wheelhouse (every pinned
dependency and the appliance itself, built by pip), the models each under a name that says
what it is (``models/<role>--<model>/``, with its licence) and a registry manifest
(``models/manifests/<role>.toml``) that names that folder, whatever package carried the
model, so that an installed host points ``models_dir`` at the bundle's copy; the store server
archives the roles install (those in the build machine's server cache), the Ansible
playbooks, the compose file and the shipped policy; then writes ``MANIFEST.json`` and its
Ed25519 signature ``MANIFEST.sig``. ``verify`` runs on the target: the signature must hold
under the builder's public key, every listed file must have its sha256, and no file may
be there that the manifest does not list; the first that does not is named.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path

import tomlkit
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from appliance.model_registry import ModelRegistry, ModelSource, ModelUnavailable, sha256_of
from appliance.settings import PROJECT_ROOT
from audit.checkpoints import public_pem

MANIFEST = "MANIFEST.json"
SIGNATURE = "MANIFEST.sig"
PUBLIC_KEY = "bundle-signing.pub"
SHIPPED_FOLDERS = ("ansible", "compose", "policies")
SERVER_CACHE = Path.home() / ".cache" / "appliance-servers"
SERVER_FOLDERS = ("neo4j-launcher", "opensearch", "vllm-wheels")
"""The folders of the server cache a bundle carries (not a test node's data folder)."""
_OWN_WHEEL = "clinical_appliance"
NO_DEPS_REQUIREMENTS = PROJECT_ROOT / "requirements-no-deps.txt"
"""Wheels installed without their declared dependencies (the Makefile does the same)."""
TOOL_REQUIREMENTS = PROJECT_ROOT / "requirements-tools.txt"
"""The installer the hosts install with (the Makefile uses the same)."""


class BundleError(RuntimeError):
    """A bundle that cannot be built, or one that must not be installed."""


@dataclass(frozen=True, slots=True)
class BundleReport:
    directory: Path
    files: int
    bytes: int
    key_fingerprint: str


def make_signing_key(path: Path) -> Path:
    """A new Ed25519 key for signing bundles (mode 0600) and its public half beside it;
    the site gets the public key (or its fingerprint) by a channel of its own."""
    if path.exists():
        raise BundleError(f"{path} exists: a signing key is never overwritten")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    public = path.with_suffix(".pub")
    public.write_bytes(public_pem(key.public_key()))
    return public


def build(
    destination: Path,
    signing_key: Path,
    registry: ModelRegistry,
    *,
    wheels: bool = True,
    extras: tuple[str, ...] = ("llm",),
    wheels_from: Path | None = None,
    server_cache: Path = SERVER_CACHE,
    progress: Callable[[str], None] = lambda _step: None,
) -> BundleReport:
    """The bundle in ``destination`` (which must not exist yet). ``extras``: the
    optional dependency groups the hosts install (``llm``: llama.cpp on a CPU host).
    ``wheels_from``: an earlier bundle's wheelhouse whose dependency wheels are taken
    as they are (a release that changed only the appliance need not compile llama.cpp
    again); the appliance's own wheel is always built anew."""
    if destination.exists():
        raise BundleError(f"{destination} exists: build into a new folder")
    key = _private_key(signing_key)
    destination.mkdir(parents=True)
    try:
        if wheels:
            if wheels_from is None:
                progress("wheelhouse (pip download and build of every pinned dependency)")
                _wheelhouse(destination / "wheels", extras)
            else:
                progress(f"wheelhouse (the dependencies of {wheels_from}, a new appliance wheel)")
                _reuse_wheelhouse(wheels_from, destination / "wheels")
        progress("models")
        _models(registry, destination / "models")
        progress("server archives")
        _servers(server_cache, destination / "servers")
        progress("playbooks, compose file and policy")
        for folder in SHIPPED_FOLDERS:
            shutil.copytree(PROJECT_ROOT / folder, destination / folder)
        (destination / PUBLIC_KEY).write_bytes(public_pem(key.public_key()))
        files = {path: sha256_of(destination / path) for path in _listed(destination)}
        manifest = {
            "format": 1,
            "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            "appliance_version": _appliance_version(destination / "wheels"),
            "extras": sorted(extras),
            "files": files,
        }
        body = json.dumps(manifest, indent=2, sort_keys=True).encode("utf-8")
        (destination / MANIFEST).write_bytes(body)
        (destination / SIGNATURE).write_bytes(key.sign(body).hex().encode("ascii") + b"\n")
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise
    total = sum((destination / p).stat().st_size for p in files)
    return BundleReport(destination, len(files), total, fingerprint(key.public_key()))


def verify(directory: Path, public_key: Path | None = None) -> tuple[int, str]:
    """How many files hold, and the fingerprint of the key the manifest is signed with.
    Raises ``BundleError`` naming the first file that does not hold."""
    key_path = public_key or directory / PUBLIC_KEY
    try:
        key = serialization.load_pem_public_key(key_path.read_bytes())
    except (OSError, ValueError) as error:
        raise BundleError(f"{key_path} is not a readable public key ({error})") from error
    if not isinstance(key, Ed25519PublicKey):
        raise BundleError(f"{key_path} is not an Ed25519 public key")
    try:
        body = (directory / MANIFEST).read_bytes()
        signature = bytes.fromhex((directory / SIGNATURE).read_text("ascii").strip())
    except (OSError, ValueError) as error:
        raise BundleError(
            f"{directory} has no readable manifest and signature ({error})"
        ) from error
    try:
        key.verify(signature, body)
    except InvalidSignature:
        raise BundleError(
            f"{MANIFEST} is not signed by the key in {key_path}: the bundle was altered or "
            "built by someone else"
        ) from None
    files: dict[str, str] = json.loads(body)["files"]
    for path, expected in sorted(files.items()):
        target = directory / path
        if not target.is_file():
            raise BundleError(f"{path} is missing from the bundle")
        if sha256_of(target) != expected:
            raise BundleError(f"{path} differs from the signed manifest: the bundle was altered")
    extra = sorted(set(_listed(directory)) - set(files) - {PUBLIC_KEY})
    if extra:
        raise BundleError(f"{extra[0]} is in the bundle but not in its signed manifest")
    return len(files), fingerprint(key)


def fingerprint(key: Ed25519PublicKey) -> str:
    """What a person compares by telephone: the sha256 of the raw public key."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _listed(directory: Path) -> Iterator[str]:
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if path.is_file() and relative not in (MANIFEST, SIGNATURE):
            yield relative


def _private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError) as error:
        raise BundleError(
            f"{path} is not a readable signing key ({error}); make one with "
            "'appliance bundle key PATH'"
        ) from error
    if not isinstance(key, Ed25519PrivateKey):
        raise BundleError(f"{path} is not an Ed25519 private key")
    return key


def _models(registry: ModelRegistry, target: Path) -> None:
    """Each installed model's verified files under ``<role>--<model>/`` with its
    licence, and its registry manifest in ``manifests/<role>.toml`` naming that folder
    (source ``shipped``), so the host's registry checks and loads these very files. A
    model not installed here is left out (the build machine installs what the site
    will use)."""
    for manifest in registry.manifests():
        try:
            resolved = registry.resolve(manifest.role)
        except ModelUnavailable:
            continue
        name = f"{manifest.role}--{_file_name(manifest.name)}"
        folder = target / name
        for file in manifest.files:
            (folder / file.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(resolved.directory / file.path, folder / file.path)
        (folder / "LICENCE.txt").write_text(
            f"{manifest.name}: {manifest.licence}\n{manifest.description}\n", "utf-8"
        )
        carried = manifest.source.package or manifest.source.shipped or manifest.source.directory
        bundled = manifest.model_copy(
            update={
                "source": ModelSource(
                    shipped=name, install=f"from the offline bundle (carried by {carried})"
                )
            }
        )
        document = bundled.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        document["source"] = {"shipped": name, "install": bundled.source.install}
        (target / "manifests").mkdir(parents=True, exist_ok=True)
        (target / "manifests" / f"{manifest.role}.toml").write_text(
            tomlkit.dumps(document), "utf-8"
        )


def _reuse_wheelhouse(earlier: Path, target: Path) -> None:
    if not earlier.is_dir():
        raise BundleError(f"{earlier} is not a wheelhouse folder")
    target.mkdir(parents=True)
    for wheel in sorted(earlier.iterdir()):
        if wheel.is_file() and not wheel.name.startswith(f"{_OWN_WHEEL}-"):
            try:
                os.link(wheel, target / wheel.name)  # same disk: no copy of gigabytes
            except OSError:
                shutil.copy2(wheel, target / wheel.name)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(target),
               str(PROJECT_ROOT)]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0:
        raise BundleError(f"building the appliance's wheel failed:\n{finished.stderr[-2000:]}")


def _appliance_version(wheelhouse: Path) -> str:
    """The version of the appliance wheel the hosts will install (that of this
    process where the bundle carries no wheels)."""
    own = sorted(wheelhouse.glob(f"{_OWN_WHEEL}-*.whl"))
    if not own:
        return installed_version("clinical-appliance")
    return own[-1].name.split("-")[1]


def _file_name(text: str) -> str:
    """A model's name as a folder name: letters, digits, dots, dashes and underscores."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-")


def _servers(cache: Path, target: Path) -> None:
    """The server archives and launcher jars the build machine's cache holds."""
    if not cache.is_dir():
        return
    for entry in sorted(cache.iterdir()):
        if entry.is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(entry, target / entry.name)
        elif entry.name.startswith(SERVER_FOLDERS) and entry.is_dir():
            shutil.copytree(entry, target / entry.name)


def _wheelhouse(target: Path, extras: tuple[str, ...]) -> None:
    """Every pinned dependency as a wheel (built here where no wheel is published, as
    llama.cpp's is, for portable instruction sets), the appliance's own wheel, and the
    wheels installed without their dependencies."""
    environment = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}
    project = f"{PROJECT_ROOT}[{','.join(extras)}]" if extras else str(PROJECT_ROOT)
    commands = [
        [sys.executable, "-m", "pip", "wheel", "--wheel-dir", str(target), project],
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--dest", str(target), "-r", str(NO_DEPS_REQUIREMENTS), "-r", str(TOOL_REQUIREMENTS)],
    ]  # fmt: skip
    for command in commands:
        finished = subprocess.run(command, env=environment, capture_output=True, text=True)
        if finished.returncode != 0:
            raise BundleError(f"building the wheelhouse failed:\n{finished.stderr[-2000:]}")
    for requirements in (NO_DEPS_REQUIREMENTS, TOOL_REQUIREMENTS):
        shutil.copy2(requirements, target / requirements.name)

"""Signed checkpoints: (tree size, root hash, time), Ed25519, each chained to the one
before it so that a checkpoint cannot be dropped or reordered unnoticed.

The private key is generated when the log is first created (at install), written with
mode 0600 so that only the service user reads it; the public key is exported for
auditors, who verify with their own copy of it.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

CHECKPOINT_DOMAIN = b"clinical-appliance-audit-checkpoint/v1\n"
GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class Checkpoint:
    size: int
    root: str
    """Hex SHA-256 root of the first ``size`` entries."""
    time: str
    previous: str
    """sha256 of the previous checkpoint's line (``GENESIS`` for the first)."""
    key_id: str
    signature: str

    def signed_message(self) -> bytes:
        return CHECKPOINT_DOMAIN + (
            f"{self.size}\n{self.root}\n{self.time}\n{self.previous}\n".encode()
        )

    def line(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode() + b"\n"

    def digest(self) -> str:
        return hashlib.sha256(self.line()).hexdigest()

    @classmethod
    def from_line(cls, line: bytes) -> Checkpoint:
        fields = json.loads(line)
        return cls(**fields)

    def verify(self, public_key: Ed25519PublicKey) -> bool:
        try:
            public_key.verify(base64.b64decode(self.signature), self.signed_message())
        except (InvalidSignature, ValueError):
            return False
        return True


def key_id(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(
    private_key: Ed25519PrivateKey, size: int, root: bytes, previous: str, time: dt.datetime
) -> Checkpoint:
    unsigned = Checkpoint(
        size=size,
        root=root.hex(),
        time=time.astimezone(dt.UTC).isoformat(timespec="microseconds"),
        previous=previous,
        key_id=key_id(private_key.public_key()),
        signature="",
    )
    signature = base64.b64encode(private_key.sign(unsigned.signed_message())).decode()
    return Checkpoint(**{**asdict(unsigned), "signature": signature})


def load_or_create_key(private_path: Path, public_path: Path) -> Ed25519PrivateKey:
    """The signing key; created (0600) with its public half on first use."""
    if private_path.exists():
        return load_private_key(private_path)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
        file.flush()
        os.fsync(file.fileno())
    public_path.write_bytes(public_pem(key.public_key()))
    return key


def load_private_key(path: Path) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} is not an Ed25519 private key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(path.read_bytes())
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path} is not an Ed25519 public key")
    return key


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )

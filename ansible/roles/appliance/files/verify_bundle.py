#!/usr/bin/env python3
"""Checks an offline bundle on the host before anything from it is installed.

It runs before the appliance exists on the host, so it cannot be the appliance's own
``appliance bundle verify``, and it must not trust anything inside the bundle: it uses
only Python's standard library and the host's OpenSSL (3.0 or later verifies Ed25519),
and the public key the site received from the builder by a channel of its own.

usage: verify_bundle.py BUNDLE_DIR PUBLIC_KEY
Exit status 0 when the signature holds, every listed file has its sha256 and no file
is there that the manifest does not list; otherwise 1, naming the first that does not.
"""

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

MANIFEST = "MANIFEST.json"
SIGNATURE = "MANIFEST.sig"
UNSIGNED = {MANIFEST, SIGNATURE, "bundle-signing.pub"}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(bundle: Path, public_key: Path) -> str:
    """An empty string when the bundle holds, else what does not."""
    try:
        signature = bytes.fromhex((bundle / SIGNATURE).read_text("ascii").strip())
        body = (bundle / MANIFEST).read_bytes()
    except (OSError, ValueError) as error:
        return f"{bundle} has no readable manifest and signature ({error})"
    with tempfile.TemporaryDirectory() as scratch:
        signature_file = Path(scratch) / "signature"
        signature_file.write_bytes(signature)
        verified = subprocess.run(
            ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(public_key),
             "-rawin", "-in", str(bundle / MANIFEST), "-sigfile", str(signature_file)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if verified.returncode != 0:
        return (
            f"{MANIFEST} is not signed by the key in {public_key}: the bundle was altered "
            f"or built by someone else ({verified.stdout.strip() or verified.stderr.strip()})"
        )
    files = json.loads(body)["files"]
    for path, expected in sorted(files.items()):
        target = bundle / path
        if not target.is_file():
            return f"{path} is missing from the bundle"
        if sha256_of(target) != expected:
            return f"{path} differs from the signed manifest: the bundle was altered"
    present = {
        p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()
    } - UNSIGNED
    extra = sorted(present - set(files))
    if extra:
        return f"{extra[0]} is in the bundle but not in its signed manifest"
    return ""


def main(arguments: list[str]) -> int:
    if len(arguments) != 2:
        print(__doc__.split("\n\n")[2].splitlines()[0], file=sys.stderr)
        return 2
    problem = check(Path(arguments[0]), Path(arguments[1]))
    if problem:
        print(f"bundle refused: {problem}", file=sys.stderr)
        return 1
    print(f"bundle verified: {arguments[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

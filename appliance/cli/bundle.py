"""``appliance bundle``: the offline bundle an air-gapped host is installed from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.operate.bundle import (
    SERVER_CACHE,
    BundleError,
    build,
    make_signing_key,
    verify,
)

bundle_app = typer.Typer(no_args_is_help=True, help="The offline bundle for air-gapped hosts.")


@bundle_app.command("key")
def bundle_key(
    path: Annotated[Path, typer.Argument(help="Where the private key goes (mode 0600).")],
) -> None:
    """Make the Ed25519 key that signs bundles; give sites its public half."""
    try:
        public = make_signing_key(path)
    except BundleError as error:
        raise fail(str(error), code=2) from None
    console.print(f"signing key {path}; give sites {public}")


@bundle_app.command("build")
def bundle_build(
    destination: Annotated[Path, typer.Argument(help="A new folder for the bundle.")],
    key: Annotated[Path, typer.Option(help="The signing key ('appliance bundle key').")],
    wheels: Annotated[
        bool, typer.Option(help="Build the wheelhouse (needs the package registry).")
    ] = True,
    extras: Annotated[
        str,
        typer.Option(help="Optional dependency groups, comma-separated ('' for none)."),
    ] = "llm",
    wheels_from: Annotated[
        Path | None,
        typer.Option(help="Take the dependency wheels of an earlier bundle's wheels/ folder."),
    ] = None,
    server_cache: Annotated[
        Path, typer.Option(help="Where the store server archives were downloaded.")
    ] = SERVER_CACHE,
) -> None:
    """Gather wheels, models, server archives, playbooks and policy, and sign the
    manifest of every file (run on a connected build machine)."""
    with open_appliance() as appliance:
        try:
            report = build(
                destination, key, appliance.registry, wheels=wheels, server_cache=server_cache,
                extras=tuple(e.strip() for e in extras.split(",") if e.strip()),
                wheels_from=wheels_from,
                progress=lambda step: errors.print(f"[dim]bundling {step}...[/dim]"),
            )  # fmt: skip
        except BundleError as error:
            raise fail(str(error)) from None
    console.print(
        f"{report.files} files ({report.bytes / 1e6:.1f} MB) in {report.directory}, signed "
        f"by key {report.key_fingerprint[:16]}",
        highlight=False,
    )


@bundle_app.command("verify")
def bundle_verify(
    directory: Annotated[Path, typer.Argument(help="The bundle's folder.")],
    public_key: Annotated[
        Path | None,
        typer.Option(help="The builder's public key, as the site received it (recommended)."),
    ] = None,
) -> None:
    """Check the signature and every file's sha256; exit 1 naming the first that does not
    hold. Without --public-key the bundle's own key is used: that proves the files are
    whole, not who built them (compare the fingerprint with the builder's)."""
    try:
        files, key_fingerprint = verify(directory, public_key)
    except BundleError as error:
        raise fail(str(error)) from None
    console.print(f"{files} files verified; signed by key {key_fingerprint}", highlight=False)
    if public_key is None:
        errors.print(
            "[yellow]warning:[/yellow] checked with the bundle's own key: compare the "
            "fingerprint above with the one the builder gave you"
        )

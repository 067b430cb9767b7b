"""``appliance models``: inspect and verify the model registry, and train site models."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from appliance.cli.common import console, open_appliance
from appliance.cli.training import (
    merge_generator,
    train_generator,
    train_reranker,
    train_verifier,
)
from appliance.model_registry import ModelNotInstalled, ModelUnavailable, hash_directory
from appliance.operate.doctor import roles_in_use, roles_to_verify

models_app = typer.Typer(no_args_is_help=True, help="Inspect, verify and train models.")
models_app.command("train-reranker")(train_reranker)
models_app.command("train-verifier")(train_verifier)
models_app.command("train-generator")(train_generator)
models_app.command("merge-generator")(merge_generator)


@models_app.command("list")
def models_list() -> None:
    """The models in the registry: role, name, licence and where they load from."""
    with open_appliance() as appliance:
        table = Table()
        for column in ("role", "name", "kind", "licence", "location"):
            table.add_column(column, overflow="fold")
        for manifest in appliance.registry.manifests():
            try:
                location = str(appliance.registry.locate(manifest.role))
            except ModelUnavailable:
                location = f"[red]not installed[/red] ({manifest.source.install})"
            table.add_row(manifest.role, manifest.name, manifest.kind, manifest.licence, location)
    console.print(table)


@models_app.command("verify")
def models_verify() -> None:
    """Check every installed model file against its manifest's sha256. A model that is not
    installed fails only if the settings use it; an altered one always fails."""
    failures = 0
    with open_appliance() as appliance:
        in_use = roles_in_use(appliance.settings)
        for role in roles_to_verify(appliance):
            try:
                resolved = appliance.registry.resolve(role)
                manifest = resolved.manifest
                console.print(
                    f"[green]ok[/green]   {role}: {manifest.name} "
                    f"({len(manifest.files)} files in {resolved.directory})"
                )
            except ModelNotInstalled as error:
                if role in in_use:
                    failures += 1
                    console.print(f"[red]fail[/red] {error}")
                else:
                    console.print(f"[yellow]absent[/yellow] (not used by the settings) {error}")
            except ModelUnavailable as error:
                failures += 1
                console.print(f"[red]fail[/red] {error}")
    if failures:
        raise typer.Exit(code=1)


@models_app.command("hash")
def models_hash(directory: Annotated[Path, typer.Argument(exists=True, file_okay=False)]) -> None:
    """Print the [[files]] entries of a manifest for a model directory."""
    for model_file in hash_directory(directory):
        sys.stdout.write(
            f'[[files]]\npath = "{model_file.path}"\nsha256 = "{model_file.sha256}"\n\n'
        )

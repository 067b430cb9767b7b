"""What every ``appliance`` sub-command shares: the consoles and how the appliance opens."""

from __future__ import annotations

from enum import StrEnum

import typer
from rich.console import Console

from appliance.access.rules import Subject
from appliance.access.subjects import UnknownSubject
from appliance.engines import Appliance
from appliance.settings import Settings

console = Console()
errors = Console(stderr=True)


class GeneratorKind(StrEnum):
    """The generators a command may choose instead of the configured one."""

    extractive = "extractive"
    llama_cpp = "llama-cpp"
    openai = "openai"


def open_appliance(generator: str | None = None) -> Appliance:
    """The appliance as the settings describe it; ``generator`` overrides the
    configured generator kind for this command only."""
    settings = Settings()
    if generator is not None:
        chosen = settings.generator.model_copy(update={"kind": generator})
        settings = settings.model_copy(update={"generator": chosen})
    return Appliance(settings)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print an error to stderr; the caller raises what this returns."""
    errors.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code=code)


def known_subject(appliance: Appliance, user_id: str) -> Subject:
    try:
        return appliance.subjects.get(user_id)
    except UnknownSubject as error:
        raise fail(f"{error}; see 'appliance users list'", code=2) from None
    except ValueError as error:
        raise fail(str(error), code=2) from None

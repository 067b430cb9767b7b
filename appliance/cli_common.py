"""What every ``appliance`` sub-command shares: the consoles and how the appliance opens."""

from __future__ import annotations

import typer
from rich.console import Console

from appliance.access.rules import Subject
from appliance.access.subjects import UnknownSubject
from appliance.engines import Appliance
from appliance.settings import Settings

console = Console()
errors = Console(stderr=True)


def open_appliance() -> Appliance:
    return Appliance(Settings())


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print an error to stderr; the caller raises what this returns."""
    errors.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code=code)


def known_subject(appliance: Appliance, user_id: str) -> Subject:
    try:
        return appliance.subjects.get(user_id)
    except UnknownSubject as error:
        raise fail(f"{error}; see 'appliance policy users'", code=2) from None
    except ValueError as error:
        raise fail(str(error), code=2) from None

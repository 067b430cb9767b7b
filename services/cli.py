"""``appliance-web``: run the web services, manage local accounts, serve the demo."""

from __future__ import annotations

import secrets
from typing import Annotated

import typer
import uvicorn

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.cli.questions import demo as appliance_demo
from appliance.index.stores import single_process_reason
from appliance.settings import Settings
from services.accounts import AccountError, LocalAccounts
from services.app import create_app, uvicorn_options
from services.logs import logging_config
from services.sessions import SessionStore
from services.shared import shared_database

app = typer.Typer(no_args_is_help=True, help=__doc__)
accounts_app = typer.Typer(no_args_is_help=True, help="Local accounts (Argon2id hashes).")
app.add_typer(accounts_app, name="accounts")


def _accounts() -> LocalAccounts:
    return LocalAccounts(Settings().access_dir / "accounts.json")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Default: settings services.host.")] = None,
    port: Annotated[int | None, typer.Option(help="Default: settings services.port.")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Default: settings services.workers.", min=1)
    ] = None,
) -> None:
    """Serve the API and both pages: one process on the embedded stores (the engines are
    opened once), or several worker processes on the store servers."""
    settings = Settings()
    settings = listening_on(
        settings, host or settings.services.host, port or settings.services.port
    )
    processes = workers or settings.services.workers
    if processes > 1 and (problem := single_process_reason(settings)):
        raise fail(f"{processes} workers cannot share the stores: {problem}", code=2)
    options = {
        "host": settings.services.host,
        "port": settings.services.port,
        "log_level": "info",
        "log_config": logging_config(settings.services.log_format),
        **uvicorn_options(settings),
    }
    if processes > 1:  # each worker builds its own app (and engines) from the settings
        uvicorn.run("services.app:create_app", factory=True, workers=processes, **options)  # type: ignore[arg-type]
    else:
        uvicorn.run(create_app(settings), **options)  # type: ignore[arg-type]


@accounts_app.command("set-password")
def set_password(
    user: Annotated[str, typer.Argument(help="A user of the subjects directory.")],
    generate: Annotated[bool, typer.Option(help="Generate one and print it.")] = False,
) -> None:
    """Set a local account's password (prompted, or generated)."""
    with open_appliance() as appliance:
        if user not in appliance.subjects.subjects():
            raise fail(f"no user {user!r} in {appliance.subjects.path}; add the user there first")
    password = (
        secrets.token_urlsafe(12)
        if generate
        else typer.prompt("password", hide_input=True, confirmation_prompt=True)
    )
    try:
        _accounts().set_password(user, password)
    except AccountError as error:
        raise fail(str(error), code=2) from None
    console.print(f"password set for {user}" + (f": {password}" if generate else ""))


@accounts_app.command("list")
def list_accounts() -> None:
    for user in _accounts().users():
        console.print(user)


@accounts_app.command("remove")
def remove(user: str) -> None:
    if not _accounts().remove(user):
        raise fail(f"no account {user!r}")
    console.print(f"removed the account of {user}")


@accounts_app.command("sign-out-everyone")
def sign_out_everyone() -> None:
    """End every session now (sessions otherwise outlive a restart of the service)."""
    ended = SessionStore(shared_database(Settings().data_dir), lifetime_seconds=0).clear()
    console.print(f"ended {ended} session(s); everyone signs in again")


@app.command()
def demo(
    serve_ui: Annotated[
        bool, typer.Option("--serve/--no-serve", help="Serve the UI after.")
    ] = True,
    port: int = 8080,
) -> None:
    """The command-line demo (ingest the sample corpus, answer a question), then one demo
    account per role with a fresh password, printed, and the UI on http://127.0.0.1:PORT."""
    appliance_demo()
    accounts = _accounts()
    with open_appliance() as appliance:
        users = appliance.subjects.subjects()
    console.print("\n[bold]Demo accounts[/bold] (new passwords on every start):")
    for user_id, subject in sorted(users.items()):
        password = secrets.token_urlsafe(12)
        accounts.set_password(user_id, password)
        console.print(f"  {user_id:<22} {password:<18} {', '.join(subject.roles)}")
    if not serve_ui:
        return
    # the port the operator's commands send their work to while the demo serves
    settings = listening_on(Settings(), "127.0.0.1", port)
    if settings.services.secure_cookies:
        errors.print("cookies are marked Secure; browsers accept that on http://127.0.0.1")
    console.print(f"\nserving on http://127.0.0.1:{port} (Ctrl-C stops)")
    uvicorn.run(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning",
        **uvicorn_options(settings),  # type: ignore[arg-type]
    )  # fmt: skip


def main() -> None:
    app()


def listening_on(settings: Settings, host: str, port: int) -> Settings:
    """The settings with the service's address replaced: what the command line chose is
    also where the operator's commands find the service (``appliance.owner``)."""
    listening = settings.services.model_copy(update={"host": host, "port": port})
    return settings.model_copy(update={"services": listening})

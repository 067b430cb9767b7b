"""The ``appliance`` command: ingest and list documents, ask and search, models, the
access policy and break-the-glass, and the release gate (``eval``).

One module per group of commands: ``documents`` (ingest, docs), ``questions`` (ask,
search, demo), ``models`` (the registry, and training through ``appliance.training``),
``access`` (policy, break-glass) and ``evaluation`` (eval). Benchmarks that compare
research methods live in ``benchmarks/``, not here.
"""

from __future__ import annotations

import typer

from appliance.cli.access import break_glass_app, policy_app
from appliance.cli.bundle import bundle_app
from appliance.cli.common import fail
from appliance.cli.documents import docs_app, ingest
from appliance.cli.evaluation import evaluate_golden
from appliance.cli.models import models_app
from appliance.cli.operate import backup_command, doctor, restore_command, version
from appliance.cli.questions import ask, demo, search
from appliance.cli.users import users_app
from appliance.index.base import StoreUnavailable

app = typer.Typer(
    no_args_is_help=True, help=__doc__.split("\n\n")[0], pretty_exceptions_enable=False
)
app.command()(ingest)
app.command()(search)
app.command()(ask)
app.command()(demo)
app.command("eval")(evaluate_golden)
app.command()(doctor)
app.command("backup")(backup_command)
app.command("restore")(restore_command)
app.command()(version)
app.add_typer(docs_app, name="docs")
app.add_typer(models_app, name="models")
app.add_typer(policy_app, name="policy")
app.add_typer(break_glass_app, name="break-glass")
app.add_typer(users_app, name="users")
app.add_typer(bundle_app, name="bundle")


def main() -> None:
    try:
        app()
    except StoreUnavailable as error:
        # A store server that is down: one line that names it, never a traceback.
        raise SystemExit(
            fail(f"{error}; start or fix it, then run the command again", code=3).exit_code
        ) from None

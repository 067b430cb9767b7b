"""``appliance users``: the local users' roles, departments and care teams, changed by
command instead of by hand, checked against what the site has, and audited."""

from __future__ import annotations

import getpass
import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from appliance.access.policy import PolicyError
from appliance.access.rules import Subject
from appliance.access.subjects import NOTHING, Attributes, UnknownSubject
from appliance.access.vocabulary import Vocabulary
from appliance.cli.common import console, fail, open_appliance
from appliance.engines import Appliance

users_app = typer.Typer(
    no_args_is_help=True, help="Local users: roles, departments, care teams (audited)."
)

UserArgument = Annotated[str, typer.Argument(help="The user id (what they sign in with).")]
Roles = Annotated[list[str] | None, typer.Option("--role", help="A role; repeat for more.")]
Departments = Annotated[
    list[str] | None, typer.Option("--department", help="A department; repeat for more.")
]
CareTeam = Annotated[
    list[str] | None,
    typer.Option("--care-team", help="A patient id on the user's care team; repeat for more."),
]
NewNames = Annotated[
    bool,
    typer.Option("--new", help="The roles or departments named are new to the site (not a typo)."),
]
ActorOption = Annotated[
    str, typer.Option(help="Who makes the change (audited); default: the login name.")
]


def _attributes(
    roles: list[str] | None, departments: list[str] | None, care_team: list[str] | None
) -> Attributes:
    return Attributes(
        tuple(roles or ()), tuple(d.lower() for d in departments or ()), tuple(care_team or ())
    )


def vocabulary(appliance: Appliance) -> Vocabulary:
    """What the site has now: the policy's names, the users' and the documents' labels."""
    try:
        return appliance.vocabulary()
    except (PolicyError, ValueError) as error:
        raise fail(str(error)) from None


def _check_known(appliance: Appliance, attributes: Attributes, new: bool) -> None:
    if new:
        return
    known = vocabulary(appliance)
    problem = known.unknown_roles(attributes.roles) or known.unknown_departments(
        attributes.departments
    )
    if problem:
        raise fail(f"{problem} (--new if it is meant)", code=2)


def _show(subject: Subject) -> str:
    return (
        f"{escape(subject.user_id)}: roles {', '.join(subject.roles) or '-'}; departments "
        f"{', '.join(subject.departments) or '-'}; care team {', '.join(subject.care_team) or '-'}"
    )


@users_app.command("list")
def users_list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False,
) -> None:
    """Every local user with their roles, departments and care team."""
    with open_appliance() as appliance:
        try:
            subjects = appliance.subjects.subjects()
        except ValueError as error:
            raise fail(str(error)) from None
        path = appliance.subjects.path
    if as_json:
        rows = [
            {"user": s.user_id, "roles": list(s.roles), "departments": list(s.departments),
             "care_team": list(s.care_team)}
            for s in subjects.values()
        ]  # fmt: skip
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=str(path))
    for column in ("user", "roles", "departments", "care team"):
        table.add_column(column, overflow="fold")
    for s in subjects.values():
        table.add_row(
            s.user_id, ", ".join(s.roles), ", ".join(s.departments), ", ".join(s.care_team)
        )
    console.print(table)


@users_app.command("add")
def users_add(
    user: UserArgument,
    role: Roles = None,
    department: Departments = None,
    care_team: CareTeam = None,
    new: NewNames = False,
    actor: ActorOption = "",
) -> None:
    """Add a user with at least one role; give them a password with
    'appliance-web accounts set-password USER'."""
    attributes = _attributes(role, department, care_team)
    with open_appliance() as appliance:
        _check_known(appliance, attributes, new)
        try:
            subject = appliance.subjects.add(user, attributes, actor or getpass.getuser())
        except ValueError as error:
            raise fail(str(error), code=2) from None
    console.print(f"added {_show(subject)}", highlight=False)


@users_app.command("grant")
def users_grant(
    user: UserArgument,
    role: Roles = None,
    department: Departments = None,
    care_team: CareTeam = None,
    new: NewNames = False,
    actor: ActorOption = "",
) -> None:
    """Give a user more roles, departments or care-team patients (from their next request)."""
    attributes = _attributes(role, department, care_team)
    with open_appliance() as appliance:
        _check_known(appliance, attributes, new)
        subject = _change(appliance, user, actor, grant=attributes)
    console.print(f"now {_show(subject)}", highlight=False)


@users_app.command("revoke")
def users_revoke(
    user: UserArgument,
    role: Roles = None,
    department: Departments = None,
    care_team: CareTeam = None,
    actor: ActorOption = "",
) -> None:
    """Take roles, departments or care-team patients away (from their next request)."""
    with open_appliance() as appliance:
        subject = _change(appliance, user, actor, revoke=_attributes(role, department, care_team))
    console.print(f"now {_show(subject)}", highlight=False)


@users_app.command("remove")
def users_remove(user: UserArgument, actor: ActorOption = "") -> None:
    """Remove a user from the directory: they can no longer sign in or be granted
    anything ('appliance-web accounts remove USER' also deletes their password)."""
    with open_appliance() as appliance:
        try:
            appliance.subjects.remove(user, actor or getpass.getuser())
        except (UnknownSubject, ValueError) as error:
            raise fail(str(error), code=2) from None
    console.print(f"removed {escape(user)}")


def _change(
    appliance: Appliance,
    user: str,
    actor: str,
    *,
    grant: Attributes = NOTHING,
    revoke: Attributes = NOTHING,
) -> Subject:
    try:
        return appliance.subjects.change(
            user, actor or getpass.getuser(), grant=grant, revoke=revoke
        )
    except (UnknownSubject, ValueError) as error:
        raise fail(str(error), code=2) from None
